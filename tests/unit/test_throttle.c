/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_throttle.c - `--converge throttle`'s policy (migration/source/throttle.h)
 * from tables: the level after a pass that did not converge, and which vCPUs
 * it slows. Each row names the rule it pins down.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "throttle.h"

#define MS 1000000ull /* ns */

static const struct level_row {
	const char *name;
	struct throttle_input in; /* pct, max_pct, dirty_rate, dirty_known, send_rate */
	unsigned want;
} level_rows[] = {
    /* ---- nothing to go on: the level stays ---- */
    {"dirty rate not measured yet", {0, 99, 5000, false, 1000}, 0},
    {"no send rate yet", {0, 99, 5000, true, 0}, 0},
    {"unknown rate keeps a level already set", {40, 99, 0, false, 1000}, 40},

    /* ---- at or under half the link: no throttle needed ---- */
    {"dirty at half the link exactly", {0, 99, 500, true, 1000}, 0},
    {"dirty under half the link", {0, 99, 100, true, 1000}, 0},
    {"no dirtying at all", {0, 99, 0, true, 1000}, 0},
    {"under the target: a level set stays, never lowered", {60, 99, 100, true, 1000}, 60},

    /* ---- the gap sets the level: run share = (100 - pct) * target / dirty ---- */
    {"2x the link: a quarter of the time left running", {0, 99, 2000, true, 1000}, 75},
    {"4x the link", {0, 99, 4000, true, 1000}, 88},
    {"1.5x the link: 100 - floor(100 / 3)", {0, 99, 1500, true, 1000}, 67},
    {"just over half the link: the minimum step", {0, 99, 501, true, 1000}, 10},
    {"at the link: half", {0, 99, 1000, true, 1000}, 50},
    /* From a level: the rate was measured while throttled. */
    {"at 75 %, still at the link", {75, 99, 1000, true, 1000}, 88},
    {"at 50 %, a saturated hot set reads low: at least the step", {50, 99, 560, true, 1000}, 60},
    {"at 90 %, a little over the target: the step", {90, 99, 600, true, 1000}, 99},

    /* ---- the bound ---- */
    {"100x the link is capped at max", {0, 99, 100000, true, 1000}, 99},
    {"a lower max caps", {0, 60, 2000, true, 1000}, 60},
    {"already at max: stays", {99, 99, 100000, true, 1000}, 99},
    {"max 1: the smallest throttle", {0, 1, 2000, true, 1000}, 1},
    {"a level above max (max lowered) comes down to it", {80, 50, 2000, true, 1000}, 50},
    {"under the target above max: max", {80, 50, 10, true, 1000}, 50},

    /* ---- extremes: no overflow, no division by zero ---- */
    {"a 1 page/s link", {0, 99, 3, true, 1}, 99},
    {"huge rates: no overflow (the target rounds down)",
     {0, 99, UINT64_MAX / 2, true, UINT64_MAX / 2},
     51},
};

static void test_level_table(void **state)
{
	unsigned bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(level_rows) / sizeof(level_rows[0]); i++) {
		unsigned got = throttle_level(&level_rows[i].in);

		if (got != level_rows[i].want) {
			fprintf(stderr, "row %zu \"%s\": got %u, want %u\n", i, level_rows[i].name,
				got, level_rows[i].want);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* Repeated decisions on a guest that keeps dirtying at the link: the level climbs to max. */
static void test_level_climbs_to_max(void **state)
{
	struct throttle_input in = {0, 95, 1000, true, 1000};
	unsigned steps = 0;

	(void)state;
	while (in.pct < in.max_pct && steps < 100) {
		unsigned next = throttle_level(&in);

		assert_true(next >= in.pct + THROTTLE_STEP_MIN || next == in.max_pct);
		in.pct = next;
		steps++;
	}
	assert_int_equal(in.pct, 95);
	assert_true(steps <= 10);
}

#define MAXV 8
static const struct split_row {
	const char *name;
	unsigned level, n;
	struct throttle_vcpu v[MAXV]; /* cpu_ns, run_ns over the pass */
	unsigned want[MAXV];
	unsigned slowed;
} split_rows[] = {
    {"one busy vCPU", 75, 1, {{100 * MS, 100 * MS}}, {75}, 1},
    {"level 0 slows nobody", 0, 2, {{100 * MS, 100 * MS}, {100 * MS, 100 * MS}}, {0, 0}, 0},
    {"a busy and a halted vCPU: only the busy one",
     75,
     2,
     {{100 * MS, 100 * MS}, {1 * MS, 100 * MS}},
     {75, 0},
     1},
    {"two busy vCPUs: both", 60, 2, {{90 * MS, 100 * MS}, {100 * MS, 100 * MS}}, {60, 60}, 2},
    /* busy is CPU over the time it was let run: a throttled vCPU is still busy */
    {"throttled at 90 %, still busy when it ran",
     90,
     2,
     {{10 * MS, 10 * MS}, {2 * MS, 100 * MS}},
     {90, 0},
     1},
    {"a quarter as busy as the busiest: slowed",
     50,
     2,
     {{100 * MS, 100 * MS}, {25 * MS, 100 * MS}},
     {50, 50},
     2},
    {"under a quarter: not", 50, 2, {{100 * MS, 100 * MS}, {24 * MS, 100 * MS}}, {50, 0}, 1},
    {"a quarter but under 5 %: not", 50, 2, {{16 * MS, 100 * MS}, {4 * MS, 100 * MS}}, {50, 0}, 1},
    {"all idle: nothing tells them apart, all slowed",
     30,
     3,
     {{1 * MS, 100 * MS}, {0, 100 * MS}, {4 * MS, 100 * MS}},
     {30, 30, 30},
     3},
    {"no CPU clock (all 0): all slowed", 30, 2, {{0, 100 * MS}, {0, 100 * MS}}, {30, 30}, 2},
    {"never let run (run 0) reads as idle", 40, 2, {{50 * MS, 100 * MS}, {50 * MS, 0}}, {40, 0}, 1},
    {"CPU over run time (clock skew) counts as fully busy",
     40,
     2,
     {{150 * MS, 100 * MS}, {100 * MS, 100 * MS}},
     {40, 40},
     2},
    {"eight vCPUs, two writers",
     70,
     8,
     {{100 * MS, 100 * MS},
      {0, 100 * MS},
      {1 * MS, 100 * MS},
      {80 * MS, 100 * MS},
      {0, 100 * MS},
      {0, 100 * MS},
      {2 * MS, 100 * MS},
      {0, 100 * MS}},
     {70, 0, 0, 70, 0, 0, 0, 0},
     2},
};

static void test_split_table(void **state)
{
	unsigned bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(split_rows) / sizeof(split_rows[0]); i++) {
		const struct split_row *r = &split_rows[i];
		unsigned out[MAXV];
		unsigned slowed;

		memset(out, 0xff, sizeof(out));
		slowed = throttle_split(r->level, r->v, r->n, out);
		if (slowed != r->slowed || memcmp(out, r->want, r->n * sizeof(unsigned))) {
			fprintf(stderr, "row %zu \"%s\": slowed %u (want %u):", i, r->name, slowed,
				r->slowed);
			for (unsigned k = 0; k < r->n; k++)
				fprintf(stderr, " %u/%u", out[k], r->want[k]);
			fputc('\n', stderr);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_level_table),
	    cmocka_unit_test(test_level_climbs_to_max),
	    cmocka_unit_test(test_split_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
