/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_tail: the tail of the downtime. One case migrated many times (a
 * fresh source and target each time, as bench_migrate does it), on a quiet
 * host and then with a CPU hog on every core (one busy-looping process
 * per online CPU, at the VMM's own priority), so that host noise shows as
 * it does for a user. Prints, per case and load, the downtime's p50 / p99 /
 * max and the p50 / p99 / max of each part of it (the engine's breakdown:
 * pausing the vCPUs, the final harvest, sending the last pages, the state,
 * the target's restore, the commit), which says where the tail comes
 * from. Every guest must go on verifying on its target.
 *
 * usage: bench_tail [--runs N] [--csv FILE] [--vmm PATH] [--quick]
 *   --runs N   migrations per case and load (default 50; --quick 10)
 *   --csv      one row per migration (for a CDF), not aggregates
 */
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "bench_mig_once.h"
#include "bench_util.h"

#define PROG	 "bench_tail"
#define MAX_RUNS 500
#define MAX_HOGS 256

static const char *vmm_path = VMM_BINARY;
static pid_t hogs[MAX_HOGS];
static int nhogs;

/* The parts of one migration's downtime, in the summary's microseconds. */
enum part {
	P_DOWN,
	P_PAUSE,
	P_HARVEST,
	P_SEND,
	P_STATE,
	P_RESTORE,
	P_ACK,
	P_TOTAL,
	P_SLEEPS,
	NPARTS
};
/* The last is a count: the source's waits for the target that slept (blackout_sleeps). */
static const char *const part_names[NPARTS] = {
    "downtime",	      "pause",	"final harvest", "send",   "state",
    "target restore", "commit", "total ms",	 "sleeps",
};

static void parts_of(const struct bm_result *r, double v[NPARTS])
{
	v[P_DOWN] = r->downtime_ms * 1e3;
	v[P_PAUSE] = r->blackout_pause_us;
	v[P_HARVEST] = r->harvest_final_us;
	v[P_SEND] = r->blackout_send_us;
	v[P_STATE] = r->blackout_state_us;
	v[P_RESTORE] = r->target_restore_us;
	/* the commit's wait minus the target's restore: PREPARED..COMMITTED */
	v[P_ACK] = r->blackout_ack_us > r->target_restore_us
		       ? r->blackout_ack_us - r->target_restore_us
		       : 0;
	v[P_TOTAL] = r->total_ms;
	v[P_SLEEPS] = r->blackout_sleeps;
}

static void hogs_start(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	for (nhogs = 0; nhogs < n && nhogs < MAX_HOGS; nhogs++) {
		pid_t p = fork();

		if (p == 0) {
			volatile unsigned long x = 0;

			for (;;)
				x++;
		}
		hogs[nhogs] = p;
	}
}

static void hogs_stop(void)
{
	for (int i = 0; i < nhogs; i++)
		if (hogs[i] > 0) {
			kill(hogs[i], SIGKILL);
			waitpid(hogs[i], NULL, 0);
		}
	nhogs = 0;
}

/* The p-th percentile (0..100) of v[0..n), nearest rank; sorts v. */
static double percentile(double *v, int n, double p)
{
	int k;

	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
	k = (int)(p / 100.0 * n + 0.999999) - 1;
	return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static void print_row(const char *label, const char *load, double v[NPARTS][MAX_RUNS], int n)
{
	printf("%-10s %-5s %4d", label, load, n);
	for (int k = 0; k < NPARTS; k++) {
		double p50 = percentile(v[k], n, 50), p99 = percentile(v[k], n, 99),
		       mx = percentile(v[k], n, 100);

		printf("  %6.0f/%6.0f/%6.0f", p50, p99, mx);
	}
	putchar('\n');
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static struct bm_case cases[] = {
	    {.label = "1G dirty", .memory = "1G", .dirty = true, .hot = "64M"},
	    {.label = "4G dirty", .memory = "4G", .dirty = true, .hot = "64M"},
	};
	static double v[NPARTS][MAX_RUNS];
	const char *csv_path = NULL;
	int runs = 50, ncases = 2, failures = 0, run = 0;
	bool quick = false, prealloc = false;
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--vmm") && i + 1 < argc)
			vmm_path = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--prealloc"))
			prealloc = true;
		else {
			fprintf(stderr,
				"usage: " PROG
				" [--runs N] [--csv FILE] [--vmm PATH] [--quick] [--prealloc]\n");
			return 2;
		}
	}
	if (quick) {
		runs = runs == 50 ? 10 : runs;
		ncases = 1;
	}
	/* --prealloc: each target starts with [vm] prealloc, its RAM resident before it listens. */
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		cases[c].prealloc = prealloc;
	if (runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, PROG ": --runs must be 1..%d\n", MAX_RUNS);
		return 2;
	}
	/* At exit and on SIGINT/SIGTERM the hogs stop, then the temp dir goes. */
	if (bm_start(PROG, vmm_path, csv_path, &csv, hogs_stop))
		return 1;

	printf("downtime tail: %d migrations per row over 127.0.0.1 (dirty: 64 MiB working set, "
	       "2 vCPUs);\n"
	       "hog: one busy loop per online CPU (%ld); each cell p50/p99/max in us "
	       "(total: ms)%s\n\n",
	       runs, sysconf(_SC_NPROCESSORS_ONLN),
	       prealloc ? ";\ntargets with [vm] prealloc (RAM resident before they listen)" : "");
	printf("%-10s %-5s %4s", "case", "load", "ok");
	for (int k = 0; k < NPARTS; k++)
		printf("  %20s", part_names[k]);
	putchar('\n');
	if (csv)
		fprintf(csv, "case,load,run,downtime_us,pause_us,harvest_final_us,send_us,state_us,"
			     "target_restore_us,commit_us,total_ms,sleeps\n");
	for (int c = 0; c < ncases; c++) {
		for (int hog = 0; hog < 2; hog++) {
			const char *load = hog ? "hog" : "quiet";
			int ok = 0;

			if (hog)
				hogs_start();
			for (int r = 0; r < runs; r++) {
				struct bm_result res;
				double p[NPARTS];

				fprintf(stderr, "\r%s %s: %d/%d ", cases[c].label, load, r + 1,
					runs);
				if (bm_migrate_once(&cases[c], run++, &res)) {
					failures++;
					continue;
				}
				parts_of(&res, p);
				for (int k = 0; k < NPARTS; k++)
					v[k][ok] = p[k];
				ok++;
				if (csv)
					fprintf(csv,
						"%s,%s,%d,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,%.1f,%"
						".0f\n",
						cases[c].label, load, r, p[P_DOWN], p[P_PAUSE],
						p[P_HARVEST], p[P_SEND], p[P_STATE], p[P_RESTORE],
						p[P_ACK], p[P_TOTAL], p[P_SLEEPS]);
			}
			hogs_stop();
			fprintf(stderr, "\r\033[K");
			if (ok)
				print_row(cases[c].label, load, v, ok);
			else
				printf("%-10s %-5s all %d runs failed\n", cases[c].label, load,
				       runs);
		}
	}
	printf("\ntargets (issue 12): downtime p99 < 2 ms quiet, < 5 ms with the hog\n");
	if (csv)
		fclose(csv);
	return failures ? 1 : 0;
}
