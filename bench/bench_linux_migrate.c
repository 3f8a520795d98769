/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_linux part migrate: the Linux guest with memverify over a 256 MiB
 * incompressible working set in random order, migrated precopy and postcopy
 * by vmm (`vmm migrate --json`) and by QEMU (QMP), interleaved. See
 * bench_linux.c for what is measured.
 */
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench_linux.h"
#include "bench_util.h"
#include "harness_json.h"
#include "harness_net.h"
#include "harness_run.h"
#include "qemu_mig.h"

#define MEM		   "512M"
#define WS_MIB		   256
#define HEARTBEATS_BEFORE  2
#define BOOT_TIMEOUT_MS	   (900 * 1000) /* boot + fill on a loaded emulating host */
#define MIGRATE_TIMEOUT_MS (300 * 1000)
#define MAX_TRIES	   3 /* boots per case when the guest dies before the migration */

struct result {
	bool ok;
	bool not_ready; /* the guest died (or hung) before the migration could start */
	double total_ms, downtime_ms, wire_mb;
	double fault_p50_us, fault_p99_us; /* vmm postcopy only; -1: not reported */
	double requests;		   /* postcopy pages asked for by the target */
};

static char workload[96];

static double jnum(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(j, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The guest's own verification on both sides: -EIO naming the first CORRUPTION line. */
static int no_corruption(const struct hx_console *src, const struct hx_console *dst, char *err,
			 size_t errlen)
{
	const char *c = hx_console_corruption(dst);

	if (!c)
		c = hx_console_corruption(src);
	if (!c)
		return 0;
	snprintf(err, errlen, "%s", c);
	return -EIO;
}

/* ---- vmm ---------------------------------------------------------------- */

static int vmm_once(bool postcopy, int rep, const char *tmpdir, struct result *res)
{
	struct hx_argv sa = {0}, ma = {0};
	struct hx_run r;
	struct hx_cmd c = {0};
	char err[512], name[32];
	size_t from;
	int ret;

	snprintf(name, sizeof(name), "vmm-mig%d%s", rep, postcopy ? "pc" : "pre");
	/* bl_vmm_args' argv minus "vmm run CONFIG --set=vm.name=": the harness adds those. */
	bl_vmm_args(&sa, name, MEM, bl.vcpus, workload);
	struct hx_run_opts o = {
	    .vmm = bl.vmm,
	    .dir = tmpdir,
	    .pipes = true,
	    .name = name,
	    .config = BL_CONFIG,
	    .source_args = sa.v + 4,
	    .target_args = (char *[]){"--set=console.input=none", NULL},
	};
	ret = hx_run_start(&r, &o, err, sizeof(err));
	hx_argv_free(&sa);
	if (!ret) {
		ret = hx_wait_line(&r.watch, &r.src_out, BL_HEARTBEAT, HEARTBEATS_BEFORE, 0,
				   BOOT_TIMEOUT_MS, err, sizeof(err));
		res->not_ready = ret != 0;
	}
	hx_argv_add(&ma, "--mode");
	hx_argv_add(&ma, postcopy ? "postcopy" : "precopy");
	hx_argv_add(&ma, "--json");
	if (!ret)
		ret = hx_run_migrate(&r, ma.v, MIGRATE_TIMEOUT_MS, &c, err, sizeof(err));
	hx_argv_free(&ma);
	if (!ret && (c.code != 0 || !c.json)) {
		snprintf(err, sizeof(err), "vmm migrate exited %d", c.code);
		ret = -EIO;
	}
	if (!ret) {
		res->total_ms = jnum(c.json, "total_ms");
		res->downtime_ms = jnum(c.json, "downtime_us") / 1000.0;
		res->wire_mb = (jnum(c.json, "sent_bytes") +
				(postcopy ? 4096.0 * jnum(c.json, "postcopy_pages") : 0)) /
			       1e6;
		res->fault_p50_us = postcopy ? jnum(c.json, "fault_p50_us") : -1;
		res->fault_p99_us = postcopy ? jnum(c.json, "fault_p99_us") : -1;
		res->requests = postcopy ? jnum(c.json, "pages_requested") : -1;
		from = r.dst_out.nlines;
		ret = hx_wait_line(&r.watch, &r.dst_out, BL_HEARTBEAT, 1, from, BOOT_TIMEOUT_MS,
				   err, sizeof(err));
	}
	if (!ret)
		ret = no_corruption(&r.src_out, &r.dst_out, err, sizeof(err));
	if (ret)
		fprintf(stderr, "bench_linux: %s: %s\n", name, err);
	res->ok = !ret;
	hx_cmd_free(&c);
	hx_run_end(&r);
	return ret;
}

/* ---- QEMU ------------------------------------------------------------------ */

/* The test guest under QEMU; bl_qemu_args' command line minus -qmp/-incoming, which qvm_start adds.
 */
static int qemu_start(struct qvm *q, const char *name, const char *tmpdir, int incoming, char *err,
		      size_t errlen)
{
	struct hx_argv a = {0};
	int r;

	bl_qemu_args(&a, MEM, bl.vcpus, workload, NULL, 0);
	r = qvm_start(q, name, tmpdir, a.v, incoming, err, errlen);
	hx_argv_free(&a);
	return r;
}

static int qemu_once(bool postcopy, int rep, const char *tmpdir, struct result *res)
{
	struct qvm src, dst;
	struct hx_watch w = {0};
	struct qvm_mig_opts mo = {.downtime_ms = 300, .postcopy = postcopy};
	struct qvm_mig_result mr = {0};
	char err[512], sname[32], dname[32];
	int port = hx_free_port(), ret;
	size_t from;

	snprintf(sname, sizeof(sname), "qemu-src%d%s", rep, postcopy ? "pc" : "pre");
	snprintf(dname, sizeof(dname), "qemu-dst%d%s", rep, postcopy ? "pc" : "pre");
	ret = qemu_start(&dst, dname, tmpdir, port, err, sizeof(err));
	if (!ret)
		ret = qemu_start(&src, sname, tmpdir, 0, err, sizeof(err));
	hx_watch_add(&w, &src.out);
	hx_watch_add(&w, &dst.out);
	if (!ret)
		ret = qvm_prepare(&dst, &mo, err, sizeof(err));
	if (!ret)
		ret = qvm_prepare(&src, &mo, err, sizeof(err));
	if (!ret) {
		ret = hx_wait_line(&w, &src.out, BL_HEARTBEAT, HEARTBEATS_BEFORE, 0,
				   BOOT_TIMEOUT_MS, err, sizeof(err));
		res->not_ready = ret != 0;
	}
	if (!ret)
		ret = qvm_migrate(&src, &w, port, postcopy, MIGRATE_TIMEOUT_MS, &mr, err,
				  sizeof(err));
	if (!ret) {
		res->total_ms = mr.total_ms;
		res->downtime_ms = mr.downtime_ms;
		res->wire_mb = mr.transferred_bytes / 1e6;
		res->requests = mr.postcopy_requests;
		res->fault_p50_us = res->fault_p99_us = -1;
	}
	from = dst.out.nlines;
	if (!ret)
		ret = hx_wait_line(&w, &dst.out, BL_HEARTBEAT, 1, from, BOOT_TIMEOUT_MS, err,
				   sizeof(err));
	if (!ret)
		ret = no_corruption(&src.out, &dst.out, err, sizeof(err));
	if (ret)
		fprintf(stderr, "bench_linux: %s: %s\n", sname, err);
	res->ok = !ret;
	qvm_end(&src);
	qvm_end(&dst);
	return ret;
}

/* ---- the table -------------------------------------------------------------- */

#define MAXREPS 64

struct series {
	double v[5][MAXREPS]; /* total, downtime, wire, fault p50, fault p99 */
	int n;
};

static void add(struct series *s, const struct result *r)
{
	if (!r->ok || s->n == MAXREPS)
		return;
	s->v[0][s->n] = r->total_ms;
	s->v[1][s->n] = r->downtime_ms;
	s->v[2][s->n] = r->wire_mb;
	s->v[3][s->n] = r->fault_p50_us;
	s->v[4][s->n] = r->fault_p99_us;
	s->n++;
}

static double med(struct series *s, int k)
{
	double c[MAXREPS];

	memcpy(c, s->v[k], sizeof(double) * (size_t)s->n);
	return bench_median(c, s->n);
}

static void row(const char *mode, const char *who, struct series *s)
{
	if (!s->n) {
		printf("| %s | %s | 0 | - | - | - | - |\n", mode, who);
		return;
	}
	printf("| %s | %s | %d | %.0f (%.0f-%.0f) | %.2f (%.2f-%.2f) | %.1f |", mode, who, s->n,
	       med(s, 0), bench_min(s->v[0], s->n), bench_max(s->v[0], s->n), med(s, 1),
	       bench_min(s->v[1], s->n), bench_max(s->v[1], s->n), med(s, 2));
	if (med(s, 3) >= 0)
		printf(" %.0f / %.0f |\n", med(s, 3), med(s, 4));
	else
		printf(" n/a |\n");
}

void bl_part_migrate(FILE *csv, bool have_qemu, const char *tmpdir)
{
	struct series s[2][2] = {0}; /* [postcopy][qemu] */
	unsigned not_ready[2] = {0}; /* boots lost before the migration, [qemu] */

	printf("\n== migrate: %s, %d vCPUs, memverify %d MiB random incompressible, "
	       "%d interleaved runs each\n",
	       MEM, bl.vcpus, bl.ws_mib, bl.reps);
	snprintf(workload, sizeof(workload), BL_WORKLOAD_FMT, bl.ws_mib);
	for (int rep = 0; rep < bl.reps; rep++)
		for (int pc = 0; pc < 2; pc++)
			for (int q = 0; q < (have_qemu ? 2 : 1); q++) {
				struct result r = {0};
				int ret, tries = 0;

				/*
				 * A guest that dies before its workload is ready (the
				 * emulating hosts' %fs problem, docs/linux-guest.md: it
				 * kills a forked busybox child under vmm and QEMU alike)
				 * says nothing about migration: boot it again, up to
				 * MAX_TRIES times, and count how often.
				 */
				do {
					memset(&r, 0, sizeof(r));
					ret = q ? qemu_once(pc, rep, tmpdir, &r)
						: vmm_once(pc, rep, tmpdir, &r);
					if (ret && r.not_ready)
						not_ready[q]++;
				} while (ret && r.not_ready && ++tries < MAX_TRIES);
				if (ret)
					continue;
				add(&s[pc][q], &r);
				fprintf(stderr,
					"  %s %s run %d: total %.0f ms, downtime %.2f ms, wire "
					"%.1f MB\n",
					q ? "qemu" : "vmm ", pc ? "postcopy" : "precopy", rep + 1,
					r.total_ms, r.downtime_ms, r.wire_mb);
				if (csv)
					fprintf(csv, "migrate-%s,%s,%d,%.1f,%.3f,%.2f,%.0f,%.0f\n",
						pc ? "postcopy" : "precopy", q ? "qemu" : "vmm",
						rep + 1, r.total_ms, r.downtime_ms, r.wire_mb,
						r.fault_p50_us, r.fault_p99_us);
			}
	printf("| mode | VMM | runs | total ms (median, min-max) | downtime ms (median, min-max) | "
	       "wire MB | fault p50/p99 us |\n|---|---|---|---|---|---|---|\n");
	for (int pc = 0; pc < 2; pc++) {
		row(pc ? "postcopy" : "precopy", "vmm", &s[pc][0]);
		if (have_qemu)
			row(pc ? "postcopy" : "precopy", "QEMU", &s[pc][1]);
	}
	printf("guests that died before their workload was ready (booted again): vmm %u, QEMU %u\n",
	       not_ready[0], not_ready[1]);
	for (int pc = 0; pc < 2; pc++)
		if (s[pc][0].n && s[pc][1].n)
			printf("%s vmm/QEMU: total %.2f, downtime %.2f, wire %.2f\n",
			       pc ? "postcopy" : "precopy", med(&s[pc][0], 0) / med(&s[pc][1], 0),
			       med(&s[pc][0], 1) / med(&s[pc][1], 1),
			       med(&s[pc][0], 2) / med(&s[pc][1], 2));
}
