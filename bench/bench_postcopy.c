/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_postcopy: postcopy vs precopy stop-and-copy, end to end over
 * loopback, as a user runs them (`vmm run`, `vmm run --incoming`,
 * `vmm migrate --json`).
 *
 * Part 1, 1 GiB and 4 GiB guests, 2 vCPUs, `dirty` workload over a 64 MiB
 * working set, endless passes, heartbeat_ms=0 (a line each time the minimum
 * pass over all vCPUs advances):
 *   precopy      --mode precopy (stop-and-copy)
 *   postcopy     --mode postcopy (compressed final dirty bitmap, after 1 pass)
 *   pc-nobitmap  --mode postcopy --no-final-bitmap
 * reporting downtime (downtime_us), total time, and for postcopy the bitmap
 * raw/compressed size and send time, stale pages, requested vs pushed pages,
 * fault latency p50/p99/max, all_arrived_ms.
 *
 * The guest's own pace: every "vmm-firmware: dirty pass N ok" line of the
 * source's and the target's stdout is timestamped (host CLOCK_MONOTONIC) as
 * it is read in one poll loop. Pass time before = median interval between
 * consecutive source lines before `vmm migrate` starts, per pass (lines may
 * skip numbers: the interval is divided by the pass-number difference).
 * First pass on the target = source's last line -> target's first line (raw,
 * and per pass), and the target's first -> second line (per pass).
 *
 * Part 2, a guest precopy cannot converge on: 1 GiB, 2 vCPUs over a 256 MiB
 * working set, --max-bandwidth 200M --compress none: --mode precopy
 * --max-time-ms 5000 (switches over unconverged) vs --mode auto (falls back
 * to postcopy).
 *
 * Every run ends with SIGTERM to the target after a few target passes; a
 * CORRUPTION line on either side is reported as a warning row. Median of
 * --reps runs (3). No assertions.
 *
 * Part 2 also runs both with --downtime-ms 10: with the default 300 ms limit
 * the emulated guest (~20-40k pages/s) converges even at 200 MB/s.
 *
 * usage: bench_postcopy [--reps N] [--csv FILE] [--vmm PATH] [--quick] [--part 1|2]
 *                       [--only SUBSTR]   (cases whose label contains SUBSTR)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "bench_util.h"
#include "harness_json.h"
#include "harness_run.h"

#define PROG	 "bench_postcopy"
#define MAXLINES 4096

static const char *vmm_path = VMM_BINARY;
static char tmpdir[64];

/* ---- the guest's pace ---------------------------------------------------- */

#define PASS_RE "dirty pass [0-9]+ ok"

/*
 * The "dirty pass N ok" lines among console lines [0, upto): the host time
 * each was read (ms) and its N. Returns how many, at most MAXLINES.
 */
static int pass_lines(const struct hx_console *c, size_t upto, double *t, unsigned long *n)
{
	int k = 0;

	for (size_t i = 0; i < upto && k < MAXLINES; i++) {
		const char *line = hx_console_line(c, i), *p;

		if ((p = strstr(line, "dirty pass ")) && strstr(p, " ok")) {
			t[k] = c->lines[i].t_ms;
			n[k] = strtoul(p + 11, NULL, 10);
			k++;
		}
	}
	return k;
}

/* ---- one migration ------------------------------------------------------ */

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
				      "harvest_us_final",
				      "blackout_send_us",
				      "blackout_state_us",
				      "blackout_ack_us",
				      "target_restore_us"};

struct result {
	double f[NF];
	char mode_used[16];
	bool converged;
	bool corruption;
};

