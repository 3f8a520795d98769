/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_virtq_state.c - a virtqueue's migration blob (virtq_save(),
 * virtq_load()): the layout byte by byte, round trips of a live queue (the
 * target goes on where the source stopped, across the 16-bit wrap) and of
 * a queue not ready yet, and the refusal of every malformed blob, which
 * must leave the target's queue untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "virtq_driver.h"

/* The fields the blob carries, equal in both queues. */
static void assert_same_queue(const struct virtq *a, const struct virtq *b)
{
	assert_int_equal(a->size, b->size);
	assert_int_equal(a->ready, b->ready);
	assert_int_equal(a->broken, b->broken);
	assert_int_equal(a->features, b->features);
	assert_int_equal(a->desc_gpa, b->desc_gpa);
	assert_int_equal(a->avail_gpa, b->avail_gpa);
	assert_int_equal(a->used_gpa, b->used_gpa);
	assert_int_equal(a->last_avail_idx, b->last_avail_idx);
	assert_int_equal(a->next_used_idx, b->next_used_idx);
}

static void test_layout(void **state)
{
	struct drv *d = drv_new(16, FEAT(VIRTIO_F_VERSION_1) | FEAT(VIRTIO_F_RING_EVENT_IDX), 0);
	uint8_t b[VIRTQ_STATE_SIZE];

	(void)state;
	d->q.last_avail_idx = 0x1234;
	d->q.next_used_idx = 0x1230;
	assert_int_equal(virtq_save(&d->q, b), VIRTQ_STATE_SIZE);
	assert_int_equal(le_get16(b), VIRTQ_STATE_VERSION);
	assert_int_equal(le_get16(b + 2), 16);
	assert_int_equal(b[4], 0x01);
	assert_int_equal(b[5], 0);
	assert_int_equal(le_get16(b + 6), 0x1234);
	assert_int_equal(le_get64(b + 8), (1ull << 32) | (1ull << 29));
	assert_int_equal(le_get64(b + 16), DRV_DESC);
	assert_int_equal(le_get64(b + 24), DRV_AVAIL);
	assert_int_equal(le_get64(b + 32), DRV_USED);
	assert_int_equal(le_get16(b + 40), 0x1230);
	for (int i = 42; i < VIRTQ_STATE_SIZE; i++)
		assert_int_equal(b[i], 0);
	drv_free(d);
}

/* Source queue with two chains in flight near the wrap; the target finishes them. */
static void test_round_trip(void **state)
{
	struct drv *src = drv_new(8, FEAT(VIRTIO_F_RING_INDIRECT_DESC), 65534);
	struct drv *dst = drv_new(8, 0, 0);
	uint8_t b[VIRTQ_STATE_SIZE], b2[VIRTQ_STATE_SIZE];
	char err[160];

	(void)state;
	for (uint16_t k = 0; k < 4; k++) {
		drv_desc(src, k, DRV_BUF, 4, 0, 0);
		drv_avail(src, k);
	}
	for (uint16_t k = 0; k < 3; k++)
		assert_int_equal(virtq_pop(&src->q, &src->mem, &src->c), VIRTQ_POP_CHAIN);
	assert_int_equal(virtq_push(&src->q, &src->mem, 0, 0), 0);
	virtq_save(&src->q, b);

	/* The target's queue starts reset, as a fresh device's; its RAM is the source's. */
	virtq_reset(&dst->q);
	memcpy(dst->mem.base, src->mem.base, 1 << 20);
	assert_int_equal(virtq_load(&dst->q, &dst->mem, b, sizeof(b), err, sizeof(err)), 0);
	assert_same_queue(&src->q, &dst->q);
	assert_int_equal(dst->q.last_avail_idx, 1);
	assert_int_equal(dst->q.next_used_idx, 65535);
	virtq_save(&dst->q, b2);
	assert_memory_equal(b, b2, sizeof(b));

	/* Two chains in flight (the device carries them), one still available. */
	assert_int_equal(virtq_push(&dst->q, &dst->mem, 1, 0), 0);
	assert_int_equal(virtq_push(&dst->q, &dst->mem, 2, 0), 0);
	assert_int_equal(virtq_push(&dst->q, &dst->mem, 2, 0), -EINVAL);
	assert_int_equal(drv_used_idx(dst), 1);
	assert_int_equal(virtq_pop(&dst->q, &dst->mem, &dst->c), VIRTQ_POP_CHAIN);
	assert_int_equal(dst->c.head, 3);
	assert_int_equal(virtq_pop(&dst->q, &dst->mem, &dst->c), VIRTQ_POP_EMPTY);
	drv_free(src);
	drv_free(dst);
}

