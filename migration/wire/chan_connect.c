/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chan_connect.c - making a channel's connection (channel.h): connecting
 * to "host:port" (resolved; every address tried by one deadline, the
 * timeout from the call's start) or "unix:PATH" (chan_unix.c), listening,
 * and accepting by a deadline. TCP sockets get TCP_NODELAY and 4 MiB
 * buffers.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "clock.h"
#include "deadline.h"
#include "hostport.h"

/* "host:port" to addresses; flags AI_PASSIVE for listening. */
static int resolve(const char *addr, int flags, struct addrinfo **res, char *err, size_t errlen)
{
	struct addrinfo hints = {
	    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = flags};
	char host[HOSTPORT_HOST_MAX], port[HOSTPORT_PORT_MAX];
	int ret = hostport_split(addr, host, sizeof(host), port, sizeof(port));

	if (ret) {
		snprintf(err, errlen, "bad address '%s' (expected host:port)", addr);
		return ret;
	}
	ret = getaddrinfo(host, port, &hints, res);
	if (ret) {
		snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	return 0;
}

static void tune_socket(int fd)
{
	int one = 1, buf = 4 << 20;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

/*
 * Connects fd by `end` (0: none). Non-blocking, so that only the deadline
 * bounds the wait (a blocking connect() under SO_SNDTIMEO, then a poll,
 * took twice the timeout); fd is blocking again afterwards.
 */
static int connect_by(int fd, const struct sockaddr *sa, socklen_t len, uint64_t end)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int fl = fcntl(fd, F_GETFL), soerr = 0, r;
	socklen_t sl = sizeof(soerr);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	r = connect(fd, sa, len) == 0 ? 0 : -errno;
	if (r == -EINPROGRESS || r == -EINTR) {
		r = deadline_poll(&p, 1, end);
		if (r > 0)
			r = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 ? -errno : -soerr;
		else if (r == 0)
			r = -ETIMEDOUT;
	}
	if (!r && fcntl(fd, F_SETFL, fl) < 0)
		r = -errno;
	return r;
}

int chan_connect(struct mig_chan *c, const char *addr, uint64_t timeout_ms, char *err,
		 size_t errlen)
{
	struct addrinfo *res, *ai;
	const char *upath = hostport_unix_path(addr);
	uint64_t end = deadline_at(now_ns(), timeout_ms);
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (upath) {
		ret = chan_unix_connect(upath, timeout_ms, &c->fd);
		if (ret) {
			snprintf(err, errlen, "cannot connect to %s: %s", addr, strerror(-ret));
			return ret;
		}
		chan_set_timeout(c, timeout_ms);
		return 0;
	}
	ret = resolve(addr, 0, &res, err, errlen);
	if (ret)
		return ret;
	ret = -ECONNREFUSED;
	/* All addresses by one deadline: a name with many cannot multiply it. */
	for (ai = res; ai && (!end || now_ns() < end); ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);

		if (fd < 0) {
			ret = -errno;
			continue;
		}
		ret = connect_by(fd, ai->ai_addr, ai->ai_addrlen, end);
		if (ret == 0) {
			c->fd = fd;
			break;
		}
		close(fd);
	}
	freeaddrinfo(res);
	if (c->fd < 0) {
		if (ai && ret != -ETIMEDOUT) /* the deadline passed between two addresses */
			ret = -ETIMEDOUT;
		snprintf(err, errlen, "cannot connect to %s: %s", addr, strerror(-ret));
		return ret;
	}
	chan_set_timeout(c, timeout_ms);
	tune_socket(c->fd);
	return 0;
}

int chan_listen(const char *addr, int *lfd, char *err, size_t errlen)
{
	struct addrinfo *res;
	const char *upath = hostport_unix_path(addr);
	int ret, fd, one = 1;

	if (upath) {
		ret = chan_unix_listen(upath, lfd);
		if (ret)
			snprintf(err, errlen, "cannot listen on %s: %s", addr,
				 ret == -EEXIST	      ? "the path exists and is not a socket"
				 : ret == -EADDRINUSE ? "another process listens there"
						      : strerror(-ret));
		return ret;
	}
	ret = resolve(addr, AI_PASSIVE, &res, err, errlen);
	if (ret)
		return ret;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 16) < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return ret;
	}
	freeaddrinfo(res);
	*lfd = fd;
	return 0;
}

int chan_accept(int lfd, struct mig_chan *c, uint64_t timeout_ms, char *err, size_t errlen)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	int r;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	/* A deadline: a signal resumes the wait with the time left, not the whole timeout. */
	r = deadline_poll(&p, 1, deadline_at(now_ns(), timeout_ms));
	if (r == 0) {
		snprintf(err, errlen, "no connection within %llu ms",
			 (unsigned long long)timeout_ms);
		return -ETIMEDOUT;
	}
	if (r < 0) {
		snprintf(err, errlen, "accept: %s", strerror(-r));
		return r;
	}
	c->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c->fd < 0) {
		r = -errno;
		snprintf(err, errlen, "accept: %s", strerror(errno));
		return r;
	}
	tune_socket(c->fd);
	return 0;
}
