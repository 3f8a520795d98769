// SPDX-License-Identifier: Apache-2.0
/*
 * virtio.c - the polling virtio-mmio driver (see virtio.h).
 *
 * Registers are read and written with explicit 32-bit movl (4.2.2.2: the
 * driver MUST use 32-bit aligned accesses there), config bytes with movb/
 * movw/movl of the field's size: an MMIO access traps to the VMM, which
 * decodes the instruction, so each is one plain mov with a fixed width.
 *
 * Ordering. The device is another host thread reading and writing guest
 * RAM, and x86 keeps stores in order and loads in order. So publishing a
 * chain (descriptors, avail ring entry, then avail->idx, then the notify)
 * needs only a compiler barrier between the steps, and so does reading a
 * completion (used->idx, then the element, then the data). The one
 * store-then-load order x86 does not keep (publish avail->idx, then read
 * used->flags to skip a notify) never arises: the driver always notifies.
 */
#include "virtio_regs.h"

static uint32_t rd_config(const struct virtio_dev *d, uint32_t off, uint32_t size)
{
	uintptr_t a = (uintptr_t)(d->base + REG_CONFIG + off);
	uint32_t v;
	uint16_t w;
	uint8_t b;

	if (size == 1) {
		__asm__ volatile("movb %1, %0" : "=q"(b) : "m"(*(volatile uint8_t *)a) : "memory");
		return b;
	}
	if (size == 2) {
		__asm__ volatile("movw %1, %0" : "=r"(w) : "m"(*(volatile uint16_t *)a) : "memory");
		return w;
	}
	__asm__ volatile("movl %1, %0" : "=r"(v) : "m"(*(volatile uint32_t *)a) : "memory");
	return v;
}

uint32_t virtio_status(const struct virtio_dev *dev)
{
	return rd32(dev, REG_STATUS);
}

void virtio_fail(struct virtio_dev *dev)
{
	wr32(dev, REG_STATUS, rd32(dev, REG_STATUS) | STATUS_FAILED);
}

/* Is `want` one of the NUL-separated strings of a stringlist property? */
int virtio_start(struct virtio_dev *dev, uint64_t wanted)
{
	uint64_t offered, accept, t0 = rdtsc();
	uint32_t s = STATUS_ACKNOWLEDGE | STATUS_DRIVER;

	/* 2.4.2: after writing 0, wait until the status reads 0. */
	wr32(dev, REG_STATUS, 0);
	while (rd32(dev, REG_STATUS)) {
		if (rdtsc() - t0 > ms_to_tsc(RESET_WAIT_MS)) {
			fw_log("virtio: device at 0x%lx does not reset (status 0x%x)", dev->base,
			       rd32(dev, REG_STATUS));
			return -1;
		}
		cpu_relax();
	}
	wr32(dev, REG_STATUS, STATUS_ACKNOWLEDGE);
	wr32(dev, REG_STATUS, s);

	wr32(dev, REG_DEVICE_FEAT_SEL, 0);
	offered = rd32(dev, REG_DEVICE_FEATURES);
	wr32(dev, REG_DEVICE_FEAT_SEL, 1);
	offered |= (uint64_t)rd32(dev, REG_DEVICE_FEATURES) << 32;
	if (!(offered >> VIRTIO_F_VERSION_1 & 1)) {
		fw_log("virtio: device at 0x%lx does not offer VIRTIO_F_VERSION_1 (features 0x%lx)",
		       dev->base, offered);
		virtio_fail(dev);
		return -1;
	}
	/* Only what was offered: a device refuses FEATURES_OK otherwise (2.2.1). */
	accept = offered & (wanted | 1ull << VIRTIO_F_VERSION_1);
	wr32(dev, REG_DRIVER_FEAT_SEL, 0);
	wr32(dev, REG_DRIVER_FEATURES, (uint32_t)accept);
	wr32(dev, REG_DRIVER_FEAT_SEL, 1);
	wr32(dev, REG_DRIVER_FEATURES, (uint32_t)(accept >> 32));

	s |= STATUS_FEATURES_OK;
	wr32(dev, REG_STATUS, s);
	if (!(rd32(dev, REG_STATUS) & STATUS_FEATURES_OK)) {
		fw_log("virtio: device at 0x%lx refused features 0x%lx (offered 0x%lx)", dev->base,
		       accept, offered);
		virtio_fail(dev);
		return -1;
	}
	dev->features = accept;
	return 0;
}

