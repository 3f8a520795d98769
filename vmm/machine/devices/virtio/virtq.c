/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtq.c - the split virtqueue's life and its used side: reset, the layout
 * check at QueueReady, pushing used elements, the notification decisions
 * (VIRTQ_AVAIL_F_NO_INTERRUPT, EVENT_IDX). Popping chains is virtq_chain.c,
 * the migration blob virtq_state.c; the contracts are in virtq.h.
 *
 * Guest fields are accessed with __atomic loads and stores of their natural
 * size (the rings' alignment makes every field naturally aligned): each is
 * one access the compiler may neither split nor repeat, because the guest
 * writes the same memory concurrently.
 */
#include "virtq.h"

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
						      ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int virtq_init(struct virtq *q, uint16_t max_size)
{
	if (max_size == 0 || max_size > VIRTQ_MAX_SIZE || (max_size & (max_size - 1)))
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	q->max_size = max_size;
	return 0;
}

void virtq_reset(struct virtq *q)
{
	uint16_t max = q->max_size;

	/* The scratch bitmap need not be cleared: virtq_pop() clears what it uses. */
	memset(q, 0, offsetof(struct virtq, seen));
	q->max_size = max;
}

void virtq_set_features(struct virtq *q, uint64_t features)
{
	q->features = features;
}

static int check_ring(const struct guest_mem *mem, const char *name, uint64_t gpa, uint64_t align,
		      uint64_t bytes, char *err, size_t errlen)
{
	if (gpa & (align - 1))
		return fail(err, errlen,
			    "virtqueue: %s ring at 0x%llx is not aligned to %llu bytes", name,
			    (unsigned long long)gpa, (unsigned long long)align);
	if (!guest_mem_ptr(mem, gpa, bytes))
		return fail(err, errlen, "virtqueue: %s ring [0x%llx, +%llu) is not guest RAM",
			    name, (unsigned long long)gpa, (unsigned long long)bytes);
	return 0;
}

int virtq_check_layout(const struct virtq *q, const struct guest_mem *mem, char *err, size_t errlen)
{
	bool ev = virtq_event_idx(q);
	int ret;

	if (q->size == 0 || q->size > q->max_size || (q->size & (q->size - 1)))
		return fail(err, errlen, "virtqueue: size %u is not a power of two in 1..%u",
			    q->size, q->max_size);
	ret =
	    check_ring(mem, "descriptor", q->desc_gpa, 16, virtq_desc_bytes(q->size), err, errlen);
	if (!ret)
		ret = check_ring(mem, "avail", q->avail_gpa, 2, virtq_avail_bytes(q->size, ev), err,
				 errlen);
	if (!ret)
		ret = check_ring(mem, "used", q->used_gpa, 4, virtq_used_bytes(q->size, ev), err,
				 errlen);
	return ret;
}

int virtq_set_ready(struct virtq *q, const struct guest_mem *mem, char *err, size_t errlen)
{
	int ret;

	if (q->ready) {
		fail(err, errlen, "virtqueue: ready already");
		return -EBUSY;
	}
	ret = virtq_check_layout(q, mem, err, errlen);
	if (ret)
		return ret;
	q->last_avail_idx = 0;
	q->next_used_idx = 0;
	q->broken = false;
	q->why = NULL;
	q->ready = true;
	return 0;
}

/* Host pointers of the rings (checked at ready; the RAM layout never changes). */
static uint8_t *avail_ring(const struct virtq *q, const struct guest_mem *mem)
{
	return guest_mem_ptr(mem, q->avail_gpa, virtq_avail_bytes(q->size, virtq_event_idx(q)));
}

uint16_t virtq_avail_pending(const struct virtq *q, const struct guest_mem *mem)
{
	uint8_t *avail;
	uint16_t idx;

	if (!q->ready || q->broken || !(avail = avail_ring(q, mem)))
		return 0;
	idx = le16toh(__atomic_load_n((uint16_t *)(avail + 2), __ATOMIC_ACQUIRE));
	return (uint16_t)(idx - q->last_avail_idx);
}

int virtq_push(struct virtq *q, struct guest_mem *mem, uint16_t head, uint32_t len)
{
	uint64_t elem_gpa;
	uint8_t *elem, *idx;

	if (!q->ready || q->broken)
		return -EIO;
	if (head >= q->size || q->next_used_idx == q->last_avail_idx)
		return -EINVAL;
	elem_gpa = q->used_gpa + 4 + 8ull * (q->next_used_idx & (q->size - 1));
	elem = guest_mem_write_ptr(mem, elem_gpa, 8);
	idx = guest_mem_write_ptr(mem, q->used_gpa + 2, 2);
	if (!elem || !idx)
		return -EFAULT; /* checked at ready: only a queue set up by hand gets here */
	__atomic_store_n((uint32_t *)elem, htole32(head), __ATOMIC_RELAXED);
	__atomic_store_n((uint32_t *)(elem + 4), htole32(len), __ATOMIC_RELAXED);
	q->next_used_idx++;
	/*
	 * Release: the element above, and the data the device wrote into the
	 * chain's buffers before calling us, are visible to a driver that
	 * reads the new idx (with its read barrier, virtio_rmb()).
	 */
	__atomic_store_n((uint16_t *)idx, htole16(q->next_used_idx), __ATOMIC_RELEASE);
	return 0;
}

/*
 * The spec's vring_need_event(): whether event_idx, the used index after
 * which the driver asked to be interrupted, is in [old, new), counted in
 * 16-bit arithmetic so that it holds across the wrap.
 */
static bool need_event(uint16_t event_idx, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event_idx - 1) < (uint16_t)(new_idx - old);
}

bool virtq_should_notify(const struct virtq *q, const struct guest_mem *mem, uint16_t old_used,
			 uint16_t new_used)
{
	uint8_t *avail;

	if (!q->ready || old_used == new_used || !(avail = avail_ring(q, mem)))
		return false;
	/*
	 * A full barrier (store-load): the used idx we stored must be visible
	 * before we read used_event or flags. Otherwise the driver may set them
	 * after reading the old used idx, and we read its stale value: it
	 * sleeps waiting for an interrupt we decided not to send (the driver's
	 * side has the mirror barrier, virtio_mb(), in virtqueue_enable_cb).
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (virtq_event_idx(q)) {
		uint16_t ev = le16toh(
		    __atomic_load_n((uint16_t *)(avail + 4 + 2u * q->size), __ATOMIC_RELAXED));

		return need_event(ev, new_used, old_used);
	}
	return !(le16toh(__atomic_load_n((uint16_t *)avail, __ATOMIC_RELAXED)) &
		 VIRTQ_AVAIL_F_NO_INTERRUPT);
}

int virtq_set_avail_event(struct virtq *q, struct guest_mem *mem)
{
	uint8_t *p;

	if (!q->ready || q->broken)
		return -EIO;
	if (!virtq_event_idx(q))
		return -EINVAL;
	p = guest_mem_write_ptr(mem, q->used_gpa + 4 + 8ull * q->size, 2);
	if (!p)
		return -EFAULT;
	__atomic_store_n((uint16_t *)p, htole16(q->last_avail_idx), __ATOMIC_RELAXED);
	/* Store-load: avail_event visible before the caller reads avail->idx again. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}
