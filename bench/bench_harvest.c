/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_harvest: the cost of harvesting the dirty log.
 *
 * Part 1: a 2 GiB guest (2 vCPUs, `dirty` workload, one pass) sharded into
 * 1, 8 and 64 memslots dirties W MiB (64, 256, 1024). Before it runs,
 * logging is enabled, the INITIALLY_SET bitmap is harvested and discarded
 * and everything is cleared (KVM_CLEAR_DIRTY_LOG in 512-page chunks); after
 * it has exited (all vCPUs out of KVM_RUN), we time:
 *   - GET alone (KVM_GET_DIRTY_LOG of every slot; under manual protect it
 *     does not clear, so repeats see the same bits),
 *   - harvest_run() (GET + OR + count), without and with zstd of the
 *     bitmap, from 1 thread and from 2 (median of --reps, interleaved),
 *   - CLEAR of all dirty pages in 512-page chunks (once: it changes state).
 *
 * Part 2: a 256 GiB sparse guest in 4 GiB slots (never run): the blackout
 * harvest (harvest_run(compress=true)) after everything was cleared, from
 * 1 thread and from 2.
 *
 * usage: bench_harvest [--reps N] [--csv FILE] [--quick]
 */
#include <signal.h>
#include <stdbool.h>

#include "bench_util.h"
#include "bench_vm.h"
#include "config.h"
#include "dirtylog.h"
#include "guest_mem.h"
#include "harvest.h"
#include "vm.h"

#define CLEAR_CHUNK 512u

static int reps = 11;

/* GET of every slot into bufs; returns ms. */
static double time_get_all(struct vm *vm, struct dirtylog *dl, uint64_t **bufs)
{
	const struct guest_mem *ram = vm_mem(vm);
	double t0 = bench_now_ms();

	for (uint32_t i = 0; i < ram->nslots; i++)
		if (dirtylog_get(dl, &ram->slots[i], bufs[i]))
			return -1;
	return bench_now_ms() - t0;
}

/*
 * CLEAR the set bits of bufs in CLEAR_CHUNK-page chunks (chunks with no
 * bits skipped, as the engine does); all_ones clears every chunk instead.
 */
static double time_clear_all(struct vm *vm, struct dirtylog *dl, uint64_t **bufs, bool all_ones,
			     uint64_t *nioctl)
{
	const struct guest_mem *ram = vm_mem(vm);
	static uint64_t ones[CLEAR_CHUNK / 64];
	double t0;

	memset(ones, 0xff, sizeof(ones));
	*nioctl = 0;
	t0 = bench_now_ms();
	for (uint32_t i = 0; i < ram->nslots; i++) {
		const struct memslot *s = &ram->slots[i];

		for (uint64_t first = 0; first < s->npages; first += CLEAR_CHUNK) {
			uint64_t n =
			    s->npages - first < CLEAR_CHUNK ? s->npages - first : CLEAR_CHUNK;
			uint64_t *mask = all_ones ? ones : bufs[i] + first / 64;
			bool any = all_ones;

			for (uint64_t w = 0; !any && w < (n + 63) / 64; w++)
				any = mask[w] != 0;
			if (!any)
				continue;
			if (dirtylog_clear(dl, s, first, n, mask))
				return -1;
			(*nioctl)++;
		}
	}
	return bench_now_ms() - t0;
}

static uint64_t **alloc_bufs(struct vm *vm)
{
	const struct guest_mem *ram = vm_mem(vm);
	uint64_t **b = calloc(ram->nslots, sizeof(*b));

	for (uint32_t i = 0; b && i < ram->nslots; i++) {
		b[i] = calloc(bitmap_words(ram->slots[i].npages), 8);
		if (!b[i])
			return NULL; /* leaks on OOM; the benchmark exits */
	}
	return b;
}

static void free_bufs(struct vm *vm, uint64_t **b)
{
	for (uint32_t i = 0; b && i < vm_mem(vm)->nslots; i++)
		free(b[i]);
	free(b);
}

