/* SPDX-License-Identifier: Apache-2.0 */
#include "qmp_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int fail(int ret, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "QMP: %s: %s", what, strerror(-ret));
	return ret;
}

/* Next complete line as parsed JSON; waits up to the connection's timeout. */
static int read_message(struct qmp *q, cJSON **msg, char *err, size_t errlen)
{
	double deadline = now_ms() + q->timeout_ms;

	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);

		if (nl) {
			size_t n = (size_t)(nl - q->buf) + 1;

			*nl = '\0';
			*msg = cJSON_Parse(q->buf);
			memmove(q->buf, q->buf + n, q->len - n);
			q->len -= n;
			if (!*msg) {
				snprintf(err, errlen, "QMP: a reply that is not JSON");
				return -EPROTO;
			}
			return 0;
		}
		if (q->len == sizeof(q->buf)) {
			snprintf(err, errlen, "QMP: a reply longer than %zu bytes", sizeof(q->buf));
			return -EMSGSIZE;
		}
		struct pollfd p = {.fd = q->fd, .events = POLLIN};
		int left = (int)(deadline - now_ms());

		if (left <= 0 || poll(&p, 1, left) == 0)
			return fail(-ETIMEDOUT, err, errlen, "waiting for QEMU");
		ssize_t r = read(q->fd, q->buf + q->len, sizeof(q->buf) - q->len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return fail(r < 0 ? -errno : -ECONNRESET, err, errlen, "reading");
		q->len += (size_t)r;
	}
}

static int send_all(struct qmp *q, const char *s, char *err, size_t errlen)
{
	size_t len = strlen(s);

	while (len) {
		ssize_t w = write(q->fd, s, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return fail(w < 0 ? -errno : -EIO, err, errlen, "writing");
		s += w;
		len -= (size_t)w;
	}
	return 0;
}

int qmp_exec(struct qmp *q, const char *name, const cJSON *args, cJSON **ret, char *err,
	     size_t errlen)
{
	cJSON *cmd = cJSON_CreateObject();
	char *text;
	int r;

	if (ret)
		*ret = NULL;
	cJSON_AddStringToObject(cmd, "execute", name);
	if (args)
		cJSON_AddItemToObject(cmd, "arguments", cJSON_Duplicate(args, 1));
	text = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);
	if (!text)
		return -ENOMEM;
	r = send_all(q, text, err, errlen);
	if (!r)
		r = send_all(q, "\n", err, errlen);
	cJSON_free(text);
	while (!r) {
		cJSON *msg, *v;

		r = read_message(q, &msg, err, errlen);
		if (r)
			break;
		if ((v = cJSON_GetObjectItem(msg, "return"))) {
			if (ret)
				*ret = cJSON_DetachItemViaPointer(msg, v);
			cJSON_Delete(msg);
			return 0;
		}
		if ((v = cJSON_GetObjectItem(msg, "error"))) {
			cJSON *d = cJSON_GetObjectItem(v, "desc");

			snprintf(err, errlen, "QMP %s: %s", name,
				 cJSON_IsString(d) ? d->valuestring : "error");
			cJSON_Delete(msg);
			return -EPROTO;
		}
		cJSON_Delete(msg); /* an event */
	}
	return r;
}

int qmp_exec_json(struct qmp *q, const char *name, const char *args_json, cJSON **ret, char *err,
		  size_t errlen)
{
	cJSON *args = args_json ? cJSON_Parse(args_json) : NULL;
	int r;

	if (args_json && !args) {
		snprintf(err, errlen, "QMP %s: arguments are not JSON", name);
		return -EINVAL;
	}
	r = qmp_exec(q, name, args, ret, err, errlen);
	cJSON_Delete(args);
	return r;
}

int qmp_connect(struct qmp *q, const char *path, int timeout_ms, char *err, size_t errlen)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	double deadline = now_ms() + timeout_ms;
	cJSON *greeting;
	int r;

	memset(q, 0, sizeof(*q));
	q->fd = -1;
	q->timeout_ms = timeout_ms;
	if (strlen(path) >= sizeof(a.sun_path)) {
		snprintf(err, errlen, "QMP socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(a.sun_path, path);
	for (;;) {
		q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (q->fd < 0)
			return fail(-errno, err, errlen, "socket");
		if (connect(q->fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			break;
		r = -errno;
		close(q->fd);
		q->fd = -1;
		if (now_ms() > deadline)
			return fail(r, err, errlen, path);
		usleep(20000);
	}
	r = read_message(q, &greeting, err, errlen);
	if (r) {
		qmp_close(q);
		return r;
	}
	cJSON_Delete(greeting);
	r = qmp_exec(q, "qmp_capabilities", NULL, NULL, err, errlen);
	if (r)
		qmp_close(q);
	return r;
}

void qmp_close(struct qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
}
