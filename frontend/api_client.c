/* SPDX-License-Identifier: Apache-2.0 */
/* api_client.c - blocking HTTP/1.1 over AF_UNIX for the control API. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <limits.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api_client.h"
#include "api_server.h"
#include "clock.h"
#include "unix_addr.h"

/* Declared in api_server.h; here so that `vmm migrate` links without the server. */
int api_default_socket_path(const char *name, char *buf, size_t len)
{
	const char *env = getenv("VMM_RUN_DIR");
	char dir[PATH_MAX];
	int n;

	if (!name || !*name || strchr(name, '/'))
		return -EINVAL;
	if (env && *env)
		n = snprintf(dir, sizeof(dir), "%s", env);
	else if (geteuid() == 0)
		n = snprintf(dir, sizeof(dir), "/run/vmm");
	else if ((env = getenv("XDG_RUNTIME_DIR")) && *env)
		n = snprintf(dir, sizeof(dir), "%s/vmm", env);
	else
		n = snprintf(dir, sizeof(dir), "/tmp/vmm-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n >= sizeof(dir))
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%s/%s.sock", dir, name);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Waits for `events` on fd until `deadline` (now_ns()); 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	uint64_t now, left_ms;
	int n;

	for (;;) {
		now = now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		left_ms =
		    (deadline - now + 999999) / 1000000; /* round up: poll() until the deadline */
		n = poll(&pfd, 1, left_ms > INT_MAX ? INT_MAX : (int)left_ms);
		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/*
 * connect() on a non-blocking AF_UNIX socket fails with EAGAIN when the
 * server's backlog is full (a server that is busy or backing off under fd
 * exhaustion) and does not complete later: it must be retried.
 */
static int connect_retry(int fd, const struct sockaddr_un *sa, uint64_t deadline)
{
	for (;;) {
		struct timespec ts = {0, 10 * 1000000};

		if (!connect(fd, (const struct sockaddr *)sa, sizeof(*sa)))
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return errno;
		if (now_ns() >= deadline)
			return ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
}

/*
 * Whoever can create a file where we look for the socket (a planted
 * /tmp/vmm-<uid>) could answer in the VM's name: trust only a server that
 * runs as us or as root. SO_PEERCRED holds the listener's credentials.
 */
static int check_server_uid(int fd, const char *path, char *err, size_t errlen)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || len != sizeof(cred)) {
		int e = errno ? errno : EPROTO;

		snprintf(err, errlen,
			 "the API socket '%s': cannot read its server's credentials: %s", path,
			 strerror(e));
		return -e;
	}
	if (cred.uid != geteuid() && cred.uid != 0) {
		snprintf(err, errlen, "the API socket %s is served by uid %u, not by you or root",
			 path, (unsigned)cred.uid);
		return -EACCES;
	}
	return 0;
}

int api_client_connect(const char *path, uint64_t deadline, char *err, size_t errlen)
{
	struct unix_addr ua;
	int fd, e;

	e = -unix_addr_fill(&ua, path);
	if (e) {
		if (e == ENOENT)
			snprintf(err, errlen, "no API socket at '%s' (its directory is missing)",
				 path);
		else
			snprintf(err, errlen, "api socket path '%s': %s", path,
				 e == ENAMETOOLONG ? "empty, or its file name is too long"
						   : strerror(e));
		return -e;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		e = errno;
		unix_addr_release(&ua);
		snprintf(err, errlen, "socket: %s", strerror(e));
		return -e;
	}
	e = connect_retry(fd, &ua.sa, deadline);
	unix_addr_release(&ua);
	if (e) {
		close(fd);
		if (e == ENOENT)
			snprintf(err, errlen, "no API socket at '%s'", path);
		else if (e == ECONNREFUSED)
			snprintf(err, errlen, "nobody serves on the API socket '%s'", path);
		else if (e == ETIMEDOUT)
			snprintf(err, errlen, "cannot connect to '%s': its server accepts nothing",
				 path);
		else
			snprintf(err, errlen, "cannot connect to '%s': %s", path, strerror(e));
		return -e;
	}
	e = check_server_uid(fd, path, err, errlen);
	if (e) {
		close(fd);
		return e;
	}
	return fd;
}

static int write_all(int fd, const char *buf, size_t len, uint64_t deadline)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				int ret = wait_fd(fd, POLLOUT, deadline);

				if (ret)
					return ret;
				continue;
			}
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads until EOF into a growing buffer; returns its length or -errno. */
static ssize_t read_all(int fd, char **out, uint64_t deadline)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap + 1), *nb;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			if (cap >= API_CLIENT_MAX_RESPONSE + 4096) {
				free(buf);
				return -EMSGSIZE;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = recv(fd, buf + len, cap - len, 0);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			int ret = wait_fd(fd, POLLIN, deadline);

			if (ret) {
				free(buf);
				return ret;
			}
			continue;
		}
		n = -errno;
		/* a reset after a complete response still counts as the response */
		if (n == -ECONNRESET && len)
			break;
		free(buf);
		return n;
	}
	buf[len] = '\0';
	*out = buf;
	return (ssize_t)len;
}

