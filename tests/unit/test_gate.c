/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gate.c - the target's gate (migration/incoming/gate*.c) against
 * floods of valid-looking connections, on loopback, without a VM: who
 * holds a slot (gate_admit.c) and what becomes of the rest. Peers come from
 * several loopback addresses (127.0.0.2, .3, ...) so that the bound per
 * address and the one per session id are seen apart. Every wait is for an
 * event the gate reports (a refusal through incoming_hook.refused, a
 * recover worker entering its hook, gate_wait_main returning), bounded by
 * WAIT_MS; nothing hopes that a sleep was long enough.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "codec.h"
#include "config.h"
#include "gate.h"
#include "incoming.h"
#include "tls.h"

#define WAIT_MS	   10000
#define SESSION	   0x5e551015e5510150ull
#define MAX_CLIENT 128

/*
 * What the gate told us: refusals (peer: why) and recover hooks entered /
 * served; `hold`: a served hook then waits (until its deadline) while set.
 */
static struct {
	pthread_mutex_t lock;
	char why[1024][200];
	unsigned refused, entered, served;
	bool hold;
} seen = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void on_refused(void *opaque, const char *peer, const char *why)
{
	(void)opaque;
	pthread_mutex_lock(&seen.lock);
	if (seen.refused < 1024)
		snprintf(seen.why[seen.refused], sizeof(seen.why[0]), "%s: %s", peer, why);
	seen.refused++;
	pthread_mutex_unlock(&seen.lock);
}

/* Refusals so far whose text has `what` (NULL: all). */
static unsigned refusals(const char *what)
{
	unsigned n = 0;

	pthread_mutex_lock(&seen.lock);
	for (unsigned i = 0; i < seen.refused && i < 1024; i++)
		n += !what || strstr(seen.why[i], what);
	pthread_mutex_unlock(&seen.lock);
	return n;
}

static unsigned counter(const unsigned *c)
{
	unsigned v;

	pthread_mutex_lock(&seen.lock);
	v = *c;
	pthread_mutex_unlock(&seen.lock);
	return v;
}

/* Waits until f() >= want (bounded); its last value. */
static unsigned wait_for(unsigned (*f)(const void *), const void *arg, unsigned want)
{
	uint64_t t0 = now_ns();
	unsigned v;

	while ((v = f(arg)) < want && ms_since(t0) < WAIT_MS)
		sleep_ms(5);
	return v;
}

static unsigned refusals_of(const void *what)
{
	return refusals(what);
}

static unsigned counter_of(const void *c)
{
	return counter(c);
}

/*
 * The late gate's recover hook: one whole record, then the exchange is
 * over (the real one, settle_records.c, sends RECOVER_STATE first and reads
 * the decision).
 */
static int recover(void *opaque, struct mig_chan *c, uint64_t deadline_ns, char *err, size_t errlen)
{
	struct mig_rec_hdr h;
	uint8_t b[64];
	int ret;

	(void)opaque;
	pthread_mutex_lock(&seen.lock);
	seen.entered++;
	pthread_mutex_unlock(&seen.lock);
	ret = chan_recv_record(c, 0, &h, b, sizeof(b), err, errlen);
	pthread_mutex_lock(&seen.lock);
	seen.served += !ret;
	/* A connection past its proof, still busy with its exchange: it holds its slot. */
	while (!ret && seen.hold && now_ns() < deadline_ns) {
		pthread_mutex_unlock(&seen.lock);
		sleep_ms(5);
		pthread_mutex_lock(&seen.lock);
	}
	pthread_mutex_unlock(&seen.lock);
	return ret;
}

struct fixture {
	struct gate *g;
	struct tls_ctx *tls; /* the gate's, when a test starts it with TLS */
	struct vm_config local;
	int lfd, port;
	int fd[MAX_CLIENT];
	unsigned n;
};

/* The PKI of test_tls_files.c's kind (the openssl command); none: the TLS test skips. */
static char pki[] = "/tmp/vmm-test-gate-XXXXXX";
static bool made_pki, have_pki;

static int sh(const char *cmd)
{
	char line[2048];

	snprintf(line, sizeof(line), "cd %s && %s", pki, cmd);
	return system(line);
}

