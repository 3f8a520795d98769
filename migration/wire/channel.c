/* SPDX-License-Identifier: Apache-2.0 */
#include "hostport.h"
#include "channel.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tls.h"

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

void chan_set_timeout(struct mig_chan *c, uint64_t timeout_ms)
{
	struct timeval tv = {.tv_sec = (time_t)(timeout_ms / 1000),
			     .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};

	c->timeout_ms = timeout_ms;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int connect_timeout(int fd, const struct sockaddr *sa, socklen_t len, uint64_t timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	/* SO_SNDTIMEO bounds a blocking connect() on Linux. */
	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	if (poll(&p, 1, (int)timeout_ms) <= 0)
		return -ETIMEDOUT;
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	return -soerr;
}

int chan_connect(struct mig_chan *c, const char *addr, uint64_t timeout_ms, char *err,
		 size_t errlen)
{
	struct addrinfo *res, *ai;
	const char *upath = hostport_unix_path(addr);
	int ret;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (upath) {
		ret = chan_unix_connect(upath, &c->fd);
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
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);

		if (fd < 0) {
			ret = -errno;
			continue;
		}
		chan_set_timeout(&(struct mig_chan){.fd = fd}, timeout_ms);
		ret = connect_timeout(fd, ai->ai_addr, ai->ai_addrlen, timeout_ms);
		if (ret == 0) {
			c->fd = fd;
			break;
		}
		close(fd);
	}
	freeaddrinfo(res);
	if (c->fd < 0) {
		snprintf(err, errlen, "cannot connect to %s: %s", addr, strerror(-ret));
		return ret;
	}
	c->timeout_ms = timeout_ms;
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
	do
		r = poll(&p, 1, timeout_ms ? (int)timeout_ms : -1);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		snprintf(err, errlen, "no connection within %llu ms",
			 (unsigned long long)timeout_ms);
		return -ETIMEDOUT;
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

int chan_start_tls(struct mig_chan *c, struct tls_ctx *t, const char *peer_addr, char *err,
		   size_t errlen)
{
	return tls_conn_start(&c->tls, c->fd, c->timeout_ms, t, peer_addr, err, errlen);
}

void chan_close(struct mig_chan *c)
{
	tls_conn_free(c->tls);
	c->tls = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

void chan_abort(struct mig_chan *c)
{
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
}

void chan_binding(const struct mig_chan *c, uint8_t out[MIG_BIND_LEN])
{
	memset(out, 0, MIG_BIND_LEN);
	/* A failed export binds to all-ones: never the plain channel's zeros. */
	if (c->tls && tls_export(c->tls, MIG_BIND_LABEL, out, MIG_BIND_LEN))
		memset(out, 0xff, MIG_BIND_LEN);
}

void chan_cut(struct mig_chan *c)
{
	chan_abort(c);
	if (!c->error)
		c->error = -ECONNRESET;
}

int chan_io_error(struct mig_chan *c, int e)
{
	if (!c->error)
		c->error = e == EAGAIN ? -ETIMEDOUT : -e;
	return c->error;
}

/* Bytes that left on c: its own count, and the shared one it feeds. */
void chan_count_out(struct mig_chan *c, uint64_t n)
{
	c->bytes_out += n;
	if (c->total_out)
		__atomic_fetch_add(c->total_out, n, __ATOMIC_RELAXED);
}

/* TLS: small pieces (a record header and its payload) go out as one TLS record. */
static int tls_writev(struct mig_chan *c, struct iovec *iov, int iovcnt)
{
	uint8_t small[4096];
	struct iovec one;
	size_t total = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (total <= sizeof(small)) {
		size_t off = 0;

		for (int i = 0; i < iovcnt; i++) {
			if (iov[i].iov_len)
				memcpy(small + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
		one = (struct iovec){.iov_base = small, .iov_len = total};
		iov = &one;
		iovcnt = 1;
	}
	for (int i = 0; i < iovcnt; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left) {
			long n = tls_write(c->tls, c->timeout_ms, p, left);

			if (n < 0)
				return chan_io_error(c, (int)-n);
			chan_count_out(c, (uint64_t)n);
			p += n;
			left -= (size_t)n;
		}
	}
	return 0;
}

/* Moves past n bytes of the pieces: whole pieces dropped, a partial one shortened. */
static void iov_advance(struct iovec **iov, int *iovcnt, size_t n)
{
	while (*iovcnt > 0 && n >= (*iov)->iov_len) {
		n -= (*iov)->iov_len;
		(*iov)++;
		(*iovcnt)--;
	}
	if (*iovcnt > 0) {
		(*iov)->iov_base = (char *)(*iov)->iov_base + n;
		(*iov)->iov_len -= n;
	}
}

int chan_writev(struct mig_chan *c, struct iovec *iov, int iovcnt)
{
	if (c->error)
		return c->error;
	if (c->tls)
		return tls_writev(c, iov, iovcnt);
	while (iovcnt > 0) {
		ssize_t n =
		    sendmsg(c->fd, &(struct msghdr){.msg_iov = iov, .msg_iovlen = (size_t)iovcnt},
			    MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return chan_io_error(c, errno);
		}
		chan_count_out(c, (uint64_t)n);
		iov_advance(&iov, &iovcnt, (size_t)n);
	}
	return 0;
}

int chan_write(struct mig_chan *c, const void *buf, size_t len)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return chan_writev(c, &iov, 1);
}

int chan_read(struct mig_chan *c, void *buf, size_t len)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return chan_readv(c, &iov, 1);
}

int chan_readv(struct mig_chan *c, struct iovec *iov, int iovcnt)
{
	if (c->error)
		return c->error;
	while (iovcnt > 0) {
		ssize_t n;

		if (!iov->iov_len) {
			iov++;
			iovcnt--;
			continue;
		}
		if (c->tls) {
			/* TLS records do not line up with the pieces: one piece at a time. */
			long r = tls_read(c->tls, c->timeout_ms, iov->iov_base, iov->iov_len);

			if (r < 0)
				return chan_io_error(c, (int)-r);
			n = r;
		} else {
			struct msghdr mh = {.msg_iov = iov,
					    .msg_iovlen =
						(size_t)(iovcnt < IOV_MAX ? iovcnt : IOV_MAX)};

			n = recvmsg(c->fd, &mh, 0);
			if (n == 0) {
				c->error = -ENODATA; /* EOF where more of a record was due */
				return c->error;
			}
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return chan_io_error(c, errno);
			}
		}
		c->bytes_in += (uint64_t)n;
		iov_advance(&iov, &iovcnt, (size_t)n);
	}
	return 0;
}

