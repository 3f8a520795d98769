/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_migrate: end-to-end live migrations over loopback, as a user runs
 * them: `vmm run` (source), `vmm run --incoming 127.0.0.1:PORT` (target)
 * and `vmm migrate --to 127.0.0.1:PORT --vm NAME --json`, whose JSON summary
 * is what we report (total time, downtime, bytes on the wire, pages sent /
 * zero / skipped, passes). Cases: idle and dirty (64 MiB working set,
 * 2 vCPUs, endless passes) 1 GiB and 4 GiB guests, an idle 64 GiB sparse
 * guest, and the 1 GiB dirty guest with 1 vs 4 connections and zstd vs no
 * compression. A dirty guest must go on printing "dirty pass N ok" on the
 * target (3 more lines, no CORRUPTION) before it is ended with SIGTERM.
 *
 * The same run measures this host's memcpy bandwidth (into touched and into
 * never-touched memory) and loopback TCP throughput (1 and 4 streams), and
 * prints each migration's throughput as a fraction of both (bench_limits_lib.c;
 * bench_limits reports them with zstd speeds).
 *
 * usage: bench_migrate [--reps N] [--csv FILE] [--vmm PATH] [--quick]
 */
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "bench_limits_lib.h"
#include "bench_mig_once.h"
#include "bench_util.h"
#include "clock.h"
#include "harness_json.h"
#include "harness_run.h"

#define PROG "bench_migrate"

static const char *vmm_path = VMM_BINARY;
static char tmpdir[64];

static void cleanup_tmpdir(void)
{
	bench_rm_tree(tmpdir);
}

static void print_targets(const char *what, double w1, double w4, double tcp1)
{
	printf("\nwire-rate targets, incompressible 1 GiB, no compression, %s: 1 connection at "
	       "%.0f%% of one TCP stream (target >= 80%%: %s); 4 connections %.2fx of 1 "
	       "(target >= 1.5x: %s)\n",
	       what, 100 * w1 / tcp1, w1 >= 0.8 * tcp1 ? "met" : "not met", w4 / w1,
	       w4 >= 1.5 * w1 ? "met" : "not met");
}