static void wr64(const struct virtio_dev *d, uint32_t lo, uint32_t hi, const void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;

	wr32(d, lo, (uint32_t)a);
	wr32(d, hi, (uint32_t)(a >> 32));
}

int virtq_init(struct virtq *q, const struct virtio_dev *dev, uint16_t index, uint16_t want)
{
	uint32_t max, size = 1, i;
	uint64_t avail_off, used_off, bytes;
	uint8_t *mem;

	wr32(dev, REG_QUEUE_SEL, index);
	if (rd32(dev, REG_QUEUE_READY)) {
		fw_log("virtio: queue %u of the device at 0x%lx is ready before setup", index,
		       dev->base);
		return -1;
	}
	max = rd32(dev, REG_QUEUE_NUM_MAX);
	if (!max) {
		fw_log("virtio: the device at 0x%lx has no queue %u", dev->base, index);
		return -1;
	}
	if (max > want)
		max = want;
	if (max > VIRTQ_MAX)
		max = VIRTQ_MAX;
	while (size * 2 <= max)
		size *= 2;

	/* desc (16-aligned), then avail (2-aligned), then used (4-aligned), in one piece. */
	avail_off = 16ull * size;
	used_off = (avail_off + 6 + 2ull * size + 3) & ~3ull;
	bytes = used_off + 6 + 8ull * size;
	mem = fw_alloc_pages((bytes + VMM_PAGE_SIZE - 1) / VMM_PAGE_SIZE);

	memset(q, 0, sizeof(*q));
	q->dev = dev;
	q->index = index;
	q->size = (uint16_t)size;
	q->desc = (struct virtq_desc *)mem;
	q->avail = (volatile uint16_t *)(mem + avail_off);
	q->used = (volatile uint16_t *)(mem + used_off);
	q->used_ring = (volatile struct virtq_used_elem *)(mem + used_off + 4);
	for (i = 0; i + 1 < size; i++)
		q->desc[i].next = (uint16_t)(i + 1);
	q->num_free = (uint16_t)size;
	/* We poll: ask the device not to bother with used-buffer interrupts (a hint). */
	q->avail[0] = VIRTQ_AVAIL_F_NO_INTERRUPT;

	wr32(dev, REG_QUEUE_NUM, size);
	wr64(dev, REG_QUEUE_DESC_LO, REG_QUEUE_DESC_HI, q->desc);
	wr64(dev, REG_QUEUE_DRIVER_LO, REG_QUEUE_DRIVER_HI, (const void *)q->avail);
	wr64(dev, REG_QUEUE_DEVICE_LO, REG_QUEUE_DEVICE_HI, (const void *)q->used);
	barrier(); /* the zeroed rings before the device may look at them */
	wr32(dev, REG_QUEUE_READY, 1);
	if (rd32(dev, REG_QUEUE_READY) != 1) {
		fw_log("virtio: the device at 0x%lx refused queue %u (size %u, status 0x%x)",
		       dev->base, index, size, rd32(dev, REG_STATUS));
		return -1;
	}
	return 0;
}

int virtio_driver_ok(struct virtio_dev *dev)
{
	uint32_t s;

	wr32(dev, REG_STATUS, rd32(dev, REG_STATUS) | STATUS_DRIVER_OK);
	s = rd32(dev, REG_STATUS);
	if (!(s & STATUS_DRIVER_OK) || (s & (STATUS_NEEDS_RESET | STATUS_FAILED))) {
		fw_log("virtio: device at 0x%lx did not go live (status 0x%x)", dev->base, s);
		return -1;
	}
	return 0;
}

