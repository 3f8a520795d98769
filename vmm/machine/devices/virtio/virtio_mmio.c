/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_mmio.c - the virtio-mmio register window (virtio 1.2, 4.2.2),
 * modern only: identification, feature negotiation, the device status
 * and its order, the selected queue's registers, notifications, the
 * interrupt status, the config space; and the command line announcement.
 * The contracts are in virtio_mmio.h, the migration blob in
 * virtio_mmio_state.c, the rules with their spec sections in
 * docs/architecture.md "virtio-mmio, the transport".
 */
#include "virtio_mmio.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The bits a driver writes to Status; DEVICE_NEEDS_RESET is the device's. */
#define DRIVER_BITS                                                                                \
	(VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK |            \
	 VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_FAILED)
#define INT_BITS (VIRTIO_MMIO_INT_VRING | VIRTIO_MMIO_INT_CONFIG)

int virtio_mmio_init(struct virtio_mmio *dev, const struct virtio_mmio_params *p)
{
	uint64_t features = p->features | 1ull << VIRTIO_F_VERSION_1;

	if (p->device_id == 0 || p->nqueues == 0 || p->nqueues > VIRTIO_MMIO_MAX_QUEUES ||
	    p->config_len > VIRTIO_MMIO_CONFIG_MAX || (p->config_len && !p->config))
		return -EINVAL;
	if (features & VIRTIO_MMIO_TRANSPORT_BITS & ~VIRTIO_MMIO_TRANSPORT_OK)
		return -EINVAL;
	memset(dev, 0, offsetof(struct virtio_mmio, queues));
	for (uint32_t i = 0; i < p->nqueues; i++)
		if (virtq_init(&dev->queues[i], p->queue_max[i]))
			return -EINVAL;
	dev->device_id = p->device_id;
	dev->vendor_id = p->vendor_id;
	dev->device_features = features;
	dev->nqueues = p->nqueues;
	dev->config_len = p->config_len;
	if (p->config_len)
		memcpy(dev->config, p->config, p->config_len);
	return 0;
}

/* Status = 0 (2.4, 4.2.2.1): status, features, selectors, interrupts, every queue. */
static void reset(struct virtio_mmio *dev)
{
	dev->status = 0;
	dev->device_features_sel = 0;
	dev->driver_features_sel = 0;
	dev->driver_features = 0;
	dev->queue_sel = 0;
	dev->int_status = 0;
	for (uint32_t i = 0; i < dev->nqueues; i++)
		virtq_reset(&dev->queues[i]);
	/* The config bytes are the device's and stay; so does the generation. */
}

static bool has(const struct virtio_mmio *dev, uint32_t bits)
{
	return (dev->status & bits) == bits;
}

/* The selected queue, or NULL when QueueSel names none. */
static struct virtq *sel_queue(struct virtio_mmio *dev)
{
	return virtio_mmio_queue(dev, dev->queue_sel);
}

/*
 * The selected queue if the driver may set it up now (3.1.1 step 7 and
 * 4.2.3.2: after FEATURES_OK, before DRIVER_OK, while QueueReady is 0), else NULL.
 */
static struct virtq *setup_queue(struct virtio_mmio *dev)
{
	struct virtq *q = sel_queue(dev);

	if (!q || q->ready || !has(dev, VIRTIO_STATUS_FEATURES_OK) ||
	    dev->status & (VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_FAILED))
		return NULL;
	return q;
}

static uint32_t features_word(uint64_t features, uint32_t sel)
{
	return sel < 2 ? (uint32_t)(features >> (32 * sel)) : 0;
}

static bool config_read(const struct virtio_mmio *dev, uint64_t off, uint32_t size, uint32_t *value)
{
	uint32_t v = 0;

	if ((size != 1 && size != 2 && size != 4) || off > dev->config_len ||
	    size > dev->config_len - off)
		return false;
	for (uint32_t i = 0; i < size; i++)
		v |= (uint32_t)dev->config[off + i] << (8 * i);
	*value = v;
	return true;
}

