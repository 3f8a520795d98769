/* SPDX-License-Identifier: Apache-2.0 */
/* test_log_limit.c - a burst per interval passes, the rest is counted and reported (log_limit.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "log_limit.h"

#define MS 1000000ull

static void test_burst_then_count(void **state)
{
	struct log_limit l;
	uint64_t left, t = 5000 * MS;

	(void)state;
	log_limit_init(&l, 3, 1000);
	for (int i = 0; i < 3; i++) {
		assert_true(log_limit_pass(&l, t + (uint64_t)i * MS, &left));
		assert_int_equal(left, 0);
	}
	/* a flood within the interval: counted, not printed */
	for (int i = 0; i < 1000; i++)
		assert_false(log_limit_pass(&l, t + 10 * MS + (uint64_t)i, &left));
	assert_false(log_limit_pass(&l, t + 999 * MS, &left));
	/* the next interval: its first line says how many were left out */
	assert_true(log_limit_pass(&l, t + 1000 * MS, &left));
	assert_int_equal(left, 1001);
	assert_true(log_limit_pass(&l, t + 1001 * MS, &left));
	assert_int_equal(left, 0);
	log_limit_destroy(&l);
}

static void test_quiet_source_always_passes(void **state)
{
	struct log_limit l;
	uint64_t left;

	(void)state;
	log_limit_init(&l, 1, 10000);
	/* one line every 10 s is never limited, whatever the clock's start */
	for (uint64_t i = 0; i < 20; i++) {
		assert_true(log_limit_pass(&l, i * 10000 * MS, &left));
		assert_int_equal(left, 0);
	}
	/* a zero burst is taken as one */
	log_limit_destroy(&l);
	log_limit_init(&l, 0, 10);
	assert_true(log_limit_pass(&l, 0, &left));
	assert_false(log_limit_pass(&l, 1, &left));
	log_limit_destroy(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_burst_then_count),
	    cmocka_unit_test(test_quiet_source_always_passes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
