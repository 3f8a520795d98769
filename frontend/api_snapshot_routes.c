/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_snapshot_routes.c - PUT and GET /api/v1/vm/snapshot (docs/api.md,
 * "Snapshots"). Loop thread.
 *
 * PUT starts the snapshot thread and answers when it has finished: 200
 * with the snapshot object, or 500 with the reason (the VM then runs on as
 * before). The reply waits on the thread's eventfd, never blocking the
 * loop: status requests and event streams are served meanwhile. A client
 * that goes away does not stop the snapshot (libevent keeps the request
 * for the reply, and frees it then). With "stop", the VM is stopped once
 * the reply has been written, so the client learns the outcome first.
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api_reply.h"
#include "api_routes.h"
#include "api_view.h"
#include "log.h"
#include "migration.h"
#include "runtime.h"
#include "snapshot.h"
#include "vm.h"

/* After a --stop snapshot's reply: the VM stops by then even if its completion never fires. */
#define SNAP_STOP_BACKSTOP_S 5

cJSON *api_snapshot_json(const struct snapshot_progress *p)
{
	cJSON *j = cJSON_CreateObject();

	if (!j || !cJSON_AddStringToObject(j, "state", snapshot_state_name(p->state)) ||
	    !cJSON_AddStringToObject(j, "dir", p->dir) ||
	    !cJSON_AddStringToObject(j, "id", p->id) ||
	    !cJSON_AddBoolToObject(j, "stop", p->stop) ||
	    !cJSON_AddBoolToObject(j, "live", p->live) ||
	    !cJSON_AddNumberToObject(j, "passes", p->passes) ||
	    !cJSON_AddBoolToObject(j, "converged", p->converged) ||
	    !cJSON_AddNumberToObject(j, "expected_pause_ms", (double)p->expected_pause_ms) ||
	    !cJSON_AddBoolToObject(j, "diff", p->diff) ||
	    !cJSON_AddNumberToObject(j, "generation", p->generation) ||
	    !cJSON_AddStringToObject(j, "parent", p->parent) ||
	    !cJSON_AddNumberToObject(j, "ram_bytes", (double)p->ram_bytes) ||
	    !cJSON_AddNumberToObject(j, "pages_total", (double)p->pages_total) ||
	    !cJSON_AddNumberToObject(j, "pages_done", (double)p->pages_done) ||
	    !cJSON_AddNumberToObject(j, "pages_written", (double)p->pages_written) ||
	    !cJSON_AddNumberToObject(j, "state_bytes", (double)p->state_bytes) ||
	    !cJSON_AddNumberToObject(j, "pause_us", (double)p->pause_us) ||
	    !cJSON_AddNumberToObject(j, "sync_us", (double)p->sync_us) ||
	    !cJSON_AddNumberToObject(j, "total_ms", (double)p->total_ms) ||
	    !cJSON_AddStringToObject(j, "error", p->error)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/*
 * A live snapshot's limits: the migration parameters snapshot_live_param()
 * names, each from its member (the parameter's name) when present, checked
 * by the migration's own rule (migration_param_set()); only with live.
 */
static int live_limits(const cJSON *body, struct snapshot_params *p, char *err, size_t errlen)
{
	migration_params_defaults(&p->limits);
	for (size_t i = 0; i < migration_param_count; i++) {
		const struct migration_param *d = &migration_param_table[i];
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, d->name);

		if (!snapshot_live_param(d) || !v)
			continue;
		if (!p->live) {
			snprintf(err, errlen, "'%s' goes with 'live'", d->name);
			return -EINVAL;
		}
		if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
		    v->valuedouble != (double)(uint64_t)v->valuedouble) {
			migration_param_refusal(d, err, errlen);
			return -EINVAL;
		}
		if (migration_param_set(&p->limits, d, (uint64_t)v->valuedouble, err, errlen))
			return -EINVAL;
	}
	return 0;
}

