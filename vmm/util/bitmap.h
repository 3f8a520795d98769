/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bitmap.h - page bitmaps as KVM and the migration wire lay them out: bit p
 * of 64-bit word p / 64 is page p (KVM_GET_DIRTY_LOG's format, and the
 * BITMAP record's once the words are little endian).
 *
 * The plain helpers are for bitmaps one thread owns; the _atomic ones for
 * bitmaps several threads set and clear concurrently (the postcopy
 * claim/missing maps), where each bit is decided by exactly one
 * read-modify-write.
 */
#ifndef VMM_UTIL_BITMAP_H
#define VMM_UTIL_BITMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 64-bit words for nbits bits. */
static inline uint64_t bitmap_words(uint64_t nbits)
{
	return (nbits + 63) / 64;
}

/*
 * Bits set in a word. Not __builtin_popcountll: without -mpopcnt (which we
 * cannot assume of every host) it is a libgcc call per word, 4x slower over
 * a 256 GiB guest's bitmap. Zero words, the common case, cost one test.
 */
static inline uint64_t bits_count(uint64_t w)
{
	if (!w)
		return 0;
	w = w - ((w >> 1) & 0x5555555555555555ull);
	w = (w & 0x3333333333333333ull) + ((w >> 2) & 0x3333333333333333ull);
	w = (w + (w >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (w * 0x0101010101010101ull) >> 56;
}

/* Bits set in the first `words` words. */
uint64_t bitmap_count(const uint64_t *map, uint64_t words);

/* True when no bit at or past nbits is set (the last word's tail is clean). */
bool bitmap_tail_clean(const uint64_t *map, uint64_t nbits);

/* Sets bits [0, nbits) and clears the tail of the last word. */
void bitmap_fill(uint64_t *map, uint64_t nbits);

static inline bool bitmap_test(const uint64_t *map, uint64_t p)
{
	return map[p / 64] >> (p % 64) & 1;
}

/* Sets bit p; the map's owner only (no other thread writes it meanwhile). */
static inline void bitmap_set(uint64_t *map, uint64_t p)
{
	map[p / 64] |= 1ull << (p % 64);
}

/* Acquire load of one bit: pairs with the release in bitmap_claim_atomic. */
static inline bool bitmap_test_atomic(const uint64_t *map, uint64_t p)
{
	return __atomic_load_n(&map[p / 64], __ATOMIC_ACQUIRE) >> (p % 64) & 1;
}

/* Sets bit p; true when this call set it (it was clear). */
static inline bool bitmap_claim_atomic(uint64_t *map, uint64_t p)
{
	uint64_t bit = 1ull << (p % 64);

	return !(__atomic_fetch_or(&map[p / 64], bit, __ATOMIC_ACQ_REL) & bit);
}

/* Clears bit p; true when this call cleared it (it was set). */
static inline bool bitmap_take_atomic(uint64_t *map, uint64_t p)
{
	uint64_t bit = 1ull << (p % 64);

	return __atomic_fetch_and(&map[p / 64], ~bit, __ATOMIC_ACQ_REL) & bit;
}

/* Array of n bitmaps of words[i] words each, zeroed; NULL when out of memory. */
uint64_t **bitmap_array_new(uint32_t n, const uint64_t *words);
void bitmap_array_free(uint64_t **maps, uint32_t n);

#endif /* VMM_UTIL_BITMAP_H */
