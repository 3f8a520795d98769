/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_dev_driver.h - "being the driver" of a whole virtio-mmio device
 * (virtio_dev.c with its I/O thread, blk or net) for the device unit tests:
 * anonymous guest RAM at gpa 0 (no KVM: vm_fd -1, so a QueueNotify write
 * kicks the device's eventfd by hand and the interrupt is d->irq_fd), every
 * register access through virtio_dev_mmio() as a vCPU's MMIO exit would
 * reach it, the init sequence of virtio 1.2 3.1.1 and rings at fixed
 * addresses that the test fills as a driver does.
 *
 * The device runs on its own thread, so every wait here is bounded: poll
 * every millisecond up to VDRV_TIMEOUT_MS, then let the caller's assertion
 * fail on what it saw (a device that hangs fails its test instead of
 * stopping the suite). A "nothing happens" check watches for VDRV_QUIET_MS.
 */
#ifndef VMM_TEST_VIRTIO_DEV_DRIVER_H
#define VMM_TEST_VIRTIO_DEV_DRIVER_H

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "guest_mem.h"
#include "le.h"
#include "virtio_dev.h"
#include "virtio_mmio.h"

#define VDRV_RAM	(4ull << 20)
#define VDRV_SLOT	(1ull << 20)
#define VDRV_QSIZE	16u	   /* the driver's QueueNum for every queue */
#define VDRV_RINGS	0x10000ull /* queue q's rings at + q * VDRV_QSTRIDE */
#define VDRV_QSTRIDE	0x4000ull
#define VDRV_BUF	0x100000ull  /* the tests' buffers from here */
#define VDRV_OUTSIDE	(1ull << 30) /* a gpa that is not RAM */
#define VDRV_TIMEOUT_MS 10000
#define VDRV_QUIET_MS	100
/* The whole binary: a park or an MMIO access that never returns kills it, not the suite. */
#define VDRV_ALARM_S   300
#define VDRV_VERSION_1 (1ull << VIRTIO_F_VERSION_1)

struct vdrv {
	struct guest_mem mem;
	struct virtio_dev *d;  /* the device the driver talks to (a load swaps it) */
	uint16_t avail_idx[2]; /* per queue: the next avail idx the driver publishes */
};

static inline struct vdrv *vdrv_new(void)
{
	struct vdrv *v = calloc(1, sizeof(*v));

	assert_non_null(v);
	assert_int_equal(guest_mem_init(&v->mem, VDRV_RAM, VDRV_SLOT, MEM_BACKEND_ANON), 0);
	return v;
}

static inline void vdrv_free(struct vdrv *v)
{
	guest_mem_destroy(&v->mem);
	free(v);
}

/* A config for the constructors: defaults, no seccomp (the test process is no VMM). */
static inline struct vm_config *vdrv_cfg(const char *name)
{
	struct vm_config *cfg = calloc(1, sizeof(*cfg));

	assert_non_null(cfg);
	config_defaults(cfg);
	cfg->seccomp = false;
	assert_true(strlen(name) < sizeof(cfg->name));
	strcpy(cfg->name, name);
	return cfg;
}

static inline uint8_t *vdrv_host(struct vdrv *v, uint64_t gpa, uint64_t len)
{
	uint8_t *p = guest_mem_ptr(&v->mem, gpa, len);

	assert_non_null(p);
	return p;
}

static inline uint64_t vdrv_desc_gpa(unsigned q)
{
	return VDRV_RINGS + q * VDRV_QSTRIDE;
}

static inline uint64_t vdrv_avail_gpa(unsigned q)
{
	return VDRV_RINGS + q * VDRV_QSTRIDE + 0x1000;
}

static inline uint64_t vdrv_used_gpa(unsigned q)
{
	return VDRV_RINGS + q * VDRV_QSTRIDE + 0x2000;
}

/* An MMIO access of `len` bytes, as a vCPU's exit hands it to the device. */
static inline uint32_t vdrv_rd_len(struct vdrv *v, uint64_t off, uint32_t len)
{
	uint8_t b[8];
	uint32_t x = 0;

	memset(b, 0xa5, sizeof(b));
	virtio_dev_mmio(v->d, off, false, b, len);
	for (uint32_t i = 0; i < len && i < 4; i++)
		x |= (uint32_t)b[i] << (8 * i);
	return x;
}

static inline uint32_t vdrv_rd(struct vdrv *v, uint64_t off)
{
	return vdrv_rd_len(v, off, 4);
}

static inline void vdrv_wr(struct vdrv *v, uint64_t off, uint32_t x)
{
	uint8_t b[4];

	le_put32(b, x);
	virtio_dev_mmio(v->d, off, true, b, 4);
}

static inline uint64_t vdrv_device_features(struct vdrv *v)
{
	uint64_t f;

	vdrv_wr(v, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	f = vdrv_rd(v, VIRTIO_MMIO_DEVICE_FEATURES);
	vdrv_wr(v, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	return f | (uint64_t)vdrv_rd(v, VIRTIO_MMIO_DEVICE_FEATURES) << 32;
}

static inline void vdrv_add_status(struct vdrv *v, uint32_t bits)
{
	vdrv_wr(v, VIRTIO_MMIO_STATUS, vdrv_rd(v, VIRTIO_MMIO_STATUS) | bits);
}

static inline void vdrv_wr64(struct vdrv *v, uint64_t low, uint64_t x)
{
	vdrv_wr(v, low, (uint32_t)x);
	vdrv_wr(v, low + 4, (uint32_t)(x >> 32));
}

/*
 * The whole init of virtio 1.2 3.1.1 for nq queues, accepting `want`
 * (VERSION_1 is added; each bit must be offered): reset, ACKNOWLEDGE,
 * DRIVER, features, FEATURES_OK (checked to stick), every queue on
 * zeroed rings, DRIVER_OK.
 */
static inline void vdrv_init(struct vdrv *v, unsigned nq, uint64_t want)
{
	uint64_t offered;

	want |= VDRV_VERSION_1;
	vdrv_wr(v, VIRTIO_MMIO_STATUS, 0);
	assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_STATUS), 0);
	assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_MAGIC_VALUE), VIRTIO_MMIO_MAGIC);
	assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_VERSION), VIRTIO_MMIO_VERSION_MODERN);
	vdrv_add_status(v, VIRTIO_STATUS_ACKNOWLEDGE);
	vdrv_add_status(v, VIRTIO_STATUS_DRIVER);
	offered = vdrv_device_features(v);
	assert_int_equal(offered & want, want);
	vdrv_wr(v, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	vdrv_wr(v, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)want);
	vdrv_wr(v, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	vdrv_wr(v, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(want >> 32));
	vdrv_add_status(v, VIRTIO_STATUS_FEATURES_OK);
	assert_true(vdrv_rd(v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_FEATURES_OK);
	for (unsigned q = 0; q < nq; q++) {
		memset(vdrv_host(v, vdrv_desc_gpa(q), VDRV_QSTRIDE), 0, VDRV_QSTRIDE);
		v->avail_idx[q] = 0;
		vdrv_wr(v, VIRTIO_MMIO_QUEUE_SEL, q);
		assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_QUEUE_READY), 0);
		assert_true(vdrv_rd(v, VIRTIO_MMIO_QUEUE_NUM_MAX) >= VDRV_QSIZE);
		vdrv_wr(v, VIRTIO_MMIO_QUEUE_NUM, VDRV_QSIZE);
		vdrv_wr64(v, VIRTIO_MMIO_QUEUE_DESC_LOW, vdrv_desc_gpa(q));
		vdrv_wr64(v, VIRTIO_MMIO_QUEUE_DRIVER_LOW, vdrv_avail_gpa(q));
		vdrv_wr64(v, VIRTIO_MMIO_QUEUE_DEVICE_LOW, vdrv_used_gpa(q));
		vdrv_wr(v, VIRTIO_MMIO_QUEUE_READY, 1);
		assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_QUEUE_READY), 1);
	}
	vdrv_add_status(v, VIRTIO_STATUS_DRIVER_OK);
	assert_true(vdrv_rd(v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK);
}

