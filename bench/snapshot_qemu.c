/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot_qemu.c - bench_snapshot's QEMU side; see snapshot_qemu.h.
 */
#include "snapshot_qemu.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench_util.h"
#include "qemu_mig.h"

#define BOOT_TIMEOUT_MS	   (300 * 1000) /* boot and two passes on a loaded emulated host */
#define SAVE_TIMEOUT_MS	   (600 * 1000)
#define RESTORE_TIMEOUT_MS (600 * 1000)
#define HEARTBEAT	   "dirty pass [0-9]+ ok"
/*
 * vmm snapshot --live's most passes (persist_live.c): a guest that dirties
 * faster than QEMU writes never meets the downtime limit, and its stream
 * would grow until the file system is full.
 */
#define LIVE_PASSES_MAX 8

static const char *ready_line(const struct sq_case *c)
{
	return c->dirty ? HEARTBEAT : "firmware: idle";
}

/* QEMU with the case's guest; incoming_file: restore from it (-incoming exec:cat). */
static int spawn(struct qvm *q, const struct sq_case *c, const char *name,
		 const char *incoming_file, char *err, size_t errlen)
{
	struct hx_argv a = {0};
	int r;

	hx_argv_add(&a, c->qemu);
	hx_argv_split(&a, QVM_FIRMWARE_ARGS);
	hx_argv_add(&a, "-m");
	hx_argv_add(&a, c->size);
	hx_argv_add(&a, "-kernel");
	hx_argv_add(&a, c->firmware);
	hx_argv_add(&a, "-append");
	if (c->dirty)
		hx_argv_addf(&a,
			     "vmm.workload=dirty vmm.working_set=%s vmm.passes=0 vmm.order=random "
			     "vmm.heartbeat_ms=100",
			     c->working_set);
	else
		hx_argv_add(&a, "vmm.workload=idle");
	if (incoming_file) {
		hx_argv_add(&a, "-incoming");
		hx_argv_addf(&a, "exec:cat %s", incoming_file);
	}
	r = qvm_start(q, name, c->dir, a.v, 0, err, errlen);
	hx_argv_free(&a);
	return r;
}

static int qmp_simple(struct qvm *q, const char *cmd, char *err, size_t errlen)
{
	return qmp_exec(&q->qmp, cmd, NULL, NULL, err, errlen);
}

/* query-status's status into buf ("inmigrate", "paused", "running", ...). */
static int status(struct qvm *q, char *buf, size_t len, char *err, size_t errlen)
{
	cJSON *st = NULL;
	const cJSON *s;
	int r = qmp_exec(&q->qmp, "query-status", NULL, &st, err, errlen);

	if (r)
		return r;
	s = cJSON_GetObjectItem(st, "status");
	snprintf(buf, len, "%s", cJSON_IsString(s) ? s->valuestring : "?");
	cJSON_Delete(st);
	return 0;
}

/* The guest's next heartbeat (a dirty guest) after line `from`. */
static int next_beat(struct hx_watch *w, struct qvm *q, const struct sq_case *c, size_t from,
		     char *err, size_t errlen)
{
	if (!c->dirty)
		return 0;
	return hx_wait_line(w, &q->out, HEARTBEAT, 1, from, BOOT_TIMEOUT_MS, err, errlen);
}

/* A failure's context: the guest's last console line and QEMU's own last words. */
static void explain(struct qvm *q, const struct sq_case *c, const char *name, char *err,
		    size_t errlen)
{
	char path[700], last[200] = "", how[64] = "";
	size_t n = strlen(err);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.err", c->dir, name);
	f = fopen(path, "r");
	while (f && fgets(last, sizeof(last), f))
		;
	if (f)
		fclose(f);
	last[strcspn(last, "\n")] = '\0';
	if (q->proc.pid > 0)
		hx_running(&q->proc); /* reaps it if it has exited */
	if (q->proc.exited)
		hx_describe(q->proc.status, how, sizeof(how));
	snprintf(err + n, errlen - n, " (guest: '%s'; QEMU: '%s'%s%s)",
		 q->out.nlines ? q->out.lines_text + q->out.lines[q->out.nlines - 1].off : "", last,
		 how[0] ? "; QEMU " : "", how);
}

