/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_virtq.h - the input layout of fuzz_virtq, shared by the harness and
 * the seed writer (fuzz_seeds.c).
 *
 * An input is FV_HDR bytes of knobs, then the first bytes of guest RAM
 * (from gpa 0; the rest of the FV_RAM bytes is zero):
 *   0     queue size: 1 << (byte % 9), so 1..256
 *   1     bit 0 VIRTIO_F_RING_EVENT_IDX, bit 1 VIRTIO_F_RING_INDIRECT_DESC,
 *         bit 2 the used ring at the very top of RAM instead of after avail
 *   2..3  last_avail_idx and used idx at the start (the rings' idx fields
 *         in the image say what the driver did)
 *   4..5  the length pushed for each chain (clamped to its writable bytes)
 *   6..7  the offset at which the harness reads and writes each chain
 * The rings: descriptor table at gpa 0, avail ring right after it
 * (16 * size), used ring at the next multiple of 4 after avail (or at the top).
 */
#ifndef VMM_FUZZ_VIRTQ_H
#define VMM_FUZZ_VIRTQ_H

#include <stdint.h>

#define FV_RAM	     (1u << 20)
#define FV_SLOT	     (256u << 10)
#define FV_HDR	     8
#define FV_EVENT_IDX 0x01
#define FV_INDIRECT  0x02
#define FV_USED_TOP  0x04

static inline uint32_t fv_size(uint8_t knob)
{
	return 1u << (knob % 9);
}

static inline uint64_t fv_avail(uint32_t size)
{
	return 16ull * size;
}

static inline uint64_t fv_used(uint32_t size, uint8_t flags)
{
	if (flags & FV_USED_TOP)
		return (FV_RAM - (4 + 8ull * size + 2)) & ~3ull;
	return (fv_avail(size) + 6 + 2ull * size + 3) & ~3ull;
}

#endif /* VMM_FUZZ_VIRTQ_H */
