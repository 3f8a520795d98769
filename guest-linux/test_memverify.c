/* SPDX-License-Identifier: Apache-2.0 */
/* test_memverify.c - the page generator, the verifier and the latency histogram of memverify. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "memverify_page.h"

static uint64_t page[MV_PAGE_WORDS], other[MV_PAGE_WORDS];

static void test_fill_then_check(void **state)
{
	uint64_t exp = 0;

	(void)state;
	for (uint64_t i = 0; i < 64; i++) {
		for (uint64_t g = 0; g < 4; g++) {
			mv_page_fill(page, i, g);
			assert_int_equal(page[0], i);
			assert_int_equal(page[1], g);
			assert_int_equal(mv_page_check(page, i, g, &exp), -1);
		}
	}
}

static void test_every_word_is_checked(void **state)
{
	uint64_t exp = 0;

	(void)state;
	for (int w = 0; w < (int)MV_PAGE_WORDS; w++) {
		mv_page_fill(page, 7, 3);
		uint64_t good = page[w];

		page[w] ^= 1ull << (w % 64);
		assert_int_equal(mv_page_check(page, 7, 3, &exp), w);
		assert_int_equal(exp, good);
	}
}

static void test_stale_and_foreign_pages(void **state)
{
	uint64_t exp = 0;

	(void)state;
	/* A stale copy (the previous generation) fails at the generation word. */
	mv_page_fill(page, 5, 1);
	assert_int_equal(mv_page_check(page, 5, 2, &exp), 1);
	assert_int_equal(exp, 2);
	/* Another page's contents fail at the index word. */
	mv_page_fill(page, 6, 2);
	assert_int_equal(mv_page_check(page, 5, 2, &exp), 0);
	assert_int_equal(exp, 5);
	/* A zero page (lost, never sent) fails too, even page 0 generation 0. */
	memset(page, 0, sizeof(page));
	assert_int_equal(mv_page_check(page, 0, 0, &exp), 2);
}

/* Incompressible: no repeated words, and generations and pages share no words. */
static void test_pages_differ(void **state)
{
	(void)state;
	mv_page_fill(page, 9, 0);
	mv_page_fill(other, 9, 1);
	for (uint32_t w = 2; w < MV_PAGE_WORDS; w++) {
		assert_int_not_equal(page[w], other[w]);
		assert_int_not_equal(page[w], 0);
		if (w > 2)
			assert_int_not_equal(page[w], page[w - 1]);
	}
	mv_page_fill(other, 10, 0);
	for (uint32_t w = 2; w < MV_PAGE_WORDS; w++)
		assert_int_not_equal(page[w], other[w]);
}

static void test_histogram_bounds(void **state)
{
	(void)state;
	uint32_t last = 0;

	for (uint64_t v = 0; v < 5000000; v += v < 100 ? 1 : v / 37) {
		uint32_t b = mv_hist_bucket(v);

		assert_true(b < MV_HIST_BUCKETS);
		assert_true(b >= last);
		last = b;
		/* Upper bound, within 12.5%. */
		assert_true(mv_hist_value(b) >= v);
		assert_true(mv_hist_value(b) <= v + v / 8 + 1);
	}
	assert_true(mv_hist_bucket(UINT64_MAX) < MV_HIST_BUCKETS);
	assert_true(mv_hist_value(mv_hist_bucket(UINT64_MAX)) == UINT64_MAX);
}

static void test_histogram_percentiles(void **state)
{
	static uint64_t hist[MV_HIST_BUCKETS];

	(void)state;
	assert_int_equal(mv_hist_percentile(hist, 0, 500), 0);
	/* 98 samples of 10 us, one of 1 ms, one of 100 ms. */
	hist[mv_hist_bucket(10000)] = 98;
	hist[mv_hist_bucket(1000000)] = 1;
	hist[mv_hist_bucket(100000000)] = 1;
	assert_int_equal(mv_hist_percentile(hist, 100, 500), mv_hist_value(mv_hist_bucket(10000)));
	assert_int_equal(mv_hist_percentile(hist, 100, 990),
			 mv_hist_value(mv_hist_bucket(1000000)));
	assert_int_equal(mv_hist_percentile(hist, 100, 1000),
			 mv_hist_value(mv_hist_bucket(100000000)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fill_then_check),
	    cmocka_unit_test(test_every_word_is_checked),
	    cmocka_unit_test(test_stale_and_foreign_pages),
	    cmocka_unit_test(test_pages_differ),
	    cmocka_unit_test(test_histogram_bounds),
	    cmocka_unit_test(test_histogram_percentiles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
