/* SPDX-License-Identifier: Apache-2.0 */
/*
 * devices.h - the VM's virtio-mmio devices ([disk], [net]): where each one
 * sits (its MMIO window and IRQ), how the guest learns of it (the kernel
 * command line here; the device tree nodes and DSDT entries are
 * fdt_build.c's and acpi_build.c's), the vCPUs' accesses routed to it, and
 * the pause/resume of their I/O threads. docs/devices.md describes them.
 *
 * Placement is fixed by the order of the config's devices, so a source and
 * its target, or a snapshot and its restore, agree without saying it: the
 * disk first, then the network device; device i has the window
 * DEVICES_MMIO_BASE + i * VIRTIO_MMIO_WINDOW and IRQ DEVICES_IRQ_BASE + i.
 * The windows lie in the hole below 4 GiB (guest_mem.h), below the IOAPIC;
 * the IRQs are ISA IRQs 5 and up, edge-triggered as the MP table's and
 * ACPI's defaults make them (virtio-mmio's interrupt is signalled by an
 * irqfd edge; the driver reads InterruptStatus), as Firecracker does.
 *
 * Threads: create/destroy/start and the fragments on the main thread;
 * devices_mmio() on vCPU threads; park/unpark from vm_pause()/vm_resume().
 */
#ifndef VMM_DEVICES_H
#define VMM_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "guest_mem.h"
#include "virtio_dev.h"

#define DEVICES_MAX	  2u
#define DEVICES_MMIO_BASE 0xd0000000ull
#define DEVICES_IRQ_BASE  5u

struct vm_devices {
	struct virtio_dev *dev[DEVICES_MAX];
	unsigned n;
};

/*
 * Opens the backends the config names and creates the devices (not their
 * threads). cfg->net_mac, when empty, is set to the derived address, so
 * that what travels names it. -errno with one line naming the key.
 */
int devices_create(struct vm_devices *ds, struct vm_config *cfg, struct guest_mem *mem, int vm_fd,
		   char *err, size_t errlen);
void devices_destroy(struct vm_devices *ds);
int devices_start(struct vm_devices *ds, bool parked, char *err, size_t errlen);
void devices_park(struct vm_devices *ds);
void devices_unpark(struct vm_devices *ds);

/* A vCPU's MMIO access; false when gpa is in no device's window. */
bool devices_mmio(struct vm_devices *ds, uint64_t gpa, bool is_write, uint8_t *data, uint32_t len);

/*
 * " virtio_mmio.device=4K@0xd0000000:5 ..." for every device, appended to
 * buf (NUL-terminated, len bytes in all): -ENOSPC when it does not fit.
 */
int devices_cmdline(const struct vm_devices *ds, char *buf, size_t len);

/* The device types (virtio_blk.c, virtio_net.c): allocate, open, init. */
int virtio_blk_create(struct virtio_dev **out, const struct vm_config *cfg, struct guest_mem *mem,
		      int vm_fd, unsigned index, uint64_t base, uint32_t irq, char *err,
		      size_t errlen);
int virtio_net_create(struct virtio_dev **out, const struct vm_config *cfg, struct guest_mem *mem,
		      int vm_fd, unsigned index, uint64_t base, uint32_t irq, char *err,
		      size_t errlen);

/*
 * The same on an fd the caller opened (taken on success; on failure
 * the caller still owns it): anything that moves one frame per
 * read and write, a tap or, in tests, a SOCK_SEQPACKET socket;
 * it is made non-blocking.
 */
int virtio_net_create_on(struct virtio_dev **out, const struct vm_config *cfg,
			 struct guest_mem *mem, int vm_fd, unsigned index, uint64_t base,
			 uint32_t irq, int fd, char *err, size_t errlen);

/* "52:54:00:xx:xx:xx" from the VM's name (a locally administered OUI QEMU also uses). */
void virtio_net_default_mac(const char *name, char *out, size_t outlen);

#endif /* VMM_DEVICES_H */