static void test_round_trip_not_ready(void **state)
{
	struct drv *d = drv_new(8, 0, 0);
	struct virtq *q = malloc(sizeof(*q));
	uint8_t b[VIRTQ_STATE_SIZE];
	char err[160];

	(void)state;
	/* The driver wrote QueueNum and an address but has not set QueueReady. */
	virtq_reset(&d->q);
	d->q.size = 3;
	d->q.desc_gpa = 0xdead0000;
	virtq_save(&d->q, b);
	assert_int_equal(virtq_init(q, DRV_MAX), 0);
	assert_int_equal(virtq_load(q, &d->mem, b, sizeof(b), err, sizeof(err)), 0);
	assert_same_queue(&d->q, q);
	assert_false(q->ready);
	free(q);
	drv_free(d);
}

/* Loads a modified blob: it must be refused with a message holding `why`, q unchanged. */
static void expect_refused(struct drv *d, const uint8_t *blob, size_t len, const char *why)
{
	struct virtq before = d->q;
	char err[160] = "";

	assert_int_equal(virtq_load(&d->q, &d->mem, blob, len, err, sizeof(err)), -EINVAL);
	if (!strstr(err, why))
		fail_msg("message \"%s\", expected \"%s\"", err, why);
	assert_non_null(strstr(err, "virtqueue state: "));
	assert_memory_equal(&before, &d->q, offsetof(struct virtq, seen));
}

static void test_refusals(void **state)
{
	struct drv *d = drv_new(16, 0, 0);
	uint8_t good[VIRTQ_STATE_SIZE + 1], b[VIRTQ_STATE_SIZE + 1];

	(void)state;
	d->q.last_avail_idx = 7;
	d->q.next_used_idx = 5;
	virtq_save(&d->q, good);
	d->q.last_avail_idx = 100; /* the target's queue, which a refusal must not change */
	d->q.next_used_idx = 100;

#define MUTATE(stmt, why)                                                                          \
	do {                                                                                       \
		memcpy(b, good, VIRTQ_STATE_SIZE);                                                 \
		stmt;                                                                              \
		expect_refused(d, b, VIRTQ_STATE_SIZE, why);                                       \
	} while (0)

	memcpy(b, good, VIRTQ_STATE_SIZE);
	expect_refused(d, b, VIRTQ_STATE_SIZE - 1, "47 bytes, 48 expected");
	expect_refused(d, b, VIRTQ_STATE_SIZE + 1, "49 bytes");
	expect_refused(d, b, 0, "0 bytes");
	MUTATE(le_put16(b, 2), "version 2");
	MUTATE(le_put16(b, 0), "version 0");
	MUTATE(b[4] |= 0x04, "unknown bits");
	MUTATE(b[5] = 1, "reserved");
	MUTATE(b[47] = 1, "reserved");
	MUTATE(b[42] = 0x80, "reserved");
	MUTATE(le_put16(b + 2, 2 * DRV_MAX), "at most 1024");
	MUTATE(le_put16(b + 2, 12), "power of two");
	MUTATE(le_put16(b + 2, 0), "power of two");
	MUTATE(le_put64(b + 16, DRV_DESC + 8), "aligned");
	MUTATE(le_put64(b + 24, DRV_RAM - 4), "avail ring");
	MUTATE(le_put64(b + 32, 1ull << 40), "used ring");
	MUTATE(b[4] = 0x02, "broken but not ready");
	MUTATE(le_put16(b + 40, 65526), "17 chains in flight"); /* 7 - 65526 in 16 bits */
	MUTATE(le_put16(b + 40, 8), "65535 chains in flight");	/* used ahead of avail */
	MUTATE((b[4] = 0, le_put64(b + 16, 3)), "indexes 7/5");
#undef MUTATE

	/* The good blob still loads, and a broken queue comes back broken. */
	memcpy(b, good, VIRTQ_STATE_SIZE);
	b[4] = 0x03;
	assert_int_equal(virtq_load(&d->q, &d->mem, b, VIRTQ_STATE_SIZE, NULL, 0), 0);
	assert_true(d->q.broken);
	assert_non_null(d->q.why);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_BROKEN);
	assert_int_equal(virtq_load(&d->q, &d->mem, good, VIRTQ_STATE_SIZE, NULL, 0), 0);
	assert_false(d->q.broken);
	assert_int_equal(d->q.last_avail_idx, 7);
	assert_int_equal(d->q.next_used_idx, 5);
	drv_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_round_trip_not_ready),
	    cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
