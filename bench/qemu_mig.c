/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qemu_mig.c - QEMU under QMP for the side-by-side benchmarks; see
 * qemu_mig.h.
 */
#include "qemu_mig.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench_util.h"

static double jnum(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(j, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

int qvm_start(struct qvm *q, const char *name, const char *dir, char *const *argv,
	      int incoming_port, char *err, size_t errlen)
{
	char qmp[256], errfile[256];
	struct hx_argv a = {0};
	int fd = -1, r;

	memset(q, 0, sizeof(*q));
	q->qmp.fd = -1;
	snprintf(qmp, sizeof(qmp), "%s/%s.qmp", dir, name);
	snprintf(errfile, sizeof(errfile), "%s/%s.err", dir, name);
	hx_argv_addv(&a, argv);
	hx_argv_add(&a, "-qmp");
	hx_argv_addf(&a, "unix:%s,server=on,wait=off", qmp);
	if (incoming_port > 0) {
		hx_argv_add(&a, "-incoming");
		hx_argv_addf(&a, "tcp:127.0.0.1:%d", incoming_port);
	}
	if (a.overflow) {
		hx_argv_free(&a);
		snprintf(err, errlen, "%s: too many arguments", name);
		return -E2BIG;
	}
	struct hx_spawn s = {.argv = a.v, .err_path = errfile};
	r = hx_spawn(&q->proc, name, &s, &fd, err, errlen);
	hx_argv_free(&a);
	if (!r)
		r = hx_console_pipe(&q->out, name, fd, err, errlen);
	if (!r)
		r = qmp_connect(&q->qmp, qmp, 30000, err, errlen);
	return r;
}

void qvm_end(struct qvm *q)
{
	qmp_close(&q->qmp);
	hx_signal(&q->proc, SIGKILL);
	hx_reap(&q->proc, 5000);
	hx_console_close(&q->out);
}

int qvm_prepare(struct qvm *q, const struct qvm_mig_opts *o, char *err, size_t errlen)
{
	char buf[256];
	int r;

	snprintf(buf, sizeof(buf), "{\"downtime-limit\": %d, \"max-bandwidth\": %lld%s}",
		 o->downtime_ms, o->max_bandwidth > 0 ? o->max_bandwidth : 100000000000ll,
		 o->multifd_channels > 0 ? ", \"multifd-channels\": " : "");
	if (o->multifd_channels > 0) {
		size_t n = strlen(buf) - 1; /* before the closing brace */

		snprintf(buf + n, sizeof(buf) - n, "%d}", o->multifd_channels);
	}
	r = qmp_exec_json(&q->qmp, "migrate-set-parameters", buf, NULL, err, errlen);
	if (!r && o->auto_converge)
		r = qmp_exec_json(&q->qmp, "migrate-set-capabilities",
				  "{\"capabilities\": [{\"capability\": \"auto-converge\", "
				  "\"state\": true}]}",
				  NULL, err, errlen);
	if (!r && (o->postcopy || o->multifd_channels > 0)) {
		snprintf(buf, sizeof(buf),
			 "{\"capabilities\": [{\"capability\": \"%s\", "
			 "\"state\": true}]}",
			 o->postcopy ? "postcopy-ram" : "multifd");
		r = qmp_exec_json(&q->qmp, "migrate-set-capabilities", buf, NULL, err, errlen);
	}
	return r;
}

int qvm_migrate(struct qvm *src, struct hx_watch *w, int port, bool postcopy, int timeout_ms,
		struct qvm_mig_result *res, char *err, size_t errlen)
{
	char uri[64];

	snprintf(uri, sizeof(uri), "tcp:127.0.0.1:%d", port);
	return qvm_migrate_uri(src, w, uri, postcopy, 0, timeout_ms, res, err, errlen);
}

int qvm_migrate_uri(struct qvm *src, struct hx_watch *w, const char *uri, bool postcopy,
		    int max_passes, int timeout_ms, struct qvm_mig_result *res, char *err,
		    size_t errlen)
{
	double deadline = bench_now_ms() + timeout_ms;
	bool switched = !postcopy, forced = max_passes <= 0;
	cJSON *args = cJSON_CreateObject();
	int r;

	if (!args || !cJSON_AddStringToObject(args, "uri", uri)) {
		cJSON_Delete(args);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = qmp_exec(&src->qmp, "migrate", args, NULL, err, errlen);
	cJSON_Delete(args);
	res->throttle_max_pct = 0;
	while (!r && bench_now_ms() < deadline) {
		cJSON *st = NULL;
		const cJSON *status, *ram;

		r = qmp_exec(&src->qmp, "query-migrate", NULL, &st, err, errlen);
		if (r)
			return r;
		status = cJSON_GetObjectItem(st, "status");
		ram = cJSON_GetObjectItem(st, "ram");
		if (jnum(st, "cpu-throttle-percentage") > res->throttle_max_pct)
			res->throttle_max_pct = jnum(st, "cpu-throttle-percentage");
		if (cJSON_IsString(status) && !strcmp(status->valuestring, "completed")) {
			res->total_ms = jnum(st, "total-time");
			res->downtime_ms = jnum(st, "downtime");
			res->transferred_bytes = jnum(ram, "transferred");
			res->postcopy_requests = postcopy ? jnum(ram, "postcopy-requests") : -1;
			res->postcopy_bytes = jnum(ram, "postcopy-bytes");
			cJSON_Delete(st);
			return 0;
		}
		if (cJSON_IsString(status) && (!strcmp(status->valuestring, "failed") ||
					       !strcmp(status->valuestring, "cancelled"))) {
			snprintf(err, errlen, "QEMU migration %s", status->valuestring);
			cJSON_Delete(st);
			return -EIO;
		}
		if (!forced && jnum(ram, "dirty-sync-count") >= max_passes) {
			/* No limit QEMU can meet: it stops iterating and completes now. */
			r = qmp_exec_json(&src->qmp, "migrate-set-parameters",
					  "{\"downtime-limit\": 2000000}", NULL, err, errlen);
			forced = true;
		}
		if (!r && !switched && jnum(ram, "dirty-sync-count") >= 2) {
			r = qmp_exec(&src->qmp, "migrate-start-postcopy", NULL, NULL, err, errlen);
			switched = true;
		}
		cJSON_Delete(st);
		if (!r)
			hx_watch_until(w, NULL, NULL, 5);
	}
	if (!r) {
		snprintf(err, errlen, "QEMU migration did not complete in %d s", timeout_ms / 1000);
		r = -ETIMEDOUT;
	}
	return r;
}

bool qvm_guest_running(struct qvm *q)
{
	char err[256];
	cJSON *st = NULL;
	const cJSON *s;
	bool running;

	if (qmp_exec(&q->qmp, "query-status", NULL, &st, err, sizeof(err)))
		return false;
	s = cJSON_GetObjectItem(st, "status");
	running = cJSON_IsString(s) && !strcmp(s->valuestring, "running");
	cJSON_Delete(st);
	return running;
}
