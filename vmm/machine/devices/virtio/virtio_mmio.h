/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_mmio.h - the virtio-mmio transport (virtio 1.2, 4.2 "Virtio Over
 * MMIO"), modern only (Version reads 2; no legacy interface), as a pure
 * register model: no KVM, no threads, no fds, no allocation. A device (net,
 * block) embeds one struct virtio_mmio, gives it its id, features, queue
 * sizes and config bytes, and takes its queues from it; the VM routes the
 * guest's accesses to the device's MMIO window here and acts on what a
 * write returns (a queue to kick, a reset, DRIVER_OK). docs/architecture.md
 * "virtio-mmio, the transport" lists the rules with their spec sections.
 *
 * Access sizes. The registers (0x000-0x0ff) are 32 bits wide: any other
 * size, or an offset not 4-aligned, reads 0 and a write is ignored
 * (4.2.2.2: the driver MUST use 32-bit aligned accesses there). The config
 * space (0x100 + n) takes 1, 2 and 4 byte accesses anywhere inside the
 * device's config bytes (an 8-byte field is two 4-byte reads, the driver's
 * business, checked with ConfigGeneration); outside them it reads 0. The
 * config space is read-only here: the planned devices (net, block without
 * CONFIG_WCE) have no writable field, so config writes are ignored.
 *
 * Threads and locks. Nothing here takes a lock: every function is called
 * with the device's lock held, a lock the caller (the device) owns. The vCPU
 * thread calls virtio_mmio_read()/virtio_mmio_write() on an MMIO exit; the
 * device's I/O thread calls virtio_mmio_raise(), virtio_mmio_set_needs_reset()
 * and virtio_mmio_set_config(); virtio_mmio_save()/virtio_mmio_load() run on
 * the main or migration thread while the device is quiesced (I/O thread
 * parked, vCPUs paused). A write that resets the device or changes a
 * queue's readiness changes the struct virtq the I/O thread pops from: the
 * device's I/O thread must hold the same lock around its queue work (or be
 * parked). A kick that arrives through an ioeventfd bypasses this model:
 * the I/O thread then relies on virtq_pop() returning EMPTY for a queue
 * that is not ready.
 *
 * Errors: a bad guest access is ignored (VIRTIO_MMIO_EV_IGNORED) or refused
 * as the spec says, never fatal; the model only touches guest memory through
 * the virtq's checked accessors and only indexes its arrays below nqueues.
 * Library calls return 0 or -errno, one line in err where given.
 */
#ifndef VMM_VIRTIO_MMIO_H
#define VMM_VIRTIO_MMIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"
#include "virtq.h"

/* Register offsets (4.2.2, table "MMIO Device Register Layout"). */
#define VIRTIO_MMIO_MAGIC_VALUE		0x000
#define VIRTIO_MMIO_VERSION		0x004
#define VIRTIO_MMIO_DEVICE_ID		0x008
#define VIRTIO_MMIO_VENDOR_ID		0x00c
#define VIRTIO_MMIO_DEVICE_FEATURES	0x010
#define VIRTIO_MMIO_DEVICE_FEATURES_SEL 0x014
#define VIRTIO_MMIO_DRIVER_FEATURES	0x020
#define VIRTIO_MMIO_DRIVER_FEATURES_SEL 0x024
#define VIRTIO_MMIO_QUEUE_SEL		0x030
#define VIRTIO_MMIO_QUEUE_NUM_MAX	0x034
#define VIRTIO_MMIO_QUEUE_NUM		0x038
#define VIRTIO_MMIO_QUEUE_READY		0x044
#define VIRTIO_MMIO_QUEUE_NOTIFY	0x050
#define VIRTIO_MMIO_INTERRUPT_STATUS	0x060
#define VIRTIO_MMIO_INTERRUPT_ACK	0x064
#define VIRTIO_MMIO_STATUS		0x070
#define VIRTIO_MMIO_QUEUE_DESC_LOW	0x080
#define VIRTIO_MMIO_QUEUE_DESC_HIGH	0x084
#define VIRTIO_MMIO_QUEUE_DRIVER_LOW	0x090
#define VIRTIO_MMIO_QUEUE_DRIVER_HIGH	0x094
#define VIRTIO_MMIO_QUEUE_DEVICE_LOW	0x0a0
#define VIRTIO_MMIO_QUEUE_DEVICE_HIGH	0x0a4
#define VIRTIO_MMIO_SHM_SEL		0x0ac
#define VIRTIO_MMIO_SHM_LEN_LOW		0x0b0
#define VIRTIO_MMIO_SHM_LEN_HIGH	0x0b4
#define VIRTIO_MMIO_SHM_BASE_LOW	0x0b8
#define VIRTIO_MMIO_SHM_BASE_HIGH	0x0bc
#define VIRTIO_MMIO_CONFIG_GENERATION	0x0fc
#define VIRTIO_MMIO_CONFIG		0x100

#define VIRTIO_MMIO_MAGIC	   0x74726976u /* "virt" */
#define VIRTIO_MMIO_VERSION_MODERN 2u
#define VIRTIO_MMIO_WINDOW	   0x1000u /* the window a device is given: 4K */

