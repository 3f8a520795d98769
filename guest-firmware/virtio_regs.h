// SPDX-License-Identifier: Apache-2.0
/*
 * virtio_regs.h - the virtio-mmio registers (virtio 1.2, 4.2.2) and their
 * 32-bit accessors, shared by the driver (virtio.c) and the device search
 * (virtio_find.c). Private to those two.
 */
#ifndef FW_VIRTIO_REGS_H
#define FW_VIRTIO_REGS_H

#include "virtio.h"

#define REG_MAGIC	      0x000u
#define REG_VERSION	      0x004u
#define REG_DEVICE_ID	      0x008u
#define REG_DEVICE_FEATURES   0x010u
#define REG_DEVICE_FEAT_SEL   0x014u
#define REG_DRIVER_FEATURES   0x020u
#define REG_DRIVER_FEAT_SEL   0x024u
#define REG_QUEUE_SEL	      0x030u
#define REG_QUEUE_NUM_MAX     0x034u
#define REG_QUEUE_NUM	      0x038u
#define REG_QUEUE_READY	      0x044u
#define REG_QUEUE_NOTIFY      0x050u
#define REG_STATUS	      0x070u
#define REG_QUEUE_DESC_LO     0x080u
#define REG_QUEUE_DESC_HI     0x084u
#define REG_QUEUE_DRIVER_LO   0x090u
#define REG_QUEUE_DRIVER_HI   0x094u
#define REG_QUEUE_DEVICE_LO   0x0a0u
#define REG_QUEUE_DEVICE_HI   0x0a4u
#define REG_CONFIG_GENERATION 0x0fcu
#define REG_CONFIG	      0x100u

#define MMIO_MAGIC	0x74726976u /* "virt" */
#define MMIO_VERSION	2u	    /* modern; 1 is the legacy interface */
#define MMIO_MIN_WINDOW 0x200u	    /* registers and some config */

#define STATUS_ACKNOWLEDGE 0x01u
#define STATUS_DRIVER	   0x02u
#define STATUS_DRIVER_OK   0x04u
#define STATUS_FEATURES_OK 0x08u
#define STATUS_NEEDS_RESET 0x40u
#define STATUS_FAILED	   0x80u

#define VIRTQ_DESC_F_NEXT	   1u
#define VIRTQ_DESC_F_WRITE	   2u
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1u

#define RESET_WAIT_MS 1000u
#define WAIT_STEP_MS  1000u /* the most one poll may add to virtq_wait()'s clock */
#define CONFIG_TRIES  100u  /* ConfigGeneration retries before taking what was read */

#define barrier() __asm__ volatile("" ::: "memory")
/* One plain 32-bit mov each way: the VMM decodes the trapped instruction. */
static inline uint32_t rd32(const struct virtio_dev *d, uint32_t off)
{
	uint32_t v;

	__asm__ volatile("movl %1, %0"
			 : "=r"(v)
			 : "m"(*(volatile uint32_t *)(uintptr_t)(d->base + off))
			 : "memory");
	return v;
}

static inline void wr32(const struct virtio_dev *d, uint32_t off, uint32_t v)
{
	__asm__ volatile("movl %1, %0"
			 : "=m"(*(volatile uint32_t *)(uintptr_t)(d->base + off))
			 : "r"(v)
			 : "memory");
}

#endif /* FW_VIRTIO_REGS_H */
