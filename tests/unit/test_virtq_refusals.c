/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_virtq_refusals.c - what virtq_pop() refuses, and indirect tables.
 * A malformed chain is refused for that request only (VIRTQ_POP_BAD_CHAIN:
 * the head is taken, can be completed with length 0, and the next request
 * pops normally); a malformed ring breaks the queue (VIRTQ_POP_BROKEN).
 * Each refusal is checked by its errno and its reason, so that a check
 * that stops working cannot hide behind another one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "virtq_driver.h"

#define INDIRECT FEAT(VIRTIO_F_RING_INDIRECT_DESC)
#define NEXT	 VIRTQ_DESC_F_NEXT
#define WRITE	 VIRTQ_DESC_F_WRITE
#define IND	 VIRTQ_DESC_F_INDIRECT
#define TABLE	 (DRV_BUF + 0x10000) /* an indirect table */

/*
 * Pops head (made available before): it must be refused with error and a
 * reason containing why; then the queue still works: the head completes
 * with length 0 and a good one-descriptor chain (descriptor `spare`) pops.
 */
static void expect_bad(struct drv *d, uint16_t head, int error, const char *why, uint16_t spare)
{
	uint16_t taken = d->q.last_avail_idx;
	uint32_t id, len;

	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_BAD_CHAIN);
	assert_int_equal(d->c.head, head);
	assert_int_equal(d->c.error, error);
	assert_non_null(d->c.why);
	if (!strstr(d->c.why, why))
		fail_msg("reason \"%s\", expected \"%s\"", d->c.why, why);
	assert_int_equal(d->c.nseg, 0);
	assert_int_equal(d->c.read_len + d->c.write_len, 0);
	assert_false(d->q.broken);
	assert_int_equal(d->q.last_avail_idx, (uint16_t)(taken + 1));
	assert_int_equal(virtq_push(&d->q, &d->mem, head, 0), 0);
	drv_used_elem(d, taken, &id, &len);
	assert_int_equal(id, head);
	assert_int_equal(len, 0);

	drv_desc(d, spare, DRV_BUF, 4, 0, 0);
	drv_avail(d, spare);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(d->c.head, spare);
	assert_int_equal(virtq_push(&d->q, &d->mem, spare, 0), 0);
}

static void expect_broken(struct drv *d, const char *why)
{
	uint16_t taken = d->q.last_avail_idx;

	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_BROKEN);
	assert_true(d->q.broken);
	assert_non_null(strstr(d->q.why, why));
	assert_int_equal(d->q.last_avail_idx, taken);
	/* Broken stays broken until a reset; nothing more is taken or pushed. */
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_BROKEN);
	assert_int_equal(virtq_avail_pending(&d->q, &d->mem), 0);
	assert_int_equal(virtq_push(&d->q, &d->mem, 0, 0), -EIO);
}

static void test_head_out_of_range(void **state)
{
	struct drv *d = drv_new(16, 0, 0);

	(void)state;
	drv_avail(d, 16);
	expect_broken(d, "not a descriptor index");
	virtq_reset(&d->q);
	assert_false(d->q.broken);
	drv_free(d);
}

static void test_avail_idx_jump(void **state)
{
	struct drv *d = drv_new(8, 0, 65530);

	(void)state;
	/* Exactly size ahead is a full ring: fine. */
	for (uint16_t k = 0; k < 8; k++) {
		drv_desc(d, k, DRV_BUF, 4, 0, 0);
		drv_avail(d, k);
	}
	for (uint16_t k = 0; k < 8; k++)
		assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_EMPTY);
	/* One more than size: the driver wrote over entries the device had not taken. */
	drv_set_avail_idx(d, (uint16_t)(d->q.last_avail_idx + 9));
	expect_broken(d, "more than the queue size");
	drv_free(d);

	/* Backwards is a jump of 65535 in 16 bits. */
	d = drv_new(8, 0, 100);
	drv_set_avail_idx(d, 99);
	expect_broken(d, "more than the queue size");
	drv_free(d);
}

