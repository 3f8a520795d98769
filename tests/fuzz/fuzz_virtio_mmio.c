/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_virtio_mmio.c - the virtio-mmio transport (vmm/machine/devices/virtio/virtio_mmio*.c)
 * driven by a sequence of register accesses and device actions from the
 * input, over a small guest RAM the input also fills (layout in
 * fuzz_virtio_mmio.h). A kick serves its queue as a device would: pop
 * until empty or broken (bounded), push every chain, raise the interrupt;
 * a broken ring sets DEVICE_NEEDS_RESET. A save op round-trips the device
 * through virtio_mmio_save()/virtio_mmio_load() into a second device and
 * carries on with it; at the end the input's first bytes are loaded as a
 * blob.
 *
 * Findings, besides sanitizer reports: after any op a status the driver
 * could not have reached (an unknown bit, a bit without the one before it,
 * FEATURES_OK with features not offered or without VERSION_1, driver
 * features before DRIVER), interrupt
 * bits that are not the two, a ready queue whose layout does not hold or
 * whose features are not the driver's, a queue set up after DRIVER_OK; a
 * refused read that returns a value; a NOTIFY for a queue that is not
 * ready; a chain outside RAM; a save/load round trip that changes the blob;
 * a loaded blob that breaks any of the above.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_virtio_mmio.h"
#include "guest_mem.h"
#include "le.h"
#include "virtio_mmio.h"

static struct guest_mem mem;
static struct virtio_mmio devs[2];
static struct virtq_chain chain;
static uint8_t blob[VIRTIO_MMIO_STATE_FIXED + VIRTIO_MMIO_MAX_QUEUES * VIRTQ_STATE_SIZE];
static uint8_t blob2[sizeof(blob)];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (guest_mem_init(&mem, FM_RAM, FM_SLOT, MEM_BACKEND_ANON))
		abort();
	return 0;
}

static void check(const struct virtio_mmio *d)
{
	uint32_t s = d->status;

	if (s & ~(0x0fu | VIRTIO_STATUS_DEVICE_NEEDS_RESET | VIRTIO_STATUS_FAILED) ||
	    (s & VIRTIO_STATUS_DRIVER && !(s & VIRTIO_STATUS_ACKNOWLEDGE)) ||
	    (s & VIRTIO_STATUS_FEATURES_OK && !(s & VIRTIO_STATUS_DRIVER)) ||
	    (s & VIRTIO_STATUS_DRIVER_OK && !(s & VIRTIO_STATUS_FEATURES_OK)))
		abort();
	if (s & VIRTIO_STATUS_FEATURES_OK && (d->driver_features & ~d->device_features ||
					      !(d->driver_features >> VIRTIO_F_VERSION_1 & 1)))
		abort();
	if (d->driver_features && !(s & VIRTIO_STATUS_DRIVER))
		abort();
	if (d->int_status & ~3u || (d->int_status && !(s & VIRTIO_STATUS_DRIVER_OK)))
		abort();
	for (uint32_t i = 0; i < d->nqueues; i++) {
		const struct virtq *q = &d->queues[i];

		if (!q->ready)
			continue;
		if (!(s & VIRTIO_STATUS_FEATURES_OK) || q->features != d->driver_features ||
		    virtq_check_layout(q, &mem, NULL, 0))
			abort();
	}
}

/* As a device's I/O thread on a kick: bounded pops, every chain pushed. */
static void serve(struct virtio_mmio *d, uint32_t qi)
{
	struct virtq *q = virtio_mmio_queue(d, qi);
	bool pushed = false;

	if (!q)
		abort();
	for (uint32_t n = 0; n < 2u * q->max_size; n++) {
		enum virtq_pop_result r = virtq_pop(q, &mem, &chain);

		if (r == VIRTQ_POP_EMPTY)
			break;
		if (r == VIRTQ_POP_BROKEN) {
			(void)virtio_mmio_set_needs_reset(d);
			break;
		}
		for (uint32_t k = 0; k < chain.nseg; k++)
			if (chain.seg[k].gpa > FM_RAM ||
			    chain.seg[k].len > FM_RAM - chain.seg[k].gpa)
				abort();
		if (virtq_push(q, &mem, chain.head, r == VIRTQ_POP_CHAIN ? chain.write_len : 0))
			abort();
		pushed = true;
	}
	if (pushed)
		(void)virtio_mmio_raise(d, VIRTIO_MMIO_INT_VRING);
}

