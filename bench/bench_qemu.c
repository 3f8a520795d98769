/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_qemu: the project's firmware guest (build/guest-firmware/
 * vmm-firmware.elf) migrated over loopback by vmm and by QEMU microvm, which
 * boots the same ELF through its PVH entry (guest-firmware/pvh.c), with the
 * same workload parameters, interleaved (vmm, QEMU, vmm, QEMU, ...) so host
 * noise hits both.
 *
 * The guest: 1 vCPU on both (QEMU starts only the first), 1 GiB or 4 GiB of
 * RAM, either idle or the dirty workload rewriting a 64 MiB or 256 MiB hot
 * set in random order forever, a heartbeat after each pass. The working set
 * starts either zeroed (from the first pass on each page holds the guest's
 * five stamped words: it compresses) or, in the "rand" cases, full of
 * random words that the guest's first pass checks and that stay (it does
 * not compress): vmm writes them host-side ([workload] fill = random); for
 * QEMU they are written into its RAM file before it starts
 * (guest_prefill.h), because the emulated guest would take ~4 s per MiB.
 *
 * Cases: precopy, postcopy (vmm --mode postcopy; QEMU postcopy-ram and
 * migrate-start-postcopy after the first pass, as vmm's --postcopy-after 1),
 * and vmm --connections 4 against QEMU multifd with 4 channels. Both with a
 * 300 ms downtime limit and no bandwidth limit. Reported per case: total ms
 * and downtime ms, median and range, as each VMM reports them (vmm's
 * --json summary, QEMU's query-migrate), the ratio vmm/QEMU of the medians,
 * and how many runs verified on the target: a dirty guest prints two more
 * "dirty pass N ok" heartbeats there and no CORRUPTION line; an idle guest
 * still runs there (vmm: the process; QEMU: query-status "running").
 *
 * No assertions. Without qemu-system-x86_64 it says so and exits 0.
 *
 * usage: bench_qemu [--quick] [--reps N] [--only SUBSTR] [--csv FILE] [--vmm PATH]
 *                   [--qemu PATH] [--firmware PATH]
 * (--only: the cases whose name contains SUBSTR, e.g. postcopy, 4G, x4, rand, 256M)
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "bench_util.h"
#include "harness_json.h"
#include "harness_net.h"
#include "harness_run.h"
#include "guest_prefill.h"
#include "qemu_mig.h"
#include "size.h"

#define PROG		   "bench_qemu"
#define DOWNTIME_MS	   300
#define READY_TIMEOUT_MS   (180 * 1000) /* boot + first pass on a loaded host */
#define MIGRATE_TIMEOUT_MS (300 * 1000)
#define VERIFY_TIMEOUT_MS  (60 * 1000)
#define MAXREPS		   32
#define HEARTBEAT	   "dirty pass [0-9]+ ok"

struct bq_case {
	const char *name; /* the CSV's case column */
	const char *mem;
	const char *hot; /* the working set (the hot set a dirty guest rewrites) */
	bool dirty, postcopy;
	bool random; /* the working set holds the random fill: pages that do not compress */
	int conns;   /* > 0: vmm --connections N, QEMU multifd-channels N */
	bool quick;
};

/* "rand": the working set filled with random words (prefilled for QEMU, guest_prefill.h). */
static const struct bq_case cases[] = {
    {"1G-idle-precopy", "1G", "64M", false, false, false, 0, true},
    {"1G-hot64M-precopy", "1G", "64M", true, false, false, 0, true},
    {"1G-hot64M-postcopy", "1G", "64M", true, true, false, 0, false},
    {"1G-hot64M-precopy-x4", "1G", "64M", true, false, false, 4, false},
    {"1G-hot64M-rand-precopy", "1G", "64M", true, false, true, 0, true},
    {"1G-hot64M-rand-postcopy", "1G", "64M", true, true, true, 0, false},
    {"1G-hot64M-rand-precopy-x4", "1G", "64M", true, false, true, 4, false},
    {"1G-hot256M-precopy", "1G", "256M", true, false, false, 0, false},
    {"1G-hot256M-rand-postcopy", "1G", "256M", true, true, true, 0, false},
    {"4G-idle-precopy", "4G", "64M", false, false, false, 0, false},
    {"4G-hot64M-precopy", "4G", "64M", true, false, false, 0, false},
    {"4G-hot64M-postcopy", "4G", "64M", true, true, false, 0, false},
    {"4G-hot256M-rand-precopy", "4G", "256M", true, false, true, 0, false},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

struct result {
	bool migrated, verified;
	double total_ms, downtime_ms;
	double requests; /* QEMU postcopy: pages the target asked for; else -1 */
};

static const char *vmm_bin = VMM_BINARY, *qemu_bin = "qemu-system-x86_64", *firmware = VMM_FIRMWARE;
static char tmpdir[64];

#define die(...) bench_die(PROG, tmpdir, __VA_ARGS__)

/* The line that says the source's guest is ready to migrate. */
static const char *ready_line(const struct bq_case *c)
{
	return c->dirty ? HEARTBEAT : "firmware: idle";
}

/* A dirty guest goes on: two more heartbeats after `from`, no CORRUPTION on either side. */
static int dirty_goes_on(struct hx_watch *w, struct hx_console *dst, size_t from,
			 const struct hx_console *src, char *err, size_t errlen)
{
	const char *c;
	int r = hx_wait_line(w, dst, HEARTBEAT, 2, from, VERIFY_TIMEOUT_MS, err, errlen);

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

static int vmm_once(const struct bq_case *c, int rep, struct result *res)
{
	struct hx_argv sa = {0}, ma = {0};
	struct hx_run r;
	struct hx_cmd cmd = {0};
	char err[PATH_MAX + 512], name[48], sstem[64], dstem[64], mstem[64];
	int ret;

	snprintf(name, sizeof(name), "vmm-%s-%d", c->name, rep);
	snprintf(sstem, sizeof(sstem), "%s.src", name);
	snprintf(dstem, sizeof(dstem), "%s.dst", name);
	snprintf(mstem, sizeof(mstem), "%s.mig", name);
	hx_argv_addf(&sa, "--set=vm.memory=%s", c->mem);
	hx_argv_add(&sa, "--set=vm.vcpus=1");
	hx_argv_addf(&sa, "--set=workload.kind=%s", c->dirty ? "dirty" : "idle");
	hx_argv_addf(&sa, "--set=workload.working_set=%s", c->hot);
	hx_argv_add(&sa, "--set=workload.passes=0");
	hx_argv_add(&sa, "--set=workload.min_pass_ms=0");
	hx_argv_add(&sa, "--set=workload.heartbeat_ms=100");
	hx_argv_addf(&sa, "--set=workload.fill=%s", c->random ? "random" : "zero");
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
		ret = hx_wait_line(&r.watch, &r.src_out, ready_line(c), c->dirty ? 2 : 1, 0,
				   READY_TIMEOUT_MS, err, sizeof(err));
	hx_argv_add(&ma, "--mode");
	hx_argv_add(&ma, c->postcopy ? "postcopy" : "precopy");
	hx_argv_addf(&ma, "--downtime-ms=%d", DOWNTIME_MS);
	if (c->conns > 0)
		hx_argv_addf(&ma, "--connections=%d", c->conns);
	hx_argv_add(&ma, "--json");
	if (!ret)
		ret = hx_run_migrate(&r, ma.v, MIGRATE_TIMEOUT_MS, &cmd, err, sizeof(err));
	hx_argv_free(&ma);
	if (!ret && (cmd.code != 0 || !cmd.json)) {
		snprintf(err, sizeof(err), "vmm migrate exited %d (see %s)", cmd.code,
			 cmd.err_path);
		ret = -EIO;
	}
	if (!ret) {
		res->migrated = true;
		res->total_ms = hx_json_num(cmd.json, "total_ms");
		res->downtime_ms = hx_json_num(cmd.json, "downtime_us") / 1000.0;
		if (c->dirty) {
			ret = dirty_goes_on(&r.watch, &r.dst_out, r.dst_out.nlines, &r.src_out, err,
					    sizeof(err));
		} else {
			hx_run_wait_exit(&r, &r.src, 10000, err, sizeof(err));
			if (!hx_running(&r.dst)) {
				snprintf(err, sizeof(err), "the target exited (see %s)", r.dst_err);
				ret = -EIO;
			}
		}
	}
	res->verified = !ret;
	if (ret)
		fprintf(stderr, PROG ": %s: %s\n", name, err);
	hx_cmd_free(&cmd);
	hx_run_end(&r);
	return ret;
}

/* ---- QEMU -------------------------------------------------------------------- */

/*
 * A random-fill case: the source's RAM is a file in /dev/shm holding the
 * fill (memory-backend-file, share=on), the target's plain anonymous RAM
 * of the same name ("ram0"), as migration requires.
 */
static int qemu_ram(struct hx_argv *a, const struct bq_case *c, const char *name, bool incoming,
		    char *path, size_t pathlen, char *err, size_t errlen)
{
	uint64_t free_start, ram_bytes = 0, ws_bytes = 0;
	int r;

	if (incoming) {
		hx_argv_add(a, "-object");
		hx_argv_addf(a, "memory-backend-ram,id=ram0,size=%s", c->mem);
		return 0;
	}
	r = prefill_pvh_free_start(firmware, &free_start, err, errlen);
	snprintf(path, pathlen, "/dev/shm/%s-%d.%s.ram", PROG, (int)getpid(), name);
	if (!r && (parse_size(c->mem, &ram_bytes) || parse_size(c->hot, &ws_bytes))) {
		snprintf(err, errlen, "case %s: '%s' or '%s' is not a size", c->name, c->mem,
			 c->hot);
		r = -EINVAL;
	}
	if (!r)
		r = prefill_ram_file(path, ram_bytes, free_start, ws_bytes, err, errlen);
	hx_argv_add(a, "-object");
	hx_argv_addf(a, "memory-backend-file,id=ram0,size=%s,mem-path=%s,share=on", c->mem, path);
	return r;
}

static int qemu_spawn(struct qvm *q, const struct bq_case *c, const char *name, int incoming,
		      char *ram_path, size_t pathlen, char *err, size_t errlen)
{
	struct hx_argv a = {0};
	int r = 0;

	hx_argv_add(&a, qemu_bin);
	hx_argv_split(&a, QVM_FIRMWARE_ARGS);
	hx_argv_add(&a, "-m");
	hx_argv_add(&a, c->mem);
	if (c->random) {
		r = qemu_ram(&a, c, name, incoming > 0, ram_path, pathlen, err, errlen);
		hx_argv_add(&a, "-machine");
		hx_argv_add(&a, "memory-backend=ram0");
	}
	hx_argv_add(&a, "-kernel");
	hx_argv_add(&a, firmware);
	hx_argv_add(&a, "-append");
	hx_argv_addf(&a,
		     "vmm.workload=%s vmm.working_set=%s vmm.passes=0 vmm.fill=%s "
		     "vmm.prefilled=%s vmm.order=random vmm.heartbeat_ms=100",
		     c->dirty ? "dirty" : "idle", c->hot, c->random ? "random" : "zero",
		     c->random ? "true" : "false");
	if (!r)
		r = qvm_start(q, name, tmpdir, a.v, incoming, err, errlen);
	hx_argv_free(&a);
	return r;
}

static int qemu_once(const struct bq_case *c, int rep, struct result *res)
{
	struct qvm src, dst;
	struct hx_watch w = {0};
	struct qvm_mig_opts mo = {
	    .downtime_ms = DOWNTIME_MS, .postcopy = c->postcopy, .multifd_channels = c->conns};
	struct qvm_mig_result mr = {0};
	char err[512], sname[64], dname[64], ram[PATH_MAX] = "";
	int port = hx_free_port(), ret;

	snprintf(sname, sizeof(sname), "qemu-%s-%d.src", c->name, rep);
	snprintf(dname, sizeof(dname), "qemu-%s-%d.dst", c->name, rep);
	memset(&src, 0, sizeof(src));
	src.qmp.fd = -1;
	ret = qemu_spawn(&dst, c, dname, port, NULL, 0, err, sizeof(err));
	if (!ret)
		ret = qemu_spawn(&src, c, sname, 0, ram, sizeof(ram), err, sizeof(err));
	hx_watch_add(&w, &src.out);
	hx_watch_add(&w, &dst.out);
	if (!ret)
		ret = qvm_prepare(&dst, &mo, err, sizeof(err));
	if (!ret)
		ret = qvm_prepare(&src, &mo, err, sizeof(err));
	if (!ret)
		ret = hx_wait_line(&w, &src.out, ready_line(c), c->dirty ? 2 : 1, 0,
				   READY_TIMEOUT_MS, err, sizeof(err));
	if (!ret)
		ret = qvm_migrate(&src, &w, port, c->postcopy, MIGRATE_TIMEOUT_MS, &mr, err,
				  sizeof(err));
	if (!ret) {
		res->migrated = true;
		res->total_ms = mr.total_ms;
		res->downtime_ms = mr.downtime_ms;
		res->requests = mr.postcopy_requests;
		if (c->dirty)
			ret =
			    dirty_goes_on(&w, &dst.out, dst.out.nlines, &src.out, err, sizeof(err));
		else if (!qvm_guest_running(&dst)) {
			snprintf(err, sizeof(err), "the target QEMU's guest is not running");
			ret = -EIO;
		}
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
	double total[MAXREPS], down[MAXREPS];
	int n, runs, verified;
};

static void add(struct series *s, const struct result *r)
{
	s->runs++;
	s->verified += r->verified;
	if (!r->migrated)
		return;
	s->total[s->n] = r->total_ms;
	s->down[s->n] = r->downtime_ms;
	s->n++;
}

static double med(const double *v, int n)
{
	double c[MAXREPS];

	memcpy(c, v, sizeof(double) * (size_t)n);
	return bench_median(c, n);
}

/* "median (min-max)" into buf, or "-" without numbers. */
static const char *cell(char *buf, size_t len, const double *v, int n, const char *fmt)
{
	char f[64];

	if (!n)
		return "-";
	snprintf(f, sizeof(f), "%s (%s-%s)", fmt, fmt, fmt);
	snprintf(buf, len, f, med(v, n), bench_min(v, n), bench_max(v, n));
	return buf;
}

static const char *ratio(char *buf, size_t len, const struct series *a, const double *va,
			 const struct series *b, const double *vb)
{
	double d;

	if (!a->n || !b->n)
		return "-";
	d = med(vb, b->n);
	if (d <= 0)
		return "-";
	snprintf(buf, len, "%.2f", med(va, a->n) / d);
	return buf;
}

static void table(const struct series s[][2], bool quick, const char *only)
{
	char b[6][64];

	printf("| case | vmm total ms | QEMU total ms | total vmm/QEMU | vmm downtime ms | "
	       "QEMU downtime ms | downtime vmm/QEMU | verified vmm, QEMU |\n"
	       "|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < NCASES; i++) {
		const struct series *v = &s[i][0], *q = &s[i][1];

		if ((quick && !cases[i].quick) || (only && !strstr(cases[i].name, only)))
			continue;
		printf("| %s | %s | %s | %s | %s | %s | %s | %d/%d, ", cases[i].name,
		       cell(b[0], 64, v->total, v->n, "%.0f"),
		       cell(b[1], 64, q->total, q->n, "%.0f"),
		       ratio(b[2], 64, v, v->total, q, q->total),
		       cell(b[3], 64, v->down, v->n, "%.1f"), cell(b[4], 64, q->down, q->n, "%.1f"),
		       ratio(b[5], 64, v, v->down, q, q->down), v->verified, v->runs);
		printf("%d/%d |\n", q->verified, q->runs);
	}
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: " PROG " [--quick] [--reps N] [--only SUBSTR] [--csv FILE] "
			"[--vmm PATH] [--qemu PATH] [--firmware PATH]\n");
	exit(2);
}

static void csv_num(FILE *f, bool have, double v, const char *fmt)
{
	if (have)
		fprintf(f, fmt, v);
}

int main(int argc, char **argv)
{
	static struct series s[NCASES][2];
	const char *csv_path = NULL, *only = NULL;
	bool quick = false;
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
		reps = 3;
	if (!bench_on_path(qemu_bin)) {
		printf(PROG ": %s is not installed (apt-get install qemu-system-x86): nothing to "
			    "compare, skipped\n",
		       qemu_bin);
		return 0;
	}
	if (stat(firmware, &st))
		die("the firmware %s is missing: build the vmm-firmware target", firmware);
	if (stat(vmm_bin, &st))
		die("the vmm binary %s is missing: build the vmm target", vmm_bin);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bench_qemu.XXXXXX");
	if (!mkdtemp(tmpdir))
		die("mkdtemp: %s", strerror(errno));
	setenv("VMM_RUN_DIR", tmpdir, 1);
	if (csv_path) {
		csv = fopen(csv_path, "w");
		if (!csv)
			die("%s: %s", csv_path, strerror(errno));
		fprintf(csv, "vmm,case,run,total_ms,downtime_ms,verified\n");
	}
	printf("== the firmware guest, 1 vCPU, migrated over loopback by vmm and QEMU microvm "
	       "(PVH), %d interleaved runs per case, downtime limit %d ms; hot set rewritten in "
	       "random order; rand: the working set holds random words on both\n",
	       reps, DOWNTIME_MS);
	for (size_t i = 0; i < NCASES; i++) {
		if ((quick && !cases[i].quick) || (only && !strstr(cases[i].name, only)))
			continue;
		for (int rep = 1; rep <= reps; rep++)
			for (int q = 0; q < 2; q++) {
				struct result r = {.requests = -1};

				if (q)
					qemu_once(&cases[i], rep, &r);
				else
					vmm_once(&cases[i], rep, &r);
				add(&s[i][q], &r);
				fprintf(stderr,
					"  %s %s run %d: total %.0f ms, downtime %.1f ms, %s",
					q ? "qemu" : "vmm ", cases[i].name, rep, r.total_ms,
					r.downtime_ms, r.verified ? "verified" : "NOT verified");
				if (r.requests >= 0)
					fprintf(stderr, ", %.0f postcopy requests", r.requests);
				fputc('\n', stderr);
				if (!csv)
					continue;
				fprintf(csv, "%s,%s,%d,", q ? "qemu" : "vmm", cases[i].name, rep);
				csv_num(csv, r.migrated, r.total_ms, "%.1f");
				fputc(',', csv);
				csv_num(csv, r.migrated, r.downtime_ms, "%.3f");
				fprintf(csv, ",%d\n", r.verified);
				fflush(csv);
			}
	}
	table(s, quick, only);
	if (csv)
		fclose(csv);
	bench_rm_tree(tmpdir);
	return 0;
}