static void test_next_out_of_range(void **state)
{
	struct drv *d = drv_new(16, 0, 0);

	(void)state;
	drv_desc(d, 3, DRV_BUF, 4, NEXT, 16);
	drv_avail(d, 3);
	expect_bad(d, 3, -EINVAL, "out of range", 0);
	drv_desc(d, 3, DRV_BUF, 4, NEXT, 0xffff);
	drv_avail(d, 3);
	expect_bad(d, 3, -EINVAL, "out of range", 0);
	drv_free(d);
}

static void test_loops(void **state)
{
	struct drv *d = drv_new(16, 0, 0);

	(void)state;
	drv_desc(d, 4, DRV_BUF, 4, NEXT, 4); /* itself */
	drv_avail(d, 4);
	expect_bad(d, 4, -ELOOP, "loops", 0);
	drv_desc(d, 1, DRV_BUF, 4, NEXT, 2); /* 1 -> 2 -> 3 -> 1 */
	drv_desc(d, 2, DRV_BUF, 4, NEXT, 3);
	drv_desc(d, 3, DRV_BUF, 4, NEXT, 1);
	drv_avail(d, 1);
	expect_bad(d, 1, -ELOOP, "loops", 0);
	/* A loop into the middle of a chain of writable descriptors. */
	drv_desc(d, 5, DRV_BUF, 4, NEXT | WRITE, 6);
	drv_desc(d, 6, DRV_BUF, 4, NEXT | WRITE, 7);
	drv_desc(d, 7, DRV_BUF, 4, NEXT | WRITE, 6);
	drv_avail(d, 5);
	expect_bad(d, 5, -ELOOP, "loops", 0);
	drv_free(d);

	/* Every descriptor of the table once is not a loop. */
	d = drv_new(16, 0, 0);
	for (uint16_t i = 0; i < 16; i++)
		drv_desc(d, i, DRV_BUF, 4, i < 15 ? NEXT : 0, (uint16_t)(i + 1));
	drv_avail(d, 0);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(d->c.nseg, 16);
	drv_free(d);
}

static void test_segment_outside_ram(void **state)
{
	struct drv *d = drv_new(16, 0, 0);

	(void)state;
	drv_desc(d, 0, DRV_RAM - 4, 8, 0, 0); /* straddles the top */
	drv_avail(d, 0);
	expect_bad(d, 0, -EFAULT, "not guest RAM", 1);
	drv_desc(d, 0, DRV_RAM - 4, 4, NEXT, 1); /* the last byte of RAM is fine... */
	drv_desc(d, 1, DRV_RAM, 0, WRITE, 0);	 /* ...even empty, the top is not */
	drv_avail(d, 0);
	expect_bad(d, 0, -EFAULT, "not guest RAM", 2);
	drv_desc(d, 0, UINT64_MAX - 7, 16, WRITE, 0); /* wraps the address space */
	drv_avail(d, 0);
	expect_bad(d, 0, -EFAULT, "not guest RAM", 1);
	drv_free(d);
}

static void test_length_cap(void **state)
{
	const uint32_t quarter = VIRTQ_CHAIN_MAX_LEN / 4;
	/* RAM for the cap plus one (MAP_NORESERVE: untouched, it costs nothing). */
	struct drv *d = drv_new_ram(2ull << 30, 16, 0, 0);

	(void)state;
	for (uint16_t i = 0; i < 5; i++)
		drv_desc(d, i, DRV_BUF + (uint64_t)i * quarter, quarter, NEXT, (uint16_t)(i + 1));
	drv_desc(d, 3, DRV_BUF + 3ull * quarter, quarter, 0, 0); /* 4 quarters: the cap */
	drv_avail(d, 0);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(d->c.read_len, VIRTQ_CHAIN_MAX_LEN);
	assert_int_equal(virtq_push(&d->q, &d->mem, 0, 0), 0);
	drv_desc(d, 3, DRV_BUF + 3ull * quarter, quarter, NEXT, 4);
	drv_desc(d, 4, DRV_BUF + 4ull * quarter, 1, 0, 0); /* one byte more */
	drv_avail(d, 0);
	expect_bad(d, 0, -EOVERFLOW, "VIRTQ_CHAIN_MAX_LEN", 8);
	/* One length beyond the cap (with another, a 32-bit sum would wrap). */
	drv_desc(d, 0, DRV_BUF, 0xffffffffu, NEXT | WRITE, 1);
	drv_desc(d, 1, DRV_BUF, 2, WRITE, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -EOVERFLOW, "VIRTQ_CHAIN_MAX_LEN", 8);
	drv_free(d);
}

