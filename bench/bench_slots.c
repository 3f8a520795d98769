/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_slots: how vmm's costs scale with the number of KVM memslots (the
 * subject of KVM's dynamic memslot array / memslot tree work: a per-slot
 * cost must stay small). Two series, RAM = N slots x slot size:
 *   1G slots  N = 1, 16, 256, 1024, 4096: sparse guests up to 4 TiB
 *             (MAP_NORESERVE: only touched pages cost); the dirty bitmaps
 *             grow with N too (32 KiB per slot)
 *   2M slots  N = 256, 1024, 4096 (512 MiB .. 8 GiB): 64 bytes of bitmap
 *             per slot, so what grows is the per-slot cost alone
 * For each N, in-process (vmm_machine + vmm_dirty, like bench_harvest):
 *   create     vm_create + vm_boot_setup (mmap, one KVM_SET_USER_MEMORY_REGION
 *              per slot, firmware load); "1st line" adds vm_start to the idle
 *              guest's first console line; destroy = vm_destroy
 *   enable     dirtylog_enable() without INITIALLY_SET (the engine's choice
 *              for sparse guests: one ioctl per slot)
 *   harv0      harvest_run() with nothing dirty (2 threads, as the engine
 *              on this 2-core host), median of --reps
 *   clr0       one CLEAR round as the engine does it (512-page chunks with
 *              bits set; nothing set: the scan only)
 *   harv64     harvest_run() after the `dirty` workload wrote a fixed 64 MiB
 *              (one pass, 1 vCPU), median; clr64 its CLEAR round
 *   disable    dirtylog_disable() after that (one ioctl per slot)
 *   kmem       host memory the dirty VM took (MemAvailable before/after)
 * and end to end through the migration harness (like bench_migrate): an idle
 * guest, `vmm migrate --json` total_ms and downtime_us, and the final
 * harvest. The summary gives each cost's slope in us per slot between the
 * smallest and the largest N of a series (best of the runs at each end), and whether it meets issue
 * 12's target (at most a few, here 5, us per slot). Rows the host cannot do (KVM_CAP_NR_MEMSLOTS,
 * address width, host memory) are skipped with a line.
 *
 * Each row is run --runs times (3; 1 with --quick): medians.
 *
 * usage: bench_slots [--reps N] [--runs N] [--csv FILE] [--vmm PATH] [--quick] [--no-migrate]
 *                    [--only-slot MIB]   (one series: 1024 or 2)
 */
#include <limits.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>

#include "bench_slots.h"
#include "bench_util.h"
#include "clock.h"
#include "harness_json.h"
#include "harness_run.h"

#define PROG	  "bench_slots"
#define TARGET_US 5.0 /* "a few microseconds per slot" */

static const char *vmm_path = VMM_BINARY;
static char tmpdir[64];
static int reps = 5; /* harvests per VM */
static int runs = 3; /* VMs (and migrations) per row */
#define MAX_RUNS 20

/* name, unit (values are stored in ms) */
static const char *const mname[M_COUNT] = {
    "create ms",    "1st line ms",     "destroy ms",	"enable ms",  "harv0 ms",
    "clr0 ms",	    "harv64 ms",       "clr64 ms",	"disable ms", "mig total ms",
    "mig setup ms", "mig downtime ms", "mig harvest ms"};
static const char *const mcsv[M_COUNT] = {"create_ms",
					  "first_line_ms",
					  "destroy_ms",
					  "enable_ms",
					  "harvest_empty_ms",
					  "clear_empty_ms",
					  "harvest_64m_ms",
					  "clear_64m_ms",
					  "disable_ms",
					  "migrate_total_ms",
					  "migrate_setup_ms",
					  "migrate_downtime_ms",
					  "migrate_final_harvest_ms"};

