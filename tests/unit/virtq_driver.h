/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtq_driver.h - the driver side of a split virtqueue for the virtq unit
 * tests: a small guest (anonymous guest_mem, no KVM) with the rings at fixed
 * addresses, and helpers that lay out descriptors and make heads available
 * as a virtio driver would. The driver writes through guest_mem_ptr(), not
 * the write accessor, so the VMM-side dirty bitmap only holds what the
 * device (the code under test) wrote.
 */
#ifndef VMM_TEST_VIRTQ_DRIVER_H
#define VMM_TEST_VIRTQ_DRIVER_H

#include <stdlib.h>
#include <string.h>

#include "guest_mem.h"
#include "le.h"
#include "virtq.h"

#define DRV_RAM	  (8ull << 20)
#define DRV_SLOT  (2ull << 20)
#define DRV_DESC  0x10000ull  /* up to 32768 * 16 = 512 KiB: to 0x90000 */
#define DRV_AVAIL 0x90000ull  /* up to 64 KiB + 6 */
#define DRV_USED  0xa2000ull  /* up to 256 KiB + 6, own pages */
#define DRV_BUF	  0x100000ull /* data buffers from here */
#define DRV_MAX	  1024	      /* the device's QueueNumMax */

struct drv {
	struct guest_mem mem;
	struct virtq q;
	struct virtq_chain c;
	uint16_t avail_idx; /* the driver's next avail idx */
};

static inline uint8_t *drv_host(struct drv *d, uint64_t gpa, uint64_t len)
{
	uint8_t *p = guest_mem_ptr(&d->mem, gpa, len);

	assert_non_null(p);
	return p;
}

static inline void drv_clear_dirty(struct drv *d)
{
	for (uint32_t i = 0; i < d->mem.nslots; i++)
		memset(d->mem.slots[i].vmm_dirty, 0, (d->mem.slots[i].npages + 63) / 64 * 8);
}

static inline bool drv_dirty(struct drv *d, uint64_t gpa)
{
	const struct memslot *s = guest_mem_find_slot(&d->mem, gpa);
	uint64_t page = (gpa - s->gpa) / GUEST_PAGE_SIZE;

	return s->vmm_dirty[page / 64] >> (page % 64) & 1;
}

/* A guest of `ram` bytes and a ready queue of `size` entries at avail/used index `start`. */
static inline struct drv *drv_new_ram(uint64_t ram, uint16_t size, uint64_t features,
				      uint16_t start)
{
	struct drv *d = calloc(1, sizeof(*d));
	char err[160];

	assert_non_null(d);
	assert_int_equal(guest_mem_init(&d->mem, ram, DRV_SLOT, MEM_BACKEND_ANON), 0);
	assert_int_equal(virtq_init(&d->q, DRV_MAX), 0);
	d->q.size = size;
	d->q.desc_gpa = DRV_DESC;
	d->q.avail_gpa = DRV_AVAIL;
	d->q.used_gpa = DRV_USED;
	virtq_set_features(&d->q, features);
	assert_int_equal(virtq_set_ready(&d->q, &d->mem, err, sizeof(err)), 0);
	/* As a queue restored mid-life would be (virtq_load()), the guest's rings agreeing. */
	d->q.last_avail_idx = d->q.next_used_idx = start;
	d->avail_idx = start;
	le_put16(drv_host(d, DRV_AVAIL + 2, 2), start);
	le_put16(drv_host(d, DRV_USED + 2, 2), start);
	return d;
}

static inline struct drv *drv_new(uint16_t size, uint64_t features, uint16_t start)
{
	return drv_new_ram(DRV_RAM, size, features, start);
}

static inline void drv_free(struct drv *d)
{
	guest_mem_destroy(&d->mem);
	free(d);
}

/* Writes entry i of the descriptor table at table_gpa. */
static inline void drv_desc_at(struct drv *d, uint64_t table_gpa, uint32_t i, uint64_t addr,
			       uint32_t len, uint16_t flags, uint16_t next)
{
	uint8_t *p = drv_host(d, table_gpa + 16ull * i, 16);

	le_put64(p, addr);
	le_put32(p + 8, len);
	le_put16(p + 12, flags);
	le_put16(p + 14, next);
}

static inline void drv_desc(struct drv *d, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags,
			    uint16_t next)
{
	drv_desc_at(d, DRV_DESC, i, addr, len, flags, next);
}

/* Makes `head` available: ring[avail_idx % size] = head, then avail->idx + 1. */
static inline void drv_avail(struct drv *d, uint16_t head)
{
	le_put16(drv_host(d, DRV_AVAIL + 4 + 2u * (d->avail_idx & (d->q.size - 1)), 2), head);
	d->avail_idx++;
	le_put16(drv_host(d, DRV_AVAIL + 2, 2), d->avail_idx);
}

static inline void drv_set_avail_idx(struct drv *d, uint16_t idx)
{
	d->avail_idx = idx;
	le_put16(drv_host(d, DRV_AVAIL + 2, 2), idx);
}

static inline uint16_t drv_used_idx(struct drv *d)
{
	return le_get16(drv_host(d, DRV_USED + 2, 2));
}

/* The used element the device wrote for used index k. */
static inline void drv_used_elem(struct drv *d, uint16_t k, uint32_t *id, uint32_t *len)
{
	uint8_t *p = drv_host(d, DRV_USED + 4 + 8u * (k & (d->q.size - 1)), 8);

	*id = le_get32(p);
	*len = le_get32(p + 4);
}

#define FEAT(bit) (1ull << (bit))

#endif /* VMM_TEST_VIRTQ_DRIVER_H */