/* A CA, the target's certificate ("srv", IP:127.0.0.1) and a source's ("cli"). */
static int make_pki(void **state)
{
	(void)state;
	if (system("command -v openssl >/dev/null") || !mkdtemp(pki))
		return 0; /* the TLS test skips */
	made_pki = true;
	if (sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
	       "-subj /CN=ca -keyout ca.key -out ca.pem 2>/dev/null"))
		return 0;
	for (int i = 0; i < 2; i++) {
		char cmd[1024];
		const char *n = i ? "cli" : "srv";

		snprintf(
		    cmd, sizeof(cmd),
		    "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=%s "
		    "-keyout %s.key -out %s.csr 2>/dev/null && printf "
		    "'subjectAltName=IP:127.0.0.1\\n' >%s.ext && openssl x509 -req -in %s.csr "
		    "-CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile %s.ext -out %s.pem "
		    "2>/dev/null",
		    n, n, n, n, n, n, n);
		if (sh(cmd))
			return 0;
	}
	have_pki = true;
	return 0;
}

static int remove_pki(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", pki);
	if (made_pki && system(cmd))
		print_message("could not remove %s\n", pki);
	return 0;
}

/* A TLS context from the PKI: the target's (server) or a source's. */
static struct tls_ctx *tls_of(bool server)
{
	char cert[128], key[128], ca[128], err[256];
	struct tls_files files = {cert, key, ca};
	struct tls_ctx *t = NULL;

	snprintf(cert, sizeof(cert), "%s/%s.pem", pki, server ? "srv" : "cli");
	snprintf(key, sizeof(key), "%s/%s.key", pki, server ? "srv" : "cli");
	snprintf(ca, sizeof(ca), "%s/ca.pem", pki);
	if (tls_ctx_new(&t, server, &files, err, sizeof(err)) || !t)
		fail_msg("TLS files: %s", err);
	return t;
}

/* A gate on a free loopback port, TLS on or not. */
static int start(void **state, bool tls)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct incoming_hook hook = {.refused = on_refused};
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char err[256];

	assert_non_null(f);
	config_defaults(&f->local);
	f->local.seccomp = false;
	/* Any free port (chan_listen wants one named). */
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 128), 0);
	assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&sa, &sl), 0);
	f->port = ntohs(sa.sin_port);
	pthread_mutex_lock(&seen.lock);
	seen.refused = seen.entered = seen.served = 0;
	seen.hold = false;
	pthread_mutex_unlock(&seen.lock);
	f->tls = tls && have_pki ? tls_of(true) : NULL;
	*state = f;
	if (tls && !have_pki)
		return 0; /* the test skips */
	assert_int_equal(
	    gate_start(&f->g, f->lfd, f->tls, &f->local, NULL, &hook, err, sizeof(err)), 0);
	return 0;
}

static int setup(void **state)
{
	return start(state, false);
}

static int setup_tls(void **state)
{
	return start(state, true);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	pthread_mutex_lock(&seen.lock);
	seen.hold = false;
	pthread_mutex_unlock(&seen.lock);
	gate_stop(f->g);
	tls_ctx_free(f->tls);
	for (unsigned i = 0; i < f->n; i++)
		if (f->fd[i] >= 0)
			close(f->fd[i]);
	close(f->lfd);
	free(f);
	return 0;
}

/* A connection from 127.0.0.<from> (kept, closed at teardown). */
static int client(struct fixture *f, int from)
{
	struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(f->n < MAX_CLIENT);
	src.sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)from);
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	dst.sin_port = htons((uint16_t)f->port);
	assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0);
	f->fd[f->n++] = fd;
	return fd;
}

/* A connection that sends a valid hello and then nothing. */
static int hello(struct fixture *f, int from, uint64_t session, uint32_t role)
{
	uint8_t h[MIG_HELLO_LEN];
	int fd = client(f, from);

	mig_hello_encode(h, session, role, 0);
	assert_int_equal(write(fd, h, sizeof(h)), (ssize_t)sizeof(h));
	return fd;
}

