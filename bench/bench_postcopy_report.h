/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_postcopy_report.h - bench_postcopy's cases, the numbers it keeps of
 * each run, and the tables it prints from their medians. Header-only, like
 * bench_util.h, so the benchmark stays one translation unit.
 */
#ifndef VMM_BENCH_POSTCOPY_REPORT_H
#define VMM_BENCH_POSTCOPY_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct pcase {
	const char *label;
	const char *memory;
	const char *working_set;
	const char *mode; /* precopy | postcopy | auto */
	bool no_final_bitmap;
	const char *max_bw;   /* NULL = unlimited */
	const char *compress; /* NULL = default */
	const char *max_time; /* NULL = default */
	int part;	      /* 1 or 2 */
	const char *downtime; /* --downtime-ms, NULL = default (300) */
};

enum {
	F_DOWNTIME_MS,
	F_TOTAL_MS,
	F_ARRIVED_MS,
	F_BM_RAW,
	F_BM,
	F_BM_US,
	F_STALE,
	F_REQ,
	F_PUSH,
	F_FAULTS,
	F_P50,
	F_P99,
	F_MAX,
	F_PASS_BEFORE,
	F_SWITCH_RAW,
	F_SWITCH_PP,
	F_TGT12_PP,
	F_R_SWITCH,
	F_R_TGT12,
	F_PASSES,
	F_MIG_CLI_MS,
	F_B_PAUSE,
	F_B_HARV,
	F_B_SEND,
	F_B_STATE,
	F_B_ACK,
	F_B_RESTORE,
	NF
};

static const char *const fname[NF] = {"downtime_ms",
				      "total_ms",
				      "all_arrived_ms",
				      "bitmap_raw_bytes",
				      "bitmap_bytes",
				      "bitmap_send_us",
				      "postcopy_pages",
				      "pages_requested",
				      "pages_pushed",
				      "faults",
				      "fault_p50_us",
				      "fault_p99_us",
				      "fault_max_us",
				      "pass_before_ms",
				      "src_last_to_tgt_first_ms",
				      "src_last_to_tgt_first_per_pass_ms",
				      "tgt_first_to_second_per_pass_ms",
				      "ratio_first_target_pass",
				      "ratio_target_second_interval",
				      "precopy_passes",
				      "cli_ms",
				      "blackout_pause_us",
				      "harvest_final_us",
				      "blackout_send_us",
				      "blackout_state_us",
				      "blackout_ack_us",
				      "target_restore_us"};

#define MAX_CASES 16

/* Per case: medians of every field over its good runs, and counts. */
struct tally {
	double med[MAX_CASES][NF];
	char mode_used[MAX_CASES][48]; /* the modes its runs used, "precopy/postcopy" */
	int nconv[MAX_CASES], nok[MAX_CASES], ncorrupt[MAX_CASES];
	bool ran[MAX_CASES];
};