/* An idle migration end to end: vmm run, vmm run --incoming, vmm migrate --json. */
static int migrate_once(struct row *r, const char *s_mem, const char *s_slot, int run)
{
	char tsock[128], src[32], dst[32], mig[32], err[PATH_MAX + 256];
	char *sargs[] = {"--set", (char *)s_mem, "--set", (char *)s_slot, NULL};
	char *targs[] = {"--api-socket", tsock, NULL};
	/* the target builds the VM before it answers: ~4 s for 1 TiB in 1 GiB slots here */
	char *margs[] = {"--json", "--timeout-ms", "60000", NULL};
	struct hx_cmd c = {0};
	struct hx_run hr;
	int ret = -1;

	snprintf(tsock, sizeof(tsock), "%s/target-%d.sock", tmpdir, run);
	snprintf(src, sizeof(src), "source-%d", run);
	snprintf(dst, sizeof(dst), "target-%d", run);
	snprintf(mig, sizeof(mig), "migrate-%d", run);

	struct hx_run_opts o = {
	    .vmm = vmm_path,
	    .dir = tmpdir,
	    .src_stem = src,
	    .dst_stem = dst,
	    .mig_stem = mig,
	    .pipes = true,
	    .name = "bs",
	    .config = EXAMPLES_DIR "/idle.cfg",
	    .source_args = sargs,
	    .target_args = targs,
	};

	if (hx_run_start(&hr, &o, err, sizeof(err))) { /* hr is endable: it reaps what started */
		snprintf(r->skip, sizeof(r->skip), "migration: %s", err);
		goto out;
	}
	if (hx_wait_line(&hr.watch, &hr.src_out, "idle", 1, 0, 60000, err, sizeof(err))) {
		snprintf(r->skip, sizeof(r->skip), "migration: source guest did not start (see %s)",
			 hr.src_err);
		goto out;
	}
	if (hx_run_migrate(&hr, margs, 600000, &c, err, sizeof(err)) || c.code || !c.json) {
		snprintf(r->skip, sizeof(r->skip), "vmm migrate failed (exit %d): %s", c.code,
			 c.out.text ? c.out.text : err);
		goto out;
	}
	row_set(r, M_MIG_TOTAL, hx_json_num(c.json, "total_ms"));
	row_set(r, M_MIG_SETUP, hx_json_num(c.json, "setup_ms"));
	row_set(r, M_MIG_DOWN, hx_json_num(c.json, "downtime_us") / 1e3);
	row_set(r, M_MIG_HARV, hx_json_num(c.json, "harvest_final_us") / 1e3);
	sleep_ms(100);
	if (!hx_running(&hr.dst)) {
		snprintf(r->skip, sizeof(r->skip), "migration: target exited (see %s)", hr.dst_err);
		goto out;
	}
	ret = 0;
out:
	if (!ret)
		hx_run_wait_exit(&hr, &hr.src, 30000, err, sizeof(err));
	hx_cmd_free(&c);
	hx_run_end(&hr);
	unlink(tsock);
	if (!ret) { /* keep the stderr of a failure for the reader */
		unlink(hr.src_err);
		unlink(hr.dst_err);
		unlink(c.err_path);
	}
	return ret;
}

static void measure_once(struct row *r, bool migrate, int run)
{
	char s_mem[64], s_slot[64];

	snprintf(s_mem, sizeof(s_mem), "vm.memory=%luM", (unsigned long)r->ram_mib);
	snprintf(s_slot, sizeof(s_slot), "vm.memslot_size=%luM", (unsigned long)r->slot_mib);
	if (slots_boot(r, s_mem, s_slot) || slots_dirty(r, s_mem, s_slot, reps))
		return;
	if (migrate && migrate_once(r, s_mem, s_slot, run))
		return;
	r->ok = true;
}

/* runs of the whole row, each metric the median of the runs that measured it */
static void measure(struct row *r, bool migrate, int *run)
{
	static struct row t[MAX_RUNS];
	double v[MAX_RUNS];

	for (int k = 0; k < runs; k++) {
		t[k] = *r;
		measure_once(&t[k], migrate, (*run)++);
		if (!t[k].ok) {
			*r = t[k]; /* the first failure stops the row, with its reason */
			return;
		}
	}
	*r = t[0];
	for (int m = 0; m < M_COUNT; m++) {
		int n = 0;

		for (int k = 0; k < runs; k++)
			if (t[k].have[m])
				v[n++] = t[k].v[m];
		r->vmin[m] = bench_min(v, n);
		r->v[m] = bench_median(v, n);
		r->have[m] = n > 0;
	}
	for (int k = 1; k < runs; k++)
		if (t[k].kmem_mib > r->kmem_mib)
			r->kmem_mib = t[k].kmem_mib;
}

