/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_channel.c - record framing over a socketpair: the hello, the table
 * check on every header, the sticky error, timeouts, chan_abort() from
 * another thread, a stream that ends inside a record, scattered reads, and
 * deadlines: a peer trickling a byte at a time cannot extend a call or a
 * wait past its deadline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "clock.h"
#include "deadline.h"

/* src: the source's end of a connection; dst: the target's. */
struct pair {
	struct mig_chan src, dst;
};

static int setup(void **state)
{
	struct pair *p = calloc(1, sizeof(*p));
	int sv[2];

	if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	p->src.fd = sv[0];
	p->dst.fd = sv[1];
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct pair *p = *state;

	chan_close(&p->src);
	chan_close(&p->dst);
	free(p);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_hello(void **state)
{
	struct pair *p = *state;
	struct mig_hello h;
	char err[256];

	assert_int_equal(chan_send_hello(&p->src, 0xabcdef, MIG_ROLE_DATA, 2), 0);
	assert_int_equal(chan_recv_hello(&p->dst, &h, err, sizeof(err)), 0);
	assert_true(h.session_id == 0xabcdef);
	assert_int_equal(h.role, MIG_ROLE_DATA);
	assert_int_equal(h.index, 2);
	assert_int_equal(p->dst.role, MIG_ROLE_DATA);
	assert_int_equal(p->src.role, MIG_ROLE_DATA);
	assert_int_equal(p->src.bytes_out, MIG_HELLO_LEN);
	assert_int_equal(p->dst.bytes_in, MIG_HELLO_LEN);
	/* A bad hello: refused, the channel stays unframed. */
	assert_int_equal(chan_write(&p->src, "GET / HTTP/1.1\r\nHost: x\r\n\r\n\0\0\0\0\0", 32), 0);
	p->dst.framed = 0;
	assert_int_equal(chan_recv_hello(&p->dst, &h, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "not a vmm migration stream (bad magic)");
	assert_int_equal(p->dst.framed, 0);
	/* A hello cut short. */
	assert_int_equal(chan_write(&p->src, "VMMMIG", 6), 0);
	shutdown(p->src.fd, SHUT_WR);
	assert_int_equal(chan_recv_hello(&p->dst, &h, err, sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "reading the connection's hello"));
}

static void test_framing(void **state)
{
	struct pair *p = *state;
	struct mig_rec_hdr h;
	uint8_t hdr[MIG_PAGES_HDR_LEN], idx[4], page[4096], got[sizeof(hdr) + 4 + 4096];
	struct mig_pages_hdr ph = {.slot = 1, .ndata = 1, .data_len = 4096};
	struct mig_pages_view v;
	char err[256];
	uint8_t sync[MIG_SYNC_LEN];
	struct mig_sync s;

	chan_set_role(&p->src, MIG_ROLE_DATA, MIG_DIR_T2S);
	chan_set_role(&p->dst, MIG_ROLE_DATA, MIG_DIR_S2T);
	mig_pages_hdr_encode(hdr, &ph);
	le_put32(idx, 77);
	memset(page, 0x5a, sizeof(page));
	{
		struct iovec iov[4] = {{NULL, 0}, {hdr, sizeof(hdr)}, {idx, 4}, {page, 4096}};
		uint8_t rh[MIG_REC_HDR_LEN];

		/* The sender's zero-copy path: its own iovec behind an encoded header. */
		mig_rec_hdr_encode(rh, MIG_REC_PAGES, (uint32_t)mig_pages_len(&ph));
		iov[0] = (struct iovec){rh, sizeof(rh)};
		assert_int_equal(chan_writev(&p->src, iov, 4), 0);
	}
	mig_sync_encode(sync, &(struct mig_sync){.seq = 1});
	assert_int_equal(chan_send_record(&p->src, MIG_REC_SYNC, sync, 4, sync + 4, 4), 0);

	assert_int_equal(chan_recv_rec(&p->dst, 0, &h, err, sizeof(err)), 0);
	assert_int_equal(h.type, MIG_REC_PAGES);
	assert_int_equal(h.len, sizeof(got));
	assert_int_equal(chan_read(&p->dst, got, h.len), 0);
	assert_int_equal(mig_pages_decode(got, h.len, &v, err, sizeof(err)), 0);
	assert_int_equal(v.h.slot, 1);
	assert_int_equal(v.data_idx[0], 77);
	assert_memory_equal(v.data, page, 4096);
	assert_int_equal(chan_recv_record(&p->dst, 0, &h, sync, sizeof(sync), err, sizeof(err)), 0);
	assert_int_equal(mig_sync_decode(sync, h.len, &s, err, sizeof(err)), 0);
	assert_true(s.seq == 1);
	assert_int_equal(p->src.bytes_out, p->dst.bytes_in);
	assert_int_equal(p->dst.bytes_in, 8 + sizeof(got) + 8 + 8);
}

/* A record the table refuses here: the error sticks to every later call. */
static void test_sticky_error(void **state)
{
	struct pair *p = *state;
	struct mig_rec_hdr h;
	char err[256];
	uint8_t b[8];

	chan_set_role(&p->dst, MIG_ROLE_DATA, MIG_DIR_S2T);
	assert_int_equal(chan_send_record(&p->src, MIG_REC_VM_DESC, "12345678", 8, NULL, 0), 0);
	assert_int_equal(chan_send_record(&p->src, MIG_REC_SYNC, "12345678", 8, NULL, 0), 0);
	assert_int_equal(chan_recv_rec(&p->dst, 0, &h, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "unexpected VM_DESC record (type 1, 8 bytes) on the data "
				 "connection, source to target");
	assert_int_equal(chan_read(&p->dst, b, sizeof(b)), -EPROTO);
	assert_int_equal(chan_write(&p->dst, b, sizeof(b)), -EPROTO);
	assert_int_equal(chan_recv_rec(&p->dst, 0, &h, err, sizeof(err)), -EPROTO);
	assert_int_equal(p->dst.bytes_in, 8);
}

static void test_limits(void **state)
{
	struct pair *p = *state;
	struct mig_rec_hdr h;
	char err[256];
	uint8_t buf[16];

	chan_set_role(&p->dst, MIG_ROLE_MAIN, MIG_DIR_S2T);
	mig_rec_hdr_encode(buf, MIG_REC_VM_STATE, 100u << 20);
	assert_int_equal(chan_write(&p->src, buf, 8), 0);
	assert_int_equal(chan_recv_rec(&p->dst, 0, &h, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "VM_STATE: record larger than 1 MiB (104857600 bytes)");
	/* A record before the hello. */
	p->src.framed = 0;
	assert_int_equal(chan_recv_rec(&p->src, 0, &h, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "before the hello"));
}

static void test_recv_record_cap(void **state)
{
	struct pair *p = *state;
	struct mig_rec_hdr h;
	char err[256], msg[8];

	chan_set_role(&p->src, MIG_ROLE_MAIN, MIG_DIR_T2S);
	assert_int_equal(
	    chan_send_record(&p->dst, MIG_REC_ERROR, "too long a message", 18, NULL, 0), 0);
	assert_int_equal(chan_recv_record(&p->src, 0, &h, msg, sizeof(msg), err, sizeof(err)),
			 -EPROTO);
	assert_non_null(strstr(err, "ERROR record of 18 bytes"));
}

static void test_timeout(void **state)
{
	struct pair *p = *state;
	struct mig_rec_hdr h;
	char err[256];
	uint64_t t0 = now_ms();

	chan_set_role(&p->dst, MIG_ROLE_MAIN, MIG_DIR_S2T);
	chan_set_timeout(&p->dst, 50);
	assert_int_equal(chan_recv_rec(&p->dst, 0, &h, err, sizeof(err)), -ETIMEDOUT);
	assert_true(now_ms() - t0 >= 40);
	assert_string_equal(err, "timed out");
	/* Sticky: at once, even though a record is there now. */
	assert_int_equal(chan_send_record(&p->src, MIG_REC_SYNC, "12345678", 8, NULL, 0), 0);
	t0 = now_ms();
	assert_int_equal(chan_recv_rec(&p->dst, 0, &h, err, sizeof(err)), -ETIMEDOUT);
	assert_true(now_ms() - t0 < 40);
}

/* Writes len bytes one at a time, TRICKLE_MS apart: a peer that keeps the link just alive. */
#define TRICKLE_MS 30
struct trickler {
	int fd;
	const uint8_t *bytes;
	size_t len;
};

static void *trickle(void *arg)
{
	struct trickler *t = arg;

	for (size_t i = 0; i < t->len; i++) {
		usleep(TRICKLE_MS * 1000);
		if (send(t->fd, t->bytes + i, 1, MSG_NOSIGNAL) != 1)
			break;
	}
	return NULL;
}

/*
 * A record trickled a byte every 30 ms (24 bytes: 700 ms or more) to a
 * channel whose timeout is 100 ms: the read ends at 100 ms. A timeout per
 * system call (SO_RCVTIMEO) would have waited the whole record out.
 */
static void test_trickled_record(void **state)
{
	struct pair *p = *state;
	uint8_t rec[MIG_REC_HDR_LEN + MIG_SYNC_LEN] = {0}, buf[64];
	struct trickler t = {p->src.fd, rec, sizeof(rec)};
	struct mig_rec_hdr h;
	char err[256];
	pthread_t th;
	uint64_t t0;

	mig_rec_hdr_encode(rec, MIG_REC_SYNC, MIG_SYNC_LEN);
	chan_set_role(&p->dst, MIG_ROLE_DATA, MIG_DIR_S2T);
	chan_set_timeout(&p->dst, 100);
	assert_int_equal(pthread_create(&th, NULL, trickle, &t), 0);
	t0 = now_ms();
	assert_int_equal(chan_recv_record(&p->dst, 0, &h, buf, sizeof(buf), err, sizeof(err)),
			 -ETIMEDOUT);
	assert_true(now_ms() - t0 >= 100);
	assert_true(now_ms() - t0 < 100 + 10 * TRICKLE_MS * (uint64_t)sizeof(rec));
	shutdown(p->src.fd, SHUT_RDWR);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/* One chan_read() of many bytes trickled: the call is the wait, not each recvmsg(). */
static void test_trickled_read(void **state)
{
	struct pair *p = *state;
	uint8_t bytes[32] = {0}, buf[32];
	struct trickler t = {p->src.fd, bytes, sizeof(bytes)};
	pthread_t th;

	chan_set_timeout(&p->dst, 100);
	assert_int_equal(pthread_create(&th, NULL, trickle, &t), 0);
	assert_int_equal(chan_read(&p->dst, buf, sizeof(buf)), -ETIMEDOUT);
	shutdown(p->src.fd, SHUT_RDWR);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/*
 * A wait of many calls under one deadline (chan_set_deadline): each byte
 * comes well within the channel's timeout, yet the wait ends at the
 * deadline. Writes never look at a reader's deadline.
 */
static void test_deadline_spans_calls(void **state)
{
	struct pair *p = *state;
	uint8_t bytes[40] = {0}, b;
	struct trickler t = {p->src.fd, bytes, sizeof(bytes)};
	pthread_t th;
	uint64_t t0 = now_ms();
	int ret = 0, got = 0;

	chan_set_timeout(&p->dst, 1000);
	chan_set_deadline(&p->dst, deadline_at(now_ns(), 150));
	/* A reader's deadline that passed does not fail this thread's sends. */
	assert_int_equal(chan_write(&p->dst, "x", 1), 0);
	assert_int_equal(pthread_create(&th, NULL, trickle, &t), 0);
	while (!ret) {
		ret = chan_read(&p->dst, &b, 1);
		got += !ret;
	}
	assert_int_equal(ret, -ETIMEDOUT);
	assert_true(got < (int)sizeof(bytes));
	assert_true(now_ms() - t0 >= 150);
	shutdown(p->src.fd, SHUT_RDWR);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* A cleared deadline: reads wait for bytes again (here: the end of the stream). */
	p->dst.error = 0;
	chan_set_deadline(&p->dst, 0);
	chan_set_timeout(&p->dst, 0);
	assert_int_equal(chan_read(&p->dst, &b, 1), -ENODATA);
}

/*
 * A write the peer drains 2 KiB every 30 ms (4 MiB: a minute) ends by the
 * channel's timeout, 200 ms: the socket makes progress far more often than
 * that, so a timeout per system call (SO_SNDTIMEO) would never fire.
 */
struct drain {
	int fd, stop;
};

static void *slow_drain(void *arg)
{
	struct drain *d = arg;
	char b[2048];

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE) && recv(d->fd, b, sizeof(b), 0) > 0)
		usleep(TRICKLE_MS * 1000);
	return NULL;
}

static void test_trickled_write(void **state)
{
	struct pair *p = *state;
	size_t len = 4 << 20;
	uint8_t *big = calloc(1, len);
	struct drain d = {p->dst.fd, 0};
	int small = 4096;
	pthread_t th;
	uint64_t t0;

	assert_non_null(big);
	setsockopt(p->src.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	assert_int_equal(pthread_create(&th, NULL, slow_drain, &d), 0);
	chan_set_timeout(&p->src, 200);
	t0 = now_ms();
	assert_int_equal(chan_write(&p->src, big, len), -ETIMEDOUT);
	assert_true(now_ms() - t0 < 5000);
	__atomic_store_n(&d.stop, 1, __ATOMIC_RELEASE);
	shutdown(p->dst.fd, SHUT_RDWR);
	shutdown(p->src.fd, SHUT_RDWR);
	assert_int_equal(pthread_join(th, NULL), 0);
	free(big);
}

/*
 * Signals every 20 ms at a thread in chan_accept() (a profiler, a
 * SIGCHLD): each resumes its wait with the time left, so it still ends by
 * its deadline, 1 s. A wait restarted whole after each signal would last
 * as long as they come (5 s here).
 */
struct interrupter {
	pthread_t target;
	int stop;
};

static void on_usr1(int sig)
{
	(void)sig;
}

static void *interrupt(void *arg)
{
	struct interrupter *in = arg;

	for (int i = 0; i < 250 && !__atomic_load_n(&in->stop, __ATOMIC_ACQUIRE); i++) {
		pthread_kill(in->target, SIGUSR1);
		usleep(20 * 1000);
	}
	return NULL;
}

static void test_accept_deadline(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sigaction act = {.sa_handler = on_usr1}, old;
	struct interrupter in = {pthread_self(), 0};
	struct mig_chan c;
	char err[128];
	pthread_t th;
	uint64_t t0;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	(void)state;
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(sigaction(SIGUSR1, &act, &old), 0);
	assert_int_equal(pthread_create(&th, NULL, interrupt, &in), 0);
	t0 = now_ms();
	assert_int_equal(chan_accept(lfd, &c, 1000, err, sizeof(err)), -ETIMEDOUT);
	assert_true(now_ms() - t0 >= 1000);
	assert_true(now_ms() - t0 < 4000);
	assert_string_equal(err, "no connection within 1000 ms");
	__atomic_store_n(&in.stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
	close(lfd);
}

/*
 * A UNIX listener whose backlog is full (a stopped or hung vmm on the
 * upgrade socket): connecting to it ends by the timeout. A blocking
 * connect() without one waits until the listener accepts, for ever.
 */
static void test_unix_connect_full(void **state)
{
	char dir[] = "/tmp/test_channel.XXXXXX", addr[128]; /* "unix:" and a sun_path */
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int lfd, cfd, ret;
	struct mig_chan c;
	char err[256];
	uint64_t t0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	snprintf(addr, sizeof(addr), "unix:%s", sa.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0 && cfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	/* The one connection a backlog of 0 holds, never accepted. */
	assert_int_equal(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	t0 = now_ms();
	ret = chan_connect(&c, addr, 300, err, sizeof(err));
	assert_int_equal(ret, -ETIMEDOUT);
	assert_true(now_ms() - t0 >= 250);
	assert_true(now_ms() - t0 < 5000);
	close(cfd);
	close(lfd);
	unlink(sa.sun_path);
	rmdir(dir);
}

static void *blocked_reader(void *arg)
{
	struct mig_chan *c = arg;
	struct mig_rec_hdr h;

	return (void *)(intptr_t)chan_recv_rec(c, 0, &h, NULL, 0);
}

static void test_abort(void **state)
{
	struct pair *p = *state;
	pthread_t t;
	void *ret;

	chan_set_role(&p->dst, MIG_ROLE_MAIN, MIG_DIR_S2T);
	assert_int_equal(pthread_create(&t, NULL, blocked_reader, &p->dst), 0);
	usleep(50000);
	chan_abort(&p->dst);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_int_equal((int)(intptr_t)ret, -ENODATA);
	assert_int_equal(chan_write(&p->dst, "x", 1), -ENODATA);
}

static void test_eof_mid_record(void **state)
{
	struct pair *p = *state;
	struct mig_rec_hdr h;
	char err[256], buf[100];
	uint8_t rh[MIG_REC_HDR_LEN];

	chan_set_role(&p->dst, MIG_ROLE_DATA, MIG_DIR_S2T);
	mig_rec_hdr_encode(rh, MIG_REC_PAGES, 100);
	assert_int_equal(chan_write(&p->src, rh, sizeof(rh)), 0);
	assert_int_equal(chan_write(&p->src, "0123456789", 10), 0);
	shutdown(p->src.fd, SHUT_WR);
	assert_int_equal(chan_recv_rec(&p->dst, 0, &h, err, sizeof(err)), 0);
	assert_int_equal(chan_read(&p->dst, buf, h.len), -ENODATA);
	assert_string_equal(chan_strerror(-ENODATA), "the stream ended in the middle of a record");
	/* And inside a header. */
	p->dst.error = 0;
	assert_int_equal(chan_recv_rec(&p->dst, 0, &h, err, sizeof(err)), -ENODATA);
	assert_string_equal(err, "the stream ended in the middle of a record");
}

/* A record far larger than the socket buffer: partial writes are resumed. */
static void *big_writer(void *arg)
{
	struct mig_chan *c = arg;
	uint8_t *blob = malloc(MIG_STATE_MAX);
	int ret;

	if (!blob)
		return (void *)(intptr_t)-ENOMEM;
	for (uint32_t i = 0; i < MIG_STATE_MAX; i++)
		blob[i] = (uint8_t)(i * 7);
	ret = chan_send_record(c, MIG_REC_VM_STATE, blob, 1000, blob + 1000, MIG_STATE_MAX - 1000);
	free(blob);
	return (void *)(intptr_t)ret;
}

static void test_big_record(void **state)
{
	struct pair *p = *state;
	struct mig_rec_hdr h;
	uint8_t *got = malloc(MIG_STATE_MAX);
	pthread_t t;
	void *ret;
	char err[256];

	assert_non_null(got);
	chan_set_role(&p->dst, MIG_ROLE_MAIN, MIG_DIR_S2T);
	assert_int_equal(pthread_create(&t, NULL, big_writer, &p->src), 0);
	assert_int_equal(chan_recv_record(&p->dst, 0, &h, got, MIG_STATE_MAX, err, sizeof(err)), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_int_equal((int)(intptr_t)ret, 0);
	assert_int_equal(h.len, MIG_STATE_MAX);
	for (uint32_t i = 0; i < MIG_STATE_MAX; i += 4093)
		assert_int_equal(got[i], (uint8_t)(i * 7));
	free(got);
}

/*
 * chan_readv(): bytes arrive in order across scattered pieces of odd sizes,
 * a piece split between two recvmsg() calls included (the writer sends far
 * more than the socket buffer holds), and the stream ending inside a piece
 * is -ENODATA.
 */
struct readv_writer {
	struct mig_chan *c;
	const uint8_t *blob;
	size_t len;
};

static void *readv_writer(void *arg)
{
	struct readv_writer *w = arg;
	int ret = 0;

	/* Odd-sized writes, so the reader's recvmsg() calls end mid-piece. */
	for (size_t off = 0; !ret && off < w->len; off += 7777)
		ret = chan_write(w->c, w->blob + off, w->len - off < 7777 ? w->len - off : 7777);
	return (void *)(intptr_t)ret;
}

static void test_readv(void **state)
{
	struct pair *p = *state;
	enum { NPIECE = 300, PIECE = 4096 + 3 };
	size_t len = (size_t)NPIECE * PIECE;
	uint8_t *blob = malloc(len), *got = calloc(NPIECE, 2 * PIECE);
	struct iovec iov[NPIECE];
	struct readv_writer w = {&p->src, blob, len};
	pthread_t t;
	void *ret;

	assert_non_null(blob);
	assert_non_null(got);
	for (size_t i = 0; i < len; i++)
		blob[i] = (uint8_t)(i * 13 + i / 4096);
	/* Every other slot of got: pieces that are not contiguous. */
	for (int i = 0; i < NPIECE; i++)
		iov[i] = (struct iovec){.iov_base = got + (size_t)i * 2 * PIECE, .iov_len = PIECE};
	assert_int_equal(pthread_create(&t, NULL, readv_writer, &w), 0);
	assert_int_equal(chan_readv(&p->dst, iov, NPIECE), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_int_equal((int)(intptr_t)ret, 0);
	for (int i = 0; i < NPIECE; i++) {
		assert_memory_equal(got + (size_t)i * 2 * PIECE, blob + (size_t)i * PIECE, PIECE);
		assert_int_equal(got[(size_t)i * 2 * PIECE + PIECE], 0); /* nothing between */
	}
	assert_int_equal(p->dst.bytes_in, len);
	/* Ten bytes for two pieces of eight, then the end. */
	assert_int_equal(chan_write(&p->src, "0123456789", 10), 0);
	shutdown(p->src.fd, SHUT_WR);
	iov[0] = (struct iovec){.iov_base = got, .iov_len = 8};
	iov[1] = (struct iovec){.iov_base = got + 8, .iov_len = 8};
	assert_int_equal(chan_readv(&p->dst, iov, 2), -ENODATA);
	assert_memory_equal(got, "0123456789", 10);
	free(blob);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_hello, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_framing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sticky_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_recv_record_cap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_trickled_record, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_trickled_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_deadline_spans_calls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_trickled_write, setup, teardown),
	    cmocka_unit_test(test_accept_deadline),
	    cmocka_unit_test(test_unix_connect_full),
	    cmocka_unit_test_setup_teardown(test_abort, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_eof_mid_record, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_big_record, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_readv, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
