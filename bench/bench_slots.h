/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_slots.h - what bench_slots measures for one (slot size, slot count)
 * row, and its in-process part (bench_slots_inproc.c: a VM built from the
 * VMM core, boot and dirty logging). The end-to-end migration and the
 * tables are in bench_slots.c. One thread; errors go to row.skip.
 */
#ifndef VMM_BENCH_SLOTS_H
#define VMM_BENCH_SLOTS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "guest_mem.h"

/* What a row measures; every value in ms (M_MIG_DOWN/M_MIG_HARV from us). */
enum metric {
	M_CREATE,
	M_LINE,
	M_DESTROY,
	M_ENABLE,
	M_HARV0,
	M_CLR0,
	M_HARV64,
	M_CLR64,
	M_DISABLE,
	M_MIG_TOTAL,
	M_MIG_SETUP,
	M_MIG_DOWN,
	M_MIG_HARV,
	M_COUNT
};

struct row {
	uint64_t slot_mib, n, ram_mib;
	bool ok;
	char skip[2 * PATH_MAX + 1024]; /* why the row stopped */
	char note[256];			/* what was left out on purpose */
	double v[M_COUNT];		/* median of the runs */
	double vmin[M_COUNT];		/* best of the runs: the slopes (host noise only adds) */
	bool have[M_COUNT];
	uint64_t dirty_pages, clr64_ioctls, kmem_mib;
};

static inline void row_set(struct row *r, enum metric m, double ms)
{
	r->v[m] = ms;
	r->have[m] = true;
}

/* MemAvailable in KiB, -1 when it cannot be read. */
static inline long mem_available_kib(void)
{
	uint64_t bytes = guest_mem_host_available();

	return bytes ? (long)(bytes / 1024) : -1;
}

/*
 * Boot: vm_create + vm_boot_setup (M_CREATE), vm_start to the idle guest's
 * first console line (M_LINE), vm_destroy (M_DESTROY). s_mem and s_slot are
 * "vm.memory=..." and "vm.memslot_size=..." overrides. 0, or -1 with
 * r->skip set.
 */
int slots_boot(struct row *r, const char *s_mem, const char *s_slot);

/*
 * Dirty logging on a second VM: enable, empty harvest (median of reps) and
 * CLEAR round, the `dirty` workload writing 64 MiB, the harvest and CLEAR
 * round of that, disable; r->kmem_mib the host memory the VM took.
 */
int slots_dirty(struct row *r, const char *s_mem, const char *s_slot, int reps);

#endif /* VMM_BENCH_SLOTS_H */
