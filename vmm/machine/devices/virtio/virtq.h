/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtq.h - the split virtqueue of virtio 1.x (modern only), the device side:
 * what every virtio device (net, block) sits on. No transport, no device:
 * the MMIO transport writes the queue's registers into struct virtq and
 * sets it ready; a device pops descriptor chains, does the I/O through the
 * copy helpers and pushes the used elements back.
 *
 * Guest layout (virtio 1.x, 2.7 "Split Virtqueues"; little endian):
 *   descriptor table  size * 16 B  {u64 addr, u32 len, u16 flags, u16 next}
 *                     aligned 16
 *   avail ring        6 + 2 * size B  {u16 flags, u16 idx, u16 ring[size],
 *                     u16 used_event}, aligned 2 (used_event only counted
 *                     with VIRTIO_F_EVENT_IDX)
 *   used ring         6 + 8 * size B  {u16 flags, u16 idx, {u32 id, u32 len}
 *                     ring[size], u16 avail_event}, aligned 4 (avail_event
 *                     only counted with VIRTIO_F_EVENT_IDX)
 *
 * Every guest address goes through guest_mem_ptr() / guest_mem_write_ptr();
 * everything the device writes (used ring, avail_event, a chain's writable
 * segments) goes through guest_mem_write_ptr(), so the VMM-side dirty
 * bitmap has it and a migration resends those pages.
 *
 * Threads and locks. One queue belongs to one I/O thread: virtq_pop(),
 * virtq_avail_pending(), virtq_push(), virtq_should_notify(),
 * virtq_set_avail_event() and the chain copy helpers are called by that
 * thread only (virtq_pop() also uses the queue's scratch bitmap). The transport (a vCPU
 * thread handling an MMIO write) may only change the queue while it is not
 * ready, and virtq_save()/virtq_load() run while the device is quiesced (its
 * I/O thread parked, the vCPUs paused). Nothing here takes a lock, keeps a
 * global, allocates or prints. The guest runs concurrently with all of it
 * and may change any byte of its memory at any time: every guest value is
 * read once into a local and checked there. A guest can keep a queue busy
 * for ever (even by pointing a writable buffer at its own avail ring), so
 * a device bounds the chains it pops per wakeup.
 *
 * Errors. Functions return 0 or -errno (pop returns an enum); where a
 * message helps, one line goes into err[errlen] (may be NULL) or a static
 * string (chain->why, q->why). A malformed chain is an error for that
 * request only (VIRTQ_POP_BAD_CHAIN); a malformed ring (avail idx jumping
 * by more than the queue size, a head index out of range) breaks the queue
 * (q->broken, VIRTQ_POP_BROKEN): the device should then set the transport's
 * DEVICE_NEEDS_RESET status and stop using the queue until it is reset.
 */
#ifndef VMM_VIRTQ_H
#define VMM_VIRTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "guest_mem.h"

#define VIRTQ_MAX_SIZE 32768u /* the spec's limit on QueueNum */

#define VIRTQ_DESC_F_NEXT     1u
#define VIRTQ_DESC_F_WRITE    2u
#define VIRTQ_DESC_F_INDIRECT 4u

#define VIRTQ_AVAIL_F_NO_INTERRUPT 1u
#define VIRTQ_USED_F_NO_NOTIFY	   1u

/* Feature bits the ring itself depends on. */
#define VIRTIO_F_RING_INDIRECT_DESC 28
#define VIRTIO_F_RING_EVENT_IDX	    29
#define VIRTIO_F_VERSION_1	    32

/*
 * A chain is at most this many segments (a block device advertises
 * seg_max = VIRTQ_CHAIN_MAX_SEGS - 2 for its header and status) and at most
 * VIRTQ_CHAIN_MAX_LEN bytes in all (the used element's len is a u32).
 */
#define VIRTQ_CHAIN_MAX_SEGS 256u
#define VIRTQ_CHAIN_MAX_LEN  (1u << 30)

/* One piece of guest memory of a chain, checked to be RAM when popped. */
struct virtq_seg {
	uint64_t gpa;
	uint32_t len;
	uint16_t desc; /* index in its table (the queue's, or the indirect one) */
	bool write;    /* device-writable */
};

/*
 * A popped chain: seg[0..nread) are readable (driver to device), then
 * seg[nread..nseg) writable (device to driver); the spec forbids a readable
 * descriptor after a writable one. About 4 KiB: give it a home in the
 * device, not a small stack.
 */
