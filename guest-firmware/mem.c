// SPDX-License-Identifier: Apache-2.0
/*
 * mem.c - guest-physical memory for the firmware: is a range RAM, a page
 * allocator for device rings and buffers, and mapping an MMIO window.
 *
 * The allocator hands out pages from vmm,free-start (after a PVH boot: the
 * first 2 MiB boundary above the image, pvh.c) upwards and never
 * frees: the device workloads (blk, net) set up once and run for ever, and
 * they do not run the dirty workload, whose working set also starts at
 * free-start. Only vCPU 0 allocates (the others idle), so there is no lock.
 *
 * The VMM identity maps guest RAM only, rounded up to 1 GiB: with less
 * than 3 GiB of RAM the virtio-mmio windows (0xd0000000 and up, in the
 * hole below 4 GiB) have no mapping, and the first register read would
 * page fault. fw_map_mmio() adds 2 MiB uncached pages for such a window,
 * taking any missing paging structure from the allocator. A window that is
 * mapped already (RAM above 4 GiB, or the PVH boot's write-back map of the
 * first 4 GiB, where QEMU microvm's virtio-mmio windows at 0xfeb00000 lie)
 * keeps its mapping (the same addresses, writable), except that a 2 MiB
 * page holding no RAM gets PCD|PWT (PAT entry 3 at its reset value: UC).
 * Nothing here touches a page the window does not cover: the IOAPIC
 * (0xfec00000) and the LAPIC (0xfee00000) are in the 2 MiB page above
 * 0xfeb00000's, which changes only if a window lies in it, and then only
 * to uncached, as MMIO should be. A page holding
 * RAM, or a 1 GiB page, is left write-back; that is still correct under
 * KVM (EPT makes MMIO uncached) and TCG (no caches), only not on bare metal.
 */
#include "fw.h"

#define PTE_P	 0x001ull
#define PTE_RW	 0x002ull
#define PTE_PWT	 0x008ull
#define PTE_PCD	 0x010ull
#define PTE_PS	 0x080ull
#define PTE_ADDR 0x000ffffffffff000ull
#define PAGE_2M	 (2ull << 20)
#define CR4_LA57 (1ull << 12)

static uint64_t next_free; /* the allocator's next page; 0 until the first call */

bool fw_inside_memory(uint64_t start, uint64_t end)
{
	const struct fw_params *p = &fw_params;
	uint64_t cur = start;
	uint32_t i;
	bool progress = true;

	/* Adjacent regions chain: keep extending until no region covers cur. */
	while (cur < end && progress) {
		progress = false;
		for (i = 0; i < p->nr_mem_regions; i++) {
			const struct fw_mem_region *r = &p->mem[i];

			if (cur >= r->base && cur < r->base + r->size) {
				cur = r->base + r->size;
				progress = true;
			}
		}
	}
	return cur >= end;
}

bool fw_overlaps_memory(uint64_t start, uint64_t end)
{
	const struct fw_params *p = &fw_params;
	uint32_t i;

	for (i = 0; i < p->nr_mem_regions; i++) {
		const struct fw_mem_region *r = &p->mem[i];

		if (start < r->base + r->size && r->base < end)
			return true;
	}
	return false;
}

void *fw_alloc_pages(uint64_t n)
{
	uint64_t start, end, i;
	volatile uint64_t *w;

	if (!fw_params.has_free_start) {
		fw_log("/chosen lacks vmm,free-start: no guest RAM for device rings and buffers");
		fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
	}
	if (!next_free)
		next_free =
		    (fw_params.free_start + VMM_PAGE_SIZE - 1) & ~(uint64_t)(VMM_PAGE_SIZE - 1);
	start = next_free;
	end = start + n * VMM_PAGE_SIZE;
	if (!n || end < start || !fw_inside_memory(start, end)) {
		fw_log("no guest RAM for %lu pages at 0x%lx (after vmm,free-start 0x%lx)", n, start,
		       fw_params.free_start);
		fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
	}
	/* Zero it: [workload] fill = random may have written the fill here. */
	w = (volatile uint64_t *)(uintptr_t)start;
	for (i = 0; i < n * VMM_PAGE_SIZE / 8; i++)
		w[i] = 0;
	next_free = end;
	return (void *)(uintptr_t)start;
}

static uint64_t read_cr(int which)
{
	uint64_t v = 0;

	if (which == 3)
		__asm__ volatile("mov %%cr3, %0" : "=r"(v));
	else
		__asm__ volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

/* The table an entry points to, with a new zeroed one when it is absent. */
static uint64_t *table_below(volatile uint64_t *entry)
{
	if (!(*entry & PTE_P))
		*entry = (uint64_t)(uintptr_t)fw_alloc_pages(1) | PTE_P | PTE_RW;
	return (uint64_t *)(uintptr_t)(*entry & PTE_ADDR);
}

int fw_map_mmio(uint64_t base, uint64_t size)
{
	uint64_t a, end = base + size, cr3;
	bool changed = false;

	if (!size || end < base || end > (1ull << 47)) {
		fw_log("MMIO window [0x%lx, +0x%lx) cannot be mapped", base, size);
		return -1;
	}
	if (read_cr(4) & CR4_LA57) {
		fw_log("5-level paging is on: the firmware maps MMIO with 4 levels only");
		return -1;
	}
	cr3 = read_cr(3);
	for (a = base & ~(PAGE_2M - 1); a < end; a += PAGE_2M) {
		volatile uint64_t *pml4 = (volatile uint64_t *)(uintptr_t)(cr3 & PTE_ADDR);
		volatile uint64_t *pdpt = table_below(&pml4[(a >> 39) & 511]), *pd, *e;

		e = &pdpt[(a >> 30) & 511];
		if ((*e & (PTE_P | PTE_PS)) == (PTE_P | PTE_PS))
			continue; /* a 1 GiB page covers it */
		pd = table_below(e);
		e = &pd[(a >> 21) & 511];
		if (!(*e & PTE_P)) {
			*e = a | PTE_P | PTE_RW | PTE_PS | PTE_PCD | PTE_PWT;
			changed = true;
		} else if ((*e & (PTE_PS | PTE_PCD)) == PTE_PS &&
			   !fw_overlaps_memory(a, a + PAGE_2M)) {
			/* A write-back 2 MiB page without RAM (the PVH map): uncached. */
			*e |= PTE_PCD | PTE_PWT;
			changed = true;
		}
		/* else mapped already: RAM above the hole, a 4K table, or uncached */
	}
	/*
	 * Not-present entries are not cached, but a paging-structure cache may
	 * hold the old upper levels, and the TLB a changed 2 MiB page: reloading
	 * CR3 drops them all (neither vmm nor pvh_start.S sets CR4.PGE, so no
	 * entry is global).
	 */
	if (changed)
		__asm__ volatile("mov %0, %%cr3" : : "r"(cr3) : "memory");
	return 0;
}