/* Device status bits (2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE	 0x01u
#define VIRTIO_STATUS_DRIVER		 0x02u
#define VIRTIO_STATUS_DRIVER_OK		 0x04u
#define VIRTIO_STATUS_FEATURES_OK	 0x08u
#define VIRTIO_STATUS_DEVICE_NEEDS_RESET 0x40u
#define VIRTIO_STATUS_FAILED		 0x80u

/* InterruptStatus bits (4.2.2). */
#define VIRTIO_MMIO_INT_VRING  0x1u /* used buffer notification */
#define VIRTIO_MMIO_INT_CONFIG 0x2u /* configuration change notification */

#define VIRTIO_ID_NET	1
#define VIRTIO_ID_BLOCK 2

#define VIRTIO_MMIO_MAX_QUEUES 8
#define VIRTIO_MMIO_CONFIG_MAX 256 /* bytes of device config space */

/*
 * The transport feature bits a device may offer (the others of 24..49,
 * e.g. ACCESS_PLATFORM, RING_PACKED, NOTIFICATION_DATA, RING_RESET, need
 * transport or ring support this model does not have): INDIRECT_DESC,
 * EVENT_IDX, VERSION_1. Bits 0-23 and 50-63 are the device type's.
 */
#define VIRTIO_MMIO_TRANSPORT_BITS (((1ull << 50) - 1) & ~((1ull << 24) - 1)) /* bits 24..49 */
#define VIRTIO_MMIO_TRANSPORT_OK                                                                   \
	((1ull << VIRTIO_F_RING_INDIRECT_DESC) | (1ull << VIRTIO_F_RING_EVENT_IDX) |               \
	 (1ull << VIRTIO_F_VERSION_1))

/* What the device gives the transport at creation. */
struct virtio_mmio_params {
	uint32_t device_id; /* VIRTIO_ID_NET, VIRTIO_ID_BLOCK, ... (not 0) */
	uint32_t vendor_id;
	uint64_t features;			    /* the device's; VIRTIO_F_VERSION_1 is added */
	uint32_t nqueues;			    /* 1..VIRTIO_MMIO_MAX_QUEUES */
	uint16_t queue_max[VIRTIO_MMIO_MAX_QUEUES]; /* each queue's QueueNumMax: a power of two */
	const void *config;			    /* config_len bytes (may be NULL if 0) */
	uint32_t config_len;			    /* 0..VIRTIO_MMIO_CONFIG_MAX */
};

/*
 * One device's transport. The device reads its fields (under its lock);
 * only this module writes them. About 35 KiB (the queues' scratch bitmaps):
 * give it a home in the device, not a stack.
 */
struct virtio_mmio {
	uint32_t device_id, vendor_id;
	uint64_t device_features;
	uint32_t device_features_sel; /* DeviceFeaturesSel as written */
	uint32_t driver_features_sel; /* DriverFeaturesSel as written */
	uint64_t driver_features;     /* what the driver accepted (frozen at FEATURES_OK) */
	uint32_t status;	      /* Status: VIRTIO_STATUS_* */
	uint32_t queue_sel;	      /* QueueSel as written (may be >= nqueues) */
	uint32_t int_status;	      /* InterruptStatus: VIRTIO_MMIO_INT_* */
	uint32_t config_generation;
	uint32_t config_len;
	uint8_t config[VIRTIO_MMIO_CONFIG_MAX];
	uint32_t nqueues;
	struct virtq queues[VIRTIO_MMIO_MAX_QUEUES];
};

/*
 * Sets dev up in its reset state (status 0). -EINVAL when the parameters
 * are not a device: id 0, no queues or too many, a QueueNumMax that is not
 * a power of two in 1..VIRTQ_MAX_SIZE, too much config, or a transport
 * feature this model does not implement (VIRTIO_MMIO_TRANSPORT_OK).
 */
int virtio_mmio_init(struct virtio_mmio *dev, const struct virtio_mmio_params *p);

/* What a guest write asks of the caller. */
enum virtio_mmio_event {
	VIRTIO_MMIO_EV_NONE,	  /* done, nothing for the device to do */
	VIRTIO_MMIO_EV_IGNORED,	  /* a bad access (size, offset, read-only register, a write
				     the device's state forbids): nothing changed */
	VIRTIO_MMIO_EV_NOTIFY,	  /* QueueNotify of a ready queue after DRIVER_OK: kick `queue` */
	VIRTIO_MMIO_EV_DRIVER_OK, /* the driver set DRIVER_OK: the device may start */
	VIRTIO_MMIO_EV_RESET,	  /* Status = 0: every queue and the transport are reset,
				     the interrupt is deasserted; the device drops its own
				     request state (chains it took are gone with the queues) */
};

struct virtio_mmio_action {
	enum virtio_mmio_event ev;
	uint16_t queue; /* VIRTIO_MMIO_EV_NOTIFY: the queue's index */
};

/*
 * The vCPU thread, on an MMIO read of `size` bytes at `offset` into the
 * device's window: *value gets the register (little endian, the low `size`
 * bytes meaningful). Returns false (and *value 0) for an access that is not
 * a register or config read: wrong size or alignment, a write-only or
 * reserved register, config out of range.
 */