static uint64_t count_bits(struct vm *vm, uint64_t **b)
{
	const struct guest_mem *ram = vm_mem(vm);
	uint64_t n = 0;

	for (uint32_t i = 0; i < ram->nslots; i++)
		for (uint64_t w = 0; w < bitmap_words(ram->slots[i].npages); w++)
			n += (uint64_t)__builtin_popcountll(b[i][w]);
	return n;
}

static void zero_pending(struct harvest *h)
{
	for (uint32_t i = 0; i < h->nslots; i++)
		memset(h->slots[i].pending, 0, bitmap_words(vm_mem(h->vm)->slots[i].npages) * 8);
}

struct hres {
	double h1, h2, h1z, h2z; /* ms, median */
	double io1, io2;	 /* ms inside GET (sum over slots), median, compress runs */
	uint64_t pending, bitmap_bytes, zbytes;
};

/* Interleaved serial/concurrent harvest_run, median of reps. */
static int measure_harvest(struct vm *vm, struct dirtylog *dl, struct hres *r, bool reset_pending)
{
	struct harvest h1, h2;
	struct harvest_stats st;
	double *a = calloc((size_t)reps * 6, sizeof(double));
	int ret = -1;

	if (!a || harvest_init(&h1, vm, dl, 1) || harvest_init(&h2, vm, dl, 2))
		goto out;
	/* warm-up: thread start, page faults on the bitmaps */
	harvest_run(&h1, true, &st);
	harvest_run(&h2, true, &st);
	for (int i = 0; i < reps; i++) {
		for (int z = 0; z < 2; z++) {
			struct harvest *hh[2] = {i % 2 ? &h2 : &h1, i % 2 ? &h1 : &h2};

			for (int k = 0; k < 2; k++) {
				struct harvest *h = hh[k];
				int idx = (h == &h1 ? 0 : 1) + 2 * z;

				if (reset_pending)
					zero_pending(h);
				if (harvest_run(h, z, &st))
					goto out;
				a[idx * reps + i] = st.wall_ns / 1e6;
				if (z)
					a[(4 + idx - 2) * reps + i] = st.ioctl_ns / 1e6;
				r->pending = st.pending;
				r->bitmap_bytes = st.bitmap_bytes;
				if (z)
					r->zbytes = st.zbytes;
			}
		}
	}
	r->h1 = bench_median(a, reps);
	r->h2 = bench_median(a + reps, reps);
	r->h1z = bench_median(a + 2 * reps, reps);
	r->h2z = bench_median(a + 3 * reps, reps);
	r->io1 = bench_median(a + 4 * reps, reps);
	r->io2 = bench_median(a + 5 * reps, reps);
	ret = 0;
out:
	harvest_destroy(&h1);
	harvest_destroy(&h2);
	free(a);
	return ret;
}

