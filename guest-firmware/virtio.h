/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio.h - a polling virtio-mmio driver (virtio 1.2: 4.2 "Virtio Over
 * MMIO", modern only; 2.7 split virtqueues) for the device workloads.
 *
 * No interrupts: the firmware runs with them off, so a request is made
 * available, the queue notified, and the used ring polled. No EVENT_IDX,
 * no INDIRECT_DESC: every descriptor lives in the queue's own table, and
 * the driver notifies after every batch it makes available.
 *
 * Usage: virtio_find() a device of a type (device tree or command line), virtio_start()
 * it with the device feature bits wanted, virtq_init() each queue, then
 * virtio_driver_ok(). Then virtq_add() + virtq_kick() a request and
 * virtq_get() (poll once) or virtq_wait() (poll, bounded) its completion.
 * Everything runs on vCPU 0 only; nothing here takes a lock.
 */
#ifndef FW_VIRTIO_H
#define FW_VIRTIO_H

#include "fw.h"

#define VIRTIO_ID_NET	1u
#define VIRTIO_ID_BLOCK 2u

#define VIRTIO_F_VERSION_1 32

/* The driver's cap on a queue's size: enough for both workloads, small tables. */
#define VIRTQ_MAX 256u

/* virtq_wait()'s bound: no device takes a minute over one request. */
#define VIRTIO_TIMEOUT_MS 60000u

struct virtio_dev {
	uint64_t base; /* the MMIO window (mapped by virtio_find()) */
	uint64_t size;
	uint32_t irq; /* from the device tree or the command line; unused (polling) */
	uint32_t device_id;
	uint64_t features; /* what the driver accepted */
};

struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct virtq_used_elem {
	uint32_t id;
	uint32_t len;
};

struct virtq {
	const struct virtio_dev *dev;
	uint16_t index; /* the queue's number on its device */
	uint16_t size;	/* QueueNum: a power of two <= VIRTQ_MAX */
	uint16_t free_head, num_free;
	uint16_t avail_idx; /* the next avail->idx this driver publishes */
	uint16_t last_used; /* used entries taken back so far */
	struct virtq_desc *desc;
	volatile uint16_t *avail; /* flags, idx, ring[size] */
	volatile uint16_t *used;  /* flags, idx, then the elements */
	volatile struct virtq_used_elem *used_ring;
	void *token[VIRTQ_MAX];	       /* per chain head in flight: the caller's token */
	uint16_t chain_len[VIRTQ_MAX]; /* per chain head in flight: its descriptors */
};

/* One buffer of a request: readable by the device, or writable by it. */
struct virtq_buf {
	void *addr;
	uint32_t len;
	bool writable;
};

/*
 * The first device with DeviceID `device_id`, its window mapped (uncached:
 * fw_map_mmio()). Looked for among the device tree's "virtio,mmio" nodes
 * first (vmm's boot), then among the command line's
 * virtio_mmio.device=<size>@<baseaddr>:<irq> words (virtio_cmdline.h) for
 * windows the device tree does not list: after a PVH boot (QEMU microvm
 * with acpi=off, which writes one such word per transport with a device)
 * these are all there is; under vmm they repeat the nodes and are skipped.
 * A window of DeviceID 0 (a transport without a device) or another type
 * is passed over. Returns 0, or -1 after a line saying why (no such
 * device, a bad node or word, a window in RAM).
 */
int virtio_find(uint32_t device_id, struct virtio_dev *dev);

/*
 * Reset, ACKNOWLEDGE, DRIVER, then accepts VERSION_1 and those bits of
 * `wanted` the device offers, and FEATURES_OK (checked to stick). Returns 0
 * with dev->features set, or -1 after a line (the device is then FAILED).
 */
int virtio_start(struct virtio_dev *dev, uint64_t wanted);

/*
 * Sets up queue `index` with min(want, QueueNumMax) entries rounded down to
 * a power of two (rings from fw_alloc_pages()), and QueueReady. Between
 * virtio_start() and virtio_driver_ok(). 0, or -1 after a line.
 */
int virtq_init(struct virtq *q, const struct virtio_dev *dev, uint16_t index, uint16_t want);

/* DRIVER_OK: the device may use its queues. 0, or -1 after a line. */
int virtio_driver_ok(struct virtio_dev *dev);

/* Gives up on the device: sets FAILED (virtio 1.2, 3.1.1 step 8 / 2.1). */
void virtio_fail(struct virtio_dev *dev);

/* The Status register (DEVICE_NEEDS_RESET 0x40, FAILED 0x80: for messages). */
uint32_t virtio_status(const struct virtio_dev *dev);

/* Config space reads (1, 2 or 4 bytes each), consistent per ConfigGeneration. */
void virtio_config_read(const struct virtio_dev *dev, uint32_t off, void *dst, uint32_t len);

/*
 * Makes bufs[0..n) available as one chain (readable ones first: the device
 * requires it, 2.7.4.2), tagged with `token` (not NULL) for virtq_get().
 * Does not notify. -1 when fewer than n descriptors are free.
 */
int virtq_add(struct virtq *q, const struct virtq_buf *bufs, uint32_t n, void *token);

/* QueueNotify: the device looks at the avail ring. */
void virtq_kick(struct virtq *q);

/*
 * The token of the next used chain (its descriptors freed), *len the bytes
 * the device wrote into it; NULL when none is used yet. A device that
 * returns a chain it was never given is reported and the VM exits with
 * VMM_GUEST_EXIT_DEVICE.
 */
void *virtq_get(struct virtq *q, uint32_t *len);

/*
 * Polls virtq_get() for up to VIRTIO_TIMEOUT_MS of the guest's own running
 * time (see virtio.c). 0 with *token and *len, or -1 on timeout.
 */
int virtq_wait(struct virtq *q, void **token, uint32_t *len);

#endif /* FW_VIRTIO_H */