/* A member the request may have: its own, or a live limit. */
static bool known_field(const char *name)
{
	static const char *const own[] = {"to",	  "stop",	    "threads", "live",
					  "diff", "format_version", NULL};
	const struct migration_param *d = migration_param_find(name);

	for (size_t i = 0; own[i]; i++)
		if (!strcmp(name, own[i]))
			return true;
	return d && snapshot_live_param(d);
}

/* "to, stop, live, diff, threads, format_version, " and the live limits' names. */
static void field_list(char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "to, stop, live, diff, threads, format_version");

	for (size_t i = 0; i < migration_param_count && n < len; i++)
		if (snapshot_live_param(&migration_param_table[i]))
			n += (size_t)snprintf(buf + n, len - n, ", %s",
					      migration_param_table[i].name);
}

/* The PUT's body (docs/api.md): 0, or -EINVAL with the reason. */
static int params_from_json(const cJSON *body, struct snapshot_params *p, char *err, size_t errlen)
{
	const cJSON *to = cJSON_GetObjectItemCaseSensitive(body, "to");
	const cJSON *stop = cJSON_GetObjectItemCaseSensitive(body, "stop");
	const cJSON *threads = cJSON_GetObjectItemCaseSensitive(body, "threads");
	const cJSON *live = cJSON_GetObjectItemCaseSensitive(body, "live");
	const cJSON *diff = cJSON_GetObjectItemCaseSensitive(body, "diff");
	const cJSON *fv = cJSON_GetObjectItemCaseSensitive(body, "format_version");
	const cJSON *it;
	char list[256];

	memset(p, 0, sizeof(*p));
	cJSON_ArrayForEach(it, body)
	{
		if (!known_field(it->string)) {
			field_list(list, sizeof(list));
			snprintf(err, errlen, "unknown field '%.64s' (expected %s)", it->string,
				 list);
			return -EINVAL;
		}
	}
	if (!cJSON_IsString(to) || !to->valuestring[0] || to->valuestring[0] != '/' ||
	    strlen(to->valuestring) >= sizeof(p->dir)) {
		snprintf(err, errlen, "'to' must be an absolute directory path");
		return -EINVAL;
	}
	snprintf(p->dir, sizeof(p->dir), "%s", to->valuestring);
	if (stop && !cJSON_IsBool(stop)) {
		snprintf(err, errlen, "'stop' must be true or false");
		return -EINVAL;
	}
	p->stop = cJSON_IsTrue(stop);
	if (live && !cJSON_IsBool(live)) {
		snprintf(err, errlen, "'live' must be true or false");
		return -EINVAL;
	}
	p->live = cJSON_IsTrue(live);
	if (diff && !cJSON_IsBool(diff)) {
		snprintf(err, errlen, "'diff' must be true or false");
		return -EINVAL;
	}
	p->diff = cJSON_IsTrue(diff);
	if (threads && (!cJSON_IsNumber(threads) || threads->valuedouble < 1 ||
			threads->valuedouble > SNAPSHOT_THREADS_MAX ||
			threads->valuedouble != (double)(unsigned)threads->valuedouble)) {
		snprintf(err, errlen, "'threads' must be an integer from 1 to %u",
			 SNAPSHOT_THREADS_MAX);
		return -EINVAL;
	}
	p->threads = threads ? (unsigned)threads->valuedouble : 0;
	if (fv && (!cJSON_IsString(fv) || !fv->valuestring[0] ||
		   strlen(fv->valuestring) >= sizeof(p->format_version))) {
		snprintf(err, errlen, "'format_version' must be a release, as \"0.3.0\"");
		return -EINVAL;
	}
	if (fv)
		snprintf(p->format_version, sizeof(p->format_version), "%s", fv->valuestring);
	return live_limits(body, p, err, errlen);
}

static void stop_after_snapshot(struct api_routes *s)
{
	struct snapshot_progress p;

	snapshot_get_progress(s->rt->snap, &p);
	vm_request_stop(s->rt->vm, VM_END_GUEST_EXIT, 0, "stopped after its snapshot to %s", p.dir);
}