struct virtq_chain {
	uint16_t head;	   /* the avail ring's entry: the id to push back */
	uint16_t nseg;	   /* segments in seg[] */
	uint16_t nread;	   /* the readable ones come first */
	bool indirect;	   /* the head was an indirect table */
	uint32_t read_len; /* bytes in the readable segments */
	uint32_t write_len;
	int error;	 /* VIRTQ_POP_BAD_CHAIN: the -errno below, else 0 */
	const char *why; /* VIRTQ_POP_BAD_CHAIN: a static one-line reason */
	struct virtq_seg seg[VIRTQ_CHAIN_MAX_SEGS];
};

/*
 * The queue. The fields from `size` to `used_gpa` are the transport's
 * registers (QueueNum, QueueDesc, QueueDriver, QueueDevice): it writes them
 * directly, only while !ready. `features` are the driver's accepted
 * features (virtq_set_features()). The rest is the queue's own.
 * What migrates: features, size, ready, broken, the three addresses,
 * last_avail_idx and next_used_idx (virtq_save()).
 */
struct virtq {
	uint16_t max_size; /* the device's QueueNumMax: a power of two <= VIRTQ_MAX_SIZE */
	uint16_t size;	   /* QueueNum, checked at virtq_set_ready() */
	bool ready;
	bool broken; /* the driver broke the ring: see q->why; only a reset clears it */
	uint64_t features;
	uint64_t desc_gpa, avail_gpa, used_gpa;
	uint16_t last_avail_idx; /* the next avail ring entry the device will take */
	uint16_t next_used_idx;	 /* used->idx as the device last published it */
	const char *why;	 /* why the queue broke (static), or NULL */
	/* Scratch of virtq_pop()'s loop check: one bit per descriptor of a table. */
	uint64_t seen[VIRTQ_MAX_SIZE / 64];
};

/* A queue in its reset state for a device whose QueueNumMax is max_size. */
int virtq_init(struct virtq *q, uint16_t max_size);
/* Back to the reset state (the transport's reset): keeps max_size only. */
void virtq_reset(struct virtq *q);
/* The driver's accepted features, at FEATURES_OK (only the ring's bits are used). */
void virtq_set_features(struct virtq *q, uint64_t features);

static inline bool virtq_event_idx(const struct virtq *q)
{
	return q->features >> VIRTIO_F_RING_EVENT_IDX & 1;
}

static inline bool virtq_indirect(const struct virtq *q)
{
	return q->features >> VIRTIO_F_RING_INDIRECT_DESC & 1;
}

/* Bytes of each ring for `size` entries (the event fields when event_idx). */
static inline uint64_t virtq_desc_bytes(uint32_t size)
{
	return 16ull * size;
}

static inline uint64_t virtq_avail_bytes(uint32_t size, bool event_idx)
{
	return 4 + 2ull * size + (event_idx ? 2 : 0);
}

static inline uint64_t virtq_used_bytes(uint32_t size, bool event_idx)
{
	return 4 + 8ull * size + (event_idx ? 2 : 0);
}

/*
 * Checks a layout: size a power of two in 1..max_size, desc aligned 16,
 * avail 2, used 4, each ring wholly in guest RAM. 0 or -EINVAL with one line
 * in err. virtq_set_ready() and virtq_load() use it.
 */
int virtq_check_layout(const struct virtq *q, const struct guest_mem *mem, char *err,
		       size_t errlen);

/*
 * QueueReady = 1: checks the layout (virtq_check_layout()) and makes the
 * queue live with both indexes at 0, as a freshly reset device has them.
 * -EINVAL (the queue stays not ready) or -EBUSY if it is ready already.
 */
int virtq_set_ready(struct virtq *q, const struct guest_mem *mem, char *err, size_t errlen);

enum virtq_pop_result {
	VIRTQ_POP_EMPTY,     /* nothing available (or the queue is not ready) */
	VIRTQ_POP_CHAIN,     /* *chain holds the next request */
	VIRTQ_POP_BAD_CHAIN, /* the head was taken but its chain is malformed:
				chain->head, ->error, ->why say which and why; nseg is 0.
				Complete it with virtq_push(q, mem, chain->head, 0). */
	VIRTQ_POP_BROKEN,    /* the ring is malformed: q->broken is set, q->why says
				why, nothing was taken; the device needs a reset */
};

/*
 * Takes the next available chain. Reads avail->idx with acquire ordering
 * (it pairs with the driver's write barrier between filling the ring entry
 * and bumping idx, so the entry and its descriptors are seen complete), then
 * walks the chain into `chain`. Refused chains (VIRTQ_POP_BAD_CHAIN): a
 * descriptor index >= the table's size (-EINVAL), a loop (-ELOOP: a
 * descriptor visited twice, or more descriptors than the table has), a
 * segment not wholly in RAM (-EFAULT), more than VIRTQ_CHAIN_MAX_SEGS
 * segments (-E2BIG), more than VIRTQ_CHAIN_MAX_LEN bytes (-EOVERFLOW), a
 * readable descriptor after a writable one (-EINVAL), INDIRECT when not
 * negotiated, with NEXT, or anywhere but the head (-EINVAL), an indirect
 * table that is empty or not a multiple of 16 bytes (-EINVAL),
 * larger than VIRTQ_MAX_SIZE entries (-E2BIG), outside RAM (-EFAULT), or
 * holding an INDIRECT descriptor (-EINVAL). The ring is broken when avail->idx
 * is more than `size` ahead of last_avail_idx, or the head >= size.
 */
