/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_virtio_blk_dev.c - the virtio-blk device as a whole (virtio_blk.c on
 * virtio_dev.c: transport, lock, I/O thread, eventfds) driven through its
 * MMIO window as a guest driver drives it (virtio_dev_driver.h), without
 * KVM: write and read back against a temporary file, FLUSH, GET_ID, the
 * config space, a read-only disk, hostile chains and rings, and a
 * park/save/load into a second device that carries on the same rings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "devices.h"
#include "virtio_blk_req.h"
#include "virtio_dev_driver.h"

#define VIRTIO_BLK_F_RO	   5
#define VIRTIO_BLK_F_FLUSH 9

#define DISK_BYTES (1u << 20)
#define HDR	   VDRV_BUF		/* the request header */
#define STAT	   (VDRV_BUF + 0x100)	/* the status byte */
#define DATA	   (VDRV_BUF + 0x1000)	/* OUT data */
#define DATA_IN	   (VDRV_BUF + 0x10000) /* IN data */
#define NSECT	   8u
#define F_NEXT	   VIRTQ_DESC_F_NEXT
#define F_WRITE	   VIRTQ_DESC_F_WRITE

struct disk {
	char path[128];
	int fd; /* the test's own view of the file */
	struct vm_config *cfg;
};

/* A temporary disk of DISK_BYTES zero bytes, and the config that names it. */
static void disk_new(struct disk *k, const char *vm_name, bool readonly)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(k->path, sizeof(k->path), "%s/vmm-blkdev-XXXXXX", dir);
	k->fd = mkstemp(k->path);
	assert_true(k->fd >= 0);
	assert_int_equal(ftruncate(k->fd, DISK_BYTES), 0);
	k->cfg = vdrv_cfg(vm_name);
	strcpy(k->cfg->disk_path, k->path);
	k->cfg->disk_readonly = readonly;
}

/*
 * A test's resources, freed by the teardown even when an assertion ended
 * the test early: a failure then reports only itself (no leak reports, no
 * device thread left running, no temporary file left behind).
 */
struct fx {
	struct vdrv *v;
	struct disk k;
	struct virtio_dev *d[2]; /* a source and a target */
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->v = vdrv_new();
	f->k.fd = -1;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < 2; i++)
		if (f->d[i])
			virtio_dev_destroy(f->d[i]);
	if (f->k.fd >= 0) {
		close(f->k.fd);
		unlink(f->k.path);
	}
	free(f->k.cfg);
	vdrv_free(f->v);
	free(f);
	return 0;
}

static struct virtio_dev *blk_new(struct vdrv *v, struct disk *k, bool parked)
{
	struct virtio_dev *d = NULL;
	char err[256] = "";

	assert_int_equal(virtio_blk_create(&d, k->cfg, &v->mem, -1, 0, DEVICES_MMIO_BASE,
					   DEVICES_IRQ_BASE, err, sizeof(err)),
			 0);
	assert_non_null(d);
	assert_int_equal(virtio_dev_start(d, parked, err, sizeof(err)), 0);
	return d;
}

/* Puts one request on queue 0 as descriptors head.. and kicks; data may be 0 bytes. */
static void blk_submit(struct vdrv *v, uint16_t head, uint32_t type, uint64_t sector, uint64_t data,
		       uint32_t len, bool device_writes)
{
	uint8_t *h = vdrv_host(v, HDR, 16);
	uint16_t stat_desc = len ? head + 2 : head + 1;

	le_put32(h, type);
	le_put32(h + 4, 0);
	le_put64(h + 8, sector);
	*vdrv_host(v, STAT, 1) = 0xff; /* a status the device never writes */
	vdrv_desc(v, 0, head, HDR, 16, F_NEXT, (uint16_t)(head + 1));
	if (len)
		vdrv_desc(v, 0, head + 1, data, len, F_NEXT | (device_writes ? F_WRITE : 0),
			  stat_desc);
	vdrv_desc(v, 0, stat_desc, STAT, 1, F_WRITE, 0);
	vdrv_avail(v, 0, head);
	vdrv_notify(v, 0);
}