bool virtio_mmio_read(struct virtio_mmio *dev, uint64_t offset, uint32_t size, uint32_t *value);

/*
 * The vCPU thread, on an MMIO write. mem is the guest's RAM, used to check a
 * queue's layout at QueueReady = 1 (virtq_set_ready()). The device's state
 * changes as the spec says; the result tells the caller what to do.
 */
struct virtio_mmio_action virtio_mmio_write(struct virtio_mmio *dev, const struct guest_mem *mem,
					    uint64_t offset, uint32_t size, uint32_t value);

/*
 * The device's I/O thread: sets InterruptStatus bits (VIRTIO_MMIO_INT_*;
 * others are dropped). Only after DRIVER_OK and before FAILED (2.1.2: no
 * used buffer notification before DRIVER_OK); otherwise nothing changes.
 * Returns true when bits were set: the caller then signals the interrupt
 * (every time: a driver that acked an older bit may have missed this one).
 */
bool virtio_mmio_raise(struct virtio_mmio *dev, uint32_t bits);

/* Whether the interrupt line is asserted (InterruptStatus is not 0). */
static inline bool virtio_mmio_irq_pending(const struct virtio_mmio *dev)
{
	return dev->int_status != 0;
}

/*
 * The device's I/O thread, when a queue broke (virtq_pop() returned
 * VIRTQ_POP_BROKEN) or the device failed: sets DEVICE_NEEDS_RESET and,
 * after DRIVER_OK, raises a config change (2.1.2). Returns true when the
 * caller should signal the interrupt.
 */
bool virtio_mmio_set_needs_reset(struct virtio_mmio *dev);

/*
 * The device's I/O thread: the config bytes [off, off + len) change (a
 * link status, a capacity): copies them, bumps ConfigGeneration (2.5) and,
 * after DRIVER_OK, raises a config change. 1 when the caller should signal
 * the interrupt, 0 when not, -EINVAL when the range is outside config_len.
 */
int virtio_mmio_set_config(struct virtio_mmio *dev, uint32_t off, const void *src, uint32_t len);

/* Queue i of the device (NULL if i >= nqueues): the device pops from it. */
static inline struct virtq *virtio_mmio_queue(struct virtio_mmio *dev, uint32_t i)
{
	return i < dev->nqueues ? &dev->queues[i] : NULL;
}

/*
 * Migration (virtio_mmio_state.c; docs/state-format.md "VIRTIO_MMIO").
 * Little endian, VIRTIO_MMIO_STATE_FIXED + nqueues * VIRTQ_STATE_SIZE bytes:
 *    0  u16  version (VIRTIO_MMIO_STATE_VERSION)
 *    2  u8   device id
 *    3  u8   nqueues
 *    4  u8   status
 *    5  u8   interrupt status
 *    6  u16  reserved (0)
 *    8  u32  DeviceFeaturesSel
 *   12  u32  DriverFeaturesSel
 *   16  u64  driver features
 *   24  u32  QueueSel
 *   28  u32  config generation
 *   32  nqueues virtq blobs (virtq_save())
 * The config bytes are the device's (it rebuilds or carries them).
 * virtio_mmio_save() fills buf (virtio_mmio_state_size() bytes) and returns
 * that size. virtio_mmio_load() checks the whole blob against this device
 * (same id and queue count, status bits and their order, after
 * FEATURES_OK driver features the target offers, every queue's blob) and
 * only then changes dev; -EINVAL with one line in err. virtio_mmio_check()
 * is that check alone: it changes nothing, so that a whole VM's state can
 * be checked before any of it is loaded.
 */
#define VIRTIO_MMIO_STATE_VERSION 1
#define VIRTIO_MMIO_STATE_FIXED	  32

static inline size_t virtio_mmio_state_size(const struct virtio_mmio *dev)
{
	return VIRTIO_MMIO_STATE_FIXED + (size_t)dev->nqueues * VIRTQ_STATE_SIZE;
}

size_t virtio_mmio_save(const struct virtio_mmio *dev, uint8_t *buf);
int virtio_mmio_load(struct virtio_mmio *dev, const struct guest_mem *mem, const uint8_t *buf,
		     size_t len, char *err, size_t errlen);
int virtio_mmio_check(const struct virtio_mmio *dev, const struct guest_mem *mem,
		      const uint8_t *buf, size_t len, char *err, size_t errlen);

/*
 * The kernel command line announcement of one device, as Linux's
 * virtio_mmio.device=<size>@<baseaddr>:<irq> parameter reads it (size with
 * the largest K/M/G suffix that divides it): "virtio_mmio.device=4K@0xd0000000:5".
 * Returns the length written (snprintf's, without the NUL), -ENOSPC when
 * buf is too small (buf then holds nothing useful), -EINVAL for size 0,
 * irq 0 or a window that wraps past 2^64.
 */
int virtio_mmio_cmdline(char *buf, size_t len, uint64_t size, uint64_t base, uint32_t irq);

#endif /* VMM_VIRTIO_MMIO_H */
