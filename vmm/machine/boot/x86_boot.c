/* SPDX-License-Identifier: Apache-2.0 */
#include "x86_boot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acpi_build.h"
#include "mptable.h"
#include "vmm_abi.h"

#define LOW_GDT	       0x1000ull
#define LOW_START_INFO 0x2000ull
#define LOW_MEMMAP     0x3000ull
#define LOW_CMDLINE    0x4000ull
#define LOW_MODLIST    0x5000ull
#define LOW_PML4       0x9000ull
#define LOW_PDPT       0xa000ull
#define LOW_PDPT_END   0x80000ull /* 118 PDPTs: up to 59 TiB of address space */

#define PTE_P  0x1ull
#define PTE_RW 0x2ull
#define PTE_PS 0x80ull

#define CR0_PE	 0x1ull
#define CR0_MP	 0x2ull
#define CR0_ET	 0x10ull
#define CR0_NE	 0x20ull
#define CR0_WP	 0x10000ull
#define CR0_AM	 0x40000ull
#define CR0_PG	 0x80000000ull
#define CR4_PAE	 0x20ull
#define EFER_LME 0x100ull
#define EFER_LMA 0x400ull

#define SEL_CODE 0x08
#define SEL_DATA 0x10
#define SEL_TSS	 0x18

#define PVH_START_MAGIC 0x336ec578u

/* The legacy hole a PC has between base memory and 1 MiB, reserved for PVH guests. */
#define LEGACY_START	0x9fc00ull /* the last KiB of base memory: the MP table */
#define LEGACY_ACPI	0xe0000ull /* ACPI tables, RSDP first: the legacy RSDP scan finds it */
#define LEGACY_END	0x100000ull
#define LEGACY_ACPI_MAX 0x10000ull

/* hvm_memmap_entry types (the E820 ones) */
#define E820_RAM      1u
#define E820_RESERVED 2u
#define E820_ACPI     3u

/* Initrd placement: high in low RAM, as other VMMs do, never above 3 GiB. */
#define INITRD_LIMIT GUEST_MEM_HOLE_START

struct hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr;
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct hvm_modlist_entry {
	uint64_t paddr;
	uint64_t size;
	uint64_t cmdline_paddr;
	uint64_t reserved;
};

struct hvm_memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
	uint32_t reserved;
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static uint64_t npd_pages(const struct vm *vm)
{
	return align_up(vm->mem.top, 1ull << 30) >> 30;
}