void chan_frame_record(uint8_t h[MIG_REC_HDR_LEN], struct iovec iov[3], uint32_t type,
		       const void *a, uint32_t alen, const void *b, uint32_t blen)
{
	mig_rec_hdr_encode(h, type, alen + blen);
	iov[0] = (struct iovec){.iov_base = h, .iov_len = MIG_REC_HDR_LEN};
	iov[1] = (struct iovec){.iov_base = (void *)a, .iov_len = alen};
	iov[2] = (struct iovec){.iov_base = (void *)b, .iov_len = blen};
}

int chan_send_record(struct mig_chan *c, uint32_t type, const void *a, uint32_t alen, const void *b,
		     uint32_t blen)
{
	uint8_t h[MIG_REC_HDR_LEN];
	struct iovec iov[3];

	chan_frame_record(h, iov, type, a, alen, b, blen);
	return chan_writev(c, iov, 3);
}

void chan_set_role(struct mig_chan *c, uint32_t role, enum mig_dir receives)
{
	c->role = role;
	c->framed = (uint8_t)(1 + receives);
}

static int read_hdr(struct mig_chan *c, struct mig_rec_hdr *h)
{
	uint8_t b[MIG_REC_HDR_LEN];
	int ret = chan_read(c, b, sizeof(b));

	if (!ret)
		mig_rec_hdr_decode(b, h);
	return ret;
}

static int protocol_error(struct mig_chan *c)
{
	if (!c->error)
		c->error = -EPROTO;
	return c->error;
}

int chan_recv_rec(struct mig_chan *c, uint32_t ctx_max, struct mig_rec_hdr *h, char *err,
		  size_t errlen)
{
	int ret;

	if (!c->framed) {
		if (err && errlen)
			snprintf(err, errlen, "%s connection: record before the hello",
				 c->name[0] ? c->name : "a");
		return protocol_error(c);
	}
	ret = read_hdr(c, h);
	if (ret) {
		if (err && errlen)
			snprintf(err, errlen, "%s", chan_strerror(ret));
		return ret;
	}
	ret = mig_rec_check(h, c->role, (enum mig_dir)(c->framed - 1), ctx_max, err, errlen);
	return ret ? protocol_error(c) : 0;
}

int chan_recv_record(struct mig_chan *c, uint32_t ctx_max, struct mig_rec_hdr *h, void *buf,
		     size_t cap, char *err, size_t errlen)
{
	int ret = chan_recv_rec(c, ctx_max, h, err, errlen);

	if (ret)
		return ret;
	if (h->len > cap) {
		if (err && errlen)
			snprintf(err, errlen, "%s record of %u bytes: at most %zu expected here",
				 mig_rec_name(h->type), h->len, cap);
		return protocol_error(c);
	}
	ret = chan_read(c, buf, h->len);
	if (ret && err && errlen)
		snprintf(err, errlen, "%s: %s", mig_rec_name(h->type), chan_strerror(ret));
	if (!ret)
		chan_note_record(c);
	return ret;
}

void chan_note_record(struct mig_chan *c)
{
	__atomic_add_fetch(&c->records_in, 1, __ATOMIC_RELAXED);
}

int chan_send_hello(struct mig_chan *c, uint64_t session, uint32_t role, uint32_t index)
{
	uint8_t h[MIG_HELLO_LEN];

	mig_hello_encode(h, session, role, index);
	chan_set_role(c, role, MIG_DIR_T2S);
	return chan_write(c, h, sizeof(h));
}

int chan_recv_hello(struct mig_chan *c, struct mig_hello *h, char *err, size_t errlen)
{
	uint8_t b[MIG_HELLO_LEN];
	int ret = chan_read(c, b, sizeof(b));

	if (ret) {
		snprintf(err, errlen, "reading the connection's hello: %s", strerror(-ret));
		return ret;
	}
	ret = mig_hello_decode(b, h, err, errlen);
	if (ret)
		return ret;
	chan_set_role(c, h->role, MIG_DIR_S2T);
	return 0;
}

const char *chan_strerror(int err)
{
	if (err == -ENODATA)
		return "the stream ended in the middle of a record";
	if (err == -ETIMEDOUT)
		return "timed out";
	if (err == -EKEYREJECTED)
		return "the peer rejected this host's TLS certificate (not signed by a CA it "
		       "trusts?)";
	return strerror(-err);
}

int host_boot_id(uint8_t id[16])
{
	char text[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	unsigned n = 0;

	memset(id, 0, 16);
	if (!f)
		return -ENOENT;
	if (!fgets(text, sizeof(text), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	for (const char *p = text; *p && n < 32; p++) {
		int v = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
						 : -1;

		if (v < 0)
			continue;
		id[n / 2] |= (uint8_t)(n % 2 ? v : v << 4);
		n++;
	}
	return n == 32 ? 0 : -EIO;
}
