/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blkverify_block.h - the block contents of the Linux-guest disk workload.
 *
 * Block b at generation g of run r holds: word 0 = b, word 1 = g, word 2 =
 * r, words 3..511 = an xorshift64* stream seeded from (b, g, r). The plain
 * words let a CORRUPTION report say what the disk holds instead (a lost
 * write leaves an older generation, a misdirected one another block's
 * contents); the run id (random per start) keeps a block written by an
 * earlier run of the program, or an earlier boot, from passing for this
 * run's block of the same generation. Header-only so the host unit test
 * (test_blkverify.c) checks the very code the guest program runs.
 */
#ifndef BLKVERIFY_BLOCK_H
#define BLKVERIFY_BLOCK_H

#include <stdint.h>

#include "memverify_page.h"

#define BV_BLOCK_SIZE	4096u
#define BV_BLOCK_WORDS	(BV_BLOCK_SIZE / 8u)
#define BV_HEADER_WORDS 3u

/* Never 0: xorshift would stay 0 forever. */
static inline uint64_t bv_block_seed(uint64_t block, uint64_t gen, uint64_t run)
{
	return mv_page_seed(block ^ mv_splitmix64(run ^ 0x6A09E667F3BCC909ull), gen);
}

static inline void bv_block_fill(uint64_t *blk, uint64_t block, uint64_t gen, uint64_t run)
{
	uint64_t s = bv_block_seed(block, gen, run);
	uint32_t w;

	blk[0] = block;
	blk[1] = gen;
	blk[2] = run;
	for (w = BV_HEADER_WORDS; w < BV_BLOCK_WORDS; w++)
		blk[w] = mv_xorshift(&s);
}

/*
 * Does the block hold exactly (block, gen, run)? Returns -1 if so, else the
 * first differing word, with what was expected there in *expected.
 */
static inline int bv_block_check(const uint64_t *blk, uint64_t block, uint64_t gen, uint64_t run,
				 uint64_t *expected)
{
	const uint64_t header[BV_HEADER_WORDS] = {block, gen, run};
	uint64_t s = bv_block_seed(block, gen, run);
	uint32_t w;

	for (w = 0; w < BV_HEADER_WORDS; w++) {
		if (blk[w] != header[w]) {
			*expected = header[w];
			return (int)w;
		}
	}
	for (; w < BV_BLOCK_WORDS; w++) {
		uint64_t want = mv_xorshift(&s);

		if (blk[w] != want) {
			*expected = want;
			return (int)w;
		}
	}
	return -1;
}

#endif
