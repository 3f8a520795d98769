/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_virtio_mmio_state.c - the virtio-mmio transport's migration blob
 * (virtio_mmio_save(), virtio_mmio_load()): the layout, a round trip of a
 * device in the middle of its work (the target completes the chain the
 * source took, and takes the next kick), a reset device's round trip, and
 * the refusal of every malformed blob, which leaves the target untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "virtio_mmio_guest.h"

#define BLOB (VIRTIO_MMIO_STATE_FIXED + 2 * VIRTQ_STATE_SIZE)

/* A source in the middle of its work: one chain taken and not completed, an interrupt pending. */
static struct g *busy_source(void)
{
	struct g *g = g_new();

	g_init_all(g, G_FEAT_DEV52 | G_VERSION_1 | 1ull << VIRTIO_F_RING_EVENT_IDX);
	g_post(g, 0, 1, G_BUF, 32, VIRTQ_DESC_F_WRITE);
	g_post(g, 0, 2, G_BUF + 0x1000, 32, VIRTQ_DESC_F_WRITE);
	assert_int_equal(virtq_pop(&g->dev.queues[0], &g->mem, &g->c), VIRTQ_POP_CHAIN);
	assert_int_equal(virtq_push(&g->dev.queues[0], &g->mem, g->c.head, 32), 0);
	assert_int_equal(virtq_pop(&g->dev.queues[0], &g->mem, &g->c), VIRTQ_POP_CHAIN);
	assert_true(virtio_mmio_raise(&g->dev, VIRTIO_MMIO_INT_VRING));
	assert_int_equal(virtio_mmio_set_config(&g->dev, 6, "\x00\x00", 2), 1);
	wr(g, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	wr(g, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 7);
	wr(g, VIRTIO_MMIO_QUEUE_SEL, 0xffff);
	return g;
}

static void test_layout(void **state)
{
	struct g *g = busy_source();
	uint8_t b[BLOB], q[VIRTQ_STATE_SIZE];

	(void)state;
	assert_int_equal(virtio_mmio_state_size(&g->dev), BLOB);
	assert_int_equal(virtio_mmio_save(&g->dev, b), BLOB);
	assert_int_equal(le_get16(b), VIRTIO_MMIO_STATE_VERSION);
	assert_int_equal(b[2], VIRTIO_ID_NET);
	assert_int_equal(b[3], 2);
	assert_int_equal(b[4], 0x0f);
	assert_int_equal(b[5], VIRTIO_MMIO_INT_VRING | VIRTIO_MMIO_INT_CONFIG);
	assert_int_equal(le_get16(b + 6), 0);
	assert_int_equal(le_get32(b + 8), 1);
	assert_int_equal(le_get32(b + 12), 7);
	assert_int_equal(le_get64(b + 16), G_FEAT_DEV52 | G_VERSION_1 | 1ull << 29);
	assert_int_equal(le_get32(b + 24), 0xffff);
	assert_int_equal(le_get32(b + 28), 1);
	virtq_save(&g->dev.queues[0], q);
	assert_memory_equal(b + 32, q, VIRTQ_STATE_SIZE);
	virtq_save(&g->dev.queues[1], q);
	assert_memory_equal(b + 32 + VIRTQ_STATE_SIZE, q, VIRTQ_STATE_SIZE);
	g_free(g);
}

static void test_round_trip(void **state)
{
	struct g *src = busy_source(), *dst = g_new();
	uint8_t b[BLOB], b2[BLOB];
	uint16_t head = src->c.head;
	struct virtio_mmio_action a;
	char err[200];

	(void)state;
	virtio_mmio_save(&src->dev, b);
	memcpy(dst->mem.base, src->mem.base, 2 << 20); /* the RAM migrates with the pages */
	memcpy(dst->avail_idx, src->avail_idx, sizeof(dst->avail_idx));
	assert_int_equal(virtio_mmio_load(&dst->dev, &dst->mem, b, sizeof(b), err, sizeof(err)), 0);
	virtio_mmio_save(&dst->dev, b2);
	assert_memory_equal(b, b2, BLOB);
	assert_int_equal(rd(dst, VIRTIO_MMIO_STATUS), 0x0f);
	assert_int_equal(rd(dst, VIRTIO_MMIO_INTERRUPT_STATUS), 3);
	assert_int_equal(rd(dst, VIRTIO_MMIO_DEVICE_FEATURES),
			 (uint32_t)(src->dev.device_features >> 32));
	assert_int_equal(rd(dst, VIRTIO_MMIO_CONFIG_GENERATION), 1);
	assert_int_equal(rd(dst, VIRTIO_MMIO_QUEUE_SEL), 0xffff);

	/* The target completes the chain the source took, then serves a new kick. */
	assert_int_equal(virtq_push(&dst->dev.queues[0], &dst->mem, head, 32), 0);
	assert_int_equal(le_get16(g_host(dst, G_USED + 2, 2)), 2);
	g_post(dst, 0, 4, G_BUF, 8, 0);
	a = virtio_mmio_write(&dst->dev, &dst->mem, VIRTIO_MMIO_QUEUE_NOTIFY, 4, 0);
	assert_int_equal(a.ev, VIRTIO_MMIO_EV_NOTIFY);
	assert_int_equal(virtq_pop(&dst->dev.queues[0], &dst->mem, &dst->c), VIRTQ_POP_CHAIN);
	assert_int_equal(dst->c.head, 4);
	/* Frozen as on the source: features, queue registers. */
	assert_int_equal(wr(dst, VIRTIO_MMIO_DRIVER_FEATURES, 0), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(dst, VIRTIO_MMIO_QUEUE_SEL, 0), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(wr(dst, VIRTIO_MMIO_QUEUE_NUM, 4), VIRTIO_MMIO_EV_IGNORED);
	g_free(src);
	g_free(dst);
}

/* A fresh device, one mid-negotiation, one mid-setup (before DRIVER_OK, one queue ready). */
static void test_round_trip_early(void **state)
{
	struct g *src = g_new(), *dst = g_new();
	uint8_t b[BLOB], b2[BLOB];
	char err[200];

	(void)state;
	virtio_mmio_save(&src->dev, b);
	assert_int_equal(virtio_mmio_load(&dst->dev, &dst->mem, b, sizeof(b), err, sizeof(err)), 0);
	virtio_mmio_save(&dst->dev, b2);
	assert_memory_equal(b, b2, BLOB);

	/* Mid-negotiation, the driver's features not (yet) acceptable: carried as they are. */
	g_add_status(src, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	g_set_features(src, 1ull << 6);
	virtio_mmio_save(&src->dev, b);
	assert_int_equal(virtio_mmio_load(&dst->dev, &dst->mem, b, sizeof(b), err, sizeof(err)), 0);
	assert_int_equal(dst->dev.driver_features, 1ull << 6);
	assert_int_equal(g_add_status(dst, VIRTIO_STATUS_FEATURES_OK), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(dst, VIRTIO_MMIO_STATUS), 3);

	g_negotiate(src, G_VERSION_1);
	g_setup_queue_ok(src, 1);
	virtio_mmio_save(&src->dev, b);
	assert_int_equal(virtio_mmio_load(&dst->dev, &dst->mem, b, sizeof(b), err, sizeof(err)), 0);
	virtio_mmio_save(&dst->dev, b2);
	assert_memory_equal(b, b2, BLOB);
	/* The target's driver goes on with the setup. */
	g_setup_queue_ok(dst, 0);
	assert_int_equal(g_add_status(dst, VIRTIO_STATUS_DRIVER_OK), VIRTIO_MMIO_EV_DRIVER_OK);
	g_free(src);
	g_free(dst);
}

typedef void (*corrupt_fn)(uint8_t *b);

static void c_version(uint8_t *b)
{
	le_put16(b, 2);
}
static void c_device_id(uint8_t *b)
{
	b[2] = VIRTIO_ID_BLOCK;
}
static void c_nqueues(uint8_t *b)
{
	b[3] = 3;
}
static void c_reserved(uint8_t *b)
{
	b[7] = 1;
}
static void c_status_unknown(uint8_t *b)
{
	b[4] |= 0x10;
}
static void c_status_order(uint8_t *b)
{
	b[4] = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_DRIVER_OK;
}
static void c_int_unknown(uint8_t *b)
{
	b[5] = 4;
}
static void c_int_early(uint8_t *b)
{
	b[4] &= (uint8_t)~VIRTIO_STATUS_DRIVER_OK;
}
static void c_features_unoffered(uint8_t *b)
{
	b[16] |= 1; /* bit 0: not offered */
}
static void c_features_no_version1(uint8_t *b)
{
	b[20] = 0;
}
static void c_queue_version(uint8_t *b)
{
	b[32] = 9;
}
static void c_queue1_blob(uint8_t *b)
{
	le_put16(b + 32 + VIRTQ_STATE_SIZE + 2, 32); /* size above queue 1's QueueNumMax 16 */
}
static void c_queue_features(uint8_t *b)
{
	b[32 + 8] ^= 1u << 5; /* the ring's features are not the driver's */
}
static void c_queue_layout(uint8_t *b)
{
	le_put64(b + 32 + 16, G_RAM); /* the descriptor table outside RAM */
}

static void test_refusals(void **state)
{
	static const struct {
		corrupt_fn fn;
		const char *msg;
	} cases[] = {
	    {c_version, "version 2"},
	    {c_device_id, "device id 2"},
	    {c_nqueues, "3 queues"},
	    {c_reserved, "reserved"},
	    {c_status_unknown, "unknown bits"},
	    {c_status_order, "DRIVER_OK without FEATURES_OK"},
	    {c_int_unknown, "interrupt status 0x04"},
	    {c_int_early, "interrupt status 0x03 before DRIVER_OK"},
	    {c_features_unoffered, "this device offers"},
	    {c_features_no_version1, "without VERSION_1"},
	    {c_queue_version, "queue 0: virtqueue state: version 9"},
	    {c_queue1_blob, "queue 1: virtqueue state: size 32"},
	    {c_queue_features, "queue 0 has features"},
	    {c_queue_layout, "queue 0: virtqueue state: virtqueue: descriptor ring"},
	};
	struct g *src = busy_source(), *dst = g_new();
	uint8_t good[BLOB], b[BLOB + 1], before[BLOB], after[BLOB];
	char err[200];

	(void)state;
	virtio_mmio_save(&src->dev, good);
	memcpy(dst->mem.base, src->mem.base, 2 << 20);
	/* The target is a device of its own, in some state of its own. */
	g_negotiate(dst, G_VERSION_1);
	virtio_mmio_save(&dst->dev, before);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(b, good, BLOB);
		cases[i].fn(b);
		err[0] = 0;
		assert_int_equal(virtio_mmio_load(&dst->dev, &dst->mem, b, BLOB, err, sizeof(err)),
				 -EINVAL);
		if (!strstr(err, cases[i].msg))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err, cases[i].msg);
		virtio_mmio_save(&dst->dev, after);
		assert_memory_equal(before, after, BLOB);
	}
	/* Truncated, one byte too many, empty. */
	memcpy(b, good, BLOB);
	b[BLOB] = 0;
	for (size_t len = 0; len <= BLOB + 1; len++) {
		if (len == BLOB)
			continue;
		assert_int_equal(virtio_mmio_load(&dst->dev, &dst->mem, b, len, err, sizeof(err)),
				 -EINVAL);
	}
	virtio_mmio_save(&dst->dev, after);
	assert_memory_equal(before, after, BLOB);
	/* NULL err is fine; the good blob still loads. */
	assert_int_equal(virtio_mmio_load(&dst->dev, &dst->mem, b, 3, NULL, 0), -EINVAL);
	assert_int_equal(virtio_mmio_load(&dst->dev, &dst->mem, good, BLOB, err, sizeof(err)), 0);
	g_free(src);
	g_free(dst);
}

/* A target whose device offers less than the source's driver took. */
static void test_target_offers_less(void **state)
{
	struct g *src = busy_source(), *dst = calloc(1, sizeof(*dst));
	struct virtio_mmio_params p = g_params();
	uint8_t b[BLOB];
	char err[200];

	(void)state;
	assert_non_null(dst);
	assert_int_equal(guest_mem_init(&dst->mem, G_RAM, G_SLOT, MEM_BACKEND_ANON), 0);
	p.features &= ~G_FEAT_DEV52;
	assert_int_equal(virtio_mmio_init(&dst->dev, &p), 0);
	memcpy(dst->mem.base, src->mem.base, 2 << 20);
	virtio_mmio_save(&src->dev, b);
	assert_int_equal(virtio_mmio_load(&dst->dev, &dst->mem, b, BLOB, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "this device offers"));
	g_free(src);
	g_free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_round_trip_early),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_target_offers_less),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