bool virtio_mmio_read(struct virtio_mmio *dev, uint64_t offset, uint32_t size, uint32_t *value)
{
	struct virtq *q = sel_queue(dev);
	uint32_t v;

	*value = 0;
	if (offset >= VIRTIO_MMIO_CONFIG)
		return config_read(dev, offset - VIRTIO_MMIO_CONFIG, size, value);
	if (size != 4 || offset & 3)
		return false;
	switch (offset) {
	case VIRTIO_MMIO_MAGIC_VALUE:
		v = VIRTIO_MMIO_MAGIC;
		break;
	case VIRTIO_MMIO_VERSION:
		v = VIRTIO_MMIO_VERSION_MODERN;
		break;
	case VIRTIO_MMIO_DEVICE_ID:
		v = dev->device_id;
		break;
	case VIRTIO_MMIO_VENDOR_ID:
		v = dev->vendor_id;
		break;
	case VIRTIO_MMIO_DEVICE_FEATURES:
		v = features_word(dev->device_features, dev->device_features_sel);
		break;
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
		v = dev->device_features_sel;
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES:
		v = features_word(dev->driver_features, dev->driver_features_sel);
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
		v = dev->driver_features_sel;
		break;
	case VIRTIO_MMIO_QUEUE_SEL:
		v = dev->queue_sel;
		break;
	case VIRTIO_MMIO_QUEUE_NUM_MAX: /* 0: no such queue (4.2.2) */
		v = q ? q->max_size : 0;
		break;
	case VIRTIO_MMIO_QUEUE_NUM:
		v = q ? q->size : 0;
		break;
	case VIRTIO_MMIO_QUEUE_READY:
		v = q ? q->ready : 0;
		break;
	case VIRTIO_MMIO_INTERRUPT_STATUS:
		v = dev->int_status;
		break;
	case VIRTIO_MMIO_STATUS:
		v = dev->status;
		break;
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
		v = q ? (uint32_t)(q->desc_gpa >> (offset & 4 ? 32 : 0)) : 0;
		break;
	case VIRTIO_MMIO_QUEUE_DRIVER_LOW:
	case VIRTIO_MMIO_QUEUE_DRIVER_HIGH:
		v = q ? (uint32_t)(q->avail_gpa >> (offset & 4 ? 32 : 0)) : 0;
		break;
	case VIRTIO_MMIO_QUEUE_DEVICE_LOW:
	case VIRTIO_MMIO_QUEUE_DEVICE_HIGH:
		v = q ? (uint32_t)(q->used_gpa >> (offset & 4 ? 32 : 0)) : 0;
		break;
	case VIRTIO_MMIO_SHM_LEN_LOW: /* no shared memory region: length -1 (4.2.2) */
	case VIRTIO_MMIO_SHM_LEN_HIGH:
	case VIRTIO_MMIO_SHM_BASE_LOW:
	case VIRTIO_MMIO_SHM_BASE_HIGH:
		v = 0xffffffffu;
		break;
	case VIRTIO_MMIO_CONFIG_GENERATION:
		v = dev->config_generation;
		break;
	default: /* QueueNotify, InterruptACK (write-only), reserved */
		return false;
	}
	*value = v;
	return true;
}

/*
 * FEATURES_OK is granted only for a subset of what the device offers that
 * includes VERSION_1 (2.2.2; 6.2: no legacy interface here).
 */
static bool features_ok(const struct virtio_mmio *dev)
{
	return !(dev->driver_features & ~dev->device_features) &&
	       dev->driver_features >> VIRTIO_F_VERSION_1 & 1;
}

/*
 * Status != 0 (2.1, 3.1.1). The driver never clears a bit (2.1.1): such a
 * write is ignored, as is every write after FAILED until a reset. Each new
 * bit needs the step before it: DRIVER needs ACKNOWLEDGE, FEATURES_OK needs
 * DRIVER and acceptable features, DRIVER_OK needs FEATURES_OK; a bit whose
 * step is missing is dropped and the driver reads the status back without
 * it (3.1.1 step 6). FAILED may come at any time.
 */
static struct virtio_mmio_action write_status(struct virtio_mmio *dev, uint32_t value)
{
	struct virtio_mmio_action a = {VIRTIO_MMIO_EV_NONE, 0};
	uint32_t old = dev->status & DRIVER_BITS, add;

