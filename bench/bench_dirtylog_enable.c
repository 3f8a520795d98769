/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_dirtylog_enable: what turning dirty logging on costs, with and
 * without KVM_DIRTY_LOG_INITIALLY_SET (manual protect in both modes), for
 * 1, 16 and 64 GiB sparse guests in 512 MiB slots and in the biggest slots
 * the layout allows (one per RAM region). The hello guest runs to its exit
 * first, so KVM has mappings (and page tables) to write-protect. Then:
 *   enable     dirtylog_enable() (KVM_SET_USER_MEMORY_REGION per slot)
 *   first GET  KVM_GET_DIRTY_LOG of every slot (INITIALLY_SET: all ones)
 *   CLEAR 2nd  the same again with one ioctl per slot (nothing left to clear:
 *              the cost of the kernel's walk vs the ioctl count)
 *   CLEAR all  KVM_CLEAR_DIRTY_LOG of every page, 512-page chunks, mask all
 *              ones (without INITIALLY_SET the kernel only clears bits that
 *              are set, so this is cheap there; with it, this is where the
 *              write protection really happens)
 * A fresh VM per measurement; median of --reps.
 *
 * usage: bench_dirtylog_enable [--reps N] [--csv FILE] [--no-run]
 */
#include <stdbool.h>

#include "bench_vm.h"
#include "dirtylog.h"
#include "guest_mem.h"
#include "harvest.h"

#define CLEAR_CHUNK 512u
#define PROG	    "bench_dirtylog_enable"

struct sample {
	double enable_ms, get_ms, clear_ms, clear1_ms;
	uint64_t dirty, nslots;
};

static int measure(const char *mem, const char *slot, bool init_set, bool run, struct sample *s)
{
	char s_mem[64], s_slot[64];
	const char *sets[] = {s_mem, s_slot, "workload.kind=hello"};
	static uint64_t ones[CLEAR_CHUNK / 64];
	struct dirtylog dl;
	uint64_t **bufs;
	const struct guest_mem *ram;
	struct vm *vm;
	double t0;

	memset(ones, 0xff, sizeof(ones));
	snprintf(s_mem, sizeof(s_mem), "vm.memory=%s", mem);
	snprintf(s_slot, sizeof(s_slot), "vm.memslot_size=%s", slot);
	vm = bench_vm_make(PROG, sets, 3, true);
	if (!vm)
		return -1;
	if (run && bench_vm_run_to_exit(PROG, vm, 60000)) {
		bench_vm_free(vm);
		return -1;
	}
	ram = vm_mem(vm);
	bufs = calloc(ram->nslots, sizeof(*bufs));
	for (uint32_t i = 0; bufs && i < ram->nslots; i++)
		if (!(bufs[i] = calloc(bitmap_words(ram->slots[i].npages), 8)))
			return -1;
	if (!bufs)
		return -1;
	s->nslots = ram->nslots;

	t0 = bench_now_ms();
	if (dirtylog_enable(&dl, vm, init_set))
		return -1;
	s->enable_ms = bench_now_ms() - t0;
	if (init_set && !dl.initially_set)
		fprintf(stderr, PROG ": kernel has no INITIALLY_SET\n");

	t0 = bench_now_ms();
	for (uint32_t i = 0; i < ram->nslots; i++)
		if (dirtylog_get(&dl, &ram->slots[i], bufs[i]))
			return -1;
	s->get_ms = bench_now_ms() - t0;
	s->dirty = 0;
	for (uint32_t i = 0; i < ram->nslots; i++)
		for (uint64_t w = 0; w < bitmap_words(ram->slots[i].npages); w++)
			s->dirty += (uint64_t)__builtin_popcountll(bufs[i][w]);

	t0 = bench_now_ms();
	for (uint32_t i = 0; i < ram->nslots; i++) {
		const struct memslot *sl = &ram->slots[i];

		for (uint64_t first = 0; first < sl->npages; first += CLEAR_CHUNK) {
			uint64_t n =
			    sl->npages - first < CLEAR_CHUNK ? sl->npages - first : CLEAR_CHUNK;

			if (dirtylog_clear(&dl, sl, first, n, ones))
				return -1;
		}
	}
	s->clear_ms = bench_now_ms() - t0;

	/* the same again, one ioctl per slot (now nothing is set: the walk only) */
	t0 = bench_now_ms();
	for (uint32_t i = 0; i < ram->nslots; i++) {
		memset(bufs[i], 0xff, bitmap_words(ram->slots[i].npages) * 8);
		if (dirtylog_clear(&dl, &ram->slots[i], 0, ram->slots[i].npages, bufs[i]))
			return -1;
	}
	s->clear1_ms = bench_now_ms() - t0;

	for (uint32_t i = 0; i < ram->nslots; i++)
		free(bufs[i]);
	free(bufs);
	dirtylog_disable(&dl);
	bench_vm_free(vm);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *mems[] = {"1G", "16G", "64G"};
	const char *csv_path = NULL;
	bool run = true;
	int reps = 3;
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--no-run"))
			run = false;
		else {
			fprintf(stderr, "usage: " PROG " [--reps N] [--csv FILE] [--no-run]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 100)
		reps = 3;
	if (csv_path && !(csv = fopen(csv_path, "w"))) {
		perror(csv_path);
		return 1;
	}
	printf("dirty logging on a sparse guest%s; manual protect always; median of %d\n\n",
	       run ? " (hello guest ran first)" : " (never run)", reps);
	printf("%-6s %-7s %6s %-13s %10s %12s %10s %12s %12s\n", "memory", "slot", "slots", "mode",
	       "enable ms", "first GET ms", "dirty pg", "CLEAR all ms", "CLEAR 2nd ms");
	if (csv)
		fprintf(csv, "memory,slot_size,slots,initially_set,enable_ms,first_get_ms,"
			     "first_get_dirty_pages,clear_all_ms,clear_again_per_slot_ms\n");
	for (size_t m = 0; m < sizeof(mems) / sizeof(mems[0]); m++) {
		const char *slots[] = {"512M", mems[m]};

		for (int sv = 0; sv < 2; sv++) {
			for (int mode = 1; mode >= 0; mode--) {
				double en[100], get[100], clr[100], clr1[100];
				struct sample s = {0};

				for (int r = 0; r < reps; r++) {
					if (measure(mems[m], slots[sv], mode, run, &s)) {
						fprintf(stderr, PROG ": %s/%s failed\n", mems[m],
							slots[sv]);
						return 1;
					}
					en[r] = s.enable_ms;
					get[r] = s.get_ms;
					clr[r] = s.clear_ms;
					clr1[r] = s.clear1_ms;
				}
				double me = bench_median(en, reps), mg = bench_median(get, reps),
				       mc = bench_median(clr, reps), m1 = bench_median(clr1, reps);

				printf("%-6s %-7s %6lu %-13s %10.3f %12.3f %10lu %12.3f %12.3f\n",
				       mems[m], slots[sv], (unsigned long)s.nslots,
				       mode ? "INITIALLY_SET" : "plain", me, mg,
				       (unsigned long)s.dirty, mc, m1);
				fflush(stdout);
				if (csv)
					fprintf(csv, "%s,%s,%lu,%d,%.4f,%.4f,%lu,%.4f,%.4f\n",
						mems[m], slots[sv], (unsigned long)s.nslots, mode,
						me, mg, (unsigned long)s.dirty, mc, m1);
			}
		}
	}
	if (csv)
		fclose(csv);
	return 0;
}
