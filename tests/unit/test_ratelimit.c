/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ratelimit.c - the token bucket behind --max-bandwidth
 * (migration/dirty/ratelimit.h).
 *
 * Only bounds that a loaded host cannot break are asserted: a limited rate
 * takes at least (bytes - burst) / rate, since the bucket starts empty and
 * holds at most 50 ms worth of tokens; an unlimited one and a cancelled one
 * return without sleeping off any debt, checked against an upper bound
 * hundreds of times what they need.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>

#include "clock.h"
#include "ratelimit.h"

#define MB	 1000000ull
#define BURST_MS 50.0 /* ratelimit.c: at most 50 ms of traffic in one burst */
#define SLACK_MS 1.0  /* nanosleep rounding over a few hundred slices */

static double ms_between(uint64_t t0, uint64_t t1)
{
	return (double)(t1 - t0) / 1e6;
}

/* The least time sending `bytes` may take at `rate` bytes/s. */
static double floor_ms(uint64_t bytes, uint64_t rate)
{
	return (double)bytes * 1e3 / (double)rate - BURST_MS - SLACK_MS;
}

static void test_unlimited_does_not_sleep(void **state)
{
	struct ratelimit r;
	bool cancel = false;
	uint64_t t0;

	(void)state;
	ratelimit_init(&r, 0);
	t0 = now_ns();
	/* 1 TB: any sleep at all for this much would take hours */
	for (int i = 0; i < 1000; i++)
		ratelimit_take(&r, 1000ull * MB, &cancel);
	assert_true(ms_between(t0, now_ns()) < 5000);
	ratelimit_destroy(&r);
}

/* ratelimit_set(): a limit set later applies; set back to 0, no sleep at all. */
static void test_set_changes_the_rate(void **state)
{
	struct ratelimit r;
	bool cancel = false;
	uint64_t t0;

	(void)state;
	ratelimit_init(&r, 0);
	ratelimit_set(&r, 100 * MB);
	t0 = now_ns();
	ratelimit_take(&r, 20 * MB, &cancel);
	assert_true(ms_between(t0, now_ns()) >= floor_ms(20 * MB, 100 * MB));
	ratelimit_set(&r, 0);
	t0 = now_ns();
	for (int i = 0; i < 1000; i++)
		ratelimit_take(&r, 1000ull * MB, &cancel);
	assert_true(ms_between(t0, now_ns()) < 5000);
	ratelimit_destroy(&r);
}

static void test_one_debt_is_slept_off(void **state)
{
	struct ratelimit r;
	bool cancel = false;
	uint64_t t0;
	double ms;

	(void)state;
	ratelimit_init(&r, 10 * MB); /* 10 MB/s */
	t0 = now_ns();
	ratelimit_take(&r, 3 * MB, &cancel); /* 300 ms of traffic */
	ms = ms_between(t0, now_ns());
	if (ms < floor_ms(3 * MB, 10 * MB))
		fail_msg("3 MB at 10 MB/s took %.1f ms, at least %.1f expected", ms,
			 floor_ms(3 * MB, 10 * MB));
	ratelimit_destroy(&r);
}

static void test_stream_of_small_takes(void **state)
{
	struct ratelimit r;
	bool cancel = false;
	uint64_t t0, total = 0;
	double ms;

	(void)state;
	ratelimit_init(&r, 20 * MB);
	t0 = now_ns();
	for (int i = 0; i < 100; i++) {
		ratelimit_take(&r, 64 * 1024, &cancel);
		total += 64 * 1024;
	}
	ms = ms_between(t0, now_ns());
	if (ms < floor_ms(total, 20 * MB))
		fail_msg("%llu bytes at 20 MB/s took %.1f ms, at least %.1f expected",
			 (unsigned long long)total, ms, floor_ms(total, 20 * MB));
	ratelimit_destroy(&r);
}

/* Two senders share one bucket: their sum, not each, stays under the rate. */
struct sender {
	struct ratelimit *r;
	bool *cancel;
	uint64_t bytes;
};

static void *send_main(void *arg)
{
	struct sender *s = arg;

	for (uint64_t sent = 0; sent < s->bytes; sent += 32 * 1024)
		ratelimit_take(s->r, 32 * 1024, s->cancel);
	return NULL;
}

static void test_shared_between_threads(void **state)
{
	struct ratelimit r;
	bool cancel = false;
	struct sender s = {&r, &cancel, 1 * MB};
	pthread_t a, b;
	uint64_t t0;
	double ms;

	(void)state;
	ratelimit_init(&r, 5 * MB);
	t0 = now_ns();
	assert_int_equal(pthread_create(&a, NULL, send_main, &s), 0);
	assert_int_equal(pthread_create(&b, NULL, send_main, &s), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	ms = ms_between(t0, now_ns());
	/* each thread sends 1 MB rounded up to whole 32 KiB slices */
	if (ms < floor_ms(2 * MB, 5 * MB))
		fail_msg("2 MB from two threads at 5 MB/s took %.1f ms, at least %.1f expected", ms,
			 floor_ms(2 * MB, 5 * MB));
	ratelimit_destroy(&r);
}

static void test_cancelled_does_not_sleep(void **state)
{
	struct ratelimit r;
	bool cancel = true;
	uint64_t t0;

	(void)state;
	ratelimit_init(&r, 1 * MB);
	t0 = now_ns();
	ratelimit_take(&r, 1000 * MB, &cancel); /* 1000 s of debt */
	assert_true(ms_between(t0, now_ns()) < 10000);
	ratelimit_destroy(&r);
}

struct canceller {
	bool *cancel;
};

static void *cancel_main(void *arg)
{
	struct canceller *c = arg;

	sleep_ms(50);
	__atomic_store_n(c->cancel, true, __ATOMIC_RELAXED);
	return NULL;
}

/* A cancel that arrives mid-sleep ends the sleep (it is taken in 10 ms slices). */
static void test_cancel_interrupts_sleep(void **state)
{
	struct ratelimit r;
	bool cancel = false;
	struct canceller c = {&cancel};
	pthread_t t;
	uint64_t t0;
	double ms;

	(void)state;
	ratelimit_init(&r, 1 * MB);
	t0 = now_ns();
	assert_int_equal(pthread_create(&t, NULL, cancel_main, &c), 0);
	ratelimit_take(&r, 1000 * MB, &cancel); /* 1000 s unless cancelled */
	ms = ms_between(t0, now_ns());
	pthread_join(t, NULL);
	assert_true(ms >= 49);	 /* slept until the cancel... */
	assert_true(ms < 60000); /* ...and not the whole debt */
	ratelimit_destroy(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unlimited_does_not_sleep),
	    cmocka_unit_test(test_one_debt_is_slept_off),
	    cmocka_unit_test(test_set_changes_the_rate),
	    cmocka_unit_test(test_stream_of_small_takes),
	    cmocka_unit_test(test_shared_between_threads),
	    cmocka_unit_test(test_cancelled_does_not_sleep),
	    cmocka_unit_test(test_cancel_interrupts_sleep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