static int migrate_once(const struct pcase *pc, int run, struct result *r)
{
	char mem[64], ws[64], tsock[128], src[32], dst[32], mig[32], err[PATH_MAX + 256];
	struct hx_argv sargs = {0}, targs = {0}, margs = {0};
	static double st[MAXLINES], tt[MAXLINES];
	static unsigned long sn[MAXLINES], tn[MAXLINES];
	const char *corrupt_src, *corrupt_tgt;
	struct hx_run hr;
	struct hx_cmd c = {0};
	int ret = -1, before, ns, nt;
	size_t mark;
	cJSON *j;

	memset(r, 0, sizeof(*r));
	snprintf(mem, sizeof(mem), "vm.memory=%s", pc->memory);
	snprintf(ws, sizeof(ws), "workload.working_set=%s", pc->working_set);
	snprintf(tsock, sizeof(tsock), "%s/target-%d.sock", tmpdir, run);
	snprintf(src, sizeof(src), "source-%d", run);
	snprintf(dst, sizeof(dst), "target-%d", run);
	snprintf(mig, sizeof(mig), "migrate-%d", run);

	char *sets[] = {
	    "--set", mem, "--set", "workload.kind=dirty", "--set", "vm.vcpus=2",
	    "--set", ws,  "--set", "workload.passes=0",	  "--set", "workload.heartbeat_ms=0",
	    NULL};

	hx_argv_addv(&sargs, sets);
	hx_argv_add(&targs, "--api-socket");
	hx_argv_add(&targs, tsock);
	hx_argv_add(&margs, "--json");
	hx_argv_add(&margs, "--mode");
	hx_argv_add(&margs, pc->mode);
	if (pc->no_final_bitmap)
		hx_argv_add(&margs, "--no-final-bitmap");
	if (pc->max_bw) {
		hx_argv_add(&margs, "--max-bandwidth");
		hx_argv_add(&margs, pc->max_bw);
	}
	if (pc->compress) {
		hx_argv_add(&margs, "--compress");
		hx_argv_add(&margs, pc->compress);
	}
	if (pc->max_time) {
		hx_argv_add(&margs, "--max-time-ms");
		hx_argv_add(&margs, pc->max_time);
	}
	if (pc->downtime) {
		hx_argv_add(&margs, "--downtime-ms");
		hx_argv_add(&margs, pc->downtime);
	}
	hx_argv_add(&margs, "--timeout-ms");
	hx_argv_add(&margs, "60000");

	/* stdout on pipes: each console line is stamped the moment it is read */
	struct hx_run_opts o = {
	    .vmm = vmm_path,
	    .dir = tmpdir,
	    .src_stem = src,
	    .dst_stem = dst,
	    .mig_stem = mig,
	    .pipes = true,
	    .name = "pc",
	    .config = EXAMPLES_DIR "/dirty.cfg",
	    .source_args = sargs.v,
	    .target_args = targs.v,
	};

	if (hx_run_start(&hr, &o, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", pc->label, err);
		goto out;
	}
	/* the guest's pace before the migration: 5 lines (4 intervals), 4 if heavy */
	if (hx_wait_line(&hr.watch, &hr.src_out, PASS_RE, pc->part == 1 ? 5 : 4, 0, 60000, err,
			 sizeof(err)) ||
	    hx_console_corruption(&hr.src_out)) {
		fprintf(stderr, PROG ": %s: source guest did not start (see %s)\n", pc->label,
			hr.src_err);
		goto out;
	}
	mark = hr.src_out.nlines;
	if (hx_run_migrate(&hr, margs.v, 180000, &c, err, sizeof(err)) == -ETIMEDOUT)
		fprintf(stderr, PROG ": %s: vmm migrate did not finish in 180 s\n", pc->label);
	r->f[F_MIG_CLI_MS] = c.ms;
	if (c.code || !c.json) {
		fprintf(stderr, PROG ": %s: vmm migrate failed (status 0x%x): %.300s (see %s)\n",
			pc->label, c.proc.status, c.out.text ? c.out.text : "", c.err_path);
		goto out;
	}
	j = c.json;
	/* a few passes on the target */
	if (hx_wait_line(&hr.watch, &hr.dst_out, PASS_RE, pc->part == 1 ? 4 : 3, 0, 30000, err,
			 sizeof(err)) ||
	    hx_console_corruption(&hr.dst_out)) {
		corrupt_tgt = hx_console_corruption(&hr.dst_out);
		fprintf(stderr, PROG ": %s: target guest did not continue cleanly%s (see %s)\n",
			pc->label, corrupt_tgt ? " (CORRUPTION)" : "", hr.dst_err);
		if (!corrupt_tgt)
			goto out;
	}

	r->f[F_DOWNTIME_MS] = hx_json_num(j, "downtime_us") / 1e3;
	r->f[F_TOTAL_MS] = hx_json_num(j, "total_ms");
	r->f[F_ARRIVED_MS] = hx_json_num(j, "all_arrived_ms");
	r->f[F_BM_RAW] = hx_json_num(j, "bitmap_raw_bytes");
	r->f[F_BM] = hx_json_num(j, "bitmap_bytes");
	r->f[F_BM_US] = hx_json_num(j, "bitmap_send_us");
	r->f[F_STALE] = hx_json_num(j, "postcopy_pages");
	r->f[F_REQ] = hx_json_num(j, "pages_requested");
	r->f[F_PUSH] = hx_json_num(j, "pages_pushed");
	r->f[F_FAULTS] = hx_json_num(j, "faults");
	r->f[F_P50] = hx_json_num(j, "fault_p50_us");
	r->f[F_P99] = hx_json_num(j, "fault_p99_us");
	r->f[F_MAX] = hx_json_num(j, "fault_max_us");
	r->f[F_PASSES] = hx_json_num(j, "pass");
	r->f[F_B_PAUSE] = hx_json_num(j, "blackout_pause_us");
	r->f[F_B_HARV] = hx_json_num(j, "harvest_us_final");
	r->f[F_B_SEND] = hx_json_num(j, "blackout_send_us");
	r->f[F_B_STATE] = hx_json_num(j, "blackout_state_us");
	r->f[F_B_ACK] = hx_json_num(j, "blackout_ack_us");
	r->f[F_B_RESTORE] = hx_json_num(j, "target_restore_us");
	cJSON *mu = cJSON_GetObjectItemCaseSensitive(j, "mode_used");
	cJSON *cv = cJSON_GetObjectItemCaseSensitive(j, "converged");

	snprintf(r->mode_used, sizeof(r->mode_used), "%s",
		 cJSON_IsString(mu) ? mu->valuestring : "?");
	r->converged = cJSON_IsTrue(cv);

	/* pass time before the migration: per-pass intervals of source lines */
	double iv[MAXLINES];
	int ni = 0;

	before = pass_lines(&hr.src_out, mark, st, sn);
	ns = pass_lines(&hr.src_out, hr.src_out.nlines, st, sn);
	nt = pass_lines(&hr.dst_out, hr.dst_out.nlines, tt, tn);
	for (int i = 1; i < before; i++)
		if (sn[i] > sn[i - 1])
			iv[ni++] = (st[i] - st[i - 1]) / (double)(sn[i] - sn[i - 1]);
	r->f[F_PASS_BEFORE] = bench_median(iv, ni);
	if (ns > 0 && nt > 0) {
		int sl = ns - 1;
		double raw = tt[0] - st[sl];
		long dn = (long)tn[0] - (long)sn[sl];

		r->f[F_SWITCH_RAW] = raw;
		r->f[F_SWITCH_PP] = dn > 0 ? raw / (double)dn : raw;
		r->f[F_R_SWITCH] =
		    r->f[F_PASS_BEFORE] > 0 ? r->f[F_SWITCH_PP] / r->f[F_PASS_BEFORE] : 0;
	}
	if (nt > 1 && tn[1] > tn[0]) {
		r->f[F_TGT12_PP] = (tt[1] - tt[0]) / (double)(tn[1] - tn[0]);
		r->f[F_R_TGT12] =
		    r->f[F_PASS_BEFORE] > 0 ? r->f[F_TGT12_PP] / r->f[F_PASS_BEFORE] : 0;
	}
	corrupt_src = hx_console_corruption(&hr.src_out);
	corrupt_tgt = hx_console_corruption(&hr.dst_out);
	r->corruption = corrupt_src || corrupt_tgt;
	if (r->corruption) /* the start of the line: it names the page */
		fprintf(stderr, PROG ": %s: WARNING: %.255s\n", pc->label,
			corrupt_tgt ? corrupt_tgt : corrupt_src);
	ret = 0;
out:
	/* after a good migration the source exits by itself; give it a moment */
	if (!ret && hx_run_wait_exit(&hr, &hr.src, 3000, err, sizeof(err)))
		fprintf(stderr, PROG ": %s: source still running after the migration\n", pc->label);
	hx_cmd_free(&c);
	hx_run_end(&hr);
	unlink(tsock);
	unlink(hr.src_err);
	unlink(hr.dst_err);
	unlink(c.err_path);
	hx_argv_free(&sargs);
	hx_argv_free(&targs);
	hx_argv_free(&margs);
	return ret;
}

static void cleanup_tmpdir(void)
{
	bench_rm_tree(tmpdir);
}

int main(int argc, char **argv)
{
	static const struct pcase all[] = {
	    {"1G precopy", "1G", "64M", "precopy", false, NULL, NULL, NULL, 1, NULL},
	    {"1G postcopy", "1G", "64M", "postcopy", false, NULL, NULL, NULL, 1, NULL},
	    {"1G pc-nobitmap", "1G", "64M", "postcopy", true, NULL, NULL, NULL, 1, NULL},
	    {"4G precopy", "4G", "64M", "precopy", false, NULL, NULL, NULL, 1, NULL},
	    {"4G postcopy", "4G", "64M", "postcopy", false, NULL, NULL, NULL, 1, NULL},
	    {"4G pc-nobitmap", "4G", "64M", "postcopy", true, NULL, NULL, NULL, 1, NULL},
	    {"heavy precopy", "1G", "256M", "precopy", false, "200M", "none", "5000", 2, NULL},
	    {"heavy auto", "1G", "256M", "auto", false, "200M", "none", NULL, 2, NULL},
	    /* the default 300 ms downtime limit lets the emulated guest converge: ask 10 ms */
	    {"heavy pre dt10", "1G", "256M", "precopy", false, "200M", "none", "5000", 2, "10"},
	    {"heavy auto dt10", "1G", "256M", "auto", false, "200M", "none", NULL, 2, "10"},
	    /* a link slower than the guest's dirty rate (~80-160 MB/s): cannot converge */
	    {"heavy pre bw50", "1G", "256M", "precopy", false, "50M", "none", "5000", 2, NULL},
	    {"heavy auto bw50", "1G", "256M", "auto", false, "50M", "none", NULL, 2, NULL},
	};
	enum { NCASES = sizeof(all) / sizeof(all[0]) };
	const char *csv_path = NULL, *only = NULL;
	int reps = 3, ncases = NCASES, run = 0, failures = 0, part_only = 0;
	FILE *csv = NULL;
	static double med[NCASES][NF];
	static char mode_used[NCASES][48];
	static int nconv[NCASES], nok[NCASES], ncorrupt[NCASES];
	static bool ran[NCASES];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--vmm") && i + 1 < argc)
			vmm_path = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			ncases = 3;
		else if (!strcmp(argv[i], "--part") && i + 1 < argc)
			part_only = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else {
			fprintf(stderr,
				"usage: " PROG " [--reps N] [--csv FILE] [--vmm PATH] [--quick] "
				"[--part 1|2] [--only SUBSTR]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 50)
		reps = 3;
	if (csv_path && !(csv = fopen(csv_path, "w"))) {
		perror(csv_path);
		return 1;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bench_postcopy.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("VMM_RUN_DIR", tmpdir, 1);
	atexit(cleanup_tmpdir);
	signal(SIGPIPE, SIG_IGN);

	if (csv) {
		fprintf(csv, "case,memory,working_set,mode,no_final_bitmap,max_bandwidth,compress,"
			     "max_time_ms,reps,ok,corrupt,mode_used,converged_runs");
		for (int k = 0; k < NF; k++)
			fprintf(csv, ",%s", fname[k]);
		fputc('\n', csv);
	}
	for (int c = 0; c < ncases; c++) {
		const struct pcase *pc = &all[c];
		static double v[NF][50];
		int ok = 0;

		if ((part_only && pc->part != part_only) || (only && !strstr(pc->label, only)))
			continue;
		ran[c] = true;
		for (int r = 0; r < reps; r++) {
			struct result res;

			if (migrate_once(pc, run++, &res)) {
				failures++;
				continue;
			}
			for (int k = 0; k < NF; k++)
				v[k][ok] = res.f[k];
			if (res.corruption)
				ncorrupt[c]++;
			if (res.converged)
				nconv[c]++;
			if (!strstr(mode_used[c], res.mode_used) &&
			    strlen(mode_used[c]) + strlen(res.mode_used) + 2 <
				sizeof(mode_used[c])) {
				if (mode_used[c][0])
					strcat(mode_used[c], "/");
				strcat(mode_used[c], res.mode_used);
			}
			ok++;
			fprintf(stderr,
				PROG ": %s run %d: downtime %.3f ms (pause %.0f, ack %.0f, restore "
				     "%.0f us), total %.0f ms, mode %s\n",
				pc->label, r + 1, res.f[F_DOWNTIME_MS], res.f[F_B_PAUSE],
				res.f[F_B_ACK], res.f[F_B_RESTORE], res.f[F_TOTAL_MS],
				res.mode_used);
		}
		nok[c] = ok;
		for (int k = 0; k < NF; k++)
			med[c][k] = bench_median(v[k], ok);
		if (csv) {
			fprintf(csv, "%s,%s,%s,%s,%d,%s,%s,%s,%d,%d,%d,%s,%d", pc->label,
				pc->memory, pc->working_set, pc->mode, pc->no_final_bitmap,
				pc->max_bw ? pc->max_bw : "",
				pc->compress ? pc->compress : "default",
				pc->max_time ? pc->max_time : "", reps, ok, ncorrupt[c],
				mode_used[c], nconv[c]);
			for (int k = 0; k < NF; k++)
				fprintf(csv, ",%.3f", med[c][k]);
			fputc('\n', csv);
			fflush(csv);
		}
	}

	printf("Part 1: 2 vCPUs dirtying a 64 MiB working set, loopback, median of %d\n"
	       "downtime = pause to target resume (downtime_us); arrived = switchover to\n"
	       "the last page on the target; stale = pages stale on the target at switchover;\n"
	       "fault us = target userfaultfd fault to page in place\n\n",
	       reps);
	printf("%-15s %9s %8s %8s %9s %8s %8s %7s %6s %6s %6s %6s %6s %6s %6s\n", "case",
	       "downtime", "total ms", "arrived", "bm raw K", "bm KiB", "bm us", "stale", "req",
	       "pushed", "faults", "p50us", "p99us", "maxus", "ok");
	for (int c = 0; c < ncases; c++) {
		const double *m = med[c];

		if (all[c].part != 1 || !ran[c])
			continue;
		if (!nok[c]) {
			printf("%-15s  all %d runs failed\n", all[c].label, reps);
			continue;
		}
		if (!strcmp(all[c].mode, "precopy"))
			printf("%-15s %7.3fms %8.0f %8s %9s %8s %8s %7s %6s %6s %6s %6s %6s %6s "
			       "%3d/%d\n",
			       all[c].label, m[F_DOWNTIME_MS], m[F_TOTAL_MS], "-", "-", "-", "-",
			       "-", "-", "-", "-", "-", "-", "-", nok[c], reps);
		else
			printf("%-15s %7.3fms %8.0f %8.0f %9.1f %8.2f %8.0f %7.0f %6.0f %6.0f "
			       "%6.0f %6.0f "
			       "%6.0f %6.0f %3d/%d\n",
			       all[c].label, m[F_DOWNTIME_MS], m[F_TOTAL_MS], m[F_ARRIVED_MS],
			       m[F_BM_RAW] / 1024, m[F_BM] / 1024, m[F_BM_US], m[F_STALE], m[F_REQ],
			       m[F_PUSH], m[F_FAULTS], m[F_P50], m[F_P99], m[F_MAX], nok[c], reps);
		if (ncorrupt[c])
			printf("%-15s WARNING: CORRUPTION reported in %d run(s)\n", all[c].label,
			       ncorrupt[c]);
	}

	printf("\nwhere the downtime went (medians, us): pause = kicking the vCPUs out,\n"
	       "harvest = final harvest, send = final pages (precopy) or the bitmap (postcopy),\n"
	       "state = device/vCPU state + END, ack = waiting for the target's ACK, of which\n"
	       "restore = the target loading the state\n\n");
	printf("%-15s %9s %7s %8s %8s %8s %8s %8s\n", "case", "downtime", "pause", "harvest",
	       "send", "state", "ack", "restore");
	for (int c = 0; c < ncases; c++) {
		const double *m = med[c];

		if (!ran[c] || !nok[c])
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
		const double *m = med[c];

		if (all[c].part != 1 || !nok[c])
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
		const double *m = med[c];

		if (all[c].part != 2 || !ran[c])
			continue;
		if (!nok[c]) {
			printf("%-15s  all %d runs failed\n", all[c].label, reps);
			continue;
		}
		printf("%-15s %8.2fms %-9s %6d/%-2d %8.0f %8.0f %8.0f %8.0f %5.2fx %3d/%d\n",
		       all[c].label, m[F_DOWNTIME_MS], mode_used[c], nconv[c], nok[c], m[F_PASSES],
		       m[F_TOTAL_MS], m[F_ARRIVED_MS], m[F_STALE], m[F_R_SWITCH], nok[c], reps);
		if (ncorrupt[c])
			printf("%-15s WARNING: CORRUPTION reported in %d run(s)\n", all[c].label,
			       ncorrupt[c]);
	}

	/* targets, from medians of this run */
	if (ncases >= 6 && nok[3] && nok[4] && nok[5] && nok[1] && nok[2]) {
		double pre = med[3][F_DOWNTIME_MS], pc = med[4][F_DOWNTIME_MS];

		printf("\ntargets (4 GiB guest, this run):\n");
		printf("  postcopy downtime < 1 ms:                      %.3f ms  %s\n", pc,
		       pc < 1.0 ? "met" : "MISSED");
		printf("  postcopy downtime >= 5x below precopy:          %.3f / %.3f ms = %.1fx  "
		       "%s\n",
		       pre, pc, pc > 0 ? pre / pc : 0, pc > 0 && pre / pc >= 5 ? "met" : "MISSED");
		printf("  first target pass <= 1.5x with the bitmap:      %.2fx (tgt 1->2: %.2fx)  "
		       "%s\n",
		       med[4][F_R_SWITCH], med[4][F_R_TGT12],
		       med[4][F_R_SWITCH] <= 1.5 ? "met" : "MISSED");
		printf("  without the bitmap measurably slower:           %.2fx vs %.2fx  %s\n",
		       med[5][F_R_SWITCH], med[4][F_R_SWITCH],
		       med[5][F_R_SWITCH] > med[4][F_R_SWITCH] * 1.1 ? "yes" : "NO");
		printf("  (1 GiB: postcopy %.3f ms vs precopy %.3f ms; first pass %.2fx with the\n"
		       "   bitmap, %.2fx without)\n",
		       med[1][F_DOWNTIME_MS], med[0][F_DOWNTIME_MS], med[1][F_R_SWITCH],
		       med[2][F_R_SWITCH]);
	}
	if (csv)
		fclose(csv);
	return failures ? 1 : 0;
}
