/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tls_files.c - [migration] tls_cert/tls_key/tls_ca as tls_ctx_new()
 * reads them: bounded by TLS_FILE_MAX, regular files only (/dev/zero and
 * a FIFO refused at once, one line naming the file), and good files
 * still make a working mutual-TLS handshake (they are parsed from memory).
 *
 * Reads and writes end by their deadline, however slowly a peer trickles
 * a TLS record (test_trickled_record).
 *
 * The test PKI comes from the openssl command, as the integration tests'
 * (tests/integration/lib.sh pki_ca/pki_cert); without it the tests skip.
 * Loads that could hang run in a child under an alarm.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bounded_child.h"
#include "codec.h"
#include "clock.h"
#include "deadline.h"
#include "tls.h"

#define LOAD_TIMEOUT_S 10

static char dir[] = "/tmp/vmm-test-tls-XXXXXX";
static char ca[96], srv_pem[96], srv_key[96], cli_pem[96], cli_key[96], chain[96];

#define assert_str(got, want)                                                                      \
	do {                                                                                       \
		if (strcmp((got), (want)))                                                         \
			fail_msg("got \"%s\", want \"%s\"", (got), (want));                        \
	} while (0)

static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* A CA, a target ("server", IP:127.0.0.1) and a source ("client") certificate. */
static int make_pki(void **state)
{
	(void)state;
	if (sh("command -v openssl >/dev/null"))
		return 0; /* the tests skip */
	if (!mkdtemp(dir))
		return -1;
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(srv_pem, sizeof(srv_pem), "%s/srv.pem", dir);
	snprintf(srv_key, sizeof(srv_key), "%s/srv.key", dir);
	snprintf(cli_pem, sizeof(cli_pem), "%s/cli.pem", dir);
	snprintf(cli_key, sizeof(cli_key), "%s/cli.key", dir);
	snprintf(chain, sizeof(chain), "%s/chain.pem", dir);
	if (sh("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
	       "-days 2 -subj /CN=ca -keyout ca.key -out ca.pem 2>/dev/null",
	       dir))
		return -1;
	for (int i = 0; i < 2; i++) {
		const char *n = i ? "cli" : "srv";

		if (sh("cd %s && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
		       "-subj /CN=%s -keyout %s.key -out %s.csr 2>/dev/null && "
		       "printf 'subjectAltName=IP:127.0.0.1\\n' >%s.ext && "
		       "openssl x509 -req -in %s.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
		       "-days 2 -extfile %s.ext -out %s.pem 2>/dev/null",
		       dir, n, n, n, n, n, n, n))
			return -1;
	}
	/* the source's certificate followed by its chain (here the CA itself) */
	return sh("cd %s && cat cli.pem ca.pem >chain.pem", dir) ? -1 : 0;
}

static int remove_pki(void **state)
{
	(void)state;
	if (ca[0])
		sh("rm -rf %s", dir);
	return 0;
}

static void need_pki(void)
{
	if (!ca[0])
		skip(); /* no openssl command */
}

struct load_result {
	int rc;
	char err[512];
};

struct load_args {
	bool server;
	struct tls_files files;
};

static void load_child(void *arg, void *result)
{
	const struct load_args *a = arg;
	struct load_result *r = result;
	struct tls_ctx *t = NULL;

	r->rc = tls_ctx_new(&t, a->server, &a->files, r->err, sizeof(r->err));
	tls_ctx_free(t);
}

/* tls_ctx_new(server, files) in a child under an alarm; its result. */
static struct load_result load_bounded(bool server, const char *cert, const char *key,
				       const char *cafile)
{
	struct load_args a = {.server = server,
			      .files = {.tls_cert = cert, .tls_key = key, .tls_ca = cafile}};
	struct load_result r = {0};
	char what[1024];

	snprintf(what, sizeof(what), "tls_ctx_new(%s, %s, %s)", cert, key, cafile);
	bounded_child_run(what, LOAD_TIMEOUT_S, 0, load_child, &a, &r, sizeof(r));
	return r;
}