/* Waits for the queue to catch up with the driver; checks the last element is `head`. */
static uint32_t blk_complete(struct vdrv *v, uint16_t head)
{
	uint32_t id, len;

	assert_int_equal(vdrv_wait_used(v, 0, v->avail_idx[0]), v->avail_idx[0]);
	vdrv_used_elem(v, 0, (uint16_t)(v->avail_idx[0] - 1), &id, &len);
	assert_int_equal(id, head);
	return len;
}

/* One request, done: returns its status byte; *used_len gets the used element's len. */
static uint8_t blk_do(struct vdrv *v, uint16_t head, uint32_t type, uint64_t sector, uint64_t data,
		      uint32_t len, bool device_writes, uint32_t *used_len)
{
	blk_submit(v, head, type, sector, data, len, device_writes);
	*used_len = blk_complete(v, head);
	return *vdrv_host(v, STAT, 1);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

/* Whether the file holds what `fill(seed)` made at sector..+NSECT. */
static bool file_has(struct disk *k, uint64_t sector, unsigned seed)
{
	uint8_t got[NSECT * 512], want[NSECT * 512];

	assert_int_equal(pread(k->fd, got, sizeof(got), (off_t)(sector * 512)), sizeof(got));
	fill(want, sizeof(want), seed);
	return memcmp(got, want, sizeof(got)) == 0;
}

static void test_write_read_flush_id(void **state)
{
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint8_t zero[512] = {0}, edge[512];
	uint32_t len;
	uint64_t feat;

	disk_new(&f->k, "unitvm", false);
	v->d = f->d[0] = blk_new(v, &f->k, false);
	feat = vdrv_device_features(v);
	assert_true(feat >> VIRTIO_BLK_F_FLUSH & 1);
	assert_false(feat >> VIRTIO_BLK_F_RO & 1); /* a writable disk is not offered as RO */
	/* capacity (u64 at config 0, read as a driver does: two 32-bit halves) */
	assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_CONFIG), DISK_BYTES / 512);
	assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_CONFIG + 4), 0);
	assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_BLOCK);
	vdrv_init(v, 1, 1ull << VIRTIO_BLK_F_FLUSH);
	vdrv_irqs(v->d);

	fill(vdrv_host(v, DATA, NSECT * 512), NSECT * 512, 3);
	assert_int_equal(blk_do(v, 0, VIRTIO_BLK_T_OUT, 3, DATA, NSECT * 512, false, &len),
			 VIRTIO_BLK_S_OK);
	assert_int_equal(len, 1); /* an OUT writes only the status */
	assert_true(file_has(&f->k, 3, 3));
	/* The sectors either side are untouched. */
	assert_int_equal(pread(f->k.fd, edge, 512, 2 * 512), 512);
	assert_memory_equal(edge, zero, 512);
	assert_int_equal(pread(f->k.fd, edge, 512, (3 + NSECT) * 512), 512);
	assert_memory_equal(edge, zero, 512);

	memset(vdrv_host(v, DATA_IN, NSECT * 512), 0xee, NSECT * 512);
	assert_int_equal(blk_do(v, 3, VIRTIO_BLK_T_IN, 3, DATA_IN, NSECT * 512, true, &len),
			 VIRTIO_BLK_S_OK);
	assert_int_equal(len, NSECT * 512 + 1);
	assert_memory_equal(vdrv_host(v, DATA_IN, NSECT * 512), vdrv_host(v, DATA, NSECT * 512),
			    NSECT * 512);

	assert_int_equal(blk_do(v, 6, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, &len), VIRTIO_BLK_S_OK);
	assert_int_equal(len, 1);

	/* GET_ID: "<vm name>-disk<index>", NUL-padded to 20 bytes. */
	memset(vdrv_host(v, DATA_IN, 20), 0xee, 20);
	assert_int_equal(blk_do(v, 9, VIRTIO_BLK_T_GET_ID, 0, DATA_IN, 20, true, &len),
			 VIRTIO_BLK_S_OK);
	assert_int_equal(len, 21);
	assert_memory_equal(vdrv_host(v, DATA_IN, 20), "unitvm-disk0\0\0\0\0\0\0\0\0", 20);

	/* Used buffers were signalled: the irqfd and InterruptStatus's used-buffer bit. */
	assert_true(vdrv_wait_irqs(v->d) >= 1);
	assert_true(vdrv_rd(v, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_VRING);
	assert_false(vdrv_rd(v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
}

/*
 * EVENT_IDX (virtio 1.2 2.7.7, 2.7.10): once the queue is empty the device
 * asks for the driver's next notification (avail_event = the next entry),
 * and it interrupts only when its used index passes the driver's
 * used_event.
 */
static void test_event_idx(void **state)
{
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint32_t len;

	disk_new(&f->k, "unitvm", false);
	v->d = f->d[0] = blk_new(v, &f->k, false);
	assert_true(vdrv_device_features(v) >> VIRTIO_F_RING_EVENT_IDX & 1);
	vdrv_init(v, 1, 1ull << VIRTIO_F_RING_EVENT_IDX);
	vdrv_irqs(v->d);
	/* Interrupt me only once used idx goes past 1: not for the first request. */
	vdrv_set_used_event(v, 0, 1);
	assert_int_equal(blk_do(v, 0, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, &len), VIRTIO_BLK_S_OK);
	assert_int_equal(vdrv_avail_event(v, 0), 1); /* re-armed: notify me at entry 1 */
	vdrv_sleep_ms(VDRV_QUIET_MS);
	assert_int_equal(vdrv_irqs(v->d), 0);
	assert_false(vdrv_rd(v, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_VRING);
	/* The second completion moves used idx from 1 to 2, past used_event: interrupted. */
	assert_int_equal(blk_do(v, 3, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, &len), VIRTIO_BLK_S_OK);
	assert_true(vdrv_wait_irqs(v->d) >= 1);
	assert_int_equal(vdrv_avail_event(v, 0), 2);
	/* Without EVENT_IDX negotiated the device leaves avail_event alone. */
	vdrv_init(v, 1, 0);
	assert_int_equal(blk_do(v, 0, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, &len), VIRTIO_BLK_S_OK);
	assert_int_equal(vdrv_avail_event(v, 0), 0);
	assert_true(vdrv_wait_irqs(v->d) >= 1);
}

/* A long VM name: GET_ID's answer is cut at 20 bytes, inside "-disk0". */
static void test_id_cut_to_20_bytes(void **state)
{
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint32_t len;

	disk_new(&f->k, "seventeen-chars-x", false);
	v->d = f->d[0] = blk_new(v, &f->k, false);
	vdrv_init(v, 1, 0);
	memset(vdrv_host(v, DATA_IN, 32), 0xee, 32);
	assert_int_equal(blk_do(v, 0, VIRTIO_BLK_T_GET_ID, 0, DATA_IN, 32, true, &len),
			 VIRTIO_BLK_S_OK);
	assert_int_equal(len, 21);
	assert_memory_equal(vdrv_host(v, DATA_IN, 20), "seventeen-chars-x-di", 20);
	assert_int_equal(*vdrv_host(v, DATA_IN + 20, 1), 0xee); /* nothing past 20 bytes */
}

static void test_readonly(void **state)
{
	static uint8_t before[DISK_BYTES / 16], after[sizeof(before)];
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint32_t len;

	disk_new(&f->k, "unitvm", true);
	fill(before, sizeof(before), 11); /* something the IN can tell from zeros */
	assert_int_equal(pwrite(f->k.fd, before, sizeof(before), 0), sizeof(before));
	v->d = f->d[0] = blk_new(v, &f->k, false);
	assert_true(vdrv_device_features(v) >> VIRTIO_BLK_F_RO & 1);
	vdrv_init(v, 1, 1ull << VIRTIO_BLK_F_RO);

	fill(vdrv_host(v, DATA, NSECT * 512), NSECT * 512, 99);
	assert_int_equal(blk_do(v, 0, VIRTIO_BLK_T_OUT, 0, DATA, NSECT * 512, false, &len),
			 VIRTIO_BLK_S_IOERR);
	assert_int_equal(len, 1);
	assert_int_equal(pread(f->k.fd, after, sizeof(after), 0), sizeof(after));
	assert_memory_equal(before, after, sizeof(before));
	/* Reads still work, and FLUSH has nothing to do. */
	assert_int_equal(blk_do(v, 3, VIRTIO_BLK_T_IN, 0, DATA_IN, NSECT * 512, true, &len),
			 VIRTIO_BLK_S_OK);
	assert_memory_equal(vdrv_host(v, DATA_IN, NSECT * 512), before, NSECT * 512);
	assert_int_equal(blk_do(v, 6, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, &len), VIRTIO_BLK_S_OK);
}

/* A malformed chain costs only itself: completed with len 0, status byte untouched. */
static void bad_chain_completed(struct vdrv *v, uint16_t head)
{
	vdrv_avail(v, 0, head);
	vdrv_notify(v, 0);
	assert_int_equal(blk_complete(v, head), 0);
	assert_int_equal(*vdrv_host(v, STAT, 1), 0xff);
	assert_false(vdrv_rd(v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
}

static void test_hostile_chains(void **state)
{
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint32_t len;

	disk_new(&f->k, "unitvm", false);
	v->d = f->d[0] = blk_new(v, &f->k, false);
	vdrv_init(v, 1, 0);
	le_put32(vdrv_host(v, HDR, 16), VIRTIO_BLK_T_FLUSH);
	*vdrv_host(v, STAT, 1) = 0xff;

	/* A loop: 0 -> 1 -> 0 (both readable, so only the loop is wrong). */
	vdrv_desc(v, 0, 0, HDR, 16, F_NEXT, 1);
	vdrv_desc(v, 0, 1, DATA, 512, F_NEXT, 0);
	bad_chain_completed(v, 0);
	/* A header outside guest RAM. */
	vdrv_desc(v, 0, 2, VDRV_OUTSIDE, 16, F_NEXT, 3);
	vdrv_desc(v, 0, 3, STAT, 1, F_WRITE, 0);
	bad_chain_completed(v, 2);
	/* A huge data length starting in RAM. */
	vdrv_desc(v, 0, 4, HDR, 16, F_NEXT, 5);
	vdrv_desc(v, 0, 5, DATA, 0xfffffe00u, F_WRITE | F_NEXT, 6);
	vdrv_desc(v, 0, 6, STAT, 1, F_WRITE, 0);
	bad_chain_completed(v, 4);
	/* A next index past the table. */
	vdrv_desc(v, 0, 7, HDR, 16, F_NEXT, 500);
	bad_chain_completed(v, 7);
	/* A well-formed chain with no writable byte: nowhere for a status. */
	vdrv_desc(v, 0, 8, HDR, 16, 0, 0);
	bad_chain_completed(v, 8);
	/* The queue still serves a good request. */
	fill(vdrv_host(v, DATA, NSECT * 512), NSECT * 512, 5);
	assert_int_equal(blk_do(v, 9, VIRTIO_BLK_T_OUT, 0, DATA, NSECT * 512, false, &len),
			 VIRTIO_BLK_S_OK);
	assert_true(file_has(&f->k, 0, 5));
}

/* The ring itself is malformed: DEVICE_NEEDS_RESET, nothing more taken, a reset cures it. */
static void ring_breaks_then_reset(struct vdrv *v, struct disk *k, bool head_too_big)
{
	uint16_t used = vdrv_used_idx(v, 0);
	uint32_t len;

	vdrv_irqs(v->d);
	if (head_too_big)
		vdrv_avail(v, 0, VDRV_QSIZE + 100); /* a head >= the queue's size */
	else
		vdrv_publish(v, 0, (uint16_t)(v->avail_idx[0] + VDRV_QSIZE + 1)); /* idx jumps */
	vdrv_notify(v, 0);
	assert_true(vdrv_wait_status(v, VIRTIO_STATUS_DEVICE_NEEDS_RESET) &
		    VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	assert_true(vdrv_rd(v, VIRTIO_MMIO_INTERRUPT_STATUS) & VIRTIO_MMIO_INT_CONFIG);
	assert_true(vdrv_wait_irqs(v->d) >= 1);
	/* A broken queue takes nothing more, good request or not. */
	fill(vdrv_host(v, DATA, NSECT * 512), NSECT * 512, 21);
	blk_submit(v, 0, VIRTIO_BLK_T_OUT, 40, DATA, NSECT * 512, false);
	assert_int_equal(vdrv_quiet(v, 0, used), 0);
	assert_false(file_has(k, 40, 21));

	vdrv_init(v, 1, 0); /* begins with Status = 0 */
	assert_false(vdrv_rd(v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	assert_int_equal(blk_do(v, 0, VIRTIO_BLK_T_OUT, 40, DATA, NSECT * 512, false, &len),
			 VIRTIO_BLK_S_OK);
	assert_int_equal(vdrv_used_idx(v, 0), 1);
	assert_true(file_has(k, 40, 21));
	memset(vdrv_host(v, DATA, NSECT * 512), 0, NSECT * 512);
	assert_int_equal(blk_do(v, 3, VIRTIO_BLK_T_OUT, 40, DATA, NSECT * 512, false, &len),
			 VIRTIO_BLK_S_OK); /* back to zeros for the next round */
}

static void test_hostile_ring(void **state)
{
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint32_t len;

	disk_new(&f->k, "unitvm", false);
	v->d = f->d[0] = blk_new(v, &f->k, false);
	vdrv_init(v, 1, 0);
	assert_int_equal(blk_do(v, 0, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, &len), VIRTIO_BLK_S_OK);
	ring_breaks_then_reset(v, &f->k, true);
	ring_breaks_then_reset(v, &f->k, false);
}

/* A state blob: the transport's (32 bytes and 48 a queue) fits here. */
#define BLOB_MAX (VIRTIO_MMIO_STATE_FIXED + VIRTIO_MMIO_MAX_QUEUES * VIRTQ_STATE_SIZE + 1)

/* Saves d (parked or never started); returns the blob's length. */
static size_t save(struct virtio_dev *d, uint8_t *b)
{
	size_t n = virtio_dev_state_size(d);

	assert_true(n < BLOB_MAX);
	assert_int_equal(virtio_dev_save(d, b), n);
	return n;
}

static void test_park_save_load(void **state)
{
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint8_t blob[BLOB_MAX], blob2[BLOB_MAX];
	char err[256] = "";
	uint32_t len;
	size_t n;

	disk_new(&f->k, "unitvm", false);
	v->d = f->d[0] = blk_new(v, &f->k, false);
	vdrv_init(v, 1, 0);
	fill(vdrv_host(v, DATA, NSECT * 512), NSECT * 512, 1);
	assert_int_equal(blk_do(v, 0, VIRTIO_BLK_T_OUT, 8, DATA, NSECT * 512, false, &len), 0);
	assert_int_equal(blk_do(v, 3, VIRTIO_BLK_T_IN, 8, DATA_IN, NSECT * 512, true, &len), 0);
	assert_int_equal(vdrv_used_idx(v, 0), 2);

	virtio_dev_park(f->d[0]);
	n = save(f->d[0], blob);
	/* Made available and kicked while d1 is parked: d1 must not take it. */
	fill(vdrv_host(v, DATA, NSECT * 512), NSECT * 512, 2);
	blk_submit(v, 6, VIRTIO_BLK_T_OUT, 16, DATA, NSECT * 512, false);
	assert_int_equal(vdrv_quiet(v, 0, 2), 0);
	assert_false(file_has(&f->k, 16, 2));
	assert_int_equal(save(f->d[0], blob2), n);
	assert_memory_equal(blob, blob2, n); /* last_avail_idx did not move */

	/* The target: same file, same RAM, same place; started parked, loaded, let go. */
	f->d[1] = blk_new(v, &f->k, true);
	assert_int_equal(virtio_dev_load(f->d[1], blob2, n, err, sizeof(err)), 0);
	v->d = f->d[1];
	vdrv_irqs(v->d);
	virtio_dev_unpark(f->d[1]);
	assert_int_equal(blk_complete(v, 6), 1);
	assert_int_equal(*vdrv_host(v, STAT, 1), VIRTIO_BLK_S_OK);
	assert_true(file_has(&f->k, 16, 2));
	assert_true(vdrv_wait_irqs(v->d) >= 1);
	/* Done once: the used idx moved by exactly one. */
	assert_int_equal(vdrv_quiet(v, 0, 3), 0);
	assert_int_equal(vdrv_used_idx(v, 0), 3);

	/* The driver carries on with d2 on the same rings. */
	assert_int_equal(blk_do(v, 9, VIRTIO_BLK_T_IN, 8, DATA_IN, 2 * NSECT * 512, true, &len), 0);
	assert_int_equal(vdrv_used_idx(v, 0), 4);
	fill(vdrv_host(v, DATA, NSECT * 512), NSECT * 512, 1);
	assert_memory_equal(vdrv_host(v, DATA_IN, NSECT * 512), vdrv_host(v, DATA, NSECT * 512),
			    NSECT * 512);
	fill(vdrv_host(v, DATA, NSECT * 512), NSECT * 512, 2);
	assert_memory_equal(vdrv_host(v, DATA_IN + NSECT * 512, NSECT * 512),
			    vdrv_host(v, DATA, NSECT * 512), NSECT * 512);
}

/* A refused blob: -EINVAL with a message, and the device exactly as it was. */
static void load_refused(struct virtio_dev *d, const uint8_t *b, size_t len)
{
	uint8_t before[BLOB_MAX], after[BLOB_MAX];
	size_t n = save(d, before);
	char err[256] = "";

	assert_int_equal(virtio_dev_load(d, b, len, err, sizeof(err)), -EINVAL);
	assert_true(strlen(err) > 0);
	assert_int_equal(save(d, after), n);
	assert_memory_equal(before, after, n);
}

static void test_load_refuses_corrupt_blob(void **state)
{
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint8_t blob[BLOB_MAX], bad[BLOB_MAX];
	char err[256] = "";
	uint32_t len;
	size_t n;

	disk_new(&f->k, "unitvm", false);
	v->d = f->d[0] = blk_new(v, &f->k, false);
	vdrv_init(v, 1, 0);
	assert_int_equal(blk_do(v, 0, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, &len), 0);
	virtio_dev_park(f->d[0]);
	n = save(f->d[0], blob);

	f->d[1] = blk_new(v, &f->k, true);
	memcpy(bad, blob, n);
	bad[0] ^= 0x40; /* the version */
	load_refused(f->d[1], bad, n);
	memcpy(bad, blob, n);
	bad[VIRTIO_MMIO_STATE_FIXED] ^= 0x40; /* the queue blob's version */
	load_refused(f->d[1], bad, n);
	load_refused(f->d[1], blob, n - 1);
	load_refused(f->d[1], blob, 10);
	memcpy(bad, blob, n);
	bad[n] = 0;
	load_refused(f->d[1], bad, n + 1);
	v->d = f->d[1];
	assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_STATUS), 0);

	/* The intact blob loads: the refusals were the corruption's. */
	assert_int_equal(virtio_dev_load(f->d[1], blob, n, err, sizeof(err)), 0);
	assert_true(vdrv_rd(v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DRIVER_OK);
	virtio_dev_unpark(f->d[1]);
	assert_int_equal(blk_do(v, 3, VIRTIO_BLK_T_FLUSH, 0, 0, 0, false, &len), 0);
	assert_int_equal(vdrv_used_idx(v, 0), 2);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_write_read_flush_id), T(test_id_cut_to_20_bytes),
	    T(test_event_idx),		 T(test_readonly),
	    T(test_hostile_chains),	 T(test_hostile_ring),
	    T(test_park_save_load),	 T(test_load_refuses_corrupt_blob),
	};

	alarm(VDRV_ALARM_S); /* a wedged device thread fails the run instead of hanging it */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
