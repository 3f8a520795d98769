/* SPDX-License-Identifier: Apache-2.0 */
/* test_blkverify.c - the block pattern and its check, as blkverify writes and verifies them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "blkverify_block.h"

#define RUN 0x0123456789ABCDEFull

static uint64_t blk[BV_BLOCK_WORDS], other[BV_BLOCK_WORDS];

static void test_fill_then_check(void **state)
{
	uint64_t exp = 0;

	(void)state;
	for (uint64_t b = 0; b < 64; b++) {
		for (uint64_t g = 1; g < 5; g++) {
			bv_block_fill(blk, b, g, RUN);
			assert_int_equal(blk[0], b);
			assert_int_equal(blk[1], g);
			assert_int_equal(blk[2], RUN);
			assert_int_equal(bv_block_check(blk, b, g, RUN, &exp), -1);
		}
	}
}

static void test_every_word_is_checked(void **state)
{
	uint64_t exp = 0;

	(void)state;
	for (int w = 0; w < (int)BV_BLOCK_WORDS; w++) {
		bv_block_fill(blk, 11, 3, RUN);
		uint64_t good = blk[w];

		blk[w] ^= 1ull << (w % 64);
		assert_int_equal(bv_block_check(blk, 11, 3, RUN, &exp), w);
		assert_int_equal(exp, good);
	}
}

/* What a migration can get wrong: a lost write, a misplaced one, an old disk image. */
static void test_lost_misplaced_and_foreign_blocks(void **state)
{
	uint64_t exp = 0;

	(void)state;
	/* A lost write leaves the previous generation: caught at the generation word. */
	bv_block_fill(blk, 5, 1, RUN);
	assert_int_equal(bv_block_check(blk, 5, 2, RUN, &exp), 1);
	assert_int_equal(exp, 2);
	/* Another block's contents: caught at the block word. */
	bv_block_fill(blk, 6, 2, RUN);
	assert_int_equal(bv_block_check(blk, 5, 2, RUN, &exp), 0);
	assert_int_equal(exp, 5);
	/* The same block and generation from another run (boot): caught at the run word. */
	bv_block_fill(blk, 5, 2, RUN + 1);
	assert_int_equal(bv_block_check(blk, 5, 2, RUN, &exp), 2);
	assert_int_equal(exp, RUN);
	/* A zeroed block fails, block 0 included (its generation is never 0). */
	memset(blk, 0, sizeof(blk));
	assert_int_equal(bv_block_check(blk, 0, 1, RUN, &exp), 1);
	assert_int_equal(bv_block_check(blk, 7, 1, RUN, &exp), 0);
	/* The right header over another generation's data is caught in the data. */
	bv_block_fill(blk, 5, 1, RUN);
	blk[1] = 2;
	assert_int_equal(bv_block_check(blk, 5, 2, RUN, &exp), (int)BV_HEADER_WORDS);
}

/* The data words of two blocks, generations or runs never coincide. */
static void test_blocks_differ(void **state)
{
	(void)state;
	bv_block_fill(blk, 9, 1, RUN);
	bv_block_fill(other, 9, 2, RUN);
	for (uint32_t w = BV_HEADER_WORDS; w < BV_BLOCK_WORDS; w++) {
		assert_int_not_equal(blk[w], other[w]);
		assert_int_not_equal(blk[w], 0);
		if (w > BV_HEADER_WORDS)
			assert_int_not_equal(blk[w], blk[w - 1]);
	}
	bv_block_fill(other, 10, 1, RUN);
	for (uint32_t w = BV_HEADER_WORDS; w < BV_BLOCK_WORDS; w++)
		assert_int_not_equal(blk[w], other[w]);
	bv_block_fill(other, 9, 1, RUN ^ 1);
	for (uint32_t w = BV_HEADER_WORDS; w < BV_BLOCK_WORDS; w++)
		assert_int_not_equal(blk[w], other[w]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fill_then_check),
	    cmocka_unit_test(test_every_word_is_checked),
	    cmocka_unit_test(test_lost_misplaced_and_foreign_blocks),
	    cmocka_unit_test(test_blocks_differ),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
