/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_virtio_mmio.c - the virtio-mmio transport's register model
 * (virtio_mmio.c) driven as a guest driver would (virtio_mmio_guest.h):
 * identification, feature negotiation and its refusals, the status order,
 * a full init then a notify that pops a chain, the queue registers' rules,
 * QueueReady refusals, reset, interrupts. Config space, out of range and
 * odd-sized accesses and the command line are test_virtio_mmio_access.c,
 * the migration blob test_virtio_mmio_state.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "virtio_mmio_guest.h"

static void test_init_refusals(void **state)
{
	struct virtio_mmio *dev = malloc(sizeof(*dev));
	struct virtio_mmio_params p;

	(void)state;
	p = g_params();
	p.device_id = 0;
	assert_int_equal(virtio_mmio_init(dev, &p), -EINVAL);
	p = g_params();
	p.nqueues = 0;
	assert_int_equal(virtio_mmio_init(dev, &p), -EINVAL);
	p.nqueues = VIRTIO_MMIO_MAX_QUEUES + 1;
	assert_int_equal(virtio_mmio_init(dev, &p), -EINVAL);
	p = g_params();
	p.queue_max[1] = 24;
	assert_int_equal(virtio_mmio_init(dev, &p), -EINVAL);
	p = g_params();
	p.config_len = VIRTIO_MMIO_CONFIG_MAX + 1;
	assert_int_equal(virtio_mmio_init(dev, &p), -EINVAL);
	p = g_params();
	p.features |= 1ull << 34; /* RING_PACKED: not this transport's */
	assert_int_equal(virtio_mmio_init(dev, &p), -EINVAL);
	p = g_params();
	p.features |= 1ull << 38; /* NOTIFICATION_DATA */
	assert_int_equal(virtio_mmio_init(dev, &p), -EINVAL);
	p = g_params();
	p.features |= 1ull << VIRTIO_F_RING_INDIRECT_DESC | 1ull << 23 | 1ull << 63;
	assert_int_equal(virtio_mmio_init(dev, &p), 0);
	assert_int_equal(dev->device_features, p.features | G_VERSION_1);
	free(dev);
}

static void test_identification(void **state)
{
	struct g *g = g_new();

	(void)state;
	assert_int_equal(rd(g, VIRTIO_MMIO_MAGIC_VALUE), 0x74726976);
	assert_int_equal(rd(g, VIRTIO_MMIO_VERSION), 2);
	assert_int_equal(rd(g, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_NET);
	assert_int_equal(rd(g, VIRTIO_MMIO_VENDOR_ID), 0x554d4551);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), 0);
	assert_int_equal(rd(g, VIRTIO_MMIO_CONFIG_GENERATION), 0);
	/* Read-only: writes are refused and change nothing. */
	for (uint64_t off = 0; off <= VIRTIO_MMIO_VENDOR_ID; off += 4)
		assert_int_equal(wr(g, off, 7), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_DEVICE_FEATURES, 7), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NUM_MAX, 7), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_INTERRUPT_STATUS, 3), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_CONFIG_GENERATION, 7), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(rd(g, VIRTIO_MMIO_MAGIC_VALUE), 0x74726976);
	assert_int_equal(rd(g, VIRTIO_MMIO_VERSION), 2);
	assert_int_equal(rd(g, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_NET);
	assert_int_equal(rd(g, VIRTIO_MMIO_CONFIG_GENERATION), 0);
	/* No shared memory region: length (and base) -1. */
	assert_int_equal(rd(g, VIRTIO_MMIO_SHM_LEN_LOW), 0xffffffffu);
	assert_int_equal(rd(g, VIRTIO_MMIO_SHM_LEN_HIGH), 0xffffffffu);
	g_free(g);
}

