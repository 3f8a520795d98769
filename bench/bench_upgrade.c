/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_upgrade: the downtime of a local live upgrade (`vmm migrate
 * --local --to unix:PATH`: the memfd handed over, no page copied) against a
 * precopy migration of the same guest to a new process on the same host
 * over TCP, interleaved in one run, at several guest sizes. Both sources
 * run the dirty guest (2 vCPUs, 64 MiB rewritten) on memfd RAM; after each
 * migration the guest must go on verifying in the new process.
 *
 * What to look for: local downtime that does not grow with RAM (the memfd
 * is mapped and the memslots registered in SETUP, while the guest runs),
 * and its ratio to TCP precopy's. The target is < 5 ms at 4 GiB on real
 * KVM; the program prints it and asserts nothing.
 *
 * usage: bench_upgrade [--sizes 1G,4G,16G] [--runs N] [--quick] [--csv FILE] [--vmm PATH]
 */
#include <stdbool.h>

#include "bench_mig_once.h"
#include "bench_util.h"

#define PROG	  "bench_upgrade"
#define MAX_SIZES 6
#define MAX_RUNS  20

enum { M_LOCAL, M_TCP, NMODES };
static const char *const mode_names[NMODES] = {"local", "tcp"};

/* Per size and mode: downtime ms, pause us, target restore us, total ms of each good run. */
struct series {
	double down[MAX_RUNS], pause[MAX_RUNS], restore[MAX_RUNS], total[MAX_RUNS], pages;
	int n, failed;
};

static int parse_sizes(char *s, const char **sizes)
{
	int n = 0;

	for (char *save = NULL, *t = strtok_r(s, ",", &save); t && n < MAX_SIZES;
	     t = strtok_r(NULL, ",", &save))
		sizes[n++] = t;
	return n;
}

static void print_series(const char *size, int m, struct series *s)
{
	double d[MAX_RUNS], p[MAX_RUNS], r[MAX_RUNS], t[MAX_RUNS];

	memcpy(d, s->down, sizeof(d));
	memcpy(p, s->pause, sizeof(p));
	memcpy(r, s->restore, sizeof(r));
	memcpy(t, s->total, sizeof(t));
	printf("| %s | %s | %d/%d | %.1f (%.1f-%.1f) | %.0f | %.0f | %.0f | %.0f |\n", size,
	       mode_names[m], s->n, s->n + s->failed, bench_median(d, s->n),
	       bench_min(s->down, s->n), bench_max(s->down, s->n), bench_median(p, s->n),
	       bench_median(r, s->n), bench_median(t, s->n), s->pages);
}

int main(int argc, char **argv)
{
	static char size_buf[256] = "1G,4G,16G";
	static struct series ser[MAX_SIZES][NMODES];
	const char *sizes[MAX_SIZES], *csv_path = NULL, *vmm_path = VMM_BINARY;
	int runs = 3, nsizes, run = 0;
	bool quick = false;
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
			snprintf(size_buf, sizeof(size_buf), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--vmm") && i + 1 < argc)
			vmm_path = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else {
			fprintf(stderr, "usage: " PROG " [--sizes 1G,4G,16G] [--runs N] [--quick] "
					"[--csv FILE] [--vmm PATH]\n");
			return 2;
		}
	}
	if (quick) {
		runs = 1;
		snprintf(size_buf, sizeof(size_buf), "1G,4G");
	}
	nsizes = parse_sizes(size_buf, sizes);
	if (runs < 1 || runs > MAX_RUNS || !nsizes) {
		fprintf(stderr, PROG ": --runs must be 1..%d, --sizes a list of sizes\n", MAX_RUNS);
		return 2;
	}
	if (bm_start(PROG, vmm_path, csv_path, &csv, NULL))
		return 1;
	if (csv)
		fprintf(csv, "size,mode,run,ok,downtime_ms,pause_us,target_restore_us,total_ms,"
			     "pages_sent\n");

	printf("local upgrade (--local over unix:, memfd handed over) against TCP precopy to a "
	       "new process\non the same host, interleaved; dirty guest, 2 vCPUs, 64 MiB hot, "
	       "memfd RAM; %d run(s) each\n\n",
	       runs);
	for (int s = 0; s < nsizes; s++)
		for (int r = 0; r < runs; r++)
			for (int m = 0; m < NMODES; m++) {
				struct bm_case mc = {.label = sizes[s],
						     .memory = sizes[s],
						     .dirty = true,
						     .hot = "64M",
						     .memfd = true,
						     .local = m == M_LOCAL};
				struct series *se = &ser[s][m];
				struct bm_result res;
				int ok;

				fprintf(stderr, "%s %s run %d/%d\n", sizes[s], mode_names[m], r + 1,
					runs);
				ok = !bm_migrate_once(&mc, run++, &res);
				if (csv)
					fprintf(csv, "%s,%s,%d,%d,%.3f,%.0f,%.0f,%.1f,%.0f\n",
						sizes[s], mode_names[m], r, ok,
						ok ? res.downtime_ms : 0,
						ok ? res.blackout_pause_us : 0,
						ok ? res.target_restore_us : 0,
						ok ? res.total_ms : 0, ok ? res.pages : 0);
				if (!ok) {
					se->failed++;
					continue;
				}
				se->down[se->n] = res.downtime_ms;
				se->pause[se->n] = res.blackout_pause_us;
				se->restore[se->n] = res.target_restore_us;
				se->total[se->n] = res.total_ms;
				se->pages = res.pages;
				se->n++;
			}

	printf("| size | mode | ok | downtime ms median (min-max) | pause us | target restore us "
	       "| total ms | pages sent |\n|---|---|---|---|---|---|---|---|\n");
	for (int s = 0; s < nsizes; s++)
		for (int m = 0; m < NMODES; m++)
			print_series(sizes[s], m, &ser[s][m]);
	printf("\n| size | local / tcp downtime (medians) | local < 5 ms (target at 4 GiB, real "
	       "KVM) |\n|---|---|---|\n");
	for (int s = 0; s < nsizes; s++) {
		struct series *l = &ser[s][M_LOCAL], *t = &ser[s][M_TCP];
		double ld[MAX_RUNS], td[MAX_RUNS], lm, tm;

		memcpy(ld, l->down, sizeof(ld));
		memcpy(td, t->down, sizeof(td));
		if (!l->n || !t->n) {
			printf("| %s | - | - |\n", sizes[s]);
			continue;
		}
		lm = bench_median(ld, l->n);
		tm = bench_median(td, t->n);
		printf("| %s | %.2fx | %s |\n", sizes[s], tm > 0 ? lm / tm : 0,
		       lm < 5 ? "yes" : "no");
	}
	if (csv)
		fclose(csv);
	return 0;
}