struct side {
	struct tls_ctx *ctx;
	int fd;
	const char *peer;
	int ret;
	char err[256];
	struct tls_conn *conn;
};

static void *handshake(void *arg)
{
	struct side *s = arg;

	s->ret = tls_conn_start(&s->conn, s->fd, deadline_at(now_ns(), 5000), s->ctx, s->peer,
				s->err, sizeof(s->err));
	return NULL;
}

/* The files load, and a target and a source built from them talk. */
static void check_pair(const char *cli_cert)
{
	struct tls_files sf = {.tls_cert = srv_pem, .tls_key = srv_key, .tls_ca = ca};
	struct tls_files cf = {.tls_cert = cli_cert, .tls_key = cli_key, .tls_ca = ca};
	struct side srv = {.peer = NULL}, cli = {.peer = "127.0.0.1:1"};
	char err[512], buf[8] = "";
	pthread_t th;
	int sv[2];

	if (tls_ctx_new(&srv.ctx, true, &sf, err, sizeof(err)))
		fail_msg("target's files: %s", err);
	if (tls_ctx_new(&cli.ctx, false, &cf, err, sizeof(err)))
		fail_msg("source's files: %s", err);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	srv.fd = sv[0];
	cli.fd = sv[1];
	assert_int_equal(pthread_create(&th, NULL, handshake, &srv), 0);
	handshake(&cli);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (srv.ret || cli.ret)
		fail_msg("handshake: target %d '%s', source %d '%s'", srv.ret, srv.err, cli.ret,
			 cli.err);
	assert_int_equal(tls_write(cli.conn, deadline_at(now_ns(), 5000), "hello", 5), 5);
	assert_int_equal(tls_read(srv.conn, deadline_at(now_ns(), 5000), buf, 5), 5);
	assert_memory_equal(buf, "hello", 5);
	tls_conn_free(srv.conn);
	tls_conn_free(cli.conn);
	close(sv[0]);
	close(sv[1]);
	tls_ctx_free(srv.ctx);
	tls_ctx_free(cli.ctx);
}

static void test_good_files_handshake(void **state)
{
	(void)state;
	need_pki();
	check_pair(cli_pem);
}

static void test_chain_file_handshake(void **state)
{
	(void)state;
	need_pki();
	check_pair(chain);
}

/*
 * A vmm target refuses a connection it has no slot for at its accept, in
 * plain, before any TLS: the source's handshake reads that ERROR record and
 * says "busy", not "does it use TLS?" (issue 36). A target without TLS
 * answers our ClientHello in plain too: its reason, and the question.
 */
static void check_plain_refusal(const char *why, const char *want, bool tls_question)
{
	struct tls_files cf = {.tls_cert = cli_pem, .tls_key = cli_key, .tls_ca = ca};
	struct side cli = {.peer = "127.0.0.1:1"};
	uint8_t rec[MIG_REC_HDR_LEN + 256];
	char err[512];
	int sv[2];

	if (tls_ctx_new(&cli.ctx, false, &cf, err, sizeof(err)))
		fail_msg("source's files: %s", err);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	mig_rec_hdr_encode(rec, MIG_REC_ERROR, mig_error_len(why));
	memcpy(rec + MIG_REC_HDR_LEN, why, mig_error_len(why));
	/*
	 * Sent and ended before the source's ClientHello, as the gate does at
	 * its accept (shut, not closed: our ClientHello must not meet EPIPE,
	 * as over TCP the first write after the peer's close does not).
	 */
	assert_int_equal(write(sv[0], rec, MIG_REC_HDR_LEN + mig_error_len(why)),
			 (ssize_t)(MIG_REC_HDR_LEN + mig_error_len(why)));
	shutdown(sv[0], SHUT_WR);
	cli.fd = sv[1];
	handshake(&cli);
	assert_int_equal(cli.ret, -ECONNREFUSED);
	if (!strstr(cli.err, want))
		fail_msg("got \"%s\", want \"%s\" in it", cli.err, want);
	assert_int_equal(strstr(cli.err, "does it use TLS?") != NULL, tls_question);
	close(sv[0]);
	close(sv[1]);
	tls_ctx_free(cli.ctx);
}

