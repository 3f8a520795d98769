/* SPDX-License-Identifier: Apache-2.0 */
/*
 * channel.c - a connection's I/O (channel.h): reads and writes bounded by
 * deadlines, through TLS when it runs, the sticky error, the record
 * framing and the hello. Making the connection is chan_connect.c's.
 */
#include "channel.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "deadline.h"
#include "tls.h"

void chan_set_deadline(struct mig_chan *c, uint64_t deadline_ns)
{
	c->deadline_ns = deadline_ns;
}

/*
 * The deadline of a call that starts now: its own (timeout_ms from now)
 * and, reading, the channel's, the nearer; 0 when neither bounds it (no
 * clock read then: the data receivers' calls).
 */
static uint64_t call_deadline(const struct mig_chan *c, bool reading)
{
	uint64_t wait = reading ? c->deadline_ns : 0;

	if (!c->timeout_ms && !wait)
		return 0;
	return deadline_min(wait, deadline_at(now_ns(), c->timeout_ms));
}

/* Until `end`: 0 once fd is ready for `events`, -ETIMEDOUT, or -errno. */
static int wait_ready(int fd, short events, uint64_t end)
{
	struct pollfd p = {.fd = fd, .events = events};
	int r = deadline_poll(&p, 1, end);

	return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : r;
}

/*
 * The socket options are kept for the few system calls made on the
 * descriptor outside the calls below (a connect, chan_fds.c's recvmsg):
 * there they bound each call on their own.
 */
void chan_set_timeout(struct mig_chan *c, uint64_t timeout_ms)
{
	struct timeval tv = {.tv_sec = (time_t)(timeout_ms / 1000),
			     .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};

	c->timeout_ms = timeout_ms;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int chan_start_tls(struct mig_chan *c, struct tls_ctx *t, const char *peer_addr, char *err,
		   size_t errlen)
{
	return tls_conn_start(&c->tls, c->fd, call_deadline(c, true), t, peer_addr, err, errlen);
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

/*
 * After a sendmsg() or recvmsg() on c failed with errno: 0 to try again
 * (EINTR, or, with a deadline, the socket turned ready for `events` before
 * it), else the channel's error (chan_io_error()).
 */
static int io_retry(struct mig_chan *c, short events, uint64_t end)
{
	int ret;

	if (errno == EINTR)
		return 0;
	if (!end || (errno != EAGAIN && errno != EWOULDBLOCK))
		return chan_io_error(c, errno);
	ret = wait_ready(c->fd, events, end);
	return ret ? chan_io_error(c, -ret) : 0;
}

/* Bytes that left on c: its own count, and the shared one it feeds. */
void chan_count_out(struct mig_chan *c, uint64_t n)
{
	c->bytes_out += n;
	if (c->total_out)
		__atomic_fetch_add(c->total_out, n, __ATOMIC_RELAXED);
}

/* TLS: small pieces (a record header and its payload) go out as one TLS record. */
static int tls_writev(struct mig_chan *c, struct iovec *iov, int iovcnt, uint64_t end)
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
			long n = tls_write(c->tls, end, p, left);

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

/*
 * With a deadline each system call is tried without blocking first (the
 * common case, room in the socket buffer or bytes already there, costs
 * nothing more) and waited for with poll() until the deadline otherwise:
 * the call as a whole ends by it, however many partial transfers it takes.
 */
int chan_writev(struct mig_chan *c, struct iovec *iov, int iovcnt)
{
	uint64_t end;

	if (c->error)
		return c->error;
	end = call_deadline(c, false);
	if (c->tls)
		return tls_writev(c, iov, iovcnt, end);
	while (iovcnt > 0) {
		ssize_t n =
		    sendmsg(c->fd, &(struct msghdr){.msg_iov = iov, .msg_iovlen = (size_t)iovcnt},
			    MSG_NOSIGNAL | (end ? MSG_DONTWAIT : 0));

		if (n < 0) {
			int ret = io_retry(c, POLLOUT, end);

			if (ret)
				return ret;
			continue;
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
	uint64_t end;

	if (c->error)
		return c->error;
	end = call_deadline(c, true);
	while (iovcnt > 0) {
		ssize_t n;

		if (!iov->iov_len) {
			iov++;
			iovcnt--;
			continue;
		}
		if (c->tls) {
			/* TLS records do not line up with the pieces: one piece at a time. */
			long r = tls_read(c->tls, end, iov->iov_base, iov->iov_len);

			if (r < 0)
				return chan_io_error(c, (int)-r);
			n = r;
		} else {
			struct msghdr mh = {.msg_iov = iov,
					    .msg_iovlen =
						(size_t)(iovcnt < IOV_MAX ? iovcnt : IOV_MAX)};

			n = recvmsg(c->fd, &mh, end ? MSG_DONTWAIT : 0);
			if (n == 0) {
				c->error = -ENODATA; /* EOF where more of a record was due */
				return c->error;
			}
			if (n < 0) {
				int ret = io_retry(c, POLLIN, end);

				if (ret)
					return ret;
				continue;
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
	uint64_t wait = c->deadline_ns;
	int ret;

	/* One deadline for the header and the payload: the record is the wait. */
	c->deadline_ns = call_deadline(c, true);
	ret = chan_recv_rec(c, ctx_max, h, err, errlen);
	if (!ret && h->len > cap) {
		if (err && errlen)
			snprintf(err, errlen, "%s record of %u bytes: at most %zu expected here",
				 mig_rec_name(h->type), h->len, cap);
		ret = protocol_error(c);
	} else if (!ret) {
		ret = chan_read(c, buf, h->len);
		if (ret && err && errlen)
			snprintf(err, errlen, "%s: %s", mig_rec_name(h->type), chan_strerror(ret));
	}
	if (!ret)
		chan_note_record(c);
	c->deadline_ns = wait;
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