static void test_feature_selectors(void **state)
{
	struct g *g = g_new();
	uint64_t f = G_FEATURES | G_VERSION_1;

	(void)state;
	assert_int_equal(rd(g, VIRTIO_MMIO_DEVICE_FEATURES), (uint32_t)f);
	assert_int_equal(wr(g, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_DEVICE_FEATURES_SEL), 1);
	assert_int_equal(rd(g, VIRTIO_MMIO_DEVICE_FEATURES), (uint32_t)(f >> 32));
	assert_int_equal(wr(g, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 2), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_DEVICE_FEATURES), 0);
	assert_int_equal(wr(g, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0xffffffff), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_DEVICE_FEATURES), 0);

	/* Before DRIVER the driver's features are not taken. */
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES, 1), VIRTIO_MMIO_EV_IGNORED);
	g_add_status(g, VIRTIO_STATUS_ACKNOWLEDGE);
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES, 1), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(g->dev.driver_features, 0);
	g_add_status(g, VIRTIO_STATUS_DRIVER);
	g_set_features(g, G_VERSION_1 | G_FEAT_DEV5);
	assert_int_equal(g->dev.driver_features, G_VERSION_1 | G_FEAT_DEV5);
	assert_int_equal(rd(g, VIRTIO_MMIO_DRIVER_FEATURES), 1); /* sel 1: VERSION_1 */
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_DRIVER_FEATURES), G_FEAT_DEV5);
	/* A selector past the 64 bits the transport has: the write is refused. */
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 2), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES, 0xff), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(rd(g, VIRTIO_MMIO_DRIVER_FEATURES), 0);
	assert_int_equal(g->dev.driver_features, G_VERSION_1 | G_FEAT_DEV5);
	g_free(g);
}

/* ACKNOWLEDGE, DRIVER, the features f, then FEATURES_OK: the status read back. */
static uint32_t try_features(struct g *g, uint64_t f)
{
	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, 0), VIRTIO_MMIO_EV_RESET);
	g_add_status(g, VIRTIO_STATUS_ACKNOWLEDGE);
	g_add_status(g, VIRTIO_STATUS_DRIVER);
	g_set_features(g, f);
	assert_int_equal(g_add_status(g, VIRTIO_STATUS_FEATURES_OK), VIRTIO_MMIO_EV_NONE);
	return rd(g, VIRTIO_MMIO_STATUS);
}

static void test_features_ok_rules(void **state)
{
	struct g *g = g_new();
	const uint32_t ad = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER;

	(void)state;
	/* A feature the device did not offer, low or high word. */
	assert_int_equal(try_features(g, G_VERSION_1 | 1ull << 6), ad);
	assert_int_equal(try_features(g, G_VERSION_1 | 1ull << 53), ad);
	assert_int_equal(try_features(g, G_VERSION_1 | 1ull << VIRTIO_F_RING_INDIRECT_DESC), ad);
	/* No VERSION_1: a legacy driver, which this device does not serve. */
	assert_int_equal(try_features(g, G_FEAT_DEV5), ad);
	assert_int_equal(try_features(g, 0), ad);
	/* Refused, the driver sets FAILED (Linux's virtio_dev_probe()); DRIVER_OK stays out. */
	assert_int_equal(g_add_status(g, VIRTIO_STATUS_FAILED), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(g_add_status(g, VIRTIO_STATUS_FEATURES_OK), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(g_add_status(g, VIRTIO_STATUS_DRIVER_OK), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), ad | VIRTIO_STATUS_FAILED);

	/* Any offered subset with VERSION_1 is accepted. */
	assert_int_equal(try_features(g, G_VERSION_1), ad | VIRTIO_STATUS_FEATURES_OK);
	assert_int_equal(try_features(g, G_FEATURES | G_VERSION_1), ad | VIRTIO_STATUS_FEATURES_OK);
	/* Frozen after FEATURES_OK: both words, the selector still moves. */
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES, 0), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES, 0), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(g->dev.driver_features, G_FEATURES | G_VERSION_1);
	g_free(g);
}

static void test_status_order(void **state)
{
	struct g *g = g_new();
	const uint32_t A = VIRTIO_STATUS_ACKNOWLEDGE, D = VIRTIO_STATUS_DRIVER;

	(void)state;
	/* Each bit needs the one before it; the others of the same write stay. */
	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, D), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), 0);
	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, A | VIRTIO_STATUS_DRIVER_OK),
			 VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), A);
	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, A | D), VIRTIO_MMIO_EV_NONE);
	g_set_features(g, G_VERSION_1);
	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, A | D | VIRTIO_STATUS_DRIVER_OK),
			 VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), A | D);
	/* Clearing a bit is not the driver's to do: the write is ignored. */
	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, D | VIRTIO_STATUS_FEATURES_OK),
			 VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), A | D);
	/* DEVICE_NEEDS_RESET is the device's: a driver's write of it sets nothing. */
	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, A | D | VIRTIO_STATUS_DEVICE_NEEDS_RESET | 0x30),
			 VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), A | D);
	/* FEATURES_OK and DRIVER_OK in one write: in order, both taken. */
	assert_int_equal(
	    wr(g, VIRTIO_MMIO_STATUS, A | D | VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK),
	    VIRTIO_MMIO_EV_DRIVER_OK);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS),
			 A | D | VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK);
	/* After FAILED only a reset is heard. */
	assert_int_equal(g_add_status(g, VIRTIO_STATUS_FAILED), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, 0xff), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, 0), VIRTIO_MMIO_EV_RESET);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), 0);
	g_free(g);
}