static void test_plain_refusal(void **state)
{
	(void)state;
	need_pki();
	check_plain_refusal("busy: too many connections in their handshake",
			    "the target refused the connection before TLS: busy: too many "
			    "connections in their handshake",
			    false);
	check_plain_refusal("not a vmm migration stream (bad magic)",
			    "the target refused the connection before TLS: not a vmm migration "
			    "stream (bad magic)",
			    true);
}

/*
 * A relay between the source's socket and the target's that forwards
 * everything at once, or, once `trickle` is set, the source's bytes one
 * every TRICKLE_MS: a peer that keeps a connection just alive.
 */
#define TRICKLE_MS 30
struct relay {
	int a, b; /* the relay's ends: toward the source, toward the target */
	int trickle;
};

static void *relay_main(void *arg)
{
	struct relay *r = arg;
	struct pollfd p[2] = {{r->a, POLLIN, 0}, {r->b, POLLIN, 0}};
	char buf[4096];

	while (poll(p, 2, -1) > 0) {
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (!p[i].revents)
				continue;
			n = read(p[i].fd, buf, sizeof(buf));
			if (n <= 0)
				return NULL;
			if (i == 0 && __atomic_load_n(&r->trickle, __ATOMIC_ACQUIRE)) {
				for (ssize_t k = 0; k < n; k++) {
					usleep(TRICKLE_MS * 1000);
					if (send(r->b, buf + k, 1, MSG_NOSIGNAL) != 1)
						return NULL;
				}
			} else if (send(i ? r->a : r->b, buf, (size_t)n, MSG_NOSIGNAL) != n) {
				return NULL;
			}
		}
	}
	return NULL;
}

/*
 * A TLS record trickled a byte every 30 ms (about 27 bytes: 800 ms) to a
 * read whose deadline is 200 ms away: the read ends at the deadline. A
 * per-read timeout of 200 ms would have waited out the whole record.
 */
static void test_trickled_record(void **state)
{
	struct tls_files sf = {.tls_cert = srv_pem, .tls_key = srv_key, .tls_ca = ca};
	struct tls_files cf = {.tls_cert = cli_pem, .tls_key = cli_key, .tls_ca = ca};
	struct side srv = {.peer = NULL}, cli = {.peer = "127.0.0.1:1"};
	struct relay r = {0};
	char err[512], buf[8];
	pthread_t th, rt;
	int sa[2], sb[2];
	uint64_t t0;
	long n;

	(void)state;
	need_pki();
	if (tls_ctx_new(&srv.ctx, true, &sf, err, sizeof(err)) ||
	    tls_ctx_new(&cli.ctx, false, &cf, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sa), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sb), 0);
	cli.fd = sa[0];
	r.a = sa[1];
	r.b = sb[0];
	srv.fd = sb[1];
	assert_int_equal(pthread_create(&rt, NULL, relay_main, &r), 0);
	assert_int_equal(pthread_create(&th, NULL, handshake, &srv), 0);
	handshake(&cli);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (srv.ret || cli.ret)
		fail_msg("handshake: target %d '%s', source %d '%s'", srv.ret, srv.err, cli.ret,
			 cli.err);
	__atomic_store_n(&r.trickle, 1, __ATOMIC_RELEASE);
	assert_int_equal(tls_write(cli.conn, deadline_at(now_ns(), 5000), "hello", 5), 5);
	t0 = now_ns();
	n = tls_read(srv.conn, deadline_at(t0, 200), buf, 5);
	assert_int_equal(n, -ETIMEDOUT);
	assert_true(now_ns() - t0 >= 200000000u);
	/* A deadline already passed: at once. */
	t0 = now_ns();
	assert_int_equal(tls_read(srv.conn, t0, buf, 5), -ETIMEDOUT);
	tls_conn_free(srv.conn);
	tls_conn_free(cli.conn);
	close(sa[0]);
	close(sb[1]);
	assert_int_equal(pthread_join(rt, NULL), 0);
	close(sa[1]);
	close(sb[0]);
	tls_ctx_free(srv.ctx);
	tls_ctx_free(cli.ctx);
}

