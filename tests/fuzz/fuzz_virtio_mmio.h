/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_virtio_mmio.h - the input layout of fuzz_virtio_mmio, shared by the
 * harness and the seed writer (fuzz_seeds.c).
 *
 * An input is FM_HDR bytes, then nops records of FM_OP bytes (the guest's
 * and the device's actions, in order), then the first bytes of guest RAM
 * (from gpa 0; the rest of the FM_RAM bytes is zero):
 *   0     the device's offer: bit 0 EVENT_IDX, bit 1 INDIRECT_DESC,
 *         bit 2 a block device (1 queue) instead of net (2 queues)
 *   1     nops
 * A record {u8 op, u8 reg, u32 value (little endian)}:
 *   op & 3      0 read, 1 write, 2 the device acts, 3 save and load
 *   op >> 2 & 3 added to the offset (an unaligned access)
 *   op >> 4 & 7 the access size: 4, 1, 2, 8, 3, 0, 4, 4
 *   offset = reg * 4 + the skew above (0x000..0x3ff: registers, config,
 *   and beyond the config)
 * A device action (op 2) is value % 4: raise value >> 2 & 3, set
 * DEVICE_NEEDS_RESET, change config byte value >> 8 to value >> 16, or
 * serve every queue (pop, push, raise) as a kick would.
 * A write that returns NOTIFY serves that queue.
 */
#ifndef VMM_FUZZ_VIRTIO_MMIO_H
#define VMM_FUZZ_VIRTIO_MMIO_H

#include <stdint.h>

#define FM_RAM	     (1u << 20)
#define FM_SLOT	     (256u << 10)
#define FM_HDR	     2
#define FM_OP	     6
#define FM_EVENT_IDX 0x01
#define FM_INDIRECT  0x02
#define FM_BLOCK     0x04

#define FM_READ	  0
#define FM_WRITE  1
#define FM_DEVICE 2
#define FM_SAVE	  3

static inline uint32_t fm_size(uint8_t op)
{
	static const uint8_t sizes[8] = {4, 1, 2, 8, 3, 0, 4, 4};

	return sizes[op >> 4 & 7];
}

#endif /* VMM_FUZZ_VIRTIO_MMIO_H */