/* A whole, valid main connection: hello and VM_DESC (256 MiB, 1 vCPU, 1 data connection). */
static void real_main(struct fixture *f, int from)
{
	struct mig_chan c = {.fd = hello(f, from, SESSION, MIG_ROLE_MAIN)};
	struct mig_slot_desc slot = {.gpa = 0, .size = 256u << 20};
	struct mig_vm_desc d = {.memory = 256u << 20,
				.page_size = MIG_PAGE_SIZE,
				.nslots = 1,
				.nvcpus = 1,
				.connections = 1,
				.shard_pages = 512};
	uint8_t hdr[MIG_VM_DESC_LEN], body[MIG_SLOT_DESC_LEN + 16384];
	struct vm_config cfg;
	char err[256];
	int len;

	config_defaults(&cfg);
	assert_int_equal(config_set(&cfg, "vm.memory=256M", err, sizeof(err)), 0);
	len =
	    config_format(&cfg, (char *)body + MIG_SLOT_DESC_LEN, sizeof(body) - MIG_SLOT_DESC_LEN);
	assert_true(len > 0);
	d.config_len = (uint32_t)len;
	mig_vm_desc_encode(hdr, &d);
	mig_slot_desc_encode(body, &slot);
	assert_int_equal(chan_send_record(&c, MIG_REC_VM_DESC, hdr, sizeof(hdr), body,
					  MIG_SLOT_DESC_LEN + (uint32_t)len),
			 0);
}

/*
 * Nobody was refused for want of a slot. (The data connections parked in
 * a test may be refused "busy: a migration is being received" once a main
 * is taken: that is what happens to a stranger's data connection.)
 */
static void assert_no_slot_refused(void)
{
	assert_int_equal(refusals("busy: too many connections"), 0);
	assert_int_equal(refusals("busy: this address"), 0);
}

struct watchdog {
	struct gate *g;
	volatile bool done;
};

/* gate_wait_main waits forever: this cancels it after WAIT_MS if nothing came. */
static void *watchdog(void *arg)
{
	struct watchdog *w = arg;
	uint64_t t0 = now_ns();

	while (!w->done && ms_since(t0) < WAIT_MS)
		sleep_ms(10);
	if (!w->done)
		gate_cancel(w->g);
	return NULL;
}

/* The gate hands the main connection over within WAIT_MS. */
static void expect_main(struct fixture *f)
{
	struct watchdog w = {.g = f->g};
	struct gate_main *m = NULL;
	pthread_t th;
	int ret;

	assert_int_equal(pthread_create(&th, NULL, watchdog, &w), 0);
	ret = gate_wait_main(f->g, &m);
	w.done = true;
	pthread_join(th, NULL);
	if (ret)
		fail_msg("no main connection handed over; %u refusals, the last: %s",
			 refusals(NULL),
			 seen.why[(refusals(NULL) ? refusals(NULL) - 1 : 0) % 1024]);
	assert_int_equal(m->hello.session_id, SESSION);
	gate_main_free(m);
}

/*
 * 40 connections from one address send a valid main hello and nothing
 * more: they evict each other (the address holds at most half the gate),
 * and a real source from the same address still gets its description in.
 */
static void test_valid_hellos_one_address(void **state)
{
	struct fixture *f = *state;
	const char *own = "a hello and no complete record after it when its address held";

	for (unsigned i = 0; i < 40; i++)
		hello(f, 2, 1000 + i, MIG_ROLE_MAIN);
	assert_int_equal(wait_for(refusals_of, own, 40 - GATE_PEER_SLOTS), 40 - GATE_PEER_SLOTS);
	real_main(f, 2);
	expect_main(f);
	assert_no_slot_refused();
}

/*
 * Valid hellos from two addresses fill every slot (18 + 18); a source on a
 * third address evicts the oldest of the address holding the most, and
 * its description goes through.
 */
static void test_valid_hellos_two_addresses(void **state)
{
	struct fixture *f = *state;

	for (unsigned i = 0; i < GATE_PEER_SLOTS; i++) {
		hello(f, 2, 2000 + i, MIG_ROLE_MAIN);
		hello(f, 3, 3000 + i, MIG_ROLE_DATA); /* parked: no main of their session */
	}
	real_main(f, 4);
	expect_main(f);
	assert_int_equal(wait_for(refusals_of, "when the gate was full", 1), 1);
	assert_no_slot_refused();
}

/*
 * Once the VM is received: recover connections with the migration's own
 * session id (read off the wire) that say nothing after their hello hold
 * reserved slots against strangers, but at most 18 of them (the oldest
 * beyond are evicted), and the real recover connection, which sends its
 * record, is served.
 */