int main(int argc, char **argv)
{
	static const struct bm_case all[] = {
	    {"1G idle", "1G", false, 0, NULL, false, NULL, NULL, false, false, false},
	    {"1G dirty", "1G", true, 0, NULL, false, NULL, NULL, false, false, false},
	    {"4G idle", "4G", false, 0, NULL, false, NULL, NULL, false, false, false},
	    {"4G dirty", "4G", true, 0, NULL, false, NULL, NULL, false, false, false},
	    {"64G idle", "64G", false, 0, NULL, false, NULL, NULL, false, false, false},
	    {"1G dirty c1 none", "1G", true, 1, "none", false, NULL, NULL, false, false, false},
	    {"1G dirty c1 zstd", "1G", true, 1, "zstd", false, NULL, NULL, false, false, false},
	    {"1G dirty c4 none", "1G", true, 4, "none", false, NULL, NULL, false, false, false},
	    {"1G dirty c4 zstd", "1G", true, 4, "zstd", false, NULL, NULL, false, false, false},
	    {"1G dirty c4 none tls", "1G", true, 4, "none", true, NULL, NULL, false, false, false},
	    {"1G dirty c4 zstd tls", "1G", true, 4, "zstd", true, NULL, NULL, false, false, false},
	    /* the wire-rate targets: an idle guest over 1 GiB that does not compress, sent
	       uncompressed */
	    {"1G random idle c1 none", "2G", false, 1, "none", false, "1G", "random", false, false,
	     false},
	    {"1G random idle c4 none", "2G", false, 4, "none", false, "1G", "random", false, false,
	     false},
	    /* the same into a target whose RAM is resident ([vm] prealloc): no first touch */
	    {"1G random idle c1 none prealloc", "2G", false, 1, "none", false, "1G", "random", true,
	     false, false},
	    {"1G random idle c4 none prealloc", "2G", false, 4, "none", false, "1G", "random", true,
	     false, false},
	};
	const char *csv_path = NULL, *only = NULL;
	int reps = 3, ncases = (int)(sizeof(all) / sizeof(all[0])), run = 0, failures = 0;
	bool quick = false;
	FILE *csv = NULL;
	double med[16][13], wire_of[16] = {0};
	bool have[16] = {false};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--vmm") && i + 1 < argc)
			vmm_path = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else {
			fprintf(
			    stderr,
			    "usage: " PROG
			    " [--reps N] [--csv FILE] [--vmm PATH] [--quick] [--only SUBSTR]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 50)
		reps = 3;
	if (quick)
		ncases = 2;
	if (bench_open_outputs("bench_migrate", csv_path, &csv, tmpdir, sizeof(tmpdir)))
		return 1;
	atexit(cleanup_tmpdir);
	bm_init(vmm_path, tmpdir, PROG);
	if (bm_make_tls_files())
		return 1;
	signal(SIGPIPE, SIG_IGN);

	double mc_touched = bench_memcpy_gbps(1ull << 30, true),
	       mc_fresh = bench_memcpy_gbps(1ull << 30, false);
	double tcp1 = bench_tcp_gbps(1, 1ull << 30), tcp4 = bench_tcp_gbps(4, 1ull << 30);

	printf("host: memcpy 1 GiB %.1f GB/s into touched memory, %.2f GB/s into never-touched;\n"
	       "      loopback TCP 1 GiB: %.2f GB/s one stream, %.2f GB/s four streams\n\n",
	       mc_touched, mc_fresh, tcp1, tcp4);
	printf("migrations over 127.0.0.1, median of %d (dirty: 64 MiB working set, 2 vCPUs);\n"
	       "wire = bytes on the wire / total; RAM = guest pages carried (sent+zero) / total;\n"
	       "%%tcp, %%memcpy = wire rate as a fraction of one TCP stream / touched memcpy\n\n",
	       reps);
	printf("%-31s %8s %9s %8s %9s %6s %9s %8s %9s %7s %7s %7s %6s\n", "case", "total ms",
	       "downtime", "cli ms", "wire MiB", "passes", "pages", "zero", "skipped", "wire GB/s",
	       "%tcp", "%memcpy", "RAM GB/s");
	if (csv)
		fprintf(csv,
			"case,memory,dirty,connections,compress,reps,ok,total_ms,downtime_ms,"
			"cli_ms,sent_bytes,passes,pages_sent,zero_pages,skipped_pages,setup_ms,"
			"harvest_final_us,blackout_send_us,blackout_state_us,blackout_ack_us,"
			"wire_gbps,frac_tcp,frac_memcpy,memcpy_gbps,memcpy_fresh_gbps,"
			"tcp1_gbps,tcp4_gbps\n");
	for (int c = 0; c < ncases; c++) {
		const struct bm_case *mc = &all[c];

		if (only && !strstr(mc->label, only))
			continue;
		double v[13][50];
		int ok = 0;

		for (int r = 0; r < reps; r++) {
			struct bm_result res;

			if (bm_migrate_once(mc, run++, &res)) {
				failures++;
				continue;
			}
			double a[13] = {res.total_ms,
					res.downtime_ms,
					res.cli_ms,
					res.bytes,
					res.passes,
					res.pages,
					res.zero,
					res.skipped,
					res.setup_ms,
					res.harvest_final_us,
					res.blackout_send_us,
					res.blackout_state_us,
					res.blackout_ack_us};

			for (int k = 0; k < 13; k++)
				v[k][ok] = a[k];
			ok++;
		}
		if (!ok) {
			printf("%-31s  all %d runs failed\n", mc->label, reps);
			continue;
		}
		double m[13];

		for (int k = 0; k < 13; k++)
			m[k] = med[c][k] = bench_median(v[k], ok);
		have[c] = true;
		double wire = m[0] > 0 ? m[3] / (m[0] / 1e3) / 1e9 : 0;

		wire_of[c] = wire;
		double ram = m[0] > 0 ? (m[5] + m[6]) * 4096 / (m[0] / 1e3) / 1e9 : 0;

		printf(
		    "%-31s %8.1f %7.2fms %8.1f %9.1f %6.0f %9.0f %8.0f %9.0f %7.3f %6.1f%% %6.2f%% "
		    "%6.2f%s\n",
		    mc->label, m[0], m[1], m[2], m[3] / 1048576, m[4], m[5], m[6], m[7], wire,
		    100 * wire / tcp1, 100 * wire / mc_touched, ram,
		    ok < reps ? " (some runs failed)" : "");
		fflush(stdout);
		if (csv)
			fprintf(csv,
				"%s,%s,%d,%u,%s,%d,%d,%.1f,%.3f,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,"
				"%.0f,%.0f,%.0f,%.0f,%.4f,%.4f,%.4f,%.2f,%.2f,%.2f,%.2f\n",
				mc->label, mc->memory, mc->dirty, mc->connections,
				mc->compress ? mc->compress : "default", reps, ok, m[0], m[1], m[2],
				m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10], m[11], m[12], wire,
				wire / tcp1, wire / mc_touched, mc_touched, mc_fresh, tcp1, tcp4);
	}
	printf("\nwhere the time went (medians): setup ms, final harvest us, and the blackout:\n"
	       "final pages sent us, state us, waiting for the target's ack us\n\n");
	printf("%-31s %8s %9s %9s %9s %9s %9s\n", "case", "setup ms", "downtime", "harvest", "send",
	       "state", "ack");
	for (int c = 0; c < ncases; c++)
		if (have[c])
			printf("%-31s %8.0f %9.0f %9.0f %9.0f %9.0f %9.0f\n", all[c].label,
			       med[c][8], med[c][1] * 1e3, med[c][9], med[c][10], med[c][11],
			       med[c][12]);
	/* The targets, printed (not asserted): each "c1" case and the "c4" after it. */
	for (int c = 0; c + 1 < ncases; c++)
		if (strstr(all[c].label, "random idle c1") && have[c] && have[c + 1])
			print_targets(all[c].prealloc ? "into a preallocated target"
						      : "into a fresh target",
				      wire_of[c], wire_of[c + 1], tcp1);
	if (csv)
		fclose(csv);
	return failures ? 1 : 0;
}