static void test_dev_zero(void **state)
{
	struct load_result r;

	(void)state;
	need_pki();
	r = load_bounded(true, "/dev/zero", srv_key, ca);
	assert_int_equal(r.rc, -EINVAL);
	assert_str(r.err, "TLS: /dev/zero: cannot read: not a regular file (a device)");
	r = load_bounded(true, srv_pem, srv_key, "/dev/zero");
	assert_int_equal(r.rc, -EINVAL);
	assert_str(r.err, "TLS: /dev/zero: cannot read: not a regular file (a device)");
}

static void test_fifo(void **state)
{
	char fifo[128], want[256];
	struct load_result r;

	(void)state;
	need_pki();
	snprintf(fifo, sizeof(fifo), "%s/key.fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	r = load_bounded(false, cli_pem, fifo, ca);
	unlink(fifo);
	assert_int_equal(r.rc, -EINVAL);
	snprintf(want, sizeof(want), "TLS: %s: cannot read: not a regular file (a FIFO or pipe)",
		 fifo);
	assert_str(r.err, want);
}

static void test_over_cap(void **state)
{
	char big[128], want[256];
	struct load_result r;
	FILE *f;

	(void)state;
	need_pki();
	snprintf(big, sizeof(big), "%s/big.pem", dir);
	f = fopen(big, "w");
	assert_non_null(f);
	for (int i = 0; i < TLS_FILE_MAX + 1; i++)
		fputc(i % 64 == 63 ? '\n' : 'A', f);
	fclose(f);
	r = load_bounded(true, srv_pem, srv_key, big);
	unlink(big);
	assert_int_equal(r.rc, -EINVAL);
	snprintf(want, sizeof(want),
		 "TLS: %s: cannot read: the file is %d bytes, the limit is 1 MiB", big,
		 TLS_FILE_MAX + 1);
	assert_str(r.err, want);
}

/* Not PEM of the right kind: OpenSSL's reason, naming the file. */
static void test_wrong_content(void **state)
{
	char want[256];
	struct load_result r;

	(void)state;
	need_pki();
	r = load_bounded(true, srv_pem, srv_pem, ca); /* a certificate as the key */
	assert_int_equal(r.rc, -EINVAL);
	snprintf(want, sizeof(want), "TLS: %s: ", srv_pem);
	if (strncmp(r.err, want, strlen(want)))
		fail_msg("got \"%s\", want it to start with \"%s\"", r.err, want);
	r = load_bounded(true, srv_pem, srv_key, srv_key); /* a key as the CA */
	assert_int_equal(r.rc, -EINVAL);
	snprintf(want, sizeof(want), "TLS: %s: ", srv_key);
	if (strncmp(r.err, want, strlen(want)))
		fail_msg("got \"%s\", want it to start with \"%s\"", r.err, want);
	r = load_bounded(true, srv_pem, cli_key, ca); /* another certificate's key */
	assert_int_equal(r.rc, -EINVAL);
	snprintf(want, sizeof(want), "TLS: %s: ", cli_key);
	if (strncmp(r.err, want, strlen(want)) || !strstr(r.err, "key values mismatch"))
		fail_msg("got \"%s\", want \"%s...key values mismatch\"", r.err, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_files_handshake),
	    cmocka_unit_test(test_chain_file_handshake),
	    cmocka_unit_test(test_plain_refusal),
	    cmocka_unit_test(test_trickled_record),
	    cmocka_unit_test(test_dev_zero),
	    cmocka_unit_test(test_fifo),
	    cmocka_unit_test(test_over_cap),
	    cmocka_unit_test(test_wrong_content),
	};
	return cmocka_run_group_tests(tests, make_pki, remove_pki);
}
