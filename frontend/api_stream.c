/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_stream.c - reads GET /api/v1/vm/events' chunked JSON lines
 * (api_stream.h). Raw bytes land in s->raw; chunk framing is decoded into
 * s->line, from which complete lines are handed out.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api_stream.h"
#include "clock.h"

/* Waits up to the deadline for fd to be readable, then reads into s->raw. */
static int fill(struct api_stream *s, uint64_t deadline)
{
	struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
	uint64_t now = now_ns();
	ssize_t n;
	int ms;

	if (s->raw_len == sizeof(s->raw))
		return -EPROTO; /* a header or chunk-size line that never ends */
	ms = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
	n = poll(&pfd, 1, ms);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	n = recv(s->fd, s->raw + s->raw_len, sizeof(s->raw) - s->raw_len, 0);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	if (n == 0) {
		s->ended = true;
		return 0;
	}
	s->raw_len += (size_t)n;
	return 0;
}

static void consume(struct api_stream *s, size_t n)
{
	memmove(s->raw, s->raw + n, s->raw_len - n);
	s->raw_len -= n;
}

static void *find_crlf(const char *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++)
		if (p[i] == '\r' && p[i + 1] == '\n')
			return (void *)(p + i);
	return NULL;
}

/* Moves what s->raw holds of the body into s->line (at most API_STREAM_RAW bytes). */
static int decode(struct api_stream *s)
{
	while (s->raw_len && !s->ended) {
		if (!s->chunked) {
			memcpy(s->line + s->line_len, s->raw, s->raw_len);
			s->line_len += s->raw_len;
			s->raw_len = 0;
		} else if (s->need_crlf) {
			if (s->raw_len < 2)
				return 0;
			if (s->raw[0] != '\r' || s->raw[1] != '\n')
				return -EPROTO;
			consume(s, 2);
			s->need_crlf = false;
		} else if (!s->chunk_left) {
			char *eol = find_crlf(s->raw, s->raw_len), *end;
			unsigned long size;

			if (!eol)
				return s->raw_len > 64 ? -EPROTO : 0;
			size = strtoul(s->raw, &end, 16);
			if (end == s->raw || (end != eol && *end != ';') ||
			    size > API_STREAM_MAX_LINE)
				return -EPROTO;
			consume(s, (size_t)(eol + 2 - s->raw));
			if (!size)
				s->ended = true; /* trailers, if any, are not read */
			s->chunk_left = size;
		} else {
			size_t n = s->chunk_left < s->raw_len ? s->chunk_left : s->raw_len;

			memcpy(s->line + s->line_len, s->raw, n);
			s->line_len += n;
			consume(s, n);
			s->chunk_left -= n;
			s->need_crlf = !s->chunk_left;
		}
	}
	return 0;
}

/* A complete line from s->line as JSON: 1, 0 when none is complete, -errno. */
static int take_line(struct api_stream *s, cJSON **out)
{
	char *nl = memchr(s->line, '\n', s->line_len);
	size_t n;

	if (!nl)
		return s->line_len > API_STREAM_MAX_LINE ? -EMSGSIZE : 0;
	n = (size_t)(nl - s->line);
	*out = cJSON_ParseWithLength(s->line, n);
	memmove(s->line, nl + 1, s->line_len - n - 1);
	s->line_len -= n + 1;
	return *out ? 1 : -EPROTO;
}

int api_stream_next(struct api_stream *s, int timeout_ms, cJSON **out, char *err, size_t errlen)
{
	uint64_t deadline = now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000u;
	int ret;

	*out = NULL;
	for (;;) {
		ret = take_line(s, out);
		if (ret > 0)
			return 0;
		if (!ret && s->line_len <= API_STREAM_MAX_LINE)
			ret = decode(s);
		if (!ret && (ret = take_line(s, out)) > 0)
			return 0;
		if (ret)
			break;
		if (s->ended)
			return -ENODATA;
		ret = fill(s, deadline);
		if (ret)
			break;
	}
	if (ret != -ETIMEDOUT && ret != -EINTR)
		snprintf(err, errlen, "the event stream broke: %s",
			 ret == -EPROTO ? "not chunked JSON lines" : strerror(-ret));
	return ret;
}