static void print_row(const struct row *r, FILE *csv)
{
	char n[32];

	snprintf(n, sizeof(n), "%luM", (unsigned long)r->slot_mib);
	printf("%-5s %5lu %8.1f", n, (unsigned long)r->n, (double)r->ram_mib / 1024);
	for (int m = 0; m < M_COUNT; m++) {
		if (r->have[m])
			printf(" %*.3f", m >= M_MIG_SETUP ? 8 : 7, r->v[m]);
		else
			printf(" %*s", m >= M_MIG_SETUP ? 8 : 7, "-");
	}
	printf(" %7lu %6lu %6lu\n", (unsigned long)r->dirty_pages, (unsigned long)r->clr64_ioctls,
	       (unsigned long)r->kmem_mib);
	if (!r->ok)
		printf("      skipped/failed at %lu slots of %s: %s\n", (unsigned long)r->n, n,
		       r->skip);
	if (r->note[0])
		printf("      %s\n", r->note);
	fflush(stdout);
	if (csv) {
		fprintf(csv, "%lu,%lu,%lu,%s", (unsigned long)r->slot_mib, (unsigned long)r->n,
			(unsigned long)r->ram_mib, r->ok ? "ok" : "skipped");
		for (int m = 0; m < M_COUNT; m++)
			r->have[m] ? fprintf(csv, ",%.4f", r->v[m]) : fprintf(csv, ",");
		fprintf(csv, ",%lu,%lu,%lu\n", (unsigned long)r->dirty_pages,
			(unsigned long)r->clr64_ioctls, (unsigned long)r->kmem_mib);
	}
}

/* us per slot between the first and the last measured row of a series. */
static void print_slopes(const struct row *rows, int nrows)
{
	const struct row *a = NULL, *b = NULL;

	for (int i = 0; i < nrows; i++) {
		if (!rows[i].have[M_CREATE])
			continue;
		if (!a)
			a = &rows[i];
		b = &rows[i];
	}
	if (!a || a == b) {
		printf("  %luM slots: fewer than two rows measured, no slope\n",
		       (unsigned long)rows[0].slot_mib);
		return;
	}
	printf("\n%luM slots: slope from %lu to %lu slots (%lu MiB to %lu MiB of RAM)%s\n",
	       (unsigned long)a->slot_mib, (unsigned long)a->n, (unsigned long)b->n,
	       (unsigned long)a->ram_mib, (unsigned long)b->ram_mib,
	       a->slot_mib >= 1024 ? ";\n  RAM grows with the slots: us/slot includes what grows "
				     "with RAM (bitmaps, KVM's rmaps)"
				   : "");
	printf("  %-16s %11s %11s %11s  %s\n", "cost (best run)", "at first", "at last", "us/slot",
	       "<= 5 us/slot?");
	for (int m = 0; m < M_COUNT; m++) {
		if (!a->have[m] || !b->have[m])
			continue;
		double us = (b->vmin[m] - a->vmin[m]) * 1e3 / (double)(b->n - a->n);

		printf("  %-16s %11.3f %11.3f %11.3f  %s\n", mname[m], a->vmin[m], b->vmin[m], us,
		       us <= TARGET_US ? "yes" : "NO");
	}
}

static void cleanup_tmpdir(void)
{
	bench_rm_tree(tmpdir);
}