static void device_act(struct virtio_mmio *d, uint32_t v)
{
	uint8_t byte = (uint8_t)(v >> 16);

	switch (v % 4) {
	case 0:
		(void)virtio_mmio_raise(d, v >> 2 & 3);
		break;
	case 1:
		(void)virtio_mmio_set_needs_reset(d);
		break;
	case 2:
		if (virtio_mmio_set_config(d, v >> 8 & 0xff, &byte, 1) < 0 &&
		    (v >> 8 & 0xff) < d->config_len)
			abort();
		break;
	default:
		for (uint32_t i = 0; i < d->nqueues; i++)
			if (d->queues[i].ready && d->status & VIRTIO_STATUS_DRIVER_OK)
				serve(d, i);
		break;
	}
}

static int setup(struct virtio_mmio *d, uint8_t knobs)
{
	static const uint8_t mac[6] = {0x52, 0x54, 0, 0x12, 0x34, 0x56};
	static const uint8_t capacity[8] = {0, 0x10};
	struct virtio_mmio_params p = {
	    .device_id = knobs & FM_BLOCK ? VIRTIO_ID_BLOCK : VIRTIO_ID_NET,
	    .vendor_id = 0x554d4551,
	    .features = 1ull << 5 | 1ull << 52 |
			(knobs & FM_EVENT_IDX ? 1ull << VIRTIO_F_RING_EVENT_IDX : 0) |
			(knobs & FM_INDIRECT ? 1ull << VIRTIO_F_RING_INDIRECT_DESC : 0),
	    .nqueues = knobs & FM_BLOCK ? 1 : 2,
	    .queue_max = {256, 64},
	    .config = knobs & FM_BLOCK ? capacity : mac,
	    .config_len = knobs & FM_BLOCK ? sizeof(capacity) : sizeof(mac),
	};

	return virtio_mmio_init(d, &p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct virtio_mmio *d = &devs[0];
	size_t nops, ram_off;
	uint8_t knobs;
	char err[256];
	int cur = 0;

	if (len < FM_HDR)
		return 0;
	knobs = data[0];
	nops = data[1];
	ram_off = FM_HDR + nops * FM_OP;
	if (ram_off > len)
		nops = (len - FM_HDR) / FM_OP, ram_off = len;
	memset(mem.base, 0, FM_RAM);
	memcpy(mem.base, data + ram_off, len - ram_off < FM_RAM ? len - ram_off : FM_RAM);
	if (setup(&devs[0], knobs) || setup(&devs[1], knobs))
		abort();

	for (size_t i = 0; i < nops; i++) {
		const uint8_t *op = data + FM_HDR + i * FM_OP;
		uint64_t off = op[1] * 4u + (op[0] >> 2 & 3);
		uint32_t size = fm_size(op[0]), v = le_get32(op + 2), got = 0xdeadbeef;
		struct virtio_mmio_action a;
		size_t n;

		switch (op[0] & 3) {
		case FM_READ:
			if (!virtio_mmio_read(d, off, size, &got) && got != 0)
				abort();
			break;
		case FM_WRITE:
			a = virtio_mmio_write(d, &mem, off, size, v);
			if (a.ev == VIRTIO_MMIO_EV_NOTIFY) {
				if (a.queue >= d->nqueues || !d->queues[a.queue].ready)
					abort();
				serve(d, a.queue);
			}
			break;
		case FM_DEVICE:
			device_act(d, v);
			break;
		default:
			/* Migrate to the other device (reset first, as a fresh target). */
			n = virtio_mmio_save(d, blob);
			if (setup(&devs[!cur], knobs) ||
			    virtio_mmio_load(&devs[!cur], &mem, blob, n, err, sizeof(err))) {
				fprintf(stderr, "fuzz_virtio_mmio: %s\n", err);
				abort();
			}
			if (virtio_mmio_save(&devs[!cur], blob2) != n || memcmp(blob, blob2, n))
				abort();
			cur = !cur;
			d = &devs[cur];
			break;
		}
		check(d);
	}

	/* Arbitrary bytes as a blob: refused, or a device that holds. */
	if (virtio_mmio_load(&devs[!cur], &mem, data, len < sizeof(blob) ? len : sizeof(blob), err,
			     sizeof(err)) == 0)
		check(&devs[!cur]);
	return 0;
}