static int part1(FILE *csv, const unsigned *slot_counts, int nsc, const unsigned *ws, int nws)
{
	printf("Part 1: 2 GiB guest, 2 vCPUs, after one pass of the dirty workload over W MiB;\n"
	       "median of %d; harvest = harvest_run() (GET+OR+count[+zstd]); 1t/2t = threads\n\n",
	       reps);
	printf("%5s %6s %8s %8s %9s %7s %8s %8s %6s %9s %9s %6s %9s\n", "slots", "W MiB",
	       "dirty pg", "GET ms", "CLEAR ms", "clears", "harv 1t", "harv 2t", "x", "harv+z 1t",
	       "harv+z 2t", "x", "CLEAR ns/pg");
	if (csv)
		fprintf(csv,
			"part,slots,ws_mib,dirty_pages,get_ms,clear_ms,clear_ioctls,harvest_1t_ms,"
			"harvest_2t_ms,speedup,harvest_z_1t_ms,harvest_z_2t_ms,speedup_z,"
			"get_ioctl_1t_ms,get_ioctl_2t_ms\n");
	for (int si = 0; si < nsc; si++) {
		for (int wi = 0; wi < nws; wi++) {
			char s_slot[64], s_ws[64];
			const char *sets[] = {
			    "vm.memory=2G",	      "vm.vcpus=2", s_slot,
			    "workload.kind=dirty",    s_ws,	    "workload.passes=1",
			    "workload.heartbeat_ms=0"};
			uint64_t slot = (2048ull / slot_counts[si]) & ~1ull, nclr;
			struct dirtylog dl;
			struct harvest hfirst;
			struct harvest_stats st;
			struct hres r = {0};
			double *g = calloc((size_t)reps, sizeof(double)), get_ms, clr_ms;
			struct vm *vm;
			uint64_t **bufs;
			uint64_t dirty;

			snprintf(s_slot, sizeof(s_slot), "vm.memslot_size=%luM",
				 (unsigned long)slot);
			snprintf(s_ws, sizeof(s_ws), "workload.working_set=%uM", ws[wi]);
			vm = bench_vm_make("bench_harvest", sets, 7, true);
			if (!vm || !g)
				return -1;
			bufs = alloc_bufs(vm);
			if (!bufs || dirtylog_enable(&dl, vm, true) ||
			    harvest_init(&hfirst, vm, &dl, 1) || harvest_run(&hfirst, false, &st)) {
				fprintf(stderr, "bench_harvest: enable/first harvest failed\n");
				return -1;
			}
			harvest_destroy(&hfirst);
			/* discard the INITIALLY_SET pass: re-protect everything */
			if (time_clear_all(vm, &dl, bufs, true, &nclr) < 0 ||
			    bench_vm_run_to_exit("bench_harvest", vm, 120000)) {
				bench_vm_free(vm);
				return -1;
			}
			if (time_get_all(vm, &dl, bufs) < 0)
				return -1;
			dirty = count_bits(vm, bufs);
			for (int i = 0; i < reps; i++)
				g[i] = time_get_all(vm, &dl, bufs);
			get_ms = bench_median(g, reps);
			if (measure_harvest(vm, &dl, &r, false))
				return -1;
			clr_ms = time_clear_all(vm, &dl, bufs, false, &nclr);
			printf("%5u %6u %8lu %8.3f %9.3f %7lu %8.3f %8.3f %6.2f %9.3f %9.3f %6.2f "
			       "%9.1f\n",
			       vm_mem(vm)->nslots, ws[wi], (unsigned long)dirty, get_ms, clr_ms,
			       (unsigned long)nclr, r.h1, r.h2, r.h1 / r.h2, r.h1z, r.h2z,
			       r.h1z / r.h2z, dirty ? clr_ms * 1e6 / (double)dirty : 0);
			fflush(stdout);
			if (csv)
				fprintf(
				    csv,
				    "dirty,%u,%u,%lu,%.4f,%.4f,%lu,%.4f,%.4f,%.3f,%.4f,%.4f,%.3f,"
				    "%.4f,%.4f\n",
				    vm_mem(vm)->nslots, ws[wi], (unsigned long)dirty, get_ms,
				    clr_ms, (unsigned long)nclr, r.h1, r.h2, r.h1 / r.h2, r.h1z,
				    r.h2z, r.h1z / r.h2z, r.io1, r.io2);
			free(g);
			free_bufs(vm, bufs);
			dirtylog_disable(&dl);
			bench_vm_free(vm);
		}
	}
	return 0;
}