static void test_late_session_bound(void **state)
{
	struct fixture *f = *state;
	struct gate_late lt = {.session = SESSION, .recover = recover};
	const char *by_session = "connections of its session were waiting";
	uint8_t proof[MIG_SIG_LEN] = {0}; /* not checked: the test's hook reads a record */
	struct mig_chan c;

	gate_late_open(f->g, &lt);
	/*
	 * Strangers first: 18 idle connections from .3 and one from .6, then 17
	 * stalled recovers from .2 (one fewer than a session may keep waiting).
	 */
	for (unsigned i = 0; i < GATE_PEER_SLOTS; i++)
		client(f, 3);
	client(f, 6);
	for (unsigned i = 0; i < GATE_SESSION_SLOTS - 1; i++)
		hello(f, 2, SESSION, MIG_ROLE_RECOVER);
	/* The gate accepts in order: once the 17 recovers are in their hook, all 36 are held. */
	assert_int_equal(wait_for(counter_of, &seen.entered, GATE_SESSION_SLOTS - 1),
			 GATE_SESSION_SLOTS - 1);
	assert_int_equal(refusals(NULL), 0);
	/* A newcomer evicts a stranger, never a connection of the migration. */
	c = (struct mig_chan){.fd = hello(f, 4, SESSION, MIG_ROLE_RECOVER)};
	assert_int_equal(chan_send_record(&c, MIG_REC_COMMIT, proof, sizeof(proof), NULL, 0), 0);
	assert_int_equal(wait_for(counter_of, &seen.served, 1), 1);
	assert_int_equal(refusals("evicted: nothing valid yet when the gate was full"), 1);
	assert_int_equal(refusals("a hello and no complete record"), 0);
	/* Five more of the session, stalled: 22 of it wait, the four oldest go. */
	for (unsigned i = 0; i < 5; i++)
		hello(f, 5, SESSION, MIG_ROLE_RECOVER);
	assert_int_equal(wait_for(counter_of, &seen.entered, GATE_SESSION_SLOTS + 5),
			 GATE_SESSION_SLOTS + 5);
	assert_int_equal(wait_for(refusals_of, by_session, 4), 4);
	assert_no_slot_refused();
}

/*
 * A TLS gate with nothing it may evict refuses a new connection at its
 * accept, before any TLS, in plain: the source's handshake reads that and
 * says "busy" (not "does it use TLS?"). Nothing may go when one address
 * already holds its whole share with connections past their proof.
 */
static void test_busy_tls(void **state)
{
	struct fixture *f = *state;
	struct gate_late lt = {.session = SESSION, .recover = recover};
	struct mig_chan c[GATE_PEER_SLOTS + 1];
	uint8_t proof[MIG_SIG_LEN] = {0}; /* not checked: the test's hook reads a record */
	char err[256], addr[32];
	struct tls_ctx *cli;
	int ret;

	if (!have_pki)
		skip();
	cli = tls_of(false);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", f->port);
	pthread_mutex_lock(&seen.lock);
	seen.hold = true;
	pthread_mutex_unlock(&seen.lock);
	gate_late_open(f->g, &lt);
	for (unsigned i = 0; i < GATE_PEER_SLOTS; i++) {
		c[i] = (struct mig_chan){.fd = client(f, 2)};
		chan_set_timeout(&c[i], WAIT_MS);
		if (chan_start_tls(&c[i], cli, addr, err, sizeof(err)))
			fail_msg("connection %u: %s", i, err);
		assert_int_equal(chan_send_hello(&c[i], SESSION, MIG_ROLE_RECOVER, 0), 0);
		assert_int_equal(
		    chan_send_record(&c[i], MIG_REC_COMMIT, proof, sizeof(proof), NULL, 0), 0);
	}
	assert_int_equal(wait_for(counter_of, &seen.served, GATE_PEER_SLOTS), GATE_PEER_SLOTS);
	c[GATE_PEER_SLOTS] = (struct mig_chan){.fd = client(f, 2)};
	chan_set_timeout(&c[GATE_PEER_SLOTS], WAIT_MS);
	ret = chan_start_tls(&c[GATE_PEER_SLOTS], cli, addr, err, sizeof(err));
	assert_int_equal(ret, -ECONNREFUSED);
	if (!strstr(err, "busy: this address has 18 connections in their handshake already") ||
	    strstr(err, "does it use TLS"))
		fail_msg("the source said: %s", err);
	assert_int_equal(wait_for(refusals_of, "busy: this address", 1), 1);
	for (unsigned i = 0; i <= GATE_PEER_SLOTS; i++) {
		tls_conn_free(c[i].tls); /* the fds are the fixture's */
		c[i].tls = NULL;
	}
	tls_ctx_free(cli);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_valid_hellos_one_address, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_valid_hellos_two_addresses, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_late_session_bound, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_busy_tls, setup_tls, teardown),
	};

	/* As vmm does: a peer's reset is an error from write(), not a signal. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, make_pki, remove_pki);
}
