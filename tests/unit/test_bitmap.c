/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bitmap.c - the page bitmap helpers (vmm/util/bitmap.h): word counts,
 * the popcount against a naive count, tails, fill, and the atomic
 * claim/take/test that the postcopy maps rely on: two threads racing for
 * the same bits decide each bit exactly once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>

#include "bitmap.h"

static uint64_t naive_count(uint64_t w)
{
	uint64_t n = 0;

	for (int i = 0; i < 64; i++)
		n += w >> i & 1;
	return n;
}

/* xorshift64*: reproducible words without libc's rand() state. */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void test_words(void **state)
{
	(void)state;
	assert_int_equal(bitmap_words(0), 0);
	assert_int_equal(bitmap_words(1), 1);
	assert_int_equal(bitmap_words(63), 1);
	assert_int_equal(bitmap_words(64), 1);
	assert_int_equal(bitmap_words(65), 2);
	assert_int_equal(bitmap_words(128), 2);
	/* a 256 GiB guest in 4 KiB pages */
	assert_int_equal(bitmap_words(1ull << 26), 1ull << 20);
	/* the largest count that does not overflow nbits + 63 */
	assert_int_equal(bitmap_words(UINT64_MAX - 63), (UINT64_MAX - 63) / 64);
}

static void test_bits_count(void **state)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;
	static const uint64_t edge[] = {0,
					1,
					0x8000000000000000ull,
					UINT64_MAX,
					0x5555555555555555ull,
					0xaaaaaaaaaaaaaaaaull,
					0x00000000ffffffffull,
					0x0101010101010101ull};

	(void)state;
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		assert_int_equal(bits_count(edge[i]), naive_count(edge[i]));
	for (int i = 0; i < 64; i++)
		assert_int_equal(bits_count(1ull << i), 1);
	for (int i = 0; i < 100000; i++) {
		uint64_t w = next_random(&s);

		/* sparse and dense words too, not just ~32 bits set */
		if (i % 3 == 1)
			w &= next_random(&s) & next_random(&s);
		else if (i % 3 == 2)
			w |= next_random(&s) | next_random(&s);
		if (bits_count(w) != naive_count(w))
			fail_msg("bits_count(0x%016llx) = %llu, want %llu", (unsigned long long)w,
				 (unsigned long long)bits_count(w),
				 (unsigned long long)naive_count(w));
	}
}

static void test_count(void **state)
{
	uint64_t map[257], s = 42, want = 0;

	(void)state;
	for (int i = 0; i < 257; i++) {
		map[i] = i % 5 ? next_random(&s) : 0;
		want += naive_count(map[i]);
	}
	assert_int_equal(bitmap_count(map, 257), want);
	assert_int_equal(bitmap_count(map, 0), 0);
	assert_int_equal(bitmap_count(map, 1), naive_count(map[0]));
}

static void test_tail_clean(void **state)
{
	uint64_t map[2] = {UINT64_MAX, 0};

	(void)state;
	/* a whole number of words has no tail */
	assert_true(bitmap_tail_clean(map, 64));
	assert_true(bitmap_tail_clean(map, 128));
	map[1] = 0x7; /* bits 64..66 */
	assert_true(bitmap_tail_clean(map, 67));
	assert_true(bitmap_tail_clean(map, 100));
	assert_false(bitmap_tail_clean(map, 66));
	assert_false(bitmap_tail_clean(map, 65));
	map[1] = 1ull << 63;
	assert_false(bitmap_tail_clean(map, 127));
	assert_true(bitmap_tail_clean(map, 128));
	map[0] = 1ull << 5;
	assert_false(bitmap_tail_clean(map, 5));
	assert_true(bitmap_tail_clean(map, 6));
}

static void test_fill(void **state)
{
	static const uint64_t sizes[] = {1, 5, 63, 64, 65, 127, 128, 129, 1000};

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i], map[20];

		memset(map, 0xa5, sizeof(map));
		bitmap_fill(map, n);
		assert_int_equal(bitmap_count(map, bitmap_words(n)), n);
		assert_true(bitmap_tail_clean(map, n));
		for (uint64_t p = 0; p < n; p++)
			assert_true(bitmap_test(map, p));
		/* words past the last are not touched */
		assert_int_equal(map[bitmap_words(n)], 0xa5a5a5a5a5a5a5a5ull);
	}
	{
		uint64_t w = 0x1234;

		bitmap_fill(&w, 0); /* nothing to fill: nothing written */
		assert_int_equal(w, 0x1234);
	}
}