int main(int argc, char **argv)
{
	static const unsigned big_all[] = {1, 16, 256, 1024, 4096}, big_quick[] = {1, 256, 1024};
	static const unsigned small_all[] = {256, 1024, 4096}, small_quick[] = {256, 4096};
	const char *csv_path = NULL;
	bool quick = false, migrate = true;
	FILE *csv = NULL;
	int run = 0, kvm, maxslots;
	uint64_t only_slot = 0; /* --only-slot MIB: that series alone */

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--vmm") && i + 1 < argc)
			vmm_path = argv[++i];
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--no-migrate"))
			migrate = false;
		else if (!strcmp(argv[i], "--only-slot") && i + 1 < argc)
			only_slot = strtoull(argv[++i], NULL, 0);
		else {
			fprintf(stderr,
				"usage: " PROG " [--reps N] [--runs N] [--csv FILE] [--vmm PATH] "
				"[--quick] [--no-migrate] [--only-slot MIB]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 100)
		reps = 5;
	if (runs < 1 || runs > MAX_RUNS || quick)
		runs = quick ? 1 : 3;
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		fprintf(stderr, PROG ": /dev/kvm: %s\n", strerror(errno));
		return 1;
	}
	maxslots = ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_NR_MEMSLOTS);
	close(kvm);
	if (bench_open_outputs("bench_slots", csv_path, &csv, tmpdir, sizeof(tmpdir)))
		return 1;
	atexit(cleanup_tmpdir);
	signal(SIGPIPE, SIG_IGN);

	printf(
	    "memslot scaling: RAM = slots x slot size (sparse, MAP_NORESERVE); KVM allows %d "
	    "slots;\nmedians of %d runs (a run: fresh VMs, one migration; %d harvests, 2 threads, "
	    "per run); times in ms\n\n",
	    maxslots, runs, reps);
	printf("%-5s %5s %8s", "slot", "slots", "RAM GiB");
	for (int m = 0; m < M_COUNT; m++)
		printf(" %*.*s", m >= M_MIG_SETUP ? 8 : 7, m >= M_MIG_SETUP ? 8 : 7,
		       (const char *[]){"create", "1stline", "destroy", "enable", "harv0", "clr0",
					"harv64", "clr64", "disable", "migtot", "migsetup",
					"migdown", "migharv"}[m]);
	printf(" %7s %6s %6s\n", "dirtypg", "clr64n", "hostMi");
	if (csv) {
		fprintf(csv, "slot_mib,slots,ram_mib,status");
		for (int m = 0; m < M_COUNT; m++)
			fprintf(csv, ",%s", mcsv[m]);
		fprintf(csv, ",dirty_pages,clear_64m_ioctls,host_mem_mib\n");
	}

	struct {
		uint64_t slot_mib;
		const unsigned *ns;
		int nn;
	} series[] = {
	    {1024, quick ? big_quick : big_all, quick ? 3 : 5},
	    {2, quick ? small_quick : small_all, quick ? 2 : 3},
	};
	struct row rows[2][5];

	memset(rows, 0, sizeof(rows));
	for (int s = 0; s < 2; s++) {
		if (only_slot && series[s].slot_mib != only_slot)
			series[s].nn = 0;
		for (int i = 0; i < series[s].nn; i++) {
			struct row *r = &rows[s][i];

			r->slot_mib = series[s].slot_mib;
			r->n = series[s].ns[i];
			r->ram_mib = r->n * r->slot_mib;
			/*
			 * Host memory (KVM's per-slot metadata: rmaps with shadow paging,
			 * dirty bitmaps), scaled from the last row; this host is shared,
			 * so a row may take a third of MemAvailable (a migration: two VMs).
			 */
			const struct row *prev = i ? &rows[s][i - 1] : NULL;
			/* below 256 GiB, MemAvailable's noise (other processes) dominates */
			uint64_t need = prev && prev->ram_mib >= 256 * 1024
					    ? prev->kmem_mib * r->ram_mib / prev->ram_mib
					    : 0;
			long avail = mem_available_kib() / 1024;
			bool mig = migrate;

			if (avail > 0 && 2 * need > (uint64_t)avail / 3 && mig) {
				mig = false;
				snprintf(r->note, sizeof(r->note),
					 "no migration: two VMs would take ~%lu MiB of host memory "
					 "(scaled from the last row), over a third of MemAvailable "
					 "(%ld MiB)",
					 (unsigned long)(2 * need), avail);
			}
			if (maxslots > 0 && r->n > (uint64_t)maxslots)
				snprintf(r->skip, sizeof(r->skip),
					 "KVM_CAP_NR_MEMSLOTS is %d on this host", maxslots);
			else if (avail > 0 && need > (uint64_t)avail / 3)
				snprintf(r->skip, sizeof(r->skip),
					 "would take ~%lu MiB of host memory (scaled from the last "
					 "row), over a third of MemAvailable (%ld MiB)",
					 (unsigned long)need, avail);
			else
				measure(r, mig, &run);
			print_row(r, csv);
		}
	}
	printf(
	    "\nper-slot cost (target: no cost growing beyond a few us per slot; here <= %.0f us),\n"
	    "from the best of the %d runs at each end (the host's noise only adds)\n",
	    TARGET_US, runs);
	for (int s = 0; s < 2; s++)
		if (series[s].nn)
			print_slopes(rows[s], series[s].nn);
	if (csv)
		fclose(csv);
	return 0;
}