/* The reply's status and, when it is not a stream, its body. */
static int read_head(struct api_stream *s, uint64_t deadline, struct api_response *resp)
{
	char *end, *line, *body;
	size_t clen = 0, hlen;
	int status, ret;

	while (!(end = strstr(s->raw, "\r\n\r\n"))) {
		if (s->ended)
			return -ECONNRESET;
		ret = fill(s, deadline);
		if (ret)
			return ret;
		s->raw[s->raw_len < sizeof(s->raw) ? s->raw_len : sizeof(s->raw) - 1] = '\0';
	}
	if (strncmp(s->raw, "HTTP/1.", 7) || sscanf(s->raw + 8, " %3d", &status) != 1 ||
	    status < 100 || status > 599)
		return -EPROTO;
	hlen = (size_t)(end + 4 - s->raw);
	*end = '\0';
	for (line = strstr(s->raw, "\r\n"); line; line = strstr(line, "\r\n")) {
		line += 2;
		if (!strncasecmp(line, "Content-Length:", 15))
			clen = strtoul(line + 15, NULL, 10);
		else if (!strncasecmp(line, "Transfer-Encoding:", 18) && strstr(line, "chunked"))
			s->chunked = true;
	}
	consume(s, hlen);
	if (status == 200)
		return 200;
	/* an error reply: its JSON body (small: the server's own errors) */
	if (clen >= sizeof(s->raw))
		return -EMSGSIZE;
	while (s->raw_len < clen && !s->ended)
		if ((ret = fill(s, deadline)))
			return ret;
	body = malloc(s->raw_len + 1);
	if (!body)
		return -ENOMEM;
	memcpy(body, s->raw, s->raw_len);
	body[s->raw_len] = '\0';
	resp->status = status;
	resp->text = body;
	resp->len = s->raw_len;
	resp->json = s->raw_len ? cJSON_ParseWithLength(body, s->raw_len) : NULL;
	return status;
}

int api_stream_open(struct api_stream *s, const char *socket_path, const char *uri, int timeout_ms,
		    struct api_response *resp, char *err, size_t errlen)
{
	uint64_t deadline = now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 5000) * 1000000u;
	char req[512];
	int n, ret;

	memset(s, 0, sizeof(*s));
	memset(resp, 0, sizeof(*resp));
	s->fd = -1;
	n = snprintf(req, sizeof(req),
		     "GET %s HTTP/1.1\r\nHost: localhost\r\nAccept: application/x-ndjson\r\n\r\n",
		     uri);
	if (n < 0 || (size_t)n >= sizeof(req)) {
		snprintf(err, errlen, "request line too long");
		return -EINVAL;
	}
	s->line = malloc(API_STREAM_MAX_LINE + API_STREAM_RAW + 1);
	if (!s->line) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->fd = api_client_connect(socket_path, deadline, err, errlen);
	if (s->fd < 0) {
		ret = s->fd;
		s->fd = -1;
		api_stream_close(s);
		return ret;
	}
	/* a short request into an empty socket buffer: one send, or a broken socket */
	if (send(s->fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
		ret = -errno ? -errno : -EIO;
		snprintf(err, errlen, "GET %s on '%s': %s", uri, socket_path, strerror(-ret));
		api_stream_close(s);
		return ret;
	}
	ret = read_head(s, deadline, resp);
	if (ret == 200)
		return 0;
	api_stream_close(s);
	if (ret < 0)
		snprintf(err, errlen, "GET %s on '%s': %s", uri, socket_path,
			 ret == -ETIMEDOUT ? "no response in time"
			 : ret == -EPROTO  ? "not an HTTP response"
					   : strerror(-ret));
	return ret;
}

void api_stream_close(struct api_stream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	free(s->line);
	s->line = NULL;
	s->line_len = s->raw_len = 0;
}
