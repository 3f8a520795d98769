/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_spin_wait.c - the blackout's bounded poll (spin_wait.h) over a
 * socketpair: a record already there is no wait; a peer that sends nothing
 * within the bound makes it fall back (counted as a sleep) and the usual
 * blocking read then works; a peer that sends while it polls is caught
 * without a sleep; EOF and a sticky error end the poll at once; a bound of
 * 0 never polls, and neither does a process confined to one CPU.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "spin_wait.h"

struct pair {
	struct mig_chan a, b;
};

static int setup(void **state)
{
	struct pair *p = calloc(1, sizeof(*p));
	int sv[2];

	if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	p->a.fd = sv[0];
	p->b.fd = sv[1];
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct pair *p = *state;

	chan_close(&p->a);
	chan_close(&p->b);
	free(p);
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void test_ready_is_no_wait(void **state)
{
	struct pair *p = *state;
	struct spin_stats st = {0};
	char c;

	assert_int_equal(write(p->b.fd, "x", 1), 1);
	assert_true(spin_readable(&p->a, 1000000000u, &st));
	assert_int_equal(st.waits, 1);
	assert_int_equal(st.ready, 1);
	assert_int_equal(st.spun + st.slept, 0);
	assert_int_equal(st.spin_ns, 0);
	assert_int_equal(chan_read(&p->a, &c, 1), 0);
}

/* Nobody sends: the poll ends at its bound, counted as a sleep, and the blocking read still works.
 */
static void test_silent_peer_falls_back(void **state)
{
	struct pair *p = *state;
	const uint64_t bound = 2000000; /* 2 ms */
	struct spin_stats st = {0};
	uint64_t t0 = mono_ns();
	char c;

	assert_false(spin_readable(&p->a, bound, &st));
	assert_true(mono_ns() - t0 >= bound);
	assert_int_equal(st.waits, 1);
	assert_int_equal(st.slept, 1);
	assert_int_equal(st.ready + st.spun, 0);
	assert_true(st.spin_ns >= bound);
	/* The fallback: the caller's blocking read, with its timeout, as before. */
	chan_set_timeout(&p->a, 10000);
	assert_int_equal(write(p->b.fd, "y", 1), 1);
	assert_int_equal(chan_read(&p->a, &c, 1), 0);
	assert_int_equal(c, 'y');
	assert_int_equal(p->a.error, 0);
}

static void test_zero_bound_never_polls(void **state)
{
	struct pair *p = *state;
	struct spin_stats st = {0};

	assert_false(spin_readable(&p->a, 0, &st));
	assert_int_equal(st.slept, 1);
	assert_int_equal(st.spin_ns, 0);
	assert_false(spin_readable(&p->a, 0, NULL)); /* no counts wanted */
	assert_int_equal(spin_bound_ns(0), 0);
}

struct sender {
	int fd;
	uint32_t *polling; /* set by the poller's first round: send then */
};

/*
 * The peer sends once the poll has begun, as a target that answers while
 * the source polls. Its premise is the poll's bound, set far above any
 * host's scheduling delay, so the answer always lands within it.
 */
static void *send_later(void *arg)
{
	struct sender *s = arg;

	while (!__atomic_load_n(s->polling, __ATOMIC_ACQUIRE))
		sched_yield();
	if (write(s->fd, "z", 1) != 1)
		return (void *)1;
	return NULL;
}

static void test_answer_while_polling(void **state)
{
	struct pair *p = *state;
	struct spin_stats st = {0};
	uint32_t polling = 0;
	struct sender s = {p->b.fd, &polling};
	pthread_t t;
	void *r;
	char c;

	assert_int_equal(pthread_create(&t, NULL, send_later, &s), 0);
	__atomic_store_n(&polling, 1, __ATOMIC_RELEASE);
	assert_true(spin_readable(&p->a, 60ull * 1000000000u, &st));
	assert_int_equal(pthread_join(t, &r), 0);
	assert_null(r);
	assert_int_equal(st.waits, 1);
	assert_int_equal(st.slept, 0);
	assert_int_equal(st.ready + st.spun, 1);
	assert_int_equal(chan_read(&p->a, &c, 1), 0);
	assert_int_equal(c, 'z');
}

/* EOF and a sticky error: the read fails at once, so the poll does not wait for it. */
static void test_eof_and_error_end_the_poll(void **state)
{
	struct pair *p = *state;
	struct spin_stats st = {0};

	p->a.error = -ECONNRESET;
	assert_true(spin_readable(&p->a, 60ull * 1000000000u, &st));
	p->a.error = 0;
	chan_close(&p->b);
	assert_true(spin_readable(&p->a, 60ull * 1000000000u, &st));
	assert_int_equal(st.ready, 2);
	assert_int_equal(st.slept, 0);
}

/* A process confined to one CPU never polls: the peer's thread would need that CPU. */
static void *bound_on_one_cpu(void *arg)
{
	uint64_t *out = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return (void *)1;
	out[0] = spin_bound_ns(2000);
	return NULL;
}

static void test_one_cpu_never_polls(void **state)
{
	cpu_set_t set;
	uint64_t got[1] = {UINT64_MAX};
	pthread_t t;
	void *r;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, bound_on_one_cpu, got), 0);
	assert_int_equal(pthread_join(t, &r), 0);
	assert_null(r);
	assert_int_equal(got[0], 0);
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	assert_int_equal(spin_bound_ns(2000), CPU_COUNT(&set) > 1 ? 2000000u : 0u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_ready_is_no_wait, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_silent_peer_falls_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_zero_bound_never_polls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_answer_while_polling, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_eof_and_error_end_the_poll, setup, teardown),
	    cmocka_unit_test(test_one_cpu_never_polls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