static void test_array(void **state)
{
	uint64_t words[3] = {1, 0, 1000};
	uint64_t **maps = bitmap_array_new(3, words);

	(void)state;
	assert_non_null(maps);
	for (int i = 0; i < 3; i++)
		assert_non_null(maps[i]);
	assert_int_equal(bitmap_count(maps[2], 1000), 0); /* zeroed */
	bitmap_fill(maps[2], 64000);
	assert_int_equal(bitmap_count(maps[2], 1000), 64000);
	bitmap_array_free(maps, 3);
	bitmap_array_free(NULL, 0);
}

static void test_atomic_single_thread(void **state)
{
	uint64_t map[2] = {0, 0};

	(void)state;
	assert_false(bitmap_test_atomic(map, 70));
	assert_true(bitmap_claim_atomic(map, 70));
	assert_false(bitmap_claim_atomic(map, 70)); /* already set */
	assert_true(bitmap_test_atomic(map, 70));
	assert_true(bitmap_test(map, 70));
	assert_int_equal(map[1], 1ull << 6);
	assert_true(bitmap_take_atomic(map, 70));
	assert_false(bitmap_take_atomic(map, 70)); /* already clear */
	assert_false(bitmap_test_atomic(map, 70));
	assert_int_equal(map[0] | map[1], 0);
}

/* ---- two threads racing for the same bits ----------------------------- */

#define RACE_BITS   (1u << 16)
#define RACE_ROUNDS 20

struct race {
	uint64_t map[RACE_BITS / 64];
	pthread_barrier_t start;
	bool take;		/* take (clear) instead of claim (set) */
	uint8_t won[RACE_BITS]; /* per bit: how many calls reported winning it */
};

struct racer {
	struct race *race;
	bool down; /* walk from the top bit down */
	uint64_t wins;
};

static void *race_main(void *arg)
{
	struct racer *r = arg;
	struct race *race = r->race;

	pthread_barrier_wait(&race->start);
	for (uint64_t i = 0; i < RACE_BITS; i++) {
		uint64_t p = r->down ? RACE_BITS - 1 - i : i;
		bool won = race->take ? bitmap_take_atomic(race->map, p)
				      : bitmap_claim_atomic(race->map, p);

		if (won) {
			r->wins++;
			__atomic_fetch_add(&race->won[p], 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

/*
 * Both threads walk the same order (they fight for every bit while they
 * keep pace) or opposite orders (they meet somewhere in the middle).
 */
static void run_race(struct race *race, struct racer rs[2], bool opposite)
{
	pthread_t t[2];

	memset(race->won, 0, sizeof(race->won));
	assert_int_equal(pthread_barrier_init(&race->start, NULL, 2), 0);
	for (int i = 0; i < 2; i++) {
		rs[i] = (struct racer){race, opposite && i, 0};
		assert_int_equal(pthread_create(&t[i], NULL, race_main, &rs[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&race->start);
	assert_int_equal(rs[0].wins + rs[1].wins, RACE_BITS);
	for (uint64_t p = 0; p < RACE_BITS; p++)
		if (race->won[p] != 1)
			fail_msg("bit %llu was %s %u times", (unsigned long long)p,
				 race->take ? "taken" : "claimed", race->won[p]);
}

static void test_atomic_race(void **state)
{
	struct race *race = calloc(1, sizeof(*race));
	struct racer rs[2];

	(void)state;
	assert_non_null(race);
	for (int round = 0; round < RACE_ROUNDS; round++) {
		/* both threads claim every bit: each is claimed by exactly one */
		race->take = false;
		run_race(race, rs, round % 2);
		for (uint64_t p = 0; p < RACE_BITS; p++)
			assert_true(bitmap_test_atomic(race->map, p));
		/* both threads take every bit back: each is taken by exactly one */
		race->take = true;
		run_race(race, rs, round % 2);
		assert_int_equal(bitmap_count(race->map, RACE_BITS / 64), 0);
	}
	free(race);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_words),
	    cmocka_unit_test(test_bits_count),
	    cmocka_unit_test(test_count),
	    cmocka_unit_test(test_tail_clean),
	    cmocka_unit_test(test_fill),
	    cmocka_unit_test(test_array),
	    cmocka_unit_test(test_atomic_single_thread),
	    cmocka_unit_test(test_atomic_race),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