/* Parses "HTTP/1.x NNN reason\r\n headers \r\n\r\n body". */
static int parse_response(char *buf, size_t len, struct api_response *resp)
{
	char *hdr_end = strstr(buf, "\r\n\r\n");
	char *line, *body;
	size_t body_len, clen = (size_t)-1;
	int status;

	if (!hdr_end || strncmp(buf, "HTTP/1.", 7) || len < 12)
		return -EPROTO;
	if (sscanf(buf + 8, " %3d", &status) != 1 || status < 100 || status > 599)
		return -EPROTO;
	body = hdr_end + 4;
	body_len = len - (size_t)(body - buf);
	*hdr_end = '\0';
	for (line = strstr(buf, "\r\n"); line; line = strstr(line, "\r\n")) {
		line += 2;
		if (!strncasecmp(line, "Content-Length:", 15))
			clen = strtoul(line + 15, NULL, 10);
		else if (!strncasecmp(line, "Transfer-Encoding:", 18))
			return -EPROTO; /* the server always sends Content-Length */
	}
	if (clen != (size_t)-1) {
		if (clen > body_len)
			return -ECONNRESET; /* truncated */
		body_len = clen;
	}
	resp->text = malloc(body_len + 1);
	if (!resp->text)
		return -ENOMEM;
	memcpy(resp->text, body, body_len);
	resp->text[body_len] = '\0';
	resp->len = body_len;
	resp->status = status;
	resp->json = body_len ? cJSON_ParseWithLength(resp->text, body_len) : NULL;
	return 0;
}

int api_client_request_raw(const char *socket_path, const char *method, const char *uri,
			   const char *body, size_t body_len, int timeout_ms,
			   struct api_response *resp, char *err, size_t errlen)
{
	uint64_t deadline = now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 5000) * 1000000u;
	char head[512], *buf = NULL;
	ssize_t n;
	int fd, ret, hlen;

	memset(resp, 0, sizeof(*resp));
	fd = api_client_connect(socket_path, deadline, err, errlen);
	if (fd < 0)
		return fd;
	hlen =
	    snprintf(head, sizeof(head),
		     "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
		     "Accept: application/json\r\n%sContent-Length: %zu\r\n\r\n",
		     method, uri, body_len ? "Content-Type: application/json\r\n" : "", body_len);
	if (hlen < 0 || (size_t)hlen >= sizeof(head)) {
		close(fd);
		snprintf(err, errlen, "request line too long");
		return -EINVAL;
	}
	ret = write_all(fd, head, (size_t)hlen, deadline);
	if (!ret && body_len)
		ret = write_all(fd, body, body_len, deadline);
	/*
	 * A server that refuses the request (413, 403) may answer and close
	 * before it has read everything: still try to read its answer.
	 */
	n = read_all(fd, &buf, deadline);
	close(fd);
	if (n < 0) {
		ret = ret ? ret : (int)n;
		snprintf(err, errlen, "%s %s on '%s': %s", method, uri, socket_path,
			 ret == -ETIMEDOUT ? "no response in time" : strerror(-ret));
		return ret;
	}
	if (n == 0) {
		free(buf);
		snprintf(err, errlen, "%s %s on '%s': the server closed the connection", method,
			 uri, socket_path);
		return -ECONNRESET;
	}
	ret = parse_response(buf, (size_t)n, resp);
	free(buf);
	if (ret) {
		snprintf(err, errlen, "%s %s on '%s': %s", method, uri, socket_path,
			 ret == -EPROTO ? "not an HTTP response" : strerror(-ret));
		api_response_free(resp);
	}
	return ret;
}

int api_client_request(const char *socket_path, const char *method, const char *uri,
		       const cJSON *body, int timeout_ms, struct api_response *resp, char *err,
		       size_t errlen)
{
	char *text = NULL;
	int ret;

	if (body) {
		text = cJSON_PrintUnformatted(body);
		if (!text) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	ret = api_client_request_raw(socket_path, method, uri, text, text ? strlen(text) : 0,
				     timeout_ms, resp, err, errlen);
	free(text);
	return ret;
}

const char *api_response_error(const struct api_response *resp)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(resp->json, "error");

	if (cJSON_IsString(e))
		return e->valuestring;
	return resp->text ? resp->text : "";
}

void api_response_free(struct api_response *resp)
{
	free(resp->text);
	cJSON_Delete(resp->json);
	memset(resp, 0, sizeof(*resp));
}