static void test_read_after_write(void **state)
{
	struct drv *d = drv_new(16, 0, 0);

	(void)state;
	drv_desc(d, 0, DRV_BUF, 4, NEXT, 1);
	drv_desc(d, 1, DRV_BUF, 4, NEXT | WRITE, 2);
	drv_desc(d, 2, DRV_BUF, 4, 0, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -EINVAL, "readable descriptor after a writable", 5);
	drv_free(d);
}

static void test_too_many_segments(void **state)
{
	struct drv *d = drv_new(DRV_MAX, 0, 0);

	(void)state;
	for (uint16_t i = 0; i <= VIRTQ_CHAIN_MAX_SEGS; i++)
		drv_desc(d, i, DRV_BUF, 1, i < VIRTQ_CHAIN_MAX_SEGS ? NEXT : 0, (uint16_t)(i + 1));
	drv_avail(d, 1); /* 1..256: VIRTQ_CHAIN_MAX_SEGS, fine */
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(d->c.nseg, VIRTQ_CHAIN_MAX_SEGS);
	assert_int_equal(virtq_push(&d->q, &d->mem, 1, 0), 0);
	drv_avail(d, 0); /* 0..256: one more */
	expect_bad(d, 0, -E2BIG, "VIRTQ_CHAIN_MAX_SEGS", 900);
	drv_free(d);
}

static void test_indirect_good(void **state)
{
	struct drv *d = drv_new(16, INDIRECT, 0);
	char buf[8];

	(void)state;
	drv_desc_at(d, TABLE, 0, DRV_BUF, 4, NEXT, 2);
	drv_desc_at(d, TABLE, 2, DRV_BUF + 4, 4, NEXT, 1);
	drv_desc_at(d, TABLE, 1, DRV_BUF + 0x3000, 64, WRITE, 0);
	/* The write flag of the indirect descriptor itself is ignored (the spec says so). */
	drv_desc(d, 9, TABLE, 48, IND | WRITE, 0);
	drv_avail(d, 9);
	memcpy(drv_host(d, DRV_BUF, 8), "virtqueu", 8);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(d->c.head, 9);
	assert_true(d->c.indirect);
	assert_int_equal(d->c.nseg, 3);
	assert_int_equal(d->c.nread, 2);
	assert_int_equal(d->c.seg[0].desc, 0);
	assert_int_equal(d->c.seg[1].desc, 2);
	assert_int_equal(d->c.seg[2].desc, 1);
	assert_int_equal(d->c.seg[2].gpa, DRV_BUF + 0x3000);
	assert_int_equal(d->c.read_len, 8);
	assert_int_equal(d->c.write_len, 64);
	assert_int_equal(virtq_chain_read(&d->c, &d->mem, 0, buf, 8), 8);
	assert_memory_equal(buf, "virtqueu", 8);
	assert_int_equal(virtq_push(&d->q, &d->mem, 9, 64), 0);

	/* An indirect table larger than the queue is allowed (Linux makes them). */
	for (uint32_t i = 0; i < 100; i++)
		drv_desc_at(d, TABLE, i, DRV_BUF, 1, i < 99 ? NEXT : 0, (uint16_t)(i + 1));
	drv_desc(d, 3, TABLE, 100 * 16, IND, 0);
	drv_avail(d, 3);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(d->c.nseg, 100);
	drv_free(d);
}