/* The init sequence of 3.1.1, then a request on queue 0 kicked through QueueNotify. */
static void test_init_sequence_and_notify(void **state)
{
	struct g *g = g_new();
	struct virtio_mmio_action a;
	struct virtq *q;

	(void)state;
	g_negotiate(g, G_VERSION_1 | 1ull << VIRTIO_F_RING_EVENT_IDX);
	g_setup_queue_ok(g, 0);
	q = virtio_mmio_queue(&g->dev, 0);
	assert_true(q->ready);
	assert_int_equal(q->size, G_SIZE);
	assert_int_equal(q->desc_gpa, G_DESC);
	assert_int_equal(q->avail_gpa, G_AVAIL);
	assert_int_equal(q->used_gpa, G_USED);
	assert_true(virtq_event_idx(q)); /* the ring got the driver's features */
	assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_NUM), G_SIZE);
	assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_DESC_LOW), (uint32_t)G_DESC);
	assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_DEVICE_HIGH), 0);

	/* A buffer made available before DRIVER_OK: its kick is not the device's yet. */
	g_post(g, 0, 3, G_BUF, 64, VIRTQ_DESC_F_WRITE);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NOTIFY, 0), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(g_add_status(g, VIRTIO_STATUS_DRIVER_OK), VIRTIO_MMIO_EV_DRIVER_OK);

	a = virtio_mmio_write(&g->dev, &g->mem, VIRTIO_MMIO_QUEUE_NOTIFY, 4, 0);
	assert_int_equal(a.ev, VIRTIO_MMIO_EV_NOTIFY);
	assert_int_equal(a.queue, 0);
	q = virtio_mmio_queue(&g->dev, a.queue);
	assert_int_equal(virtq_pop(q, &g->mem, &g->c), VIRTQ_POP_CHAIN);
	assert_int_equal(g->c.head, 3);
	assert_int_equal(g->c.nseg, 1);
	assert_int_equal(g->c.seg[0].gpa, G_BUF);
	assert_int_equal(g->c.write_len, 64);
	assert_int_equal(virtq_pop(q, &g->mem, &g->c), VIRTQ_POP_EMPTY);
	assert_int_equal(virtq_push(q, &g->mem, 3, 64), 0);
	assert_true(virtio_mmio_raise(&g->dev, VIRTIO_MMIO_INT_VRING));
	assert_true(virtio_mmio_irq_pending(&g->dev));
	assert_int_equal(rd(g, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_VRING);
	assert_int_equal(le_get16(g_host(g, G_USED + 2, 2)), 1);
	assert_int_equal(wr(g, VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_MMIO_INT_VRING),
			 VIRTIO_MMIO_EV_NONE);
	assert_false(virtio_mmio_irq_pending(&g->dev));

	/* Queue 1 was never set up, queue 2 does not exist. */
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NOTIFY, 1), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NOTIFY, 2), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NOTIFY, 0x10000), VIRTIO_MMIO_EV_IGNORED);
	/* QueueNotify names its queue: QueueSel does not matter. */
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_SEL, 1), VIRTIO_MMIO_EV_NONE);
	a = virtio_mmio_write(&g->dev, &g->mem, VIRTIO_MMIO_QUEUE_NOTIFY, 4, 0);
	assert_int_equal(a.ev, VIRTIO_MMIO_EV_NOTIFY);
	assert_int_equal(a.queue, 0);
	/* After FAILED the device takes no kick. */
	g_add_status(g, VIRTIO_STATUS_FAILED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NOTIFY, 0), VIRTIO_MMIO_EV_IGNORED);
	g_free(g);
}

