/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_mmio_guest.h - a guest driver of a virtio-mmio device for the
 * transport's unit tests: anonymous guest RAM (no KVM), a device with two
 * queues, 32-bit register accessors, the init sequence of virtio 1.2
 * 3.1.1 and a queue set up through the registers as Linux's
 * vm_setup_vq() does, with the rings at fixed addresses.
 */
#ifndef VMM_TEST_VIRTIO_MMIO_GUEST_H
#define VMM_TEST_VIRTIO_MMIO_GUEST_H

#include <stdlib.h>
#include <string.h>

#include "guest_mem.h"
#include "le.h"
#include "virtio_mmio.h"

#define G_RAM	  (4ull << 20)
#define G_SLOT	  (1ull << 20)
#define G_DESC	  0x10000ull /* queue q's rings at + q * G_QSTRIDE */
#define G_AVAIL	  0x11000ull
#define G_USED	  0x12000ull
#define G_QSTRIDE 0x4000ull
#define G_BUF	  0x100000ull
#define G_SIZE	  8u /* the driver's QueueNum */

/* The device's offer: VERSION_1 (added), EVENT_IDX, a device bit low and high. */
#define G_FEAT_DEV5  (1ull << 5)
#define G_FEAT_DEV52 (1ull << 52)
#define G_FEATURES   (G_FEAT_DEV5 | G_FEAT_DEV52 | (1ull << VIRTIO_F_RING_EVENT_IDX))
#define G_VERSION_1  (1ull << VIRTIO_F_VERSION_1)

static const uint8_t g_config[12] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56,
				     0x01, 0x00, 0xaa, 0xbb, 0xcc, 0xdd};

struct g {
	struct guest_mem mem;
	struct virtio_mmio dev;
	struct virtq_chain c;
	uint16_t avail_idx[2];
};

static inline struct virtio_mmio_params g_params(void)
{
	struct virtio_mmio_params p = {
	    .device_id = VIRTIO_ID_NET,
	    .vendor_id = 0x554d4551,
	    .features = G_FEATURES,
	    .nqueues = 2,
	    .queue_max = {256, 16},
	    .config = g_config,
	    .config_len = sizeof(g_config),
	};
	return p;
}

static inline struct g *g_new(void)
{
	struct g *g = calloc(1, sizeof(*g));
	struct virtio_mmio_params p = g_params();

	assert_non_null(g);
	assert_int_equal(guest_mem_init(&g->mem, G_RAM, G_SLOT, MEM_BACKEND_ANON), 0);
	assert_int_equal(virtio_mmio_init(&g->dev, &p), 0);
	return g;
}

static inline void g_free(struct g *g)
{
	guest_mem_destroy(&g->mem);
	free(g);
}

static inline uint32_t rd(struct g *g, uint64_t off)
{
	uint32_t v = 0xdeadbeef;

	assert_true(virtio_mmio_read(&g->dev, off, 4, &v));
	return v;
}

static inline enum virtio_mmio_event wr(struct g *g, uint64_t off, uint32_t v)
{
	return virtio_mmio_write(&g->dev, &g->mem, off, 4, v).ev;
}

/* Adds status bits as Linux's virtio_add_status() does: read, or, write. */
static inline enum virtio_mmio_event g_add_status(struct g *g, uint32_t bits)
{
	return wr(g, VIRTIO_MMIO_STATUS, rd(g, VIRTIO_MMIO_STATUS) | bits);
}

static inline void g_set_features(struct g *g, uint64_t f)
{
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)f), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(wr(g, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(f >> 32)),
			 VIRTIO_MMIO_EV_NONE);
}

/* Reset, ACKNOWLEDGE, DRIVER, features, FEATURES_OK (checked to stick). */
static inline void g_negotiate(struct g *g, uint64_t f)
{
	assert_int_equal(wr(g, VIRTIO_MMIO_STATUS, 0), VIRTIO_MMIO_EV_RESET);
	g_add_status(g, VIRTIO_STATUS_ACKNOWLEDGE);
	g_add_status(g, VIRTIO_STATUS_DRIVER);
	g_set_features(g, f);
	g_add_status(g, VIRTIO_STATUS_FEATURES_OK);
	assert_true(rd(g, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK);
}

static inline void g_write64(struct g *g, uint64_t low_off, uint64_t v)
{
	assert_int_equal(wr(g, low_off, (uint32_t)v), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(wr(g, low_off + 4, (uint32_t)(v >> 32)), VIRTIO_MMIO_EV_NONE);
}

/* Queue q's registers as vm_setup_vq() writes them; returns QueueReady's result. */
static inline enum virtio_mmio_event g_setup_queue(struct g *g, uint32_t q, uint32_t num,
						   uint64_t desc, uint64_t avail, uint64_t used)
{
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_SEL, q), VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_READY), 0);
	assert_true(rd(g, VIRTIO_MMIO_QUEUE_NUM_MAX) >= num);
	assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NUM, num), VIRTIO_MMIO_EV_NONE);
	g_write64(g, VIRTIO_MMIO_QUEUE_DESC_LOW, desc);
	g_write64(g, VIRTIO_MMIO_QUEUE_DRIVER_LOW, avail);
	g_write64(g, VIRTIO_MMIO_QUEUE_DEVICE_LOW, used);
	return wr(g, VIRTIO_MMIO_QUEUE_READY, 1);
}

static inline void g_setup_queue_ok(struct g *g, uint32_t q)
{
	assert_int_equal(g_setup_queue(g, q, G_SIZE, G_DESC + q * G_QSTRIDE,
				       G_AVAIL + q * G_QSTRIDE, G_USED + q * G_QSTRIDE),
			 VIRTIO_MMIO_EV_NONE);
	assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_READY), 1);
}

/* The whole init: negotiation, both queues, DRIVER_OK. */
static inline void g_init_all(struct g *g, uint64_t f)
{
	g_negotiate(g, f);
	g_setup_queue_ok(g, 0);
	g_setup_queue_ok(g, 1);
	assert_int_equal(g_add_status(g, VIRTIO_STATUS_DRIVER_OK), VIRTIO_MMIO_EV_DRIVER_OK);
}

static inline uint8_t *g_host(struct g *g, uint64_t gpa, uint64_t len)
{
	uint8_t *p = guest_mem_ptr(&g->mem, gpa, len);

	assert_non_null(p);
	return p;
}

/* Makes a one-descriptor chain {addr, len, flags} available on queue q as descriptor `i`. */
static inline void g_post(struct g *g, uint32_t q, uint16_t i, uint64_t addr, uint32_t len,
			  uint16_t flags)
{
	uint64_t base = q * G_QSTRIDE;
	uint8_t *d = g_host(g, G_DESC + base + 16ull * i, 16);

	le_put64(d, addr);
	le_put32(d + 8, len);
	le_put16(d + 12, flags);
	le_put16(d + 14, 0);
	le_put16(g_host(g, G_AVAIL + base + 4 + 2ull * (g->avail_idx[q] % G_SIZE), 2), i);
	g->avail_idx[q]++;
	le_put16(g_host(g, G_AVAIL + base + 2, 2), g->avail_idx[q]);
}

#endif /* VMM_TEST_VIRTIO_MMIO_GUEST_H */