static void print_report(const struct pcase *all, int ncases, int reps, const struct tally *t)
{
	printf("Part 1: 2 vCPUs dirtying a 64 MiB working set, loopback, median of %d\n"
	       "downtime = pause to target resume (downtime_us); arrived = switchover to\n"
	       "the last page on the target; stale = pages stale on the target at switchover;\n"
	       "fault us = target userfaultfd fault to page in place\n\n",
	       reps);
	printf("%-15s %9s %8s %8s %9s %8s %8s %7s %6s %6s %6s %6s %6s %6s %6s\n", "case",
	       "downtime", "total ms", "arrived", "bm raw K", "bm KiB", "bm us", "stale", "req",
	       "pushed", "faults", "p50us", "p99us", "maxus", "ok");
	for (int c = 0; c < ncases; c++) {
		const double *m = t->med[c];

		if (all[c].part != 1 || !t->ran[c])
			continue;
		if (!t->nok[c]) {
			printf("%-15s  all %d runs failed\n", all[c].label, reps);
			continue;
		}
		if (!strcmp(all[c].mode, "precopy"))
			printf("%-15s %7.3fms %8.0f %8s %9s %8s %8s %7s %6s %6s %6s %6s %6s %6s "
			       "%3d/%d\n",
			       all[c].label, m[F_DOWNTIME_MS], m[F_TOTAL_MS], "-", "-", "-", "-",
			       "-", "-", "-", "-", "-", "-", "-", t->nok[c], reps);
		else
			printf("%-15s %7.3fms %8.0f %8.0f %9.1f %8.2f %8.0f %7.0f %6.0f %6.0f "
			       "%6.0f %6.0f "
			       "%6.0f %6.0f %3d/%d\n",
			       all[c].label, m[F_DOWNTIME_MS], m[F_TOTAL_MS], m[F_ARRIVED_MS],
			       m[F_BM_RAW] / 1024, m[F_BM] / 1024, m[F_BM_US], m[F_STALE], m[F_REQ],
			       m[F_PUSH], m[F_FAULTS], m[F_P50], m[F_P99], m[F_MAX], t->nok[c],
			       reps);
		if (t->ncorrupt[c])
			printf("%-15s WARNING: CORRUPTION reported in %d run(s)\n", all[c].label,
			       t->ncorrupt[c]);
	}

	printf("\nwhere the downtime went (medians, us): pause = kicking the vCPUs out,\n"
	       "harvest = final harvest, send = final pages (precopy) or the bitmap (postcopy),\n"
	       "state = device/vCPU state + END, ack = waiting for the target's ACK, of which\n"
	       "restore = the target loading the state\n\n");
	printf("%-15s %9s %7s %8s %8s %8s %8s %8s\n", "case", "downtime", "pause", "harvest",
	       "send", "state", "ack", "restore");
	for (int c = 0; c < ncases; c++) {
		const double *m = t->med[c];

		if (!t->ran[c] || !t->nok[c])
			continue;
		printf("%-15s %9.0f %7.0f %8.0f %8.0f %8.0f %8.0f %8.0f\n", all[c].label,
		       m[F_DOWNTIME_MS] * 1e3, m[F_B_PAUSE], m[F_B_HARV], m[F_B_SEND], m[F_B_STATE],
		       m[F_B_ACK], m[F_B_RESTORE]);
	}

	printf("\nthe guest's pace (host CLOCK_MONOTONIC stamps of \"dirty pass N ok\" lines,\n"
	       "per pass = interval / pass-number difference):\n"
	       "before = median pass before the migration; switch = source's last line ->\n"
	       "target's first line (raw ms, and per pass); tgt 1->2 = target's first -> second\n"
	       "line per pass; x = ratio to the pass before\n\n");
	printf("%-15s %9s %10s %10s %7s %10s %7s\n", "case", "before ms", "switch raw",
	       "switch/pass", "x", "tgt 1->2", "x");
	for (int c = 0; c < ncases; c++) {
		const double *m = t->med[c];

		if (all[c].part != 1 || !t->nok[c])
			continue;
		printf("%-15s %9.1f %10.1f %10.1f %6.2fx %10.1f %6.2fx\n", all[c].label,
		       m[F_PASS_BEFORE], m[F_SWITCH_RAW], m[F_SWITCH_PP], m[F_R_SWITCH],
		       m[F_TGT12_PP], m[F_R_TGT12]);
	}

	printf("\nPart 2: precopy cannot converge: 1 GiB, 2 vCPUs over a 256 MiB working set,\n"
	       "--max-bandwidth 200M (bw50: 50M) --compress none (precopy: --max-time-ms 5000;\n"
	       "dt10: --downtime-ms 10)\n\n");
	printf("%-15s %10s %-9s %9s %8s %8s %8s %8s %6s %6s\n", "case", "downtime", "mode",
	       "converged", "passes", "total ms", "arrived", "stale", "x tgt", "ok");
	for (int c = 0; c < ncases; c++) {
		const double *m = t->med[c];

		if (all[c].part != 2 || !t->ran[c])
			continue;
		if (!t->nok[c]) {
			printf("%-15s  all %d runs failed\n", all[c].label, reps);
			continue;
		}
		printf("%-15s %8.2fms %-9s %6d/%-2d %8.0f %8.0f %8.0f %8.0f %5.2fx %3d/%d\n",
		       all[c].label, m[F_DOWNTIME_MS], t->mode_used[c], t->nconv[c], t->nok[c],
		       m[F_PASSES], m[F_TOTAL_MS], m[F_ARRIVED_MS], m[F_STALE], m[F_R_SWITCH],
		       t->nok[c], reps);
		if (t->ncorrupt[c])
			printf("%-15s WARNING: CORRUPTION reported in %d run(s)\n", all[c].label,
			       t->ncorrupt[c]);
	}

	/* targets, from medians of this run */
	if (ncases >= 6 && t->nok[3] && t->nok[4] && t->nok[5] && t->nok[1] && t->nok[2]) {
		double pre = t->med[3][F_DOWNTIME_MS], pc = t->med[4][F_DOWNTIME_MS];

		printf("\ntargets (4 GiB guest, this run):\n");
		printf("  postcopy downtime < 1 ms:                      %.3f ms  %s\n", pc,
		       pc < 1.0 ? "met" : "MISSED");
		printf("  postcopy downtime >= 5x below precopy:          %.3f / %.3f ms = %.1fx  "
		       "%s\n",
		       pre, pc, pc > 0 ? pre / pc : 0, pc > 0 && pre / pc >= 5 ? "met" : "MISSED");
		printf("  first target pass <= 1.5x with the bitmap:      %.2fx (tgt 1->2: %.2fx)  "
		       "%s\n",
		       t->med[4][F_R_SWITCH], t->med[4][F_R_TGT12],
		       t->med[4][F_R_SWITCH] <= 1.5 ? "met" : "MISSED");
		printf("  without the bitmap measurably slower:           %.2fx vs %.2fx  %s\n",
		       t->med[5][F_R_SWITCH], t->med[4][F_R_SWITCH],
		       t->med[5][F_R_SWITCH] > t->med[4][F_R_SWITCH] * 1.1 ? "yes" : "NO");
		printf("  (1 GiB: postcopy %.3f ms vs precopy %.3f ms; first pass %.2fx with the\n"
		       "   bitmap, %.2fx without)\n",
		       t->med[1][F_DOWNTIME_MS], t->med[0][F_DOWNTIME_MS], t->med[1][F_R_SWITCH],
		       t->med[2][F_R_SWITCH]);
	}
}

#endif /* VMM_BENCH_POSTCOPY_REPORT_H */