static void test_queue_registers_when(void **state)
{
	struct g *g = g_new();
	struct virtq *q0 = virtio_mmio_queue(&g->dev, 0), *q1 = virtio_mmio_queue(&g->dev, 1);

	(void)state;
	/* Before FEATURES_OK: no queue setup. */
	g_add_status(g, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NUM, 8), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x1000), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_READY, 1), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(q0->size, 0);
	assert_int_equal(q0->desc_gpa, 0);

	g_negotiate(g, G_VERSION_1);
	g_setup_queue_ok(g, 0);
	/* Ready: every register of the queue is frozen, QueueReady=1 again too. */
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NUM, 4), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x20000), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_DESC_HIGH, 1), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_DRIVER_LOW, 0x20000), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_DEVICE_LOW, 0x20000), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_READY, 1), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_READY, 2), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(q0->size, G_SIZE);
	assert_int_equal(q0->desc_gpa, G_DESC);
	assert_int_equal(q0->avail_gpa, G_AVAIL);
	assert_int_equal(q0->used_gpa, G_USED);

	/* Before DRIVER_OK a driver may give a queue up (Linux's vm_del_vq()). */
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_READY, 0), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_READY), 0);
	assert_false(q0->ready);
	g_setup_queue_ok(g, 0);

	/* After DRIVER_OK: nothing of any queue, ready or not. */
	assert_int_equal(g_add_status(g, VIRTIO_STATUS_DRIVER_OK), VIRTIO_MMIO_EV_DRIVER_OK);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_READY, 0), VIRTIO_MMIO_EV_IGNORED);
	assert_true(q0->ready);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_SEL, 1), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NUM, 8), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x1000), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_READY, 1), VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(q1->size, 0);
	assert_false(q1->ready);
	g_free(g);
}

/* QueueReady with a layout the queue cannot use: stays 0, DEVICE_NEEDS_RESET. */
static void test_queue_ready_refused(void **state)
{
	struct {
		uint32_t num;
		uint64_t desc, avail, used;
	} bad[] = {
	    {3, G_DESC, G_AVAIL, G_USED},		 /* not a power of two */
	    {0, G_DESC, G_AVAIL, G_USED},		 /* no size */
	    {32, G_DESC, G_AVAIL, G_USED},		 /* above queue 1's QueueNumMax 16 */
	    {8, G_DESC + 8, G_AVAIL, G_USED},		 /* descriptor table misaligned */
	    {8, G_DESC, G_AVAIL + 1, G_USED},		 /* avail misaligned */
	    {8, G_DESC, G_AVAIL, G_USED + 2},		 /* used misaligned */
	    {8, G_RAM - 64, G_AVAIL, G_USED},		 /* table runs past RAM */
	    {8, G_DESC, G_AVAIL, 1ull << 40},		 /* used ring not RAM */
	    {8, 0xfffffffffffffff0ull, G_AVAIL, G_USED}, /* wraps */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct g *g = g_new();

		g_negotiate(g, G_VERSION_1 | 1ull << VIRTIO_F_RING_EVENT_IDX);
		assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_SEL, 1), VIRTIO_MMIO_EV_NONE);
		assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NUM, bad[i].num), VIRTIO_MMIO_EV_NONE);
		g_write64(g, VIRTIO_MMIO_QUEUE_DESC_LOW, bad[i].desc);
		g_write64(g, VIRTIO_MMIO_QUEUE_DRIVER_LOW, bad[i].avail);
		g_write64(g, VIRTIO_MMIO_QUEUE_DEVICE_LOW, bad[i].used);
		assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_READY, 1), VIRTIO_MMIO_EV_IGNORED);
		assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_READY), 0);
		assert_false(g->dev.queues[1].ready);
		assert_true(rd(g, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
		/* No interrupt before DRIVER_OK; a reset clears it all. */
		assert_false(virtio_mmio_irq_pending(&g->dev));
		assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, 0), VIRTIO_MMIO_EV_RESET);
		assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), 0);
		g_free(g);
	}
}

static void test_queue_num_too_large(void **state)
{
	struct g *g = g_new();

	(void)state;
	g_negotiate(g, G_VERSION_1);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NUM, 0x10008), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_NUM), 0); /* not truncated to 8 */
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NUM, 512), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_NUM), 0);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NUM, 256), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_NUM), 256);
	g_free(g);
}

