/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_virtq.c - the split virtqueue (vmm/machine/devices/virtio/virtq*.c) driven by a
 * guest whose memory is the input (layout in fuzz_virtq.h): descriptor
 * table, avail ring and whatever the descriptors point at. The harness sets
 * the queue ready, then pops until the queue is empty or broken; for each
 * chain it reads the readable bytes and writes the writable ones through
 * the copy helpers, pushes it, and asks whether to notify. A refused chain
 * is pushed with length 0. Then the queue's state goes through
 * virtq_save()/virtq_load(), and the knobs' bytes are also loaded as a
 * state blob.
 *
 * Findings, besides sanitizer reports: a chain whose segments are not
 * inside RAM or disagree with its totals, a push of a popped chain that
 * fails, more pops than the driver made available, a published used idx
 * that is not the queue's, a save/load round trip that changes the queue.
 * The guest RAM is one anonymous mapping (no KVM): a stray access outside
 * it faults or is caught by the segment checks.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_virtq.h"
#include "guest_mem.h"
#include "le.h"
#include "virtq.h"

static struct guest_mem mem;
static struct virtq q, q2;
static struct virtq_chain chain;
static uint8_t host_buf[8192];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (guest_mem_init(&mem, FV_RAM, FV_SLOT, MEM_BACKEND_ANON))
		abort();
	return 0;
}

static void check_chain(void)
{
	uint64_t rd = 0, wr = 0;

	if (chain.nseg > VIRTQ_CHAIN_MAX_SEGS || chain.nread > chain.nseg || chain.head >= q.size)
		abort();
	for (uint32_t i = 0; i < chain.nseg; i++) {
		const struct virtq_seg *s = &chain.seg[i];

		if (s->gpa > FV_RAM || s->len > FV_RAM - s->gpa || s->write != (i >= chain.nread))
			abort();
		if (s->write)
			wr += s->len;
		else
			rd += s->len;
	}
	if (rd != chain.read_len || wr != chain.write_len || rd + wr > VIRTQ_CHAIN_MAX_LEN)
		abort();
}

/* Whether the device wrote the avail ring's idx (through a chain's writable buffer). */
static bool avail_written;

/* Reads and writes the chain from off, as a device would, and pushes it. */
static void serve(uint16_t off, uint32_t push_len)
{
	ssize_t n;
	uint16_t old = q.next_used_idx;

	check_chain();
	n = virtq_chain_read(&chain, &mem, off, host_buf, sizeof(host_buf));
	if (n < 0 || (uint64_t)n > (chain.read_len > off ? chain.read_len - off : 0))
		abort();
	for (uint32_t i = chain.nread; i < chain.nseg; i++)
		if (chain.seg[i].gpa < q.avail_gpa + 4 &&
		    chain.seg[i].gpa + chain.seg[i].len > q.avail_gpa + 2)
			avail_written = true;
	n = virtq_chain_write(&chain, &mem, off, host_buf, sizeof(host_buf));
	if (n < 0 || (uint64_t)n > (chain.write_len > off ? chain.write_len - off : 0))
		abort();
	if (push_len > chain.write_len)
		push_len = chain.write_len;
	if (virtq_push(&q, &mem, chain.head, push_len))
		abort();
	(void)virtq_should_notify(&q, &mem, old, q.next_used_idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint8_t blob[VIRTQ_STATE_SIZE], blob2[VIRTQ_STATE_SIZE];
	uint16_t start, off, avail;
	uint32_t push_len, pops = 0, bad = 0;
	uint8_t flags;
	char err[256];

	if (len < FV_HDR)
		return 0;
	memset(mem.base, 0, FV_RAM);
	avail_written = false;
	memcpy(mem.base, data + FV_HDR, len - FV_HDR < FV_RAM ? len - FV_HDR : FV_RAM);
	flags = data[1];
	start = le_get16(data + 2);
	push_len = le_get16(data + 4);
	off = le_get16(data + 6);

	if (virtq_init(&q, 256))
		abort();
	q.size = (uint16_t)fv_size(data[0]);
	q.desc_gpa = 0;
	q.avail_gpa = fv_avail(q.size);
	q.used_gpa = fv_used(q.size, flags);
	virtq_set_features(&q, (flags & FV_EVENT_IDX ? 1ull << VIRTIO_F_RING_EVENT_IDX : 0) |
				   (flags & FV_INDIRECT ? 1ull << VIRTIO_F_RING_INDIRECT_DESC : 0));
	if (virtq_set_ready(&q, &mem, err, sizeof(err)))
		abort(); /* the layouts of fuzz_virtq.h are all valid */
	q.last_avail_idx = q.next_used_idx = start;
	le_put16(mem.base + q.used_gpa + 2, start); /* as the device last published it */
	avail = le_get16(mem.base + q.avail_gpa + 2);

	for (;;) {
		enum virtq_pop_result r = virtq_pop(&q, &mem, &chain);

		if (r == VIRTQ_POP_EMPTY || r == VIRTQ_POP_BROKEN)
			break;
		/*
		 * Without writes, at most avail - start heads can be taken. A
		 * writable buffer may lie over the avail ring, though, and
		 * make more available (a guest may keep its device busy):
		 * then stop after a few rounds of the ring, not a finding.
		 */
		pops++;
		if (pops > (uint16_t)(avail - start) && !avail_written)
			abort();
		if (pops > 4 * q.size)
			break;
		if (r == VIRTQ_POP_CHAIN) {
			serve(off, push_len);
		} else if (++bad, chain.error >= 0 || !chain.why || chain.nseg ||
				      virtq_push(&q, &mem, chain.head, 0)) {
			abort();
		}
		if (flags & FV_EVENT_IDX && virtq_set_avail_event(&q, &mem))
			abort();
	}
	if (!q.broken && le_get16(mem.base + q.used_gpa + 2) != q.next_used_idx)
		abort();
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_virtq: size %u: %u chains, %u refused, %s\n", q.size,
			pops - bad, bad, q.broken ? q.why : "queue empty");

	/* The state round trip keeps the queue as it is. */
	virtq_save(&q, blob);
	if (virtq_init(&q2, 256) || virtq_load(&q2, &mem, blob, sizeof(blob), err, sizeof(err)))
		abort();
	virtq_save(&q2, blob2);
	if (memcmp(blob, blob2, sizeof(blob)))
		abort();
	/* Arbitrary bytes as a blob: refused, or a queue whose layout holds. */
	if (len >= VIRTQ_STATE_SIZE &&
	    virtq_load(&q2, &mem, data, VIRTQ_STATE_SIZE, err, sizeof(err)) == 0 && q2.ready &&
	    virtq_check_layout(&q2, &mem, NULL, 0))
		abort();
	return 0;
}