enum virtq_pop_result virtq_pop(struct virtq *q, const struct guest_mem *mem,
				struct virtq_chain *chain);

/* Entries the driver has made available and virtq_pop() has not taken (0 if not ready). */
uint16_t virtq_avail_pending(const struct virtq *q, const struct guest_mem *mem);

/*
 * Completes a chain: writes {head, len} at used->ring[next_used_idx % size]
 * and publishes used->idx + 1 with release ordering (the driver that sees
 * the new idx sees the element and the data written before this call), all
 * through guest_mem_write_ptr(), so the pages are marked dirty. -EIO when
 * the queue is not ready or broken, -EINVAL when head >= size or nothing is
 * outstanding (every taken head was pushed already).
 */
int virtq_push(struct virtq *q, struct guest_mem *mem, uint16_t head, uint32_t len);

/*
 * Whether the driver wants an interrupt for the used entries [old_used,
 * new_used) the device just published: with EVENT_IDX, when used_event lies
 * in that window (the spec's vring_need_event()); without, unless avail
 * flags has VIRTQ_AVAIL_F_NO_INTERRUPT. A full barrier comes first, so the
 * driver's used_event/flags are read after the used idx store is visible.
 * False when nothing was published, when the queue is not ready, or when
 * the avail ring is not RAM any more. After virtq_load() the device does
 * not know old_used: it should just send one interrupt.
 */
bool virtq_should_notify(const struct virtq *q, const struct guest_mem *mem, uint16_t old_used,
			 uint16_t new_used);

/*
 * EVENT_IDX, the device side: writes avail_event = last_avail_idx (kick me
 * when you make the next entry available), then a full barrier. The caller
 * must check virtq_avail_pending() again afterwards: an entry made
 * available before the driver saw the new avail_event sent no kick.
 * -EIO when not ready, -EINVAL without EVENT_IDX.
 */
int virtq_set_avail_event(struct virtq *q, struct guest_mem *mem);

/*
 * Copies between a popped chain and a host buffer through the checked
 * accessor. virtq_chain_read() reads from the readable segments, starting
 * `off` bytes into them; virtq_chain_write() writes into the writable ones
 * (marking the pages dirty). Each copies min(len, what remains after off)
 * and returns the bytes copied (0 when off is at or past the end), or
 * -EFAULT if a segment is not RAM (it was when popped; the layout does not
 * change, so only a chain that was not popped can fail).
 */
ssize_t virtq_chain_read(const struct virtq_chain *c, const struct guest_mem *mem, uint64_t off,
			 void *dst, size_t len);
ssize_t virtq_chain_write(const struct virtq_chain *c, struct guest_mem *mem, uint64_t off,
			  const void *src, size_t len);

/*
 * Migration (virtq_state.c; docs/state-format.md "VIRTQ"). The blob is
 * VIRTQ_STATE_SIZE bytes, little endian:
 *    0  u16  version (VIRTQ_STATE_VERSION)
 *    2  u16  size
 *    4  u8   flags: bit 0 ready, bit 1 broken
 *    5  u8   reserved (0)
 *    6  u16  last_avail_idx
 *    8  u64  features
 *   16  u64  desc_gpa
 *   24  u64  avail_gpa
 *   32  u64  used_gpa
 *   40  u16  next_used_idx
 *   42  u8[6] reserved (0)
 * virtq_save() fills buf and returns VIRTQ_STATE_SIZE. virtq_load() checks
 * the whole blob first (length, version, reserved bits and bytes, size <=
 * the target's max_size, a ready queue's layout against guest RAM, at most
 * `size` chains in flight, broken only when ready) and only then changes q;
 * -EINVAL with one line in err. The device saves while quiesced; chains it
 * took and has not pushed (last_avail_idx - next_used_idx) are its to carry.
 */
#define VIRTQ_STATE_VERSION 1
#define VIRTQ_STATE_SIZE    48

size_t virtq_save(const struct virtq *q, uint8_t *buf);
int virtq_load(struct virtq *q, const struct guest_mem *mem, const uint8_t *buf, size_t len,
	       char *err, size_t errlen);

#endif /* VMM_VIRTQ_H */