static void test_indirect_refusals(void **state)
{
	struct drv *d = drv_new(16, INDIRECT, 0);

	(void)state;
	drv_desc_at(d, TABLE, 0, DRV_BUF, 4, 0, 0);
	drv_desc(d, 0, TABLE, 16, IND | NEXT, 1);
	drv_avail(d, 0);
	expect_bad(d, 0, -EINVAL, "INDIRECT descriptor with NEXT", 15);
	drv_desc(d, 0, TABLE, 0, IND, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -EINVAL, "not a multiple of 16", 15);
	drv_desc(d, 0, TABLE, 24, IND, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -EINVAL, "not a multiple of 16", 15);
	/* An indirect table needs no alignment (the spec asks none; SLOB gives 8). */
	drv_desc_at(d, TABLE + 9, 0, DRV_BUF, 4, 0, 0);
	drv_desc(d, 0, TABLE + 9, 16, IND, 0);
	drv_avail(d, 0);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(d->c.nseg, 1);
	assert_int_equal(d->c.read_len, 4);
	assert_int_equal(virtq_push(&d->q, &d->mem, 0, 0), 0);
	drv_desc(d, 0, DRV_RAM - 16, 32, IND, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -EFAULT, "indirect table is not guest RAM", 15);
	drv_desc(d, 0, DRV_BUF, (VIRTQ_MAX_SIZE + 1) * 16, IND, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -E2BIG, "more than 32768", 15);

	/* Nested: an INDIRECT descriptor inside the table. */
	drv_desc_at(d, TABLE, 0, DRV_BUF, 4, NEXT, 1);
	drv_desc_at(d, TABLE, 1, TABLE + 0x100, 16, IND, 0);
	drv_desc(d, 0, TABLE, 32, IND, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -EINVAL, "inside an indirect table", 15);
	/* Not at the head: a direct descriptor leading to an indirect one. */
	drv_desc(d, 0, DRV_BUF, 4, NEXT, 1);
	drv_desc(d, 1, TABLE, 16, IND, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -EINVAL, "not at the head", 15);
	/* Inside the table, indexes are the table's: next must be below its length. */
	drv_desc_at(d, TABLE, 0, DRV_BUF, 4, NEXT, 2);
	drv_desc_at(d, TABLE, 1, DRV_BUF, 4, 0, 0);
	drv_desc(d, 0, TABLE, 32, IND, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -EINVAL, "out of range", 15);
	/* A loop inside the table. */
	drv_desc_at(d, TABLE, 0, DRV_BUF, 4, NEXT, 1);
	drv_desc_at(d, TABLE, 1, DRV_BUF, 4, NEXT, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -ELOOP, "loops", 15);
	/* A table entry outside RAM. */
	drv_desc_at(d, TABLE, 0, DRV_BUF, 4, NEXT, 1);
	drv_desc_at(d, TABLE, 1, DRV_RAM, 4, WRITE, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -EFAULT, "descriptor buffer is not guest RAM", 15);
	drv_free(d);

	/* Without VIRTIO_F_RING_INDIRECT_DESC an indirect descriptor is refused. */
	d = drv_new(16, 0, 0);
	drv_desc_at(d, TABLE, 0, DRV_BUF, 4, 0, 0);
	drv_desc(d, 0, TABLE, 16, IND, 0);
	drv_avail(d, 0);
	expect_bad(d, 0, -EINVAL, "not negotiated", 15);
	drv_free(d);
}

/* After a loop refused in a big table, a chain through the same indexes is fine. */
static void test_seen_cleared(void **state)
{
	struct drv *d = drv_new(64, 0, 0);

	(void)state;
	drv_desc(d, 10, DRV_BUF, 4, NEXT, 40);
	drv_desc(d, 40, DRV_BUF, 4, NEXT, 10);
	drv_avail(d, 10);
	expect_bad(d, 10, -ELOOP, "loops", 63);
	drv_desc(d, 40, DRV_BUF, 4, 0, 0);
	drv_avail(d, 10);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(d->c.nseg, 2);
	drv_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_head_out_of_range),	cmocka_unit_test(test_avail_idx_jump),
	    cmocka_unit_test(test_next_out_of_range),	cmocka_unit_test(test_loops),
	    cmocka_unit_test(test_segment_outside_ram), cmocka_unit_test(test_length_cap),
	    cmocka_unit_test(test_read_after_write),	cmocka_unit_test(test_too_many_segments),
	    cmocka_unit_test(test_indirect_good),	cmocka_unit_test(test_indirect_refusals),
	    cmocka_unit_test(test_seen_cleared),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
