/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_boot.c - vm_boot_setup() (vm.h): what a booting VM's RAM and vCPUs
 * get before the first instruction: the image, the guest's command line
 * with its devices' announcements, the boot layout, the device tree, the
 * working set's fill, the platform tables and the vCPUs' registers. An
 * incoming migration or a restore skips all of it: the state arrives.
 */
#include "vm_struct.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fdt_build.h"
#include "workload_fill.h"
#include "x86_boot.h"

/*
 * The guest's command line: the config's, and the devices as QEMU's microvm
 * announces them: `virtio_mmio.device=` words for a guest that reads no
 * ACPI (the vmm firmware, which also has its device tree; a PVH kernel
 * told acpi=off, which then takes the MP table's legacy IRQs as they are).
 * A PVH kernel with ACPI finds them in the DSDT instead (acpi_build.h): it
 * has no legacy PIC and could not map the IRQ a command line names.
 */
static int boot_cmdline(struct vm *vm, char *err, size_t errlen)
{
	const char *c = vm->cfg.cmdline;
	bool acpi = vm->image.proto == BOOT_PVH;
	int ret;

	for (const char *p = strstr(c, "acpi=off"); p; p = strstr(p + 1, "acpi=off"))
		if ((p == c || p[-1] == ' ') && (p[8] == '\0' || p[8] == ' '))
			acpi = false;
	snprintf(vm->boot_cmdline, sizeof(vm->boot_cmdline), "%s", c);
	ret = acpi ? 0 : devices_cmdline(&vm->devices, vm->boot_cmdline, sizeof(vm->boot_cmdline));
	if (ret)
		snprintf(err, errlen, "[firmware] cmdline: no room for the devices' announcements");
	return ret;
}

int vm_boot_setup(struct vm *vm, char *err, size_t errlen)
{
	struct fdt_params fp = {.cfg = &vm->cfg,
				.mem = &vm->mem,
				.tsc_khz = vm->tsc_khz,
				.cmdline = vm->boot_cmdline,
				.devices = &vm->devices};
	size_t fdt_size;
	void *fdt;
	int ret;

	ret = elf_load_file(vm->cfg.firmware_path, &vm->mem, &vm->image, err, errlen);
	if (ret)
		return ret;
	ret = boot_cmdline(vm, err, errlen);
	if (ret)
		return ret;
	fdt_size = fdt_build_size(&fp);
	ret = x86_boot_layout(vm, fdt_size, err, errlen);
	if (ret)
		return ret;
	fp.free_start = vm->layout.free_start;
	fdt = guest_mem_write_ptr(&vm->mem, vm->layout.fdt, fdt_size);
	ret = fdt ? fdt_build(&fp, fdt, fdt_size) : -EFAULT;
	if (ret) {
		snprintf(err, errlen, "building the device tree: %s", strerror(-ret));
		return ret;
	}
	if (config_has_working_set(&vm->cfg) && vm->cfg.fill == WORKLOAD_FILL_RANDOM) {
		/* x86_boot_layout() checked that the working set is contiguous RAM. */
		void *ws =
		    guest_mem_write_ptr(&vm->mem, vm->layout.free_start, vm->cfg.working_set);

		if (!ws) {
			snprintf(err, errlen, "[workload] fill: working set is not guest RAM");
			return -EFAULT;
		}
		workload_fill_random(ws, vm->layout.free_start, vm->cfg.working_set);
	}
	ret = x86_boot_write_tables(vm);
	if (!ret && vm->image.proto == BOOT_PVH)
		ret = x86_boot_write_pvh(vm);
	if (ret) {
		snprintf(err, errlen, "writing boot tables: %s", strerror(-ret));
		return ret;
	}
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		ret = x86_boot_setup_vcpu(vm, &vm->vcpus[i]);
		if (ret) {
			snprintf(err, errlen, "setting up vCPU %u registers: %s", i,
				 strerror(-ret));
			return ret;
		}
	}
	return 0;
}
