/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_mmio_state.c - the virtio-mmio transport's migration blob (layout
 * in virtio_mmio.h and docs/state-format.md "VIRTIO_MMIO"): encode, and a
 * load that checks every field and every queue's blob against the target's
 * device before it changes anything, so a refused blob leaves the device
 * as it was.
 */
#include "state_buf.h"
#include "virtio_mmio.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "le.h"

#define DRIVER_BITS                                                                                \
	(VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK |            \
	 VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_FAILED)
#define STATUS_BITS (DRIVER_BITS | VIRTIO_STATUS_DEVICE_NEEDS_RESET)
#define INT_BITS    (VIRTIO_MMIO_INT_VRING | VIRTIO_MMIO_INT_CONFIG)

size_t virtio_mmio_save(const struct virtio_mmio *dev, uint8_t *buf)
{
	memset(buf, 0, VIRTIO_MMIO_STATE_FIXED);
	le_put16(buf, VIRTIO_MMIO_STATE_VERSION);
	buf[2] = (uint8_t)dev->device_id;
	buf[3] = (uint8_t)dev->nqueues;
	buf[4] = (uint8_t)dev->status;
	buf[5] = (uint8_t)dev->int_status;
	le_put32(buf + 8, dev->device_features_sel);
	le_put32(buf + 12, dev->driver_features_sel);
	le_put64(buf + 16, dev->driver_features);
	le_put32(buf + 24, dev->queue_sel);
	le_put32(buf + 28, dev->config_generation);
	for (uint32_t i = 0; i < dev->nqueues; i++)
		virtq_save(&dev->queues[i],
			   buf + VIRTIO_MMIO_STATE_FIXED + (size_t)i * VIRTQ_STATE_SIZE);
	return virtio_mmio_state_size(dev);
}

/* A refusal of this blob: one line, prefixed with what it is (state_fail). */
#define bad(err, errlen, ...) state_fail(-EINVAL, err, errlen, "virtio-mmio state: " __VA_ARGS__)

/* The status bits in an order a driver could have set them (2.1, 3.1.1). */
static const char *status_wrong(uint32_t s)
{
	if (s & ~STATUS_BITS)
		return "has unknown bits set";
	if (s & VIRTIO_STATUS_DRIVER && !(s & VIRTIO_STATUS_ACKNOWLEDGE))
		return "has DRIVER without ACKNOWLEDGE";
	if (s & VIRTIO_STATUS_FEATURES_OK && !(s & VIRTIO_STATUS_DRIVER))
		return "has FEATURES_OK without DRIVER";
	if (s & VIRTIO_STATUS_DRIVER_OK && !(s & VIRTIO_STATUS_FEATURES_OK))
		return "has DRIVER_OK without FEATURES_OK";
	return NULL;
}

/* Queue i's blob against the device's saved state: checked on a scratch queue. */
static int check_queue(const struct virtio_mmio *dev, const struct guest_mem *mem, uint32_t i,
		       const uint8_t *blob, uint32_t status, uint64_t features, char *err,
		       size_t errlen)
{
	struct virtq t;
	char why[200];

	if (virtq_init(&t, dev->queues[i].max_size))
		return bad(err, errlen, "queue %u: bad QueueNumMax", i);
	if (virtq_load(&t, mem, blob, VIRTQ_STATE_SIZE, why, sizeof(why)))
		return bad(err, errlen, "queue %u: %s", i, why);
	if (!t.ready)
		return 0;
	if (!(status & VIRTIO_STATUS_FEATURES_OK))
		return bad(err, errlen, "queue %u is ready before FEATURES_OK", i);
	if (t.features != features)
		return bad(err, errlen, "queue %u has features 0x%llx, the driver accepted 0x%llx",
			   i, (unsigned long long)t.features, (unsigned long long)features);
	if (!(status & VIRTIO_STATUS_DRIVER_OK) &&
	    (t.last_avail_idx || t.next_used_idx || t.broken))
		return bad(err, errlen, "queue %u was used before DRIVER_OK", i);
	return 0;
}