static void on_reply_sent(struct evhttp_request *req, void *arg)
{
	struct api_routes *s = arg;

	api_routes_replied(s, req);
	if (s->snap_stop_timer)
		evtimer_del(s->snap_stop_timer);
	stop_after_snapshot(s);
}

static void on_stop_backstop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	stop_after_snapshot(arg);
}

/* The snapshot thread finished: answer the PUT (and stop the VM when asked). */
static void on_snapshot_done(evutil_socket_t fd, short what, void *arg)
{
	struct api_routes *s = arg;
	struct evhttp_request *req = s->snap_req;
	struct snapshot_progress p;
	bool stop;

	(void)fd;
	(void)what;
	if (s->snap_ev)
		event_free(s->snap_ev);
	s->snap_ev = NULL;
	s->snap_req = NULL;
	snapshot_get_progress(s->rt->snap, &p);
	stop = p.state == SNAPSHOT_COMPLETED && p.stop;
	if (p.state == SNAPSHOT_COMPLETED)
		log_vm(&s->rt->log, LOG_LEVEL_INFO,
		       "snapshot %s written to %s: %llu pages written, %u live passes, paused %.1f "
		       "ms, %llu ms in all%s",
		       p.id, p.dir, (unsigned long long)p.pages_written, p.passes, p.pause_us / 1e3,
		       (unsigned long long)p.total_ms, stop ? "; stopping the VM" : "");
	else
		log_vm(&s->rt->log, LOG_LEVEL_WARN,
		       "the snapshot to %s failed: %s (the VM runs on)", p.dir, p.error);
	if (p.state != SNAPSHOT_COMPLETED) {
		api_reply_error(req, 500, "the snapshot to %s failed: %s (the VM runs on)", p.dir,
				p.error);
		return;
	}
	/*
	 * A client that went away gets no reply: stop now rather than after it.
	 * A connection reset while the reply is written calls no completion:
	 * the backstop stops the VM after SNAP_STOP_BACKSTOP_S whatever happens.
	 */
	if (stop && evhttp_request_get_connection(req)) {
		static const struct timeval backstop = {SNAP_STOP_BACKSTOP_S, 0};

		evhttp_request_set_on_complete_cb(req, on_reply_sent, s);
		if (!s->snap_stop_timer)
			s->snap_stop_timer = evtimer_new(s->base, on_stop_backstop, s);
		if (!s->snap_stop_timer || evtimer_add(s->snap_stop_timer, &backstop))
			stop_after_snapshot(s);
	} else if (stop) {
		stop_after_snapshot(s);
	}
	api_reply_json(req, 200, api_snapshot_json(&p));
}

void api_put_snapshot(struct api_routes *s, struct evhttp_request *req)
{
	struct snapshot_params params;
	char err[PATH_MAX + 256] = "";
	cJSON *body;
	int ret;

	if (api_refuse_busy(s, req, "take a snapshot"))
		return;
	/* The last one's thread may have ended with its PUT not yet answered. */
	if (s->snap_req) {
		api_reply_error(req, 409, "cannot take a snapshot: the last one is being answered");
		return;
	}
	body = api_read_body(req);
	if (!body)
		return;
	ret = params_from_json(body, &params, err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		api_reply_error(req, 400, "%s", err);
		return;
	}
	params.keep_paused = s->rt->user_paused;
	params.track = vm_config(s->rt->vm)->snapshot_track_dirty;
	params.direct_io = vm_config(s->rt->vm)->snapshot_direct_io;
	ret = runtime_snapshot(s->rt, &params, err, sizeof(err));
	if (!ret) {
		s->snap_ev =
		    event_new(s->base, snapshot_done_fd(s->rt->snap), EV_READ, on_snapshot_done, s);
		if (!s->snap_ev || event_add(s->snap_ev, NULL)) {
			/* Cannot wait for it on the loop (out of memory): wait in place, once. */
			struct pollfd p = {snapshot_done_fd(s->rt->snap), POLLIN, 0};

			if (s->snap_ev)
				event_free(s->snap_ev);
			s->snap_ev = NULL;
			s->snap_req = req;
			while (poll(&p, 1, -1) < 0 && errno == EINTR) {
			}
			on_snapshot_done(-1, 0, s);
			return;
		}
		s->snap_req = req;
		return;
	}
	api_reply_error(req,
			ret == -EINVAL || ret == -ENOENT || ret == -EPROTONOSUPPORT ? 400
			: ret == -EBUSY						    ? 409
			: ret == -EEXIST					    ? 409
										    : 500,
			"cannot take the snapshot: %s", err[0] ? err : strerror(-ret));
}