/* Descriptor i of queue q. */
static inline void vdrv_desc(struct vdrv *v, unsigned q, uint16_t i, uint64_t addr, uint32_t len,
			     uint16_t flags, uint16_t next)
{
	uint8_t *p = vdrv_host(v, vdrv_desc_gpa(q) + 16ull * i, 16);

	le_put64(p, addr);
	le_put32(p + 8, len);
	le_put16(p + 12, flags);
	le_put16(p + 14, next);
}

/* Publishes avail->idx with release order: the entry and descriptors are seen first. */
static inline void vdrv_publish(struct vdrv *v, unsigned q, uint16_t idx)
{
	uint8_t *p = vdrv_host(v, vdrv_avail_gpa(q) + 2, 2);

	v->avail_idx[q] = idx;
	__atomic_store_n((uint16_t *)p, htole16(idx), __ATOMIC_RELEASE);
}

/* Makes `head` (any value: a hostile test passes one out of range) available on q. */
static inline void vdrv_avail(struct vdrv *v, unsigned q, uint16_t head)
{
	uint16_t slot = v->avail_idx[q] % VDRV_QSIZE;

	le_put16(vdrv_host(v, vdrv_avail_gpa(q) + 4 + 2u * slot, 2), head);
	vdrv_publish(v, q, (uint16_t)(v->avail_idx[q] + 1));
}