static int part2(FILE *csv, const char *mem, const char *slot_size)
{
	char s_mem[64], s_slot[64];
	const char *sets[] = {s_mem, s_slot, "workload.kind=hello"};
	struct dirtylog dl;
	struct harvest hfirst;
	struct harvest_stats st;
	struct hres r = {0};
	uint64_t **bufs, nclr;
	double en0, en_ms, first_ms, clr_ms;
	struct vm *vm;

	snprintf(s_mem, sizeof(s_mem), "vm.memory=%s", mem);
	snprintf(s_slot, sizeof(s_slot), "vm.memslot_size=%s", slot_size);
	vm = bench_vm_make("bench_harvest", sets, 3, true);
	if (!vm)
		return -1;
	bufs = alloc_bufs(vm);
	en0 = bench_now_ms();
	if (!bufs || dirtylog_enable(&dl, vm, true))
		return -1;
	en_ms = bench_now_ms() - en0;
	if (harvest_init(&hfirst, vm, &dl, 1))
		return -1;
	en0 = bench_now_ms();
	if (harvest_run(&hfirst, false, &st))
		return -1;
	first_ms = bench_now_ms() - en0;
	harvest_destroy(&hfirst);
	clr_ms = time_clear_all(vm, &dl, bufs, true, &nclr);
	/* blackout: nothing pending, nothing dirty since the clear */
	if (measure_harvest(vm, &dl, &r, true))
		return -1;
	printf("\nPart 2: %s sparse guest in %u slots of %s (never run), after clearing "
	       "everything;\nblackout harvest = harvest_run(compress=true), median of %d\n\n",
	       mem, vm_mem(vm)->nslots, slot_size, reps);
	printf("  enable logging            %10.3f ms\n", en_ms);
	printf("  first harvest (all ones)  %10.3f ms\n", first_ms);
	printf("  CLEAR everything          %10.3f ms (%lu ioctls of %u pages)\n", clr_ms,
	       (unsigned long)nclr, CLEAR_CHUNK);
	printf("  bitmap                    %10.1f KiB -> %.1f KiB zstd, %lu pages pending\n",
	       r.bitmap_bytes / 1024.0, r.zbytes / 1024.0, (unsigned long)r.pending);
	printf("  %-24s %10s %10s %8s\n", "", "1 thread", "2 threads", "speed-up");
	printf("  %-24s %10.3f %10.3f %7.2fx\n", "harvest, no zstd (ms)", r.h1, r.h2, r.h1 / r.h2);
	printf("  %-24s %10.3f %10.3f %7.2fx\n", "blackout harvest+zstd", r.h1z, r.h2z,
	       r.h1z / r.h2z);
	printf("  %-24s %10.3f %10.3f\n", "  of it inside GET (sum)", r.io1, r.io2);
	if (csv) {
		fprintf(csv,
			"\npart,memory,slots,enable_ms,first_harvest_ms,clear_all_ms,bitmap_bytes,"
			"zbytes,harvest_1t_ms,harvest_2t_ms,speedup,harvest_z_1t_ms,"
			"harvest_z_2t_ms,speedup_z,get_ioctl_1t_ms,get_ioctl_2t_ms\n");
		fprintf(csv,
			"sparse,%s,%u,%.4f,%.4f,%.4f,%lu,%lu,%.4f,%.4f,%.3f,%.4f,%.4f,%.3f,%.4f,"
			"%.4f\n",
			mem, vm_mem(vm)->nslots, en_ms, first_ms, clr_ms,
			(unsigned long)r.bitmap_bytes, (unsigned long)r.zbytes, r.h1, r.h2,
			r.h1 / r.h2, r.h1z, r.h2z, r.h1z / r.h2z, r.io1, r.io2);
	}
	free_bufs(vm, bufs);
	dirtylog_disable(&dl);
	bench_vm_free(vm);
	return 0;
}

int main(int argc, char **argv)
{
	static const unsigned slot_counts[] = {1, 8, 64};
	static const unsigned ws_all[] = {64, 256, 1024}, ws_quick[] = {64};
	const char *csv_path = NULL;
	bool quick = false;
	FILE *csv = NULL;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else {
			fprintf(stderr, "usage: bench_harvest [--reps N] [--csv FILE] [--quick]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 1000)
		reps = 11;
	if (csv_path && !(csv = fopen(csv_path, "w"))) {
		perror(csv_path);
		return 1;
	}
	ret = part1(csv, slot_counts, 3, quick ? ws_quick : ws_all, quick ? 1 : 3);
	if (!ret)
		ret = part2(csv, "256G", "4G");
	if (csv)
		fclose(csv);
	return ret ? 1 : 0;
}