/* Both saves, on one running QEMU. */
static int save(const struct sq_case *c, const char *live, const char *stopped, struct sq_result *r,
		char *err, size_t errlen)
{
	struct qvm q;
	struct hx_watch w = {0};
	struct qvm_mig_opts mo = {.downtime_ms = 300};
	struct qvm_mig_result mr = {0};
	char uri[1200];
	double t0;
	int ret = spawn(&q, c, "qsave", NULL, err, errlen);

	hx_watch_add(&w, &q.out);
	/* vmm snapshot --live's downtime limit, and no bandwidth limit. */
	if (!ret)
		ret = qvm_prepare(&q, &mo, err, errlen);
	if (!ret)
		ret = hx_wait_line(&w, &q.out, ready_line(c), c->dirty ? 2 : 1, 0, BOOT_TIMEOUT_MS,
				   err, errlen);
	snprintf(uri, sizeof(uri), "exec:cat > %s", live);
	if (!ret)
		ret = qvm_migrate_uri(&q, &w, uri, false, LIVE_PASSES_MAX, SAVE_TIMEOUT_MS, &mr,
				      err, errlen);
	if (!ret) {
		r->live_downtime_ms = mr.downtime_ms;
		r->live_total_ms = mr.total_ms;
		/* The guest runs on (vmm snapshot's default) before the stopped save. */
		ret = qmp_simple(&q, "cont", err, errlen);
	}
	if (!ret)
		ret = next_beat(&w, &q, c, q.out.nlines, err, errlen);
	snprintf(uri, sizeof(uri), "exec:cat > %s", stopped);
	if (!ret) {
		t0 = bench_now_ms();
		ret = qmp_simple(&q, "stop", err, errlen);
		if (!ret)
			ret = qvm_migrate_uri(&q, &w, uri, false, 0, SAVE_TIMEOUT_MS, &mr, err,
					      errlen);
		r->pause_ms = bench_now_ms() - t0;
		r->file_mib = bench_alloc_mib(stopped);
	}
	if (ret)
		explain(&q, c, "qsave", err, errlen);
	qvm_end(&q);
	return ret;
}

/* A new QEMU from the stopped save's file, until its guest runs (and beats). */
static int restore(const struct sq_case *c, const char *file, struct sq_result *r, char *err,
		   size_t errlen)
{
	struct qvm q;
	struct hx_watch w = {0};
	char st[32] = "";
	double t0 = bench_now_ms();
	int ret = spawn(&q, c, "qrestore", file, err, errlen);

	hx_watch_add(&w, &q.out);
	/* The save was of a stopped VM: the load ends "paused", and cont runs it. */
	while (!ret && bench_now_ms() - t0 < RESTORE_TIMEOUT_MS) {
		ret = status(&q, st, sizeof(st), err, errlen);
		if (ret || strcmp(st, "inmigrate"))
			break;
		hx_watch_until(&w, NULL, NULL, 2);
	}
	if (!ret && !strcmp(st, "inmigrate")) {
		snprintf(err, errlen, "QEMU's restore did not end in %d s",
			 RESTORE_TIMEOUT_MS / 1000);
		ret = -ETIMEDOUT;
	}
	if (!ret && strcmp(st, "running"))
		ret = qmp_simple(&q, "cont", err, errlen);
	if (!ret) {
		r->first_ms = bench_now_ms() - t0;
		ret = next_beat(&w, &q, c, 0, err, errlen);
	}
	if (!ret && hx_console_corruption(&q.out)) {
		snprintf(err, errlen, "%s", hx_console_corruption(&q.out));
		ret = -EIO;
	}
	if (!ret && !qvm_guest_running(&q)) {
		snprintf(err, errlen, "QEMU's restored guest is not running");
		ret = -EIO;
	}
	if (ret)
		explain(&q, c, "qrestore", err, errlen);
	qvm_end(&q);
	return ret;
}

int sq_run_case(const struct sq_case *c, struct sq_result *r, char *err, size_t errlen)
{
	char live[600], stopped[600];
	int ret;

	memset(r, 0, sizeof(*r));
	snprintf(live, sizeof(live), "%s/qemu-live.bin", c->dir);
	snprintf(stopped, sizeof(stopped), "%s/qemu-stopped.bin", c->dir);
	unlink(live);
	unlink(stopped);
	ret = save(c, live, stopped, r, err, errlen);
	if (!ret)
		ret = restore(c, stopped, r, err, errlen);
	r->ok = !ret;
	unlink(live);
	unlink(stopped);
	return ret;
}