void api_get_snapshot(struct api_routes *s, struct evhttp_request *req)
{
	struct snapshot_progress p = {.state = SNAPSHOT_NONE};

	if (s->rt->snap)
		snapshot_get_progress(s->rt->snap, &p);
	api_reply_json(req, 200, api_snapshot_json(&p));
}

/* {"from": DIR, "lazy": bool}: 0, or -EINVAL with the reason. */
static int restore_from_json(const cJSON *body, char *from, size_t len, int *lazy, char *err,
			     size_t errlen)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(body, "from");
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(body, "lazy");
	const cJSON *it;

	cJSON_ArrayForEach(it, body)
	{
		if (strcmp(it->string, "from") && strcmp(it->string, "lazy")) {
			snprintf(err, errlen, "unknown field '%.64s' (expected from, lazy)",
				 it->string);
			return -EINVAL;
		}
	}
	if (!cJSON_IsString(f) || f->valuestring[0] != '/' || strlen(f->valuestring) >= len) {
		snprintf(err, errlen, "'from' must be an absolute directory path");
		return -EINVAL;
	}
	if (l && !cJSON_IsBool(l)) {
		snprintf(err, errlen, "'lazy' must be true or false");
		return -EINVAL;
	}
	snprintf(from, len, "%s", f->valuestring);
	*lazy = l ? cJSON_IsTrue(l) : -1;
	return 0;
}

void api_put_restore(struct api_routes *s, struct evhttp_request *req)
{
	struct runtime_restore res;
	char from[PATH_MAX], err[PATH_MAX + 512] = "";
	cJSON *body, *j;
	int lazy, ret;

	if (!runtime_waits_restore(s->rt)) {
		api_reply_error(req, 409, "cannot restore: %s",
				s->rt->vm
				    ? "a VM runs in this process already (a restore goes into "
				      "a process started with vmm run --restore-wait)"
				    : "this process was not started with vmm run "
				      "--restore-wait");
		return;
	}
	memset(&res, 0, sizeof(res));
	body = api_read_body(req);
	if (!body)
		return;
	ret = restore_from_json(body, from, sizeof(from), &lazy, err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		api_reply_error(req, 400, "%s", err);
		return;
	}
	ret = s->rt->restore(s->rt, from, lazy, &res, err, sizeof(err));
	if (ret) {
		/* Refused before any VM existed: the process waits on for another. */
		api_reply_error(req, s->rt->vm ? 500 : 400, "cannot restore %s: %s", from,
				err[0] ? err : strerror(-ret));
		return;
	}
	j = cJSON_CreateObject();
	if (!j || !cJSON_AddStringToObject(j, "state", "running") ||
	    !cJSON_AddStringToObject(j, "id", res.id) ||
	    !cJSON_AddStringToObject(j, "from", from) ||
	    !cJSON_AddStringToObject(j, "name", res.name) ||
	    !cJSON_AddBoolToObject(j, "lazy", res.lazy) ||
	    !cJSON_AddNumberToObject(j, "restore_us", (double)res.restore_us)) {
		cJSON_Delete(j);
		api_reply_json(req, 500, NULL);
		return;
	}
	api_reply_json(req, 200, j);
}
