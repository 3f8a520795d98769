/* SPDX-License-Identifier: Apache-2.0 */
/*
 * devices.c - the VM's virtio-mmio devices as a set: creation from the
 * config in a fixed order (devices.h says why), the vCPUs' MMIO routing,
 * the kernel command line fragments that announce them (their device tree
 * nodes are fdt_build.c's), and pausing their I/O threads with the vCPUs.
 */
#include "devices.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef int (*create_fn)(struct virtio_dev **, const struct vm_config *, struct guest_mem *, int,
			 unsigned, uint64_t, uint32_t, char *, size_t);

int devices_create(struct vm_devices *ds, struct vm_config *cfg, struct guest_mem *mem, int vm_fd,
		   char *err, size_t errlen)
{
	create_fn want[DEVICES_MAX];
	unsigned n = 0;

	memset(ds, 0, sizeof(*ds));
	if (cfg->disk_path[0])
		want[n++] = virtio_blk_create;
	if (cfg->net_tap[0]) {
		if (!cfg->net_mac[0])
			virtio_net_default_mac(cfg->name, cfg->net_mac, sizeof(cfg->net_mac));
		want[n++] = virtio_net_create;
	}
	for (unsigned i = 0; i < n; i++) {
		int ret = want[i](&ds->dev[i], cfg, mem, vm_fd, i,
				  DEVICES_MMIO_BASE + (uint64_t)i * VIRTIO_MMIO_WINDOW,
				  DEVICES_IRQ_BASE + i, err, errlen);

		if (ret) {
			devices_destroy(ds);
			return ret;
		}
		ds->n = i + 1;
	}
	return 0;
}

void devices_destroy(struct vm_devices *ds)
{
	for (unsigned i = 0; i < ds->n; i++) {
		virtio_dev_destroy(ds->dev[i]);
		ds->dev[i] = NULL;
	}
	ds->n = 0;
}

int devices_start(struct vm_devices *ds, bool parked, char *err, size_t errlen)
{
	for (unsigned i = 0; i < ds->n; i++) {
		int ret = virtio_dev_start(ds->dev[i], parked, err, errlen);

		if (ret)
			return ret;
	}
	return 0;
}

void devices_park(struct vm_devices *ds)
{
	for (unsigned i = 0; i < ds->n; i++)
		virtio_dev_park(ds->dev[i]);
}

void devices_unpark(struct vm_devices *ds)
{
	for (unsigned i = 0; i < ds->n; i++)
		virtio_dev_unpark(ds->dev[i]);
}

bool devices_mmio(struct vm_devices *ds, uint64_t gpa, bool is_write, uint8_t *data, uint32_t len)
{
	uint64_t i;

	if (gpa < DEVICES_MMIO_BASE)
		return false;
	i = (gpa - DEVICES_MMIO_BASE) / VIRTIO_MMIO_WINDOW;
	if (i >= ds->n)
		return false;
	virtio_dev_mmio(ds->dev[i], gpa - ds->dev[i]->base, is_write, data, len);
	return true;
}

int devices_cmdline(const struct vm_devices *ds, char *buf, size_t len)
{
	size_t used = strlen(buf);

	for (unsigned i = 0; i < ds->n; i++) {
		const struct virtio_dev *d = ds->dev[i];
		int n;

		if (used + 1 >= len)
			return -ENOSPC;
		if (used)
			buf[used++] = ' ';
		n = virtio_mmio_cmdline(buf + used, len - used, VIRTIO_MMIO_WINDOW, d->base,
					d->irq);
		if (n < 0)
			return n;
		used += (size_t)n;
	}
	buf[used] = '\0';
	return 0;
}
