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

#include "bench_postcopy_report.h"
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

	char *sets[] = {"--set", mem,
			"--set", "workload.kind=dirty",
			"--set", "vm.vcpus=2",
			"--set", ws,
			"--set", "workload.passes=0",
			"--set", "workload.heartbeat_ms=0",
			"--set", "workload.min_pass_ms=0",
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
	r->f[F_B_HARV] = hx_json_num(j, "harvest_final_us");
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
	_Static_assert(NCASES <= MAX_CASES, "struct tally holds MAX_CASES cases");
	const char *csv_path = NULL, *only = NULL;
	int reps = 3, ncases = NCASES, run = 0, failures = 0, part_only = 0;
	FILE *csv = NULL;
	static struct tally t;

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
	if (bench_open_outputs("bench_postcopy", csv_path, &csv, tmpdir, sizeof(tmpdir)))
		return 1;
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
		t.ran[c] = true;
		for (int r = 0; r < reps; r++) {
			struct result res;

			if (migrate_once(pc, run++, &res)) {
				failures++;
				continue;
			}
			for (int k = 0; k < NF; k++)
				v[k][ok] = res.f[k];
			if (res.corruption)
				t.ncorrupt[c]++;
			if (res.converged)
				t.nconv[c]++;
			if (!strstr(t.mode_used[c], res.mode_used) &&
			    strlen(t.mode_used[c]) + strlen(res.mode_used) + 2 <
				sizeof(t.mode_used[c])) {
				if (t.mode_used[c][0])
					strcat(t.mode_used[c], "/");
				strcat(t.mode_used[c], res.mode_used);
			}
			ok++;
			fprintf(stderr,
				PROG ": %s run %d: downtime %.3f ms (pause %.0f, ack %.0f, restore "
				     "%.0f us), total %.0f ms, mode %s\n",
				pc->label, r + 1, res.f[F_DOWNTIME_MS], res.f[F_B_PAUSE],
				res.f[F_B_ACK], res.f[F_B_RESTORE], res.f[F_TOTAL_MS],
				res.mode_used);
		}
		t.nok[c] = ok;
		for (int k = 0; k < NF; k++)
			t.med[c][k] = bench_median(v[k], ok);
		if (csv) {
			fprintf(csv, "%s,%s,%s,%s,%d,%s,%s,%s,%d,%d,%d,%s,%d", pc->label,
				pc->memory, pc->working_set, pc->mode, pc->no_final_bitmap,
				pc->max_bw ? pc->max_bw : "",
				pc->compress ? pc->compress : "default",
				pc->max_time ? pc->max_time : "", reps, ok, t.ncorrupt[c],
				t.mode_used[c], t.nconv[c]);
			for (int k = 0; k < NF; k++)
				fprintf(csv, ",%.3f", t.med[c][k]);
			fputc('\n', csv);
			fflush(csv);
		}
	}

	print_report(all, ncases, reps, &t);
	if (csv)
		fclose(csv);
	return failures ? 1 : 0;
}
