/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_deadline.c - the deadline helpers (vmm/util/deadline.h): a deadline
 * from now and a duration, the nearer of two (0 is none), poll's timeout
 * until one (rounded up, never early; -1 without; 0 once passed; capped),
 * and deadline_poll(), which ends at the deadline with nothing ready, at
 * once when something is, and not before the deadline on a signal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "deadline.h"

#define MS 1000000ull

static void test_at_and_min(void **state)
{
	(void)state;
	assert_int_equal(deadline_at(5 * MS, 0), 0); /* no duration: no deadline */
	assert_int_equal(deadline_at(5 * MS, 7), 12 * MS);
	assert_int_equal(deadline_min(0, 0), 0);
	assert_int_equal(deadline_min(0, 3), 3);
	assert_int_equal(deadline_min(3, 0), 3);
	assert_int_equal(deadline_min(3, 9), 3);
	assert_int_equal(deadline_min(9, 3), 3);
}

static void test_poll_ms(void **state)
{
	(void)state;
	assert_int_equal(deadline_poll_ms(0, 123), -1);
	assert_int_equal(deadline_poll_ms(10 * MS, 10 * MS), 0);
	assert_int_equal(deadline_poll_ms(10 * MS, 11 * MS), 0);
	assert_int_equal(deadline_poll_ms(10 * MS, 9 * MS), 1);
	/* a part of a millisecond left is a whole one: poll never ends early */
	assert_int_equal(deadline_poll_ms(10 * MS, 10 * MS - 1), 1);
	assert_int_equal(deadline_poll_ms(10 * MS + 1, 9 * MS), 2);
	assert_int_equal(deadline_poll_ms(UINT64_MAX, 0), INT_MAX);
}

static void test_poll_times_out(void **state)
{
	int fd[2];
	struct pollfd p;
	uint64_t t0 = now_ns();

	(void)state;
	assert_int_equal(pipe(fd), 0);
	p = (struct pollfd){.fd = fd[0], .events = POLLIN};
	assert_int_equal(deadline_poll(&p, 1, deadline_at(t0, 50)), 0);
	assert_true(now_ns() - t0 >= 50 * MS);
	/* passed already: at once */
	t0 = now_ns();
	assert_int_equal(deadline_poll(&p, 1, t0), 0);
	assert_true(now_ns() - t0 < 1000 * MS);
	/* ready: at once, whatever the deadline */
	assert_int_equal(write(fd[1], "x", 1), 1);
	assert_int_equal(deadline_poll(&p, 1, 0), 1);
	assert_int_equal(deadline_poll(&p, 1, now_ns()), 1);
	close(fd[0]);
	close(fd[1]);
}

static void on_alarm(int sig)
{
	(void)sig;
}

struct kicker {
	pthread_t target;
};

static void *kick(void *arg)
{
	struct kicker *k = arg;

	for (int i = 0; i < 5; i++) {
		usleep(20000);
		pthread_kill(k->target, SIGUSR1);
	}
	return NULL;
}

/* Signals in the middle (EINTR) resume the wait for the time left, no more. */
static void test_poll_signals(void **state)
{
	struct sigaction sa = {.sa_handler = on_alarm};
	struct kicker k = {pthread_self()};
	struct pollfd p;
	pthread_t th;
	int fd[2];
	uint64_t t0;

	(void)state;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0); /* no SA_RESTART */
	assert_int_equal(pipe(fd), 0);
	p = (struct pollfd){.fd = fd[0], .events = POLLIN};
	assert_int_equal(pthread_create(&th, NULL, kick, &k), 0);
	t0 = now_ns();
	assert_int_equal(deadline_poll(&p, 1, deadline_at(t0, 200)), 0);
	assert_true(now_ns() - t0 >= 200 * MS);
	assert_true(now_ns() - t0 < 5000 * MS);
	assert_int_equal(pthread_join(th, NULL), 0);
	close(fd[0]);
	close(fd[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_at_and_min),
	    cmocka_unit_test(test_poll_ms),
	    cmocka_unit_test(test_poll_times_out),
	    cmocka_unit_test(test_poll_signals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
