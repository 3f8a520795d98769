/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memverify_page.h - the page contents of the Linux-guest memory workload.
 *
 * Page i at generation g holds: word 0 = i, word 1 = g, words 2..511 = an
 * xorshift64* stream seeded by splitmix64(i, g). The stream makes the page
 * incompressible (a migration cannot shortcut it with zero pages or
 * compression), and the two plain words let a CORRUPTION report say which
 * page and generation the memory holds instead (a stale copy, another
 * page). Header-only so the host unit test (test_memverify.c) checks the
 * very code the guest program runs; no libc beyond stdint.
 */
#ifndef MEMVERIFY_PAGE_H
#define MEMVERIFY_PAGE_H

#include <stdint.h>

#define MV_PAGE_SIZE  4096u
#define MV_PAGE_WORDS (MV_PAGE_SIZE / 8u)

static inline uint64_t mv_splitmix64(uint64_t z)
{
	z += 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Never 0: xorshift would stay 0 forever. */
static inline uint64_t mv_page_seed(uint64_t index, uint64_t gen)
{
	uint64_t s = mv_splitmix64(index * 0xD1B54A32D192ED03ull ^ mv_splitmix64(gen));

	return s ? s : 1;
}

static inline uint64_t mv_xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static inline void mv_page_fill(uint64_t *page, uint64_t index, uint64_t gen)
{
	uint64_t s = mv_page_seed(index, gen);
	uint32_t w;

	page[0] = index;
	page[1] = gen;
	for (w = 2; w < MV_PAGE_WORDS; w++)
		page[w] = mv_xorshift(&s);
}

/*
 * Does the page hold exactly (index, gen)? Returns -1 if so, else the first
 * differing word, with what was expected there in *expected.
 */
static inline int mv_page_check(const uint64_t *page, uint64_t index, uint64_t gen,
				uint64_t *expected)
{
	uint64_t s = mv_page_seed(index, gen);
	uint32_t w;

	if (page[0] != index) {
		*expected = index;
		return 0;
	}
	if (page[1] != gen) {
		*expected = gen;
		return 1;
	}
	for (w = 2; w < MV_PAGE_WORDS; w++) {
		uint64_t want = mv_xorshift(&s);

		if (page[w] != want) {
			*expected = want;
			return (int)w;
		}
	}
	return -1;
}

/*
 * Latency histogram: exact below 16 ns, then 8 buckets per power of two
 * (values within 12.5%). mv_hist_value() is a bucket's upper bound, so a
 * reported percentile never understates.
 */
#define MV_HIST_BUCKETS (16 + 60 * 8)

static inline uint32_t mv_hist_bucket(uint64_t v)
{
	uint32_t e;

	if (v < 16)
		return (uint32_t)v;
	e = 63 - (uint32_t)__builtin_clzll(v); /* 4..63 */
	return 16 + (e - 4) * 8 + (uint32_t)((v >> (e - 3)) & 7);
}

static inline uint64_t mv_hist_value(uint32_t b)
{
	uint32_t e, sub;

	if (b < 16)
		return b;
	e = (b - 16) / 8 + 4;
	sub = (b - 16) % 8;
	return ((8ull + sub + 1) << (e - 3)) - 1;
}

/* The smallest value with at least permille/1000 of the samples at or below it. */
static inline uint64_t mv_hist_percentile(const uint64_t *hist, uint64_t count, uint32_t permille)
{
	uint64_t need = (count * permille + 999) / 1000, seen = 0;
	uint32_t b;

	if (!count)
		return 0;
	if (!need)
		need = 1;
	for (b = 0; b < MV_HIST_BUCKETS; b++) {
		seen += hist[b];
		if (seen >= need)
			return mv_hist_value(b);
	}
	return mv_hist_value(MV_HIST_BUCKETS - 1);
}

#endif