static void test_reset(void **state)
{
	struct g *g = g_new();

	(void)state;
	g_init_all(g, G_FEATURES | G_VERSION_1);
	g_post(g, 0, 0, G_BUF, 16, 0);
	assert_int_equal(virtq_pop(&g->dev.queues[0], &g->mem, &g->c), VIRTQ_POP_CHAIN);
	assert_int_equal(virtio_mmio_set_config(&g->dev, 0, "\x02", 1), 1);
	assert_true(virtio_mmio_raise(&g->dev, VIRTIO_MMIO_INT_VRING));
	wr(g, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	wr(g, VIRTIO_MMIO_QUEUE_SEL, 1);

	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, 0), VIRTIO_MMIO_EV_RESET);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), 0);
	assert_int_equal(rd(g, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	assert_false(virtio_mmio_irq_pending(&g->dev));
	assert_int_equal(rd(g, VIRTIO_MMIO_DEVICE_FEATURES_SEL), 0);
	assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_SEL), 0);
	assert_int_equal(g->dev.driver_features, 0);
	for (uint32_t i = 0; i < 2; i++) {
		struct virtq *q = virtio_mmio_queue(&g->dev, i);

		assert_false(q->ready);
		assert_int_equal(q->size, 0);
		assert_int_equal(q->desc_gpa, 0);
		assert_int_equal(q->last_avail_idx, 0);
		assert_int_equal(q->features, 0);
	}
	assert_int_equal(g->dev.queues[1].max_size, 16);
	/* The config is the device's: bytes and generation survive a reset. */
	assert_int_equal(rd(g, VIRTIO_MMIO_CONFIG_GENERATION), 1);
	assert_int_equal(g->dev.config[0], 2);
	/* A dead device takes no kick, raises nothing; the driver can start again. */
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NOTIFY, 0), VIRTIO_MMIO_EV_IGNORED);
	assert_false(virtio_mmio_raise(&g->dev, VIRTIO_MMIO_INT_VRING));
	g_init_all(g, G_VERSION_1);
	g_free(g);
}

static void test_interrupts(void **state)
{
	struct g *g = g_new();

	(void)state;
	/* Nothing before DRIVER_OK. */
	assert_false(virtio_mmio_raise(&g->dev, VIRTIO_MMIO_INT_VRING));
	g_negotiate(g, G_VERSION_1);
	assert_false(virtio_mmio_raise(&g->dev, VIRTIO_MMIO_INT_CONFIG));
	assert_int_equal(rd(g, VIRTIO_MMIO_INTERRUPT_STATUS), 0);
	assert_int_equal(g_add_status(g, VIRTIO_STATUS_DRIVER_OK), VIRTIO_MMIO_EV_DRIVER_OK);

	assert_false(virtio_mmio_raise(&g->dev, 0x4)); /* not an interrupt bit */
	assert_false(virtio_mmio_irq_pending(&g->dev));
	assert_true(virtio_mmio_raise(&g->dev, 0xff));
	assert_int_equal(rd(g, VIRTIO_MMIO_INTERRUPT_STATUS), 3);
	/* ACK clears the bits written, others stay. */
	assert_int_equal(wr(g, VIRTIO_MMIO_INTERRUPT_ACK, VIRTIO_MMIO_INT_CONFIG),
			 VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_VRING);
	assert_true(virtio_mmio_irq_pending(&g->dev));
	assert_int_equal(wr(g, VIRTIO_MMIO_INTERRUPT_ACK, 0xffffffff), VIRTIO_MMIO_EV_NONE);
	assert_false(virtio_mmio_irq_pending(&g->dev));
	/* InterruptACK is write-only. */
	assert_false(virtio_mmio_read(&g->dev, VIRTIO_MMIO_INTERRUPT_ACK, 4, &(uint32_t){0}));

	/* A broken queue: DEVICE_NEEDS_RESET and a config change (2.1.2). */
	assert_true(virtio_mmio_set_needs_reset(&g->dev));
	assert_true(rd(g, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	assert_int_equal(rd(g, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_CONFIG);
	/* The driver's read-or-write of the status keeps it. */
	g_add_status(g, 0);
	assert_true(rd(g, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	wr(g, VIRTIO_MMIO_INTERRUPT_ACK, 3);
	/* FAILED: no more interrupts. */
	g_add_status(g, VIRTIO_STATUS_FAILED);
	assert_false(virtio_mmio_raise(&g->dev, VIRTIO_MMIO_INT_VRING));
	assert_false(virtio_mmio_set_needs_reset(&g->dev));
	assert_false(virtio_mmio_irq_pending(&g->dev));
	g_free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init_refusals),
	    cmocka_unit_test(test_identification),
	    cmocka_unit_test(test_feature_selectors),
	    cmocka_unit_test(test_features_ok_rules),
	    cmocka_unit_test(test_status_order),
	    cmocka_unit_test(test_init_sequence_and_notify),
	    cmocka_unit_test(test_queue_registers_when),
	    cmocka_unit_test(test_queue_ready_refused),
	    cmocka_unit_test(test_queue_num_too_large),
	    cmocka_unit_test(test_reset),
	    cmocka_unit_test(test_interrupts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
