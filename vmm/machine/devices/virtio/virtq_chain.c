/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtq_chain.c - the avail side of the split virtqueue: taking the next
 * head and walking its descriptor chain (direct, or one indirect table) into
 * a bounded list of checked segments, and copying between those segments
 * and host buffers. The contracts are in virtq.h.
 *
 * Everything here is read from memory the guest may be changing: each
 * descriptor is loaded once, field by field, into a local (struct desc) and
 * only the local is checked and used. A chain the guest changes while we
 * walk it yields some chain of valid segments or a refusal, never an
 * access outside RAM.
 */
#include "virtq.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

struct desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

/*
 * One copy of the descriptor: only the copy is checked and used. memcpy,
 * not aligned loads: the queue's table is 16-byte aligned, but an indirect
 * table is wherever the driver's allocator put it (Linux with SLOB aligns
 * kmalloc to 8 bytes; the spec asks no alignment of it).
 */
static void read_desc(const uint8_t *table, uint32_t i, struct desc *d)
{
	uint8_t raw[16];

	memcpy(raw, table + 16ull * i, sizeof(raw));
	memcpy(&d->addr, raw, 8);
	memcpy(&d->len, raw + 8, 4);
	memcpy(&d->flags, raw + 12, 2);
	memcpy(&d->next, raw + 14, 2);
	d->addr = le64toh(d->addr);
	d->len = le32toh(d->len);
	d->flags = le16toh(d->flags);
	d->next = le16toh(d->next);
}

static int refuse(struct virtq_chain *c, int error, const char *why)
{
	c->error = error;
	c->why = why;
	return error;
}

static bool test_and_set(uint64_t *bits, uint32_t i)
{
	uint64_t m = 1ull << (i % 64);
	bool was = bits[i / 64] & m;

	bits[i / 64] |= m;
	return was;
}

/* The head descriptor is an indirect table: check it and make it the table walked. */
static int enter_indirect(const struct virtq *q, const struct guest_mem *mem, struct virtq_chain *c,
			  const struct desc *d, const uint8_t **table, uint32_t *n)
{
	if (!virtq_indirect(q))
		return refuse(c, -EINVAL,
			      "INDIRECT descriptor, but INDIRECT_DESC was not negotiated");
	if (d->flags & VIRTQ_DESC_F_NEXT)
		return refuse(c, -EINVAL, "INDIRECT descriptor with NEXT");
	if (d->len == 0 || d->len % 16)
		return refuse(c, -EINVAL, "indirect table length is 0 or not a multiple of 16");
	if (d->len / 16 > VIRTQ_MAX_SIZE)
		return refuse(c, -E2BIG, "indirect table has more than 32768 descriptors");
	*table = guest_mem_ptr(mem, d->addr, d->len);
	if (!*table)
		return refuse(c, -EFAULT, "indirect table is not guest RAM");
	*n = d->len / 16;
	c->indirect = true;
	return 0;
}

static int add_seg(const struct guest_mem *mem, struct virtq_chain *c, const struct desc *d,
		   uint32_t i, uint64_t *total)
{
	bool write = d->flags & VIRTQ_DESC_F_WRITE;
	struct virtq_seg *s;

	if (!write && c->nseg > c->nread)
		return refuse(c, -EINVAL, "readable descriptor after a writable one");
	if (c->nseg == VIRTQ_CHAIN_MAX_SEGS)
		return refuse(c, -E2BIG, "chain has more than VIRTQ_CHAIN_MAX_SEGS segments");
	*total += d->len;
	if (*total > VIRTQ_CHAIN_MAX_LEN)
		return refuse(c, -EOVERFLOW, "chain is longer than VIRTQ_CHAIN_MAX_LEN bytes");
	if (!guest_mem_ptr(mem, d->addr, d->len))
		return refuse(c, -EFAULT, "descriptor buffer is not guest RAM");
	s = &c->seg[c->nseg++];
	s->gpa = d->addr;
	s->len = d->len;
	s->desc = (uint16_t)i;
	s->write = write;
	if (write) {
		c->write_len += d->len;
	} else {
		c->nread++;
		c->read_len += d->len;
	}
	return 0;
}