/* Reads the whole file into guest RAM at gpa (the range is RAM: checked by the caller). */
static int read_into(struct vm *vm, int fd, uint64_t gpa, uint64_t size)
{
	uint8_t *p = guest_mem_write_ptr(&vm->mem, gpa, size);
	uint64_t done = 0;

	if (!p)
		return -EFAULT;
	while (done < size) {
		ssize_t n = read(fd, p + done, size - done > (1u << 30) ? (1u << 30) : size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA; /* the file shrank under us */
		done += (uint64_t)n;
	}
	return 0;
}

/*
 * The initrd (a PVH module): page aligned, as high as it fits below
 * min(RAM, 3 GiB), and above everything the layout put after the kernel.
 */
static int load_initrd(struct vm *vm, uint64_t floor, char *err, size_t errlen)
{
	struct boot_layout *l = &vm->layout;
	const char *path = vm->cfg.initrd_path;
	uint64_t top = vm->mem.size < INITRD_LIMIT ? vm->mem.size : INITRD_LIMIT;
	struct stat st;
	int fd, ret;

	/*
	 * Bounded by what fits in guest RAM below 3 GiB (checked below) and read
	 * for exactly the size fstat() saw, so a file that grows adds nothing.
	 * O_NONBLOCK: a FIFO put in its place after validation must not hang
	 * the boot; it is refused as not a regular file.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	ret = fd < 0 || fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
	if (ret) {
		snprintf(err, errlen, "[firmware] initrd: cannot read '%s': %s", path,
			 ret == -EINVAL ? "not a regular file" : strerror(-ret));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	if (st.st_size == 0) {
		snprintf(err, errlen, "[firmware] initrd: '%s' is empty", path);
		close(fd);
		return -EINVAL;
	}
	top &= ~(GUEST_PAGE_SIZE - 1);
	if ((uint64_t)st.st_size > top || top - (uint64_t)st.st_size < floor) {
		snprintf(
		    err, errlen,
		    "[firmware] initrd: '%s' (%llu bytes) does not fit in guest RAM: %llu bytes "
		    "free between the kernel's end (0x%llx) and 0x%llx (the lower of [vm] "
		    "memory and 3 GiB)",
		    path, (unsigned long long)st.st_size,
		    (unsigned long long)(top > floor ? top - floor : 0), (unsigned long long)floor,
		    (unsigned long long)top);
		close(fd);
		return -E2BIG;
	}
	l->initrd_size = (uint64_t)st.st_size;
	l->initrd = (top - l->initrd_size) & ~(GUEST_PAGE_SIZE - 1);
	l->modlist = LOW_MODLIST;
	ret = read_into(vm, fd, l->initrd, l->initrd_size);
	close(fd);
	if (ret) {
		snprintf(err, errlen, "[firmware] initrd: reading '%s': %s", path,
			 ret == -ENODATA ? "the file got shorter while it was read"
					 : strerror(-ret));
		return ret;
	}
	return 0;
}

/* A PVH image: the tables in the legacy hole, and the initrd if there is one. */
static int pvh_layout(struct vm *vm, char *err, size_t errlen)
{
	struct boot_layout *l = &vm->layout;

	if (vm->nvcpus > 255) {
		snprintf(err, errlen,
			 "[vm] vcpus: a PVH guest's ACPI and MP tables hold at most "
			 "255 vCPUs");
		return -EINVAL;
	}
	l->mptable = LEGACY_START;
	l->rsdp = LEGACY_ACPI;
	l->acpi_size = acpi_build_size(vm->nvcpus);
	/* 255 vCPUs need 5.2 KiB of MP table (room: 257 KiB) and 2.6 KiB of ACPI (64 KiB). */
	if (l->mptable + mptable_size(vm->nvcpus) > LEGACY_ACPI || l->acpi_size > LEGACY_ACPI_MAX) {
		snprintf(err, errlen, "the ACPI or MP tables do not fit below 1 MiB");
		return -E2BIG;
	}
	if (vm->mem.size < LEGACY_END) {
		snprintf(err, errlen, "[vm] memory: a PVH guest needs more than 1 MiB");
		return -EINVAL;
	}
	if (vm->cfg.initrd_path[0])
		return load_initrd(vm, l->free_start, err, errlen);
	return 0;
}

int x86_boot_layout(struct vm *vm, uint64_t fdt_size, char *err, size_t errlen)
{
	struct boot_layout *l = &vm->layout;
	uint64_t npdpt = align_up(vm->mem.top, 1ull << 39) >> 39;
	uint64_t next;

	memset(l, 0, sizeof(*l));
	if (LOW_PDPT + npdpt * GUEST_PAGE_SIZE > LOW_PDPT_END) {
		snprintf(err, errlen, "guest RAM too large to identity map");
		return -E2BIG;
	}
	l->gdt = LOW_GDT;
	l->start_info = LOW_START_INFO;
	l->memmap = LOW_MEMMAP;
	l->cmdline = LOW_CMDLINE;
	l->pml4 = LOW_PML4;
	next = align_up(vm->image.load_end, GUEST_PAGE_SIZE);
	if (vm->image.load_lowest < LOW_PDPT_END) {
		snprintf(err, errlen,
			 "image loads at 0x%llx, below 0x%llx where vmm keeps its boot tables",
			 (unsigned long long)vm->image.load_lowest,
			 (unsigned long long)LOW_PDPT_END);
		return -EINVAL;
	}
	next += npd_pages(vm) * GUEST_PAGE_SIZE; /* page directories */
	l->fdt = next;
	l->fdt_size = align_up(fdt_size, GUEST_PAGE_SIZE);
	next += l->fdt_size;
	l->stacks = next;
	next += (uint64_t)vm->nvcpus * VMM_VCPU_STACK_SIZE;
	l->free_start = align_up(next, 2ull << 20);
	if (!guest_mem_ptr(&vm->mem, align_up(vm->image.load_end, GUEST_PAGE_SIZE),
			   l->free_start - align_up(vm->image.load_end, GUEST_PAGE_SIZE))) {
		snprintf(err, errlen,
			 "[vm] memory: %llu bytes is too small for the firmware, page tables, "
			 "device tree and %u vCPU stacks",
			 (unsigned long long)vm->mem.size, vm->nvcpus);
		return -ENOMEM;
	}
	if (vm->image.proto == BOOT_PVH) {
		int ret = pvh_layout(vm, err, errlen);

		if (ret)
			return ret;
	} else if (vm->cfg.initrd_path[0]) {
		snprintf(err, errlen,
			 "[firmware] initrd: '%s' needs a PVH image (a Linux vmlinux), but '%s' is "
			 "the native vmm firmware, which takes no initrd",
			 vm->cfg.initrd_path, vm->cfg.firmware_path);
		return -EINVAL;
	}
	if (config_has_working_set(&vm->cfg) &&
	    !guest_mem_ptr(&vm->mem, l->free_start, vm->cfg.working_set)) {
		snprintf(err, errlen,
			 "[workload] working_set: %llu bytes from 0x%llx do not fit in contiguous "
			 "guest RAM (memory %llu, hole at 3 GiB)",
			 (unsigned long long)vm->cfg.working_set, (unsigned long long)l->free_start,
			 (unsigned long long)vm->mem.size);
		return -EINVAL;
	}
	return 0;
}

static int write_gdt(struct vm *vm, bool long_mode)
{
	uint64_t gdt[4] = {
	    0, long_mode ? 0x00af9b000000ffffull : 0x00cf9b000000ffffull, /* code */
	    0x00cf93000000ffffull,					  /* data */
	    0x00008b0000000067ull,					  /* TSS */
	};

	return guest_mem_write(&vm->mem, vm->layout.gdt, gdt, sizeof(gdt));
}

int x86_boot_write_tables(struct vm *vm)
{
	uint64_t npd = npd_pages(vm);
	uint64_t npdpt = (npd + 511) / 512;
	uint64_t pd_base = align_up(vm->image.load_end, GUEST_PAGE_SIZE);
	uint64_t *pml4, *pdpt, *pd;
	int ret = write_gdt(vm, vm->image.proto == BOOT_VMM);

	if (ret || vm->image.proto != BOOT_VMM)
		return ret;
	pml4 = guest_mem_write_ptr(&vm->mem, vm->layout.pml4, GUEST_PAGE_SIZE);
	pdpt = guest_mem_write_ptr(&vm->mem, LOW_PDPT, npdpt * GUEST_PAGE_SIZE);
	pd = guest_mem_write_ptr(&vm->mem, pd_base, npd * GUEST_PAGE_SIZE);
	if (!pml4 || !pdpt || !pd)
		return -EFAULT;
	for (uint64_t i = 0; i < npdpt; i++)
		pml4[i] = (LOW_PDPT + i * GUEST_PAGE_SIZE) | PTE_P | PTE_RW;
	for (uint64_t i = 0; i < npd; i++)
		pdpt[i] = (pd_base + i * GUEST_PAGE_SIZE) | PTE_P | PTE_RW;
	/* 2 MiB pages: 512 entries per GiB, identity mapped. */
	for (uint64_t i = 0; i < npd * 512; i++)
		pd[i] = (i << 21) | PTE_P | PTE_RW | PTE_PS;
	return 0;
}

/*
 * The PVH memory map: base memory, the reserved legacy hole (with the MP
 * table at its start and the ACPI tables as ACPI memory), RAM from 1 MiB.
 */
static uint32_t pvh_memmap(const struct vm *vm, struct hvm_memmap_entry *map)
{
	const struct boot_layout *l = &vm->layout;
	uint64_t low = vm->mem.size < GUEST_MEM_HOLE_START ? vm->mem.size : GUEST_MEM_HOLE_START;
	uint64_t acpi_end =
	    l->rsdp + ((l->acpi_size + GUEST_PAGE_SIZE - 1) & ~(GUEST_PAGE_SIZE - 1));
	uint32_t n = 0;

	map[n++] = (struct hvm_memmap_entry){.addr = 0, .size = LEGACY_START, .type = E820_RAM};
	map[n++] = (struct hvm_memmap_entry){
	    .addr = LEGACY_START, .size = l->rsdp - LEGACY_START, .type = E820_RESERVED};
	map[n++] = (struct hvm_memmap_entry){
	    .addr = l->rsdp, .size = acpi_end - l->rsdp, .type = E820_ACPI};
	map[n++] = (struct hvm_memmap_entry){
	    .addr = acpi_end, .size = LEGACY_END - acpi_end, .type = E820_RESERVED};
	map[n++] = (struct hvm_memmap_entry){
	    .addr = LEGACY_END, .size = low - LEGACY_END, .type = E820_RAM};
	if (vm->mem.size > low)
		map[n++] = (struct hvm_memmap_entry){
		    .addr = GUEST_MEM_HIGH_START, .size = vm->mem.size - low, .type = E820_RAM};
	return n;
}

static int write_platform_tables(struct vm *vm)
{
	const struct boot_layout *l = &vm->layout;
	size_t mplen = mptable_size(vm->nvcpus);
	void *mp = guest_mem_write_ptr(&vm->mem, l->mptable, mplen);
	void *acpi = guest_mem_write_ptr(&vm->mem, l->rsdp, l->acpi_size);
	struct acpi_virtio virtio[DEVICES_MAX];
	unsigned nvirtio = vm->devices.n;
	int ret;

	if (!mp || !acpi)
		return -EFAULT;
	for (unsigned i = 0; i < nvirtio; i++)
		virtio[i] = (struct acpi_virtio){.base = vm->devices.dev[i]->base,
						 .size = VIRTIO_MMIO_WINDOW,
						 .irq = vm->devices.dev[i]->irq};
	ret = mptable_build(mp, mplen, l->mptable, vm->nvcpus);
	if (!ret)
		ret =
		    acpi_build_with(acpi, l->acpi_size, l->rsdp, vm->nvcpus, virtio, nvirtio, NULL);
	return ret;
}

int x86_boot_write_pvh(struct vm *vm)
{
	const struct boot_layout *l = &vm->layout;
	struct hvm_start_info si = {
	    .magic = PVH_START_MAGIC,
	    .version = 1,
	    .cmdline_paddr = l->cmdline,
	    .memmap_paddr = l->memmap,
	    .rsdp_paddr = l->rsdp,
	};
	struct hvm_modlist_entry mod = {.paddr = l->initrd, .size = l->initrd_size};
	struct hvm_memmap_entry map[6];
	size_t cmdlen = strlen(vm->boot_cmdline) + 1;
	int ret;

	si.memmap_entries = pvh_memmap(vm, map);
	if (l->initrd_size) {
		si.nr_modules = 1;
		si.modlist_paddr = l->modlist;
	}
	if (cmdlen > LOW_MODLIST - LOW_CMDLINE)
		return -E2BIG;
	ret = write_platform_tables(vm);
	if (!ret)
		ret = guest_mem_write(&vm->mem, l->start_info, &si, sizeof(si));
	if (!ret)
		ret = guest_mem_write(&vm->mem, l->memmap, map, si.memmap_entries * sizeof(map[0]));
	if (!ret)
		ret = guest_mem_write(&vm->mem, l->cmdline, vm->boot_cmdline, cmdlen);
	if (!ret && l->initrd_size)
		ret = guest_mem_write(&vm->mem, l->modlist, &mod, sizeof(mod));
	return ret;
}

static void set_segment(struct kvm_segment *s, uint16_t sel, uint8_t type, bool code64)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffff;
	s->selector = sel;
	s->type = type;
	s->present = 1;
	s->s = 1;
	s->g = 1;
	s->l = code64;
	s->db = !code64;
}

static int setup_sregs(struct vm *vm, struct vcpu *vcpu)
{
	struct kvm_sregs sregs;
	bool long_mode = vm->image.proto == BOOT_VMM;

	if (ioctl(vcpu->fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	set_segment(&sregs.cs, SEL_CODE, 0xb, long_mode);
	set_segment(&sregs.ds, SEL_DATA, 0x3, false);
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	memset(&sregs.tr, 0, sizeof(sregs.tr));
	sregs.tr.selector = SEL_TSS;
	sregs.tr.limit = 0x67;
	sregs.tr.type = 0xb;
	sregs.tr.present = 1;
	sregs.gdt.base = vm->layout.gdt;
	sregs.gdt.limit = 4 * 8 - 1;
	sregs.idt.base = 0;
	sregs.idt.limit = 0;
	if (long_mode) {
		sregs.cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_AM | CR0_PG;
		sregs.cr3 = vm->layout.pml4;
		sregs.cr4 = CR4_PAE;
		sregs.efer = EFER_LME | EFER_LMA;
	} else {
		sregs.cr0 = CR0_PE | CR0_ET;
		sregs.cr3 = 0;
		sregs.cr4 = 0;
		sregs.efer = 0;
	}
	if (ioctl(vcpu->fd, KVM_SET_SREGS, &sregs) < 0)
		return -errno;
	return 0;
}

int x86_boot_setup_vcpu(struct vm *vm, struct vcpu *vcpu)
{
	struct kvm_regs regs;
	struct kvm_mp_state mp = {.mp_state = KVM_MP_STATE_RUNNABLE};
	int ret;

	/* A PVH image starts its application processors itself (INIT/SIPI). */
	if (vm->image.proto == BOOT_PVH && vcpu->index > 0)
		return 0;
	ret = setup_sregs(vm, vcpu);
	if (ret)
		return ret;
	memset(&regs, 0, sizeof(regs));
	regs.rflags = 0x2;
	regs.rip = vm->image.entry;
	if (vm->image.proto == BOOT_VMM) {
		regs.rdi = vm->layout.fdt;
		regs.rsi = vcpu->index;
		regs.rsp = vm->layout.stacks + (uint64_t)(vcpu->index + 1) * VMM_VCPU_STACK_SIZE;
	} else {
		regs.rbx = vm->layout.start_info;
	}
	if (ioctl(vcpu->fd, KVM_SET_REGS, &regs) < 0)
		return -errno;
	/* With the in-kernel LAPIC, APs wait for a SIPI unless made runnable. */
	if (ioctl(vcpu->fd, KVM_SET_MP_STATE, &mp) < 0)
		return -errno;
	return 0;
}