void virtio_config_read(const struct virtio_dev *dev, uint32_t off, void *dst, uint32_t len)
{
	uint8_t *p = dst;
	uint32_t gen, tries = 0, i, sz;

	/* 2.5.1: a field wider than 32 bits, or several, is read again if the
	 * device changed its config meanwhile. */
	do {
		gen = rd32(dev, REG_CONFIG_GENERATION);
		for (i = 0; i < len; i += sz) {
			uint32_t v;

			sz = len - i >= 4 && !((off + i) & 3)	? 4
			     : len - i >= 2 && !((off + i) & 1) ? 2
								: 1;
			v = rd_config(dev, off + i, sz);
			memcpy(p + i, &v, sz); /* little endian, as virtio 1.x config is */
		}
	} while (rd32(dev, REG_CONFIG_GENERATION) != gen && ++tries < CONFIG_TRIES);
}

int virtq_add(struct virtq *q, const struct virtq_buf *bufs, uint32_t n, void *token)
{
	uint16_t head = q->free_head, i = head, last = head;
	uint32_t k;

	if (!n || n > q->num_free || !token)
		return -1;
	for (k = 0; k < n; k++) {
		struct virtq_desc *d = &q->desc[i];

		d->addr = (uint64_t)(uintptr_t)bufs[k].addr;
		d->len = bufs[k].len;
		d->flags = (uint16_t)((bufs[k].writable ? VIRTQ_DESC_F_WRITE : 0) |
				      (k + 1 < n ? VIRTQ_DESC_F_NEXT : 0));
		last = i;
		i = d->next; /* the free list's link is the chain's link */
	}
	q->free_head = q->desc[last].next;
	q->num_free = (uint16_t)(q->num_free - n);
	q->token[head] = token;
	q->chain_len[head] = (uint16_t)n;

	q->avail[2 + (q->avail_idx & (q->size - 1))] = head;
	barrier(); /* descriptors and ring entry before the index that publishes them */
	q->avail[1] = ++q->avail_idx;
	return 0;
}

void virtq_kick(struct virtq *q)
{
	barrier(); /* the avail index before the notify */
	wr32(q->dev, REG_QUEUE_NOTIFY, q->index);
}

static __attribute__((noreturn)) void broken(const struct virtq *q, const char *what, uint32_t v)
{
	fw_log("virtio: device at 0x%lx queue %u: %s %u (last used %u, size %u)", q->dev->base,
	       q->index, what, v, q->last_used, q->size);
	fw_exit(VMM_GUEST_EXIT_DEVICE);
}

void *virtq_get(struct virtq *q, uint32_t *len)
{
	uint16_t used_idx = q->used[1], i;
	uint32_t id, k;
	void *token;

	if (used_idx == q->last_used)
		return NULL;
	if ((uint16_t)(used_idx - q->last_used) > q->size)
		broken(q, "used index jumped to", used_idx);
	barrier(); /* the element and the data after the index that published them */
	id = q->used_ring[q->last_used & (q->size - 1)].id;
	*len = q->used_ring[q->last_used & (q->size - 1)].len;
	if (id >= q->size || !q->token[id])
		broken(q, "used a chain it was not given, head", id);
	token = q->token[id];
	q->token[id] = NULL;
	for (i = (uint16_t)id, k = 1; k < q->chain_len[id]; k++)
		i = q->desc[i].next;
	q->desc[i].next = q->free_head;
	q->free_head = (uint16_t)id;
	q->num_free = (uint16_t)(q->num_free + q->chain_len[id]);
	q->last_used++;
	return token;
}

/*
 * The clock is the guest's running time, from the TSC in steps of at most
 * WAIT_STEP_MS: a VM paused (vmm pause, a migration's blackout) or a TSC
 * that jumped either way across a migration adds at most one step, so the
 * bound measures the device, not the host's stops.
 */
int virtq_wait(struct virtq *q, void **token, uint32_t *len)
{
	uint64_t prev = rdtsc(), ran = 0, step = ms_to_tsc(WAIT_STEP_MS);
	uint64_t limit = ms_to_tsc(VIRTIO_TIMEOUT_MS);

	while (!(*token = virtq_get(q, len))) {
		uint64_t now = rdtsc(), d = now >= prev ? now - prev : 0;

		ran += d < step ? d : step;
		prev = now;
		if (ran >= limit)
			return -1;
		cpu_relax();
	}
	return 0;
}