int virtio_mmio_check(const struct virtio_mmio *dev, const struct guest_mem *mem,
		      const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	uint32_t status, int_status;
	uint64_t features;
	const char *why;
	int ret;

	if (len < VIRTIO_MMIO_STATE_FIXED)
		return bad(err, errlen, "%zu bytes, at least %u expected", len,
			   VIRTIO_MMIO_STATE_FIXED);
	if (le_get16(buf) != VIRTIO_MMIO_STATE_VERSION)
		return bad(err, errlen, "version %u, this vmm reads version %u", le_get16(buf),
			   VIRTIO_MMIO_STATE_VERSION);
	if (buf[2] != dev->device_id)
		return bad(err, errlen, "device id %u, this device is %u", buf[2], dev->device_id);
	if (buf[3] != dev->nqueues)
		return bad(err, errlen, "%u queues, this device has %u", buf[3], dev->nqueues);
	if (len != virtio_mmio_state_size(dev))
		return bad(err, errlen, "%zu bytes, %zu expected", len,
			   virtio_mmio_state_size(dev));
	if (le_get16(buf + 6))
		return bad(err, errlen, "reserved bytes are not zero");
	status = buf[4];
	int_status = buf[5];
	features = le_get64(buf + 16);
	if ((why = status_wrong(status)))
		return bad(err, errlen, "status 0x%02x %s", status, why);
	if (int_status & ~INT_BITS)
		return bad(err, errlen, "interrupt status 0x%02x has unknown bits set", int_status);
	if (int_status && !(status & VIRTIO_STATUS_DRIVER_OK))
		return bad(err, errlen, "interrupt status 0x%02x before DRIVER_OK", int_status);
	if (features && !(status & VIRTIO_STATUS_DRIVER))
		return bad(err, errlen, "driver features before DRIVER");
	/* Before FEATURES_OK the driver's features are any bits it wrote; then they hold. */
	if (status & VIRTIO_STATUS_FEATURES_OK && features & ~dev->device_features)
		return bad(err, errlen, "driver features 0x%llx, this device offers 0x%llx",
			   (unsigned long long)features, (unsigned long long)dev->device_features);
	if (status & VIRTIO_STATUS_FEATURES_OK && !(features >> VIRTIO_F_VERSION_1 & 1))
		return bad(err, errlen, "FEATURES_OK without VERSION_1");
	for (uint32_t i = 0; i < dev->nqueues; i++) {
		ret = check_queue(dev, mem, i,
				  buf + VIRTIO_MMIO_STATE_FIXED + (size_t)i * VIRTQ_STATE_SIZE,
				  status, features, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

int virtio_mmio_load(struct virtio_mmio *dev, const struct guest_mem *mem, const uint8_t *buf,
		     size_t len, char *err, size_t errlen)
{
	int ret = virtio_mmio_check(dev, mem, buf, len, err, errlen);

	if (ret)
		return ret;
	/* All checked: apply. virtq_load() gives the same answer it gave the scratch queue. */
	for (uint32_t i = 0; i < dev->nqueues; i++)
		if (virtq_load(&dev->queues[i], mem,
			       buf + VIRTIO_MMIO_STATE_FIXED + (size_t)i * VIRTQ_STATE_SIZE,
			       VIRTQ_STATE_SIZE, NULL, 0))
			return bad(err, errlen, "queue %u changed under the load", i);
	dev->status = buf[4];
	dev->int_status = buf[5];
	dev->device_features_sel = le_get32(buf + 8);
	dev->driver_features_sel = le_get32(buf + 12);
	dev->driver_features = le_get64(buf + 16);
	dev->queue_sel = le_get32(buf + 24);
	dev->config_generation = le_get32(buf + 28);
	return 0;
}