/* Walks the chain of c->head into c->seg[]; 0 or the -errno of a refusal. */
static int walk(struct virtq *q, const struct guest_mem *mem, struct virtq_chain *c)
{
	const uint8_t *table = guest_mem_ptr(mem, q->desc_gpa, virtq_desc_bytes(q->size));
	uint32_t n = q->size, i = c->head;
	uint64_t total = 0;
	struct desc d;
	int ret;

	if (!table)
		return refuse(c, -EFAULT, "descriptor table is not guest RAM");
	read_desc(table, i, &d);
	if (d.flags & VIRTQ_DESC_F_INDIRECT) {
		ret = enter_indirect(q, mem, c, &d, &table, &n);
		if (ret)
			return ret;
		i = 0;
		read_desc(table, i, &d);
	}
	/* Only the bits of this table: cheap for the small queues devices use. */
	memset(q->seen, 0, (n + 63) / 64 * sizeof(q->seen[0]));
	for (uint32_t count = 0;; count++) {
		/* Cannot trigger while `seen` works: a chain of n + 1 must revisit. */
		if (count == n)
			return refuse(c, -ELOOP, "chain has more descriptors than its table");
		test_and_set(q->seen, i);
		if (d.flags & VIRTQ_DESC_F_INDIRECT)
			return refuse(c, -EINVAL,
				      c->indirect
					  ? "INDIRECT descriptor inside an indirect table"
					  : "INDIRECT descriptor not at the head of its chain");
		ret = add_seg(mem, c, &d, i, &total);
		if (ret)
			return ret;
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			return 0;
		if (d.next >= n)
			return refuse(c, -EINVAL, "next descriptor index out of range");
		if (test_and_set(q->seen, d.next))
			return refuse(c, -ELOOP, "descriptor chain loops");
		i = d.next;
		read_desc(table, i, &d);
	}
}

static enum virtq_pop_result broken(struct virtq *q, const char *why)
{
	q->broken = true;
	q->why = why;
	return VIRTQ_POP_BROKEN;
}

enum virtq_pop_result virtq_pop(struct virtq *q, const struct guest_mem *mem, struct virtq_chain *c)
{
	uint16_t head, pending;
	const uint8_t *avail;

	c->head = 0;
	c->nseg = c->nread = 0;
	c->indirect = false;
	c->read_len = c->write_len = 0;
	c->error = 0;
	c->why = NULL;
	if (!q->ready)
		return VIRTQ_POP_EMPTY;
	if (q->broken)
		return VIRTQ_POP_BROKEN;
	avail = guest_mem_ptr(mem, q->avail_gpa, virtq_avail_bytes(q->size, virtq_event_idx(q)));
	if (!avail)
		return broken(q, "avail ring is not guest RAM");
	/*
	 * Acquire: pairs with the driver's write barrier between writing
	 * ring[idx % size] (and the descriptors it names) and bumping idx, so
	 * the loads below see what the driver wrote before this idx.
	 */
	pending =
	    (uint16_t)(le16toh(__atomic_load_n((const uint16_t *)(avail + 2), __ATOMIC_ACQUIRE)) -
		       q->last_avail_idx);
	if (pending == 0)
		return VIRTQ_POP_EMPTY;
	if (pending > q->size)
		return broken(q, "avail idx moved more than the queue size ahead");
	head = le16toh(__atomic_load_n(
	    (const uint16_t *)(avail + 4 + 2u * (q->last_avail_idx & (q->size - 1))),
	    __ATOMIC_RELAXED));
	if (head >= q->size)
		return broken(q, "avail ring entry is not a descriptor index");
	q->last_avail_idx++;
	c->head = head;
	if (walk(q, mem, c)) {
		c->nseg = c->nread = 0;
		c->read_len = c->write_len = 0;
		return VIRTQ_POP_BAD_CHAIN;
	}
	return VIRTQ_POP_CHAIN;
}

/*
 * The copy helpers: each walks its side's segments from `off` bytes in, at
 * most len bytes. Two small loops rather than one with a direction flag,
 * so that reading needs no writable guest_mem.
 */
ssize_t virtq_chain_read(const struct virtq_chain *c, const struct guest_mem *mem, uint64_t off,
			 void *dst, size_t len)
{
	size_t done = 0;

	for (uint32_t k = 0; k < c->nread && done < len; k++) {
		const struct virtq_seg *s = &c->seg[k];
		uint64_t n;
		const uint8_t *p;

		if (off >= s->len) {
			off -= s->len;
			continue;
		}
		n = s->len - off < len - done ? s->len - off : len - done;
		p = guest_mem_ptr(mem, s->gpa + off, n);
		if (!p)
			return -EFAULT;
		memcpy((uint8_t *)dst + done, p, n);
		done += n;
		off = 0;
	}
	return (ssize_t)done;
}

ssize_t virtq_chain_write(const struct virtq_chain *c, struct guest_mem *mem, uint64_t off,
			  const void *src, size_t len)
{
	size_t done = 0;

	for (uint32_t k = c->nread; k < c->nseg && done < len; k++) {
		const struct virtq_seg *s = &c->seg[k];
		uint64_t n;
		uint8_t *p;

		if (off >= s->len) {
			off -= s->len;
			continue;
		}
		n = s->len - off < len - done ? s->len - off : len - done;
		/* Marks the pages dirty: migration resends what the device wrote. */
		p = guest_mem_write_ptr(mem, s->gpa + off, n);
		if (!p)
			return -EFAULT;
		memcpy(p, (const uint8_t *)src + done, n);
		done += n;
		off = 0;
	}
	return (ssize_t)done;
}