	if (value == 0) {
		reset(dev);
		a.ev = VIRTIO_MMIO_EV_RESET;
		return a;
	}
	value &= DRIVER_BITS;
	if (old & VIRTIO_STATUS_FAILED || (value & old) != old) {
		a.ev = VIRTIO_MMIO_EV_IGNORED;
		return a;
	}
	add = value & ~old;
	if (add & VIRTIO_STATUS_ACKNOWLEDGE)
		dev->status |= VIRTIO_STATUS_ACKNOWLEDGE;
	if (add & VIRTIO_STATUS_DRIVER && has(dev, VIRTIO_STATUS_ACKNOWLEDGE))
		dev->status |= VIRTIO_STATUS_DRIVER;
	if (add & VIRTIO_STATUS_FEATURES_OK && has(dev, VIRTIO_STATUS_DRIVER) && features_ok(dev))
		dev->status |= VIRTIO_STATUS_FEATURES_OK;
	if (add & VIRTIO_STATUS_DRIVER_OK && has(dev, VIRTIO_STATUS_FEATURES_OK)) {
		dev->status |= VIRTIO_STATUS_DRIVER_OK;
		a.ev = VIRTIO_MMIO_EV_DRIVER_OK;
	}
	if (add & VIRTIO_STATUS_FAILED) {
		dev->status |= VIRTIO_STATUS_FAILED;
		a.ev = VIRTIO_MMIO_EV_NONE;
	}
	return a;
}

/*
 * QueueReady (4.2.3.2). 1: the ring uses the driver's features and the
 * layout is checked (virtq_set_ready()); a layout the queue cannot use (size
 * not a power of two up to QueueNumMax, a misaligned ring or one not in RAM)
 * leaves QueueReady 0 and sets DEVICE_NEEDS_RESET (2.1.2: the driver made
 * an error only a reset undoes). 0 on a ready queue (a driver giving up a
 * queue before DRIVER_OK): the queue is reset, its registers read 0 again.
 */
static bool write_queue_ready(struct virtio_mmio *dev, const struct guest_mem *mem, uint32_t value)
{
	struct virtq *q = sel_queue(dev);

	if (!q || !has(dev, VIRTIO_STATUS_FEATURES_OK) ||
	    dev->status & (VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_FAILED) || value > 1 ||
	    q->ready == value)
		return false;
	if (value == 0) {
		virtq_reset(q);
		return true;
	}
	virtq_set_features(q, dev->driver_features);
	if (virtq_set_ready(q, mem, NULL, 0)) {
		dev->status |= VIRTIO_STATUS_DEVICE_NEEDS_RESET;
		return false;
	}
	return true;
}

/* One half of a queue address register. */
static void set_half(uint64_t *gpa, uint64_t offset, uint32_t value)
{
	if (offset & 4)
		*gpa = (*gpa & 0xffffffffull) | (uint64_t)value << 32;
	else
		*gpa = (*gpa & ~0xffffffffull) | value;
}

/* Returns whether the write changed anything. */
static bool write_reg(struct virtio_mmio *dev, const struct guest_mem *mem, uint64_t offset,
		      uint32_t value)
{
	struct virtq *q;

	switch (offset) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
		dev->device_features_sel = value;
		return true;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
		dev->driver_features_sel = value;
		return true;
	case VIRTIO_MMIO_DRIVER_FEATURES: /* after DRIVER, before FEATURES_OK (3.1.1 4-5) */
		if (!has(dev, VIRTIO_STATUS_DRIVER) ||
		    dev->status & (VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_FAILED) ||
		    dev->driver_features_sel > 1)
			return false;
		set_half(&dev->driver_features, dev->driver_features_sel * 4ull, value);
		return true;
	case VIRTIO_MMIO_QUEUE_SEL:
		dev->queue_sel = value;
		return true;
	case VIRTIO_MMIO_QUEUE_NUM:
		if (!(q = setup_queue(dev)))
			return false;
		/* Too large for the queue: kept as 0, so QueueReady refuses it. */
		q->size = value <= q->max_size ? (uint16_t)value : 0;
		return true;
	case VIRTIO_MMIO_QUEUE_READY:
		return write_queue_ready(dev, mem, value);
	case VIRTIO_MMIO_INTERRUPT_ACK:
		dev->int_status &= ~value;
		return true;
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
		if (!(q = setup_queue(dev)))
			return false;
		set_half(&q->desc_gpa, offset, value);
		return true;
	case VIRTIO_MMIO_QUEUE_DRIVER_LOW:
	case VIRTIO_MMIO_QUEUE_DRIVER_HIGH:
		if (!(q = setup_queue(dev)))
			return false;
		set_half(&q->avail_gpa, offset, value);
		return true;
	case VIRTIO_MMIO_QUEUE_DEVICE_LOW:
	case VIRTIO_MMIO_QUEUE_DEVICE_HIGH:
		if (!(q = setup_queue(dev)))
			return false;
		set_half(&q->used_gpa, offset, value);
		return true;
	case VIRTIO_MMIO_SHM_SEL: /* no region to select */
	default:		  /* read-only, reserved */
		return false;
	}
}