static inline void vdrv_notify(struct vdrv *v, unsigned q)
{
	vdrv_wr(v, VIRTIO_MMIO_QUEUE_NOTIFY, q);
}

static inline uint16_t vdrv_used_idx(struct vdrv *v, unsigned q)
{
	uint8_t *p = vdrv_host(v, vdrv_used_gpa(q) + 2, 2);

	return le16toh(__atomic_load_n((uint16_t *)p, __ATOMIC_ACQUIRE));
}

/* The used element for used index k. */
static inline void vdrv_used_elem(struct vdrv *v, unsigned q, uint16_t k, uint32_t *id,
				  uint32_t *len)
{
	uint8_t *p = vdrv_host(v, vdrv_used_gpa(q) + 4 + 8u * (k % VDRV_QSIZE), 8);

	*id = le_get32(p);
	*len = le_get32(p + 4);
}

/* EVENT_IDX: the device's avail_event (after the used ring): notify when avail->idx passes it. */
static inline uint16_t vdrv_avail_event(struct vdrv *v, unsigned q)
{
	uint8_t *p = vdrv_host(v, vdrv_used_gpa(q) + 4 + 8u * VDRV_QSIZE, 2);

	return le16toh(__atomic_load_n((uint16_t *)p, __ATOMIC_ACQUIRE));
}

/* EVENT_IDX: the driver's used_event (after the avail ring): interrupt once used passes it. */
static inline void vdrv_set_used_event(struct vdrv *v, unsigned q, uint16_t idx)
{
	uint8_t *p = vdrv_host(v, vdrv_avail_gpa(q) + 4 + 2u * VDRV_QSIZE, 2);

	__atomic_store_n((uint16_t *)p, htole16(idx), __ATOMIC_SEQ_CST);
}

static inline void vdrv_sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Waits (bounded) until q's used idx is `want`; returns what it last saw. */
static inline uint16_t vdrv_wait_used(struct vdrv *v, unsigned q, uint16_t want)
{
	uint16_t idx = vdrv_used_idx(v, q);

	for (unsigned ms = 0; idx != want && ms < VDRV_TIMEOUT_MS; ms++) {
		vdrv_sleep_ms(1);
		idx = vdrv_used_idx(v, q);
	}
	return idx;
}

/* Waits (bounded) until Status has every bit of `bits`; returns the last Status read. */
static inline uint32_t vdrv_wait_status(struct vdrv *v, uint32_t bits)
{
	uint32_t s = vdrv_rd(v, VIRTIO_MMIO_STATUS);

	for (unsigned ms = 0; (s & bits) != bits && ms < VDRV_TIMEOUT_MS; ms++) {
		vdrv_sleep_ms(1);
		s = vdrv_rd(v, VIRTIO_MMIO_STATUS);
	}
	return s;
}

/*
 * Watches q's used idx for VDRV_QUIET_MS and returns the highest distance
 * from `was` it reached: 0 when the device took nothing in that window.
 */
static inline uint16_t vdrv_quiet(struct vdrv *v, unsigned q, uint16_t was)
{
	uint16_t most = 0;

	for (unsigned ms = 0; ms < VDRV_QUIET_MS; ms++) {
		uint16_t moved = (uint16_t)(vdrv_used_idx(v, q) - was);

		most = moved > most ? moved : most;
		vdrv_sleep_ms(1);
	}
	return most;
}

/* The interrupts signalled on d's irqfd since the last call (the eventfd's count). */
static inline uint64_t vdrv_irqs(struct virtio_dev *d)
{
	uint64_t n = 0;

	if (read(d->irq_fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
		return 0; /* EAGAIN: none */
	return n;
}

/*
 * The same, waiting (bounded) for at least one: the device publishes the
 * used idx before it decides on the interrupt, so a driver that polled
 * the ring may look before the irqfd is written.
 */
static inline uint64_t vdrv_wait_irqs(struct virtio_dev *d)
{
	struct pollfd p = {.fd = d->irq_fd, .events = POLLIN};

	if (poll(&p, 1, VDRV_TIMEOUT_MS) != 1)
		return 0;
	return vdrv_irqs(d);
}

#endif /* VMM_TEST_VIRTIO_DEV_DRIVER_H */
