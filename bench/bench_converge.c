/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_converge: a guest that writes faster than the link, migrated four
 * ways side by side, interleaved (one run of each, then the next round) so
 * host noise hits all of them:
 *
 *   auto        vmm --mode auto: precopy, then postcopy once passes stop
 *               shrinking the rest (the default)
 *   throttle    vmm --mode precopy --converge throttle
 *   switchover  vmm --mode precopy --no-converge switchover: a stop-and-copy
 *               of whatever is left once passes stop shrinking it
 *   qemu-ac     QEMU 7.2 microvm, precopy with the auto-converge capability
 *               (its CPU throttle: 20 % first, +10 % a step, at most 99 %)
 *
 * The guest (the project's firmware, 1 vCPU; QEMU boots the same ELF
 * through its PVH entry) rewrites a hot set of random words (they do not
 * compress; QEMU's RAM file is prefilled, guest_prefill.h) at a set rate,
 * twice the link's page rate: [workload] dirty_rate against --max-bandwidth
 * (QEMU: max-bandwidth) with no compression on either, so the premise is
 * set, not hoped for. It makes up no lag (catch_up_ms = 0): time it does
 * not run is work it does not do, so what a strategy costs shows in its
 * own work. vCPU 0 prints the pages written every 100 ms (work_ms), on
 * both VMMs; guest_work.c turns those lines into the guest's work rate
 * before and during the migration, what the migration cost it, and the
 * longest gap between two lines (the guest's longest stall, as a client of
 * its would see it, to 100 ms; the ping responder of bench_netgap is
 * another workload of the firmware and cannot run beside this one).
 *
 * Reported per strategy: how many runs converged or completed and verified
 * (the guest goes on verifying on the target, no CORRUPTION), total time
 * and downtime as each VMM reports them (vmm's --json summary, QEMU's
 * query-migrate), the guest's work rate during the migration, its cost,
 * the longest stall, and the highest throttle. No assertions. Without
 * qemu-system-x86_64 the QEMU column says so.
 *
 * Rounds: 5, --quick 2, or --reps N; --only NAME runs one strategy.
 *
 * usage: bench_converge [--quick] [--reps N] [--only NAME] [--csv FILE] [--vmm PATH]
 *                       [--qemu PATH] [--firmware PATH]
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "bench_util.h"
#include "guest_prefill.h"
#include "guest_work.h"
#include "harness_json.h"
#include "harness_net.h"
#include "harness_run.h"
#include "qemu_mig.h"

#define PROG		   "bench_converge"
#define MEM		   "256M"
#define HOT		   "4M" /* 1024 pages, rewritten in random order */
#define HOT_BYTES	   (4ull << 20)
#define LINK_BYTES	   (2ll << 20) /* --max-bandwidth: ~509 raw pages/s with headers */
#define DIRTY_RATE	   1024	       /* pages/s: twice the link */
#define DOWNTIME_MS	   300
#define WORK_MS		   100
#define WORK_RE		   "dirty work [0-9]+ pages"
#define READY_LINES	   30 /* 3 s of work lines: the rate before */
#define AFTER_LINES	   20 /* 2 s on the target */
#define READY_TIMEOUT_MS   (180 * 1000)
#define MIGRATE_TIMEOUT_MS (300 * 1000)
#define MAXREPS		   16
#define MAXSAMPLES	   20000

enum strategy { S_AUTO, S_THROTTLE, S_SWITCHOVER, S_QEMU, S_COUNT };
static const char *const names[S_COUNT] = {"auto", "throttle", "switchover", "qemu-ac"};

struct result {
	bool migrated, verified;
	double total_ms, downtime_ms, passes, throttle_pct, slept_ms;
	char how[32]; /* mode_used / switchover_reason, or QEMU's "auto-converge" */
	struct gw_result work;
};

static const char *vmm_bin = VMM_BINARY, *qemu_bin = "qemu-system-x86_64", *firmware = VMM_FIRMWARE;
static char tmpdir[64];
static struct gw_sample samples[MAXSAMPLES];

#define die(...) bench_die(PROG, tmpdir, __VA_ARGS__)

/* The work before and during the migration, from both consoles; then the guest goes on. */
static int measure(struct hx_watch *w, struct hx_console *src, struct hx_console *dst, double t0,
		   double t1, struct result *res, char *err, size_t errlen)
{
	const char *c;
	int n, r = hx_wait_line(w, dst, WORK_RE, AFTER_LINES, 0, 60000, err, errlen);

	if (!r)
		r = hx_wait_line(w, dst, "dirty pass [0-9]+ ok", 2, 0, 60000, err, errlen);
	n = gw_collect(src, dst, samples, MAXSAMPLES);
	gw_measure(samples, n, t0, t1, 3000, &res->work);
	c = hx_console_corruption(dst);
	if (!c)
		c = hx_console_corruption(src);
	if (c) {
		snprintf(err, errlen, "%s", c);
		return -EIO;
	}
	return r;
}

/* ---- vmm --------------------------------------------------------------------- */

static int vmm_once(enum strategy s, int rep, struct result *res)
{
	struct hx_argv sa = {0}, ma = {0};
	struct hx_run r;
	struct hx_cmd cmd = {0};
	char err[PATH_MAX + 512], name[48], sstem[64], dstem[64], mstem[64];
	double t0, t1;
	int ret;

	snprintf(name, sizeof(name), "vmm-%s-%d", names[s], rep);
	snprintf(sstem, sizeof(sstem), "%s.src", name);
	snprintf(dstem, sizeof(dstem), "%s.dst", name);
	snprintf(mstem, sizeof(mstem), "%s.mig", name);
	hx_argv_add(&sa, "--set=vm.memory=" MEM);
	hx_argv_add(&sa, "--set=vm.vcpus=1");
	hx_argv_add(&sa, "--set=workload.kind=dirty");
	hx_argv_add(&sa, "--set=workload.working_set=" HOT);
	hx_argv_addf(&sa, "--set=workload.dirty_rate=%d", DIRTY_RATE);
	hx_argv_add(&sa, "--set=workload.catch_up_ms=0");
	hx_argv_addf(&sa, "--set=workload.work_ms=%d", WORK_MS);
	hx_argv_add(&sa, "--set=workload.passes=0");
	hx_argv_add(&sa, "--set=workload.min_pass_ms=0");
	hx_argv_add(&sa, "--set=workload.heartbeat_ms=1000");
	hx_argv_add(&sa, "--set=workload.fill=random");
	hx_argv_add(&sa, "--set=workload.order=random");
	hx_argv_add(&sa, "--set=console.input=none");
	struct hx_run_opts o = {
	    .vmm = vmm_bin,
	    .dir = tmpdir,
	    .src_stem = sstem,
	    .dst_stem = dstem,
	    .mig_stem = mstem,
	    .pipes = true,
	    .name = name,
	    .config = EXAMPLES_DIR "/dirty.cfg",
	    .source_args = sa.v,
	    .target_args = (char *[]){"--set=console.input=none", NULL},
	};
	ret = hx_run_start(&r, &o, err, sizeof(err));
	hx_argv_free(&sa);
	if (!ret)
		ret = hx_wait_line(&r.watch, &r.src_out, WORK_RE, READY_LINES, 0, READY_TIMEOUT_MS,
				   err, sizeof(err));
	hx_argv_add(&ma, "--mode");
	hx_argv_add(&ma, s == S_AUTO ? "auto" : "precopy");
	if (s == S_THROTTLE)
		hx_argv_add(&ma, "--converge=throttle");
	if (s == S_SWITCHOVER)
		hx_argv_add(&ma, "--no-converge=switchover");
	hx_argv_add(&ma, "--compress=none");
	hx_argv_addf(&ma, "--max-bandwidth=%lld", LINK_BYTES);
	hx_argv_addf(&ma, "--downtime-ms=%d", DOWNTIME_MS);
	hx_argv_add(&ma, "--json");
	t0 = bench_now_ms();
	if (!ret)
		ret = hx_run_migrate(&r, ma.v, MIGRATE_TIMEOUT_MS, &cmd, err, sizeof(err));
	t1 = bench_now_ms();
	hx_argv_free(&ma);
	if (!ret && (cmd.code != 0 || !cmd.json)) {
		snprintf(err, sizeof(err), "vmm migrate exited %d (see %s)", cmd.code,
			 cmd.err_path);
		ret = -EIO;
	}
	if (!ret) {
		const cJSON *why = cJSON_GetObjectItem(cmd.json, "switchover_reason");

		res->migrated = true;
		res->total_ms = hx_json_num(cmd.json, "total_ms");
		res->downtime_ms = hx_json_num(cmd.json, "downtime_us") / 1000.0;
		res->passes = hx_json_num(cmd.json, "pass");
		res->slept_ms = hx_json_num(cmd.json, "throttle_slept_ms");
		res->throttle_pct = hx_json_num(cmd.json, "throttle_peak_pct");
		snprintf(res->how, sizeof(res->how), "%s",
			 cJSON_IsString(why) ? why->valuestring : "?");
		ret = measure(&r.watch, &r.src_out, &r.dst_out, t0, t1, res, err, sizeof(err));
	}
	res->verified = !ret;
	if (ret)
		fprintf(stderr, PROG ": %s: %s\n", name, err);
	hx_cmd_free(&cmd);
	hx_run_end(&r);
	return ret;
}

/* ---- QEMU -------------------------------------------------------------------- */

static int qemu_spawn(struct qvm *q, const char *name, int incoming, char *ram, size_t ramlen,
		      char *err, size_t errlen)
{
	struct hx_argv a = {0};
	uint64_t free_start = 0, ram_bytes = 256ull << 20;
	int r = 0;

	hx_argv_add(&a, qemu_bin);
	hx_argv_split(&a, QVM_FIRMWARE_ARGS);
	hx_argv_add(&a, "-m");
	hx_argv_add(&a, MEM);
	hx_argv_add(&a, "-object");
	if (incoming > 0) {
		hx_argv_add(&a, "memory-backend-ram,id=ram0,size=" MEM);
	} else {
		/* The random fill, written before QEMU maps the file (guest_prefill.h). */
		snprintf(ram, ramlen, "/dev/shm/%s-%d.%s.ram", PROG, (int)getpid(), name);
		r = prefill_pvh_free_start(firmware, &free_start, err, errlen);
		if (!r)
			r = prefill_ram_file(ram, ram_bytes, free_start, HOT_BYTES, err, errlen);
		hx_argv_addf(&a, "memory-backend-file,id=ram0,size=" MEM ",mem-path=%s,share=on",
			     ram);
	}
	hx_argv_add(&a, "-machine");
	hx_argv_add(&a, "memory-backend=ram0");
	hx_argv_add(&a, "-kernel");
	hx_argv_add(&a, firmware);
	hx_argv_add(&a, "-append");
	hx_argv_addf(&a,
		     "vmm.workload=dirty vmm.working_set=" HOT " vmm.dirty_rate=%d "
		     "vmm.catch_up_ms=0 vmm.work_ms=%d vmm.passes=0 vmm.heartbeat_ms=1000 "
		     "vmm.fill=random vmm.prefilled=true vmm.order=random",
		     DIRTY_RATE, WORK_MS);
	if (!r)
		r = qvm_start(q, name, tmpdir, a.v, incoming, err, errlen);
	hx_argv_free(&a);
	return r;
}

static int qemu_once(int rep, struct result *res)
{
	struct qvm src, dst;
	struct hx_watch w = {0};
	struct qvm_mig_opts mo = {
	    .downtime_ms = DOWNTIME_MS, .max_bandwidth = LINK_BYTES, .auto_converge = true};
	struct qvm_mig_result mr = {0};
	char err[512], sname[64], dname[64], ram[PATH_MAX] = "";
	int port = hx_free_port(), ret;
	double t0, t1;

	snprintf(sname, sizeof(sname), "qemu-ac-%d.src", rep);
	snprintf(dname, sizeof(dname), "qemu-ac-%d.dst", rep);
	memset(&src, 0, sizeof(src));
	src.qmp.fd = -1;
	ret = qemu_spawn(&dst, dname, port, NULL, 0, err, sizeof(err));
	if (!ret)
		ret = qemu_spawn(&src, sname, 0, ram, sizeof(ram), err, sizeof(err));
	hx_watch_add(&w, &src.out);
	hx_watch_add(&w, &dst.out);
	if (!ret)
		ret = qvm_prepare(&dst, &mo, err, sizeof(err));
	if (!ret)
		ret = qvm_prepare(&src, &mo, err, sizeof(err));
	if (!ret)
		ret = hx_wait_line(&w, &src.out, WORK_RE, READY_LINES, 0, READY_TIMEOUT_MS, err,
				   sizeof(err));
	t0 = bench_now_ms();
	if (!ret)
		ret = qvm_migrate(&src, &w, port, false, MIGRATE_TIMEOUT_MS, &mr, err, sizeof(err));
	t1 = bench_now_ms();
	if (!ret) {
		res->migrated = true;
		res->total_ms = mr.total_ms;
		res->downtime_ms = mr.downtime_ms;
		res->throttle_pct = mr.throttle_max_pct;
		res->passes = -1;
		res->slept_ms = -1;
		snprintf(res->how, sizeof(res->how), "auto-converge");
		ret = measure(&w, &src.out, &dst.out, t0, t1, res, err, sizeof(err));
	}
	res->verified = !ret;
	if (ret)
		fprintf(stderr, PROG ": %s: %s (see %s/%s.err)\n", sname, err, tmpdir, sname);
	qvm_end(&src);
	qvm_end(&dst);
	if (ram[0])
		unlink(ram);
	return ret;
}

/* ---- the table ----------------------------------------------------------------- */

struct series {
	double total[MAXREPS], down[MAXREPS], during[MAXREPS], cost[MAXREPS], stall[MAXREPS],
	    peak[MAXREPS];
	int n, nwork, runs, verified;
	bool qemu_missing;
};

static void add(struct series *s, const struct result *r)
{
	s->runs++;
	s->verified += r->verified;
	if (!r->migrated)
		return;
	s->total[s->n] = r->total_ms;
	s->down[s->n] = r->downtime_ms;
	s->peak[s->n] = r->throttle_pct;
	s->n++;
	if (!r->work.ok)
		return;
	s->during[s->nwork] = r->work.rate_during;
	s->cost[s->nwork] = r->work.cost_pct;
	s->stall[s->nwork] = r->work.stall_ms;
	s->nwork++;
}

/* "median (min-max)" into buf, or "-" without numbers. */
static const char *cell(char *buf, size_t len, const double *v, int n, const char *fmt)
{
	double c[MAXREPS];
	char f[64];

	if (!n)
		return "-";
	memcpy(c, v, sizeof(double) * (size_t)n);
	snprintf(f, sizeof(f), "%s (%s-%s)", fmt, fmt, fmt);
	snprintf(buf, len, f, bench_median(c, n), bench_min(v, n), bench_max(v, n));
	return buf;
}

static void table(const struct series *s)
{
	char b[6][64];

	printf("| strategy | migrated and verified | total ms | downtime ms | guest pages/s during "
	       "| guest work lost %% | longest guest stall ms | highest throttle %% |\n"
	       "|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < S_COUNT; i++) {
		const struct series *v = &s[i];

		if (!v->runs)
			continue;
		if (v->qemu_missing) {
			printf("| %s | %s not installed | - | - | - | - | - | - |\n", names[i],
			       qemu_bin);
			continue;
		}
		printf("| %s | %d/%d | %s | %s | %s | %s | %s | %s |\n", names[i], v->verified,
		       v->runs, cell(b[0], 64, v->total, v->n, "%.0f"),
		       cell(b[1], 64, v->down, v->n, "%.1f"),
		       cell(b[2], 64, v->during, v->nwork, "%.0f"),
		       cell(b[3], 64, v->cost, v->nwork, "%.0f"),
		       cell(b[4], 64, v->stall, v->nwork, "%.0f"),
		       cell(b[5], 64, v->peak, v->n, "%.0f"));
	}
}

static void csv_row(FILE *f, enum strategy s, int rep, const struct result *r)
{
	if (!f)
		return;
	fprintf(f, "%s,%d,%d,%d,", names[s], rep, r->migrated, r->verified);
	if (r->migrated)
		fprintf(f, "%.1f,%.3f,%s,%.0f,%.0f,%.0f,", r->total_ms, r->downtime_ms, r->how,
			r->passes, r->throttle_pct, r->slept_ms);
	else
		fprintf(f, ",,,,,,");
	if (r->work.ok)
		fprintf(f, "%.1f,%.1f,%.1f,%.1f\n", r->work.rate_before, r->work.rate_during,
			r->work.cost_pct, r->work.stall_ms);
	else
		fprintf(f, ",,,\n");
	fflush(f);
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: " PROG " [--quick] [--reps N] [--only NAME] [--csv FILE] "
			"[--vmm PATH] [--qemu PATH] [--firmware PATH]\n"
			"  NAME: auto, throttle, switchover or qemu-ac\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct series s[S_COUNT];
	const char *csv_path = NULL, *only = NULL;
	bool quick = false, qemu;
	int reps = 0;
	struct stat st;
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--quick")) {
			quick = true;
			continue;
		}
		if (!v)
			usage();
		if (!strcmp(argv[i], "--reps")) {
			char *end;

			reps = (int)strtol(v, &end, 10);
			if (*end || reps < 1 || reps > MAXREPS)
				die("--reps: '%s' is not a number in 1..%d", v, MAXREPS);
		} else if (!strcmp(argv[i], "--only"))
			only = v;
		else if (!strcmp(argv[i], "--csv"))
			csv_path = v;
		else if (!strcmp(argv[i], "--vmm"))
			vmm_bin = v;
		else if (!strcmp(argv[i], "--qemu"))
			qemu_bin = v;
		else if (!strcmp(argv[i], "--firmware"))
			firmware = v;
		else
			usage();
		i++;
	}
	if (!reps)
		reps = quick ? 2 : 5;
	if (stat(firmware, &st))
		die("the firmware %s is missing: build the vmm-firmware target", firmware);
	if (stat(vmm_bin, &st))
		die("the vmm binary %s is missing: build the vmm target", vmm_bin);
	qemu = bench_on_path(qemu_bin);
	if (bench_open_outputs(PROG, csv_path, &csv, tmpdir, sizeof(tmpdir)))
		return 1;
	if (csv)
		fprintf(csv, "strategy,run,migrated,verified,total_ms,downtime_ms,how,passes,"
			     "throttle_peak_pct,throttle_slept_ms,rate_before_pps,rate_during_pps,"
			     "work_lost_pct,longest_stall_ms\n");
	printf("== the firmware guest, 1 vCPU, %s, rewriting a %s hot set of random words at %d "
	       "pages/s, twice a %lld MiB/s link (no compression), downtime limit %d ms; %d "
	       "interleaved round%s\n",
	       MEM, HOT, DIRTY_RATE, LINK_BYTES >> 20, DOWNTIME_MS, reps, reps == 1 ? "" : "s");
	for (int rep = 1; rep <= reps; rep++)
		for (int i = 0; i < S_COUNT; i++) {
			struct result r = {0};

			if (only && strcmp(only, names[i]))
				continue;
			if (i == S_QEMU && !qemu) {
				s[i].qemu_missing = true;
				s[i].runs++;
				continue;
			}
			if (i == S_QEMU)
				qemu_once(rep, &r);
			else
				vmm_once((enum strategy)i, rep, &r);
			add(&s[i], &r);
			fprintf(
			    stderr,
			    "  %-10s run %d: total %.0f ms, downtime %.1f ms, %s, guest %.0f -> "
			    "%.0f pages/s (%.0f %% lost), stall %.0f ms, throttle peak %.0f %%, "
			    "%s\n",
			    names[i], rep, r.total_ms, r.downtime_ms, r.how, r.work.rate_before,
			    r.work.rate_during, r.work.cost_pct, r.work.stall_ms, r.throttle_pct,
			    r.verified ? "verified" : "NOT verified");
			csv_row(csv, (enum strategy)i, rep, &r);
		}
	table(s);
	if (csv)
		fclose(csv);
	bench_rm_tree(tmpdir);
	return 0;
}
