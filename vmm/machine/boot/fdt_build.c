/* SPDX-License-Identifier: Apache-2.0 */
#include "fdt_build.h"

#include <errno.h>
#include <libfdt.h>
#include <stdio.h>
#include <string.h>

#include "vmm_abi.h"

size_t fdt_build_size(const struct fdt_params *p)
{
	return 4096 + strlen(p->cmdline ? p->cmdline : p->cfg->cmdline) +
	       (size_t)p->mem->nslots * 96 + (size_t)p->cfg->vcpus * 64 + DEVICES_MAX * 128;
}

/* Emits one property, stopping the build at the first libfdt error. */
#define TRY(call)                                                                                  \
	do {                                                                                       \
		int r_ = (call);                                                                   \
		if (r_ < 0)                                                                        \
			return r_ == -FDT_ERR_NOSPACE ? -ENOSPC : -EINVAL;                         \
	} while (0)

/*
 * One node per contiguous RAM range (below and above the hole), not per
 * memslot: slots are KVM's business. A node per slot made the guest
 * firmware's boot grow by ~1 ms per slot (it is emulated here) and guests
 * of more than its 1024 remembered regions failed to boot (bench_slots).
 */
static int add_memory(void *fdt, const struct guest_mem *mem)
{
	for (uint32_t i = 0; i < mem->nslots;) {
		uint64_t gpa = mem->slots[i].gpa, size = 0;
		char name[40];

		for (; i < mem->nslots && mem->slots[i].gpa == gpa + size; i++)
			size += mem->slots[i].size;

		uint64_t reg[2] = {cpu_to_fdt64(gpa), cpu_to_fdt64(size)};

		snprintf(name, sizeof(name), "memory@%llx", (unsigned long long)gpa);
		TRY(fdt_begin_node(fdt, name));
		TRY(fdt_property_string(fdt, "device_type", "memory"));
		TRY(fdt_property(fdt, "reg", reg, sizeof(reg)));
		TRY(fdt_end_node(fdt));
	}
	return 0;
}

static int add_cpus(void *fdt, unsigned vcpus, uint32_t tsc_khz)
{
	TRY(fdt_begin_node(fdt, "cpus"));
	TRY(fdt_property_u32(fdt, "#address-cells", 1));
	TRY(fdt_property_u32(fdt, "#size-cells", 0));
	TRY(fdt_property_u32(fdt, "vmm,tsc-khz", tsc_khz));
	for (unsigned i = 0; i < vcpus; i++) {
		char name[24];

		snprintf(name, sizeof(name), "cpu@%u", i);
		TRY(fdt_begin_node(fdt, name));
		TRY(fdt_property_string(fdt, "device_type", "cpu"));
		TRY(fdt_property_u32(fdt, "reg", i));
		TRY(fdt_end_node(fdt));
	}
	TRY(fdt_end_node(fdt));
	return 0;
}

static int add_serial(void *fdt)
{
	/* An I/O port, not MMIO: reg is <port size> in the isa sense. */
	uint64_t reg[2] = {cpu_to_fdt64(VMM_COM1_PORT), cpu_to_fdt64(8)};

	TRY(fdt_begin_node(fdt, "serial@3f8"));
	TRY(fdt_property_string(fdt, "compatible", "ns16550a"));
	TRY(fdt_property(fdt, "reg", reg, sizeof(reg)));
	TRY(fdt_property_u32(fdt, "clock-frequency", 1843200));
	TRY(fdt_end_node(fdt));
	return 0;
}

/* One virtio_mmio@ node per device: its window and its IRQ (vmm_abi.h). */
static int add_virtio(void *fdt, const struct vm_devices *ds)
{
	for (unsigned i = 0; i < ds->n; i++) {
		const struct virtio_dev *d = ds->dev[i];
		uint64_t reg[2] = {cpu_to_fdt64(d->base), cpu_to_fdt64(VIRTIO_MMIO_WINDOW)};
		char name[40];

		snprintf(name, sizeof(name), "virtio_mmio@%llx", (unsigned long long)d->base);
		TRY(fdt_begin_node(fdt, name));
		TRY(fdt_property_string(fdt, "compatible", "virtio,mmio"));
		TRY(fdt_property(fdt, "reg", reg, sizeof(reg)));
		TRY(fdt_property_u32(fdt, "interrupts", d->irq));
		TRY(fdt_end_node(fdt));
	}
	return 0;
}

static int add_chosen(void *fdt, const struct fdt_params *p)
{
	const struct vm_config *c = p->cfg;

	TRY(fdt_begin_node(fdt, "chosen"));
	TRY(fdt_property_string(fdt, "stdout-path", "/serial@3f8"));
	TRY(fdt_property_string(fdt, "bootargs", p->cmdline ? p->cmdline : c->cmdline));
	TRY(fdt_property_u32(fdt, "vmm,abi-version", VMM_ABI_VERSION));
	TRY(fdt_property_string(fdt, "vmm,workload", workload_kind_name(c->workload)));
	TRY(fdt_property_u64(fdt, "vmm,working-set", c->working_set));
	TRY(fdt_property_u64(fdt, "vmm,dirty-rate", c->dirty_rate));
	TRY(fdt_property_u64(fdt, "vmm,passes", c->passes));
	TRY(fdt_property_u64(fdt, "vmm,heartbeat-ms", c->heartbeat_ms));
	TRY(fdt_property_u64(fdt, "vmm,min-pass-ms", c->min_pass_ms));
	TRY(fdt_property_u64(fdt, "vmm,catch-up-ms", c->catch_up_ms));
	TRY(fdt_property_u64(fdt, "vmm,work-ms", c->work_ms));
	TRY(fdt_property_u64(fdt, "vmm,free-start", p->free_start));
	TRY(fdt_property_string(fdt, "vmm,fill", workload_fill_name(c->fill)));
	TRY(fdt_property_string(fdt, "vmm,order", workload_order_name(c->order)));
	TRY(fdt_property_u32(fdt, "vmm,latency", c->latency ? 1u : 0u));
	TRY(fdt_end_node(fdt));
	return 0;
}

int fdt_build(const struct fdt_params *p, void *buf, size_t size)
{
	int ret;

	TRY(fdt_create(buf, (int)size));
	TRY(fdt_finish_reservemap(buf));
	TRY(fdt_begin_node(buf, ""));
	TRY(fdt_property_u32(buf, "#address-cells", 2));
	TRY(fdt_property_u32(buf, "#size-cells", 2));
	TRY(fdt_property_string(buf, "compatible", "vmm,virt"));
	TRY(fdt_property_string(buf, "model", p->cfg->name));
	ret = add_memory(buf, p->mem);
	if (!ret)
		ret = add_cpus(buf, p->cfg->vcpus, p->tsc_khz);
	if (!ret)
		ret = add_serial(buf);
	if (!ret && p->devices)
		ret = add_virtio(buf, p->devices);
	if (!ret)
		ret = add_chosen(buf, p);
	if (ret)
		return ret;
	TRY(fdt_end_node(buf));
	TRY(fdt_finish(buf));
	return 0;
}