struct virtio_mmio_action virtio_mmio_write(struct virtio_mmio *dev, const struct guest_mem *mem,
					    uint64_t offset, uint32_t size, uint32_t value)
{
	struct virtio_mmio_action a = {VIRTIO_MMIO_EV_IGNORED, 0};

	/* The config space is read-only; registers are 32-bit aligned accesses. */
	if (offset >= VIRTIO_MMIO_CONFIG || size != 4 || offset & 3)
		return a;
	if (offset == VIRTIO_MMIO_STATUS)
		return write_status(dev, value);
	if (offset == VIRTIO_MMIO_QUEUE_NOTIFY) {
		/*
		 * The value is the queue's index (4.2.3.3; NOTIFICATION_DATA is
		 * never offered). No buffer is consumed before DRIVER_OK (2.1.2)
		 * nor from a queue that is not ready (4.2.2.1).
		 */
		if (has(dev, VIRTIO_STATUS_DRIVER_OK) && !(dev->status & VIRTIO_STATUS_FAILED) &&
		    value < dev->nqueues && dev->queues[value].ready) {
			a.ev = VIRTIO_MMIO_EV_NOTIFY;
			a.queue = (uint16_t)value;
		}
		return a;
	}
	if (write_reg(dev, mem, offset, value))
		a.ev = VIRTIO_MMIO_EV_NONE;
	return a;
}

bool virtio_mmio_raise(struct virtio_mmio *dev, uint32_t bits)
{
	bits &= INT_BITS;
	if (!bits || !has(dev, VIRTIO_STATUS_DRIVER_OK) || dev->status & VIRTIO_STATUS_FAILED)
		return false;
	dev->int_status |= bits;
	return true;
}

bool virtio_mmio_set_needs_reset(struct virtio_mmio *dev)
{
	dev->status |= VIRTIO_STATUS_DEVICE_NEEDS_RESET;
	return virtio_mmio_raise(dev, VIRTIO_MMIO_INT_CONFIG);
}

int virtio_mmio_set_config(struct virtio_mmio *dev, uint32_t off, const void *src, uint32_t len)
{
	if (off > dev->config_len || len > dev->config_len - off)
		return -EINVAL;
	if (len)
		memcpy(dev->config + off, src, len);
	dev->config_generation++;
	return virtio_mmio_raise(dev, VIRTIO_MMIO_INT_CONFIG);
}

int virtio_mmio_cmdline(char *buf, size_t len, uint64_t size, uint64_t base, uint32_t irq)
{
	static const char suffix[] = "GMK";
	char s[2] = "";
	uint64_t n = size;
	int ret;

	if (size == 0 || irq == 0 || base + (size - 1) < base)
		return -EINVAL;
	for (unsigned i = 0; i < 3; i++) {
		unsigned shift = 30 - 10 * i;

		if (!(size & ((1ull << shift) - 1))) {
			n = size >> shift;
			s[0] = suffix[i];
			break;
		}
	}
	ret = snprintf(buf, len, "virtio_mmio.device=%" PRIu64 "%s@0x%" PRIx64 ":%" PRIu32, n, s,
		       base, irq);
	if (ret < 0)
		return -EINVAL;
	if ((size_t)ret >= len)
		return -ENOSPC;
	return ret;
}
