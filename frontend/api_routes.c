/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_routes.c - the control API's handlers (docs/api.md). What each verb
 * may do in which state is asked of the runtime (runtime_refusal()), and
 * what a migration may do of the engine; the handlers map the answers to
 * HTTP status codes.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_events.h"
#include "api_json.h"
#include "api_reply.h"
#include "api_routes.h"
#include "api_server.h"
#include "api_view.h"
#include "migration.h"
#include "runtime.h"
#include "vm.h"

#define progress_json(p) api_progress_json_rt(s->rt, (p))

/* Once the VM is ending: why ("guest-poweroff", "guest-reset", ...) and its message. */
static bool add_end(cJSON *j, struct vm *vm)
{
	struct vm_end end;

	vm_end_state(vm, &end);
	if (end.reason == VM_END_NONE)
		return true;
	return cJSON_AddStringToObject(j, "end_reason", vm_end_reason_name(end.reason)) &&
	       cJSON_AddStringToObject(j, "end_message", end.message);
}

/* ---- handlers ---- */

/* GET /api/v1/vm on a target with no VM yet: what it knows. */
static void get_vm_incoming(struct api_routes *s, struct evhttp_request *req,
			    const struct incoming_status *st)
{
	struct migration_progress p;
	cJSON *j = cJSON_CreateObject(), *mig;

	api_routes_progress(s, &p);
	mig = progress_json(&p);
	if (!j || !mig ||
	    !cJSON_AddStringToObject(j, "name", st->name[0] ? st->name : s->rt->local_name) ||
	    !cJSON_AddStringToObject(j, "state", api_vm_state(s->rt, &p)) ||
	    !api_add_incoming(j, st) || !cJSON_AddNumberToObject(j, "pid", getpid()) ||
	    !cJSON_AddStringToObject(j, "version", VMM_VERSION) ||
	    !cJSON_AddItemToObject(j, "migration", mig)) {
		cJSON_Delete(j);
		cJSON_Delete(mig);
		api_reply_json(req, 500, NULL);
		return;
	}
	api_reply_json(req, 200, j);
}

/*
 * "devices": one object per virtio device: its kind, backend (the disk's
 * path, the tap's name), window, IRQ, whether the guest's driver has it
 * running (DRIVER_OK) or broke it (DEVICE_NEEDS_RESET), and its counters.
 */
static bool add_devices(cJSON *j, struct vm *vm)
{
	cJSON *a = cJSON_AddArrayToObject(j, "devices");
	struct virtio_dev_stats st;

	for (unsigned i = 0; a && vm_device_stats(vm, i, &st); i++) {
		cJSON *d = cJSON_CreateObject();
		char mmio[24];
		bool blk;

		blk = !strcmp(st.kind, "blk");
		snprintf(mmio, sizeof(mmio), "0x%llx", (unsigned long long)st.base);
		if (!d || !cJSON_AddItemToArray(a, d) ||
		    !cJSON_AddStringToObject(d, "kind", st.kind) ||
		    !cJSON_AddStringToObject(
			d, "backend", blk ? vm_config(vm)->disk_path : vm_config(vm)->net_tap) ||
		    !cJSON_AddStringToObject(d, "mmio", mmio) ||
		    !cJSON_AddNumberToObject(d, "irq", st.irq) ||
		    !cJSON_AddBoolToObject(d, "driver_ok", st.status & VIRTIO_STATUS_DRIVER_OK) ||
		    !cJSON_AddBoolToObject(d, "needs_reset",
					   st.status & VIRTIO_STATUS_DEVICE_NEEDS_RESET) ||
		    !cJSON_AddNumberToObject(d, "requests", (double)st.requests) ||
		    !cJSON_AddNumberToObject(d, "interrupts", (double)st.interrupts) ||
		    !cJSON_AddNumberToObject(d, "errors", (double)st.errors))
			return false;
	}
	return a != NULL;
}

/*
 * "throttle": the vCPUs' throttle as the machine applies it (vm.h): the
 * highest level, how many vCPUs sleep for it, and their sleep since the VM
 * started. A migration's progress says why; this says what the guest gets.
 */
static bool add_throttle(cJSON *j, struct vm *vm)
{
	cJSON *t = cJSON_AddObjectToObject(j, "throttle");
	unsigned pct = 0, slowed = 0;
	uint64_t slept = 0;

	for (unsigned i = 0; t && i < vm_nvcpus(vm); i++) {
		struct vcpu_time v;

		vm_vcpu_time(vm, i, &v);
		pct = v.pct > pct ? v.pct : pct;
		slowed += v.pct != 0;
		slept += v.slept_ns;
	}
	return t && cJSON_AddNumberToObject(t, "pct", pct) &&
	       cJSON_AddNumberToObject(t, "vcpus", slowed) &&
	       cJSON_AddNumberToObject(t, "slept_ms", (double)(slept / 1000000u));
}

/* GET /api/v1/vm on a --restore-wait process with no VM yet. */
static void get_vm_waiting(struct evhttp_request *req)
{
	cJSON *j = cJSON_CreateObject();

	if (!j || !cJSON_AddStringToObject(j, "state", "waiting-restore") ||
	    !cJSON_AddNumberToObject(j, "pid", getpid()) ||
	    !cJSON_AddStringToObject(j, "version", VMM_VERSION)) {
		cJSON_Delete(j);
		api_reply_json(req, 500, NULL);
		return;
	}
	api_reply_json(req, 200, j);
}

static void get_vm(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;
	struct incoming_status st;
	cJSON *j, *mig;

	if (runtime_waits_restore(s->rt)) {
		get_vm_waiting(req);
		return;
	}
	if (api_incoming_state(s->rt, &st)) {
		get_vm_incoming(s, req, &st);
		return;
	}
	j = cJSON_CreateObject();
	api_routes_progress(s, &p);
	mig = progress_json(&p);
	if (!j || !mig || !cJSON_AddStringToObject(j, "name", vm_config(s->rt->vm)->name) ||
	    !cJSON_AddStringToObject(j, "state", api_vm_state(s->rt, &p)) ||
	    !cJSON_AddNumberToObject(j, "memory", (double)vm_config(s->rt->vm)->memory) ||
	    !cJSON_AddNumberToObject(j, "vcpus", vm_config(s->rt->vm)->vcpus) ||
	    !cJSON_AddNumberToObject(j, "tsc_khz", vm_tsc_khz(s->rt->vm)) ||
	    !cJSON_AddStringToObject(j, "cpu_vendor",
				     cpu_vendor_name(vm_config(s->rt->vm)->cpu_vendor)) ||
	    !cJSON_AddStringToObject(j, "cpu_features", vm_config(s->rt->vm)->cpu_features) ||
	    !cJSON_AddNumberToObject(j, "pid", getpid()) ||
	    !cJSON_AddStringToObject(j, "version", VMM_VERSION) ||
	    !cJSON_AddStringToObject(j, "firmware", vm_config(s->rt->vm)->firmware_path) ||
	    !cJSON_AddStringToObject(j, "initrd", vm_config(s->rt->vm)->initrd_path) ||
	    !add_end(j, s->rt->vm) || !add_devices(j, s->rt->vm) || !add_throttle(j, s->rt->vm) ||
	    !cJSON_AddItemToObject(j, "migration", mig)) {
		cJSON_Delete(j);
		cJSON_Delete(mig); /* not owned by j when AddItem was not reached */
		api_reply_json(req, 500, NULL);
		return;
	}
	api_reply_json(req, 200, j);
}

static void put_pause(struct api_routes *s, struct evhttp_request *req)
{
	if (api_refuse_busy(s, req, "pause"))
		return;
	if (!s->rt->user_paused) {
		vm_pause(s->rt->vm);
		s->rt->user_paused = true;
	}
	api_reply_json(req, 200, api_state_object("paused"));
}

static void put_resume(struct api_routes *s, struct evhttp_request *req)
{
	if (api_refuse_busy(s, req, "resume"))
		return;
	if (s->rt->user_paused) {
		vm_resume(s->rt->vm);
		s->rt->user_paused = false;
	}
	api_reply_json(req, 200, api_state_object("running"));
}

static void stop_vm(struct api_routes *s)
{
	vm_request_stop(s->rt->vm, VM_END_GUEST_EXIT, 0, "shut down through the API");
}

static void on_shutdown_replied(struct evhttp_request *req, void *arg)
{
	api_routes_replied(arg, req);
	stop_vm(arg);
}

static void on_shutdown_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	stop_vm(arg);
}

/* A --restore-wait process with no VM, asked to shut down: it ends, status 0, once replied. */
static void end_waiting(struct evhttp_request *req, void *arg)
{
	struct api_routes *s = arg;

	(void)req;
	event_base_loopexit(s->base, NULL);
}

/* A failed target's shutdown was answered: it exits now (status 1, the failure's). */
static void on_failed_shutdown_replied(struct evhttp_request *req, void *arg)
{
	struct api_routes *s = arg;

	api_routes_replied(s, req);
	s->rt->in_leave = true;
}

static void put_shutdown(struct api_routes *s, struct evhttp_request *req)
{
	static const struct timeval grace = {0, 200 * 1000};

	if (runtime_waits_restore(s->rt)) {
		s->rt->stop_asked = true;
		s->rt->stop_status = 0;
		evhttp_request_set_on_complete_cb(req, end_waiting, s);
		if (event_base_loopexit(s->base, &grace))
			end_waiting(req, s);
		api_reply_json(req, 202, api_state_object("stopping"));
		return;
	}
	if (!s->rt->vm && (s->rt->in || s->rt->in_ended)) {
		/* A target with no VM yet ends as cancelled, but with status 0: it was asked to. */
		char err[256] = "";
		int ret =
		    runtime_incoming_stop(s->rt, 0, "shut down through the API", err, sizeof(err));

		/* Failed already: it was about to exit; it does once this reply is out. */
		if (ret == -EALREADY)
			evhttp_request_set_on_complete_cb(req, on_failed_shutdown_replied, s);
		if (ret && ret != -EALREADY)
			api_reply_error(req, 409, "cannot shut down: %s", err);
		else
			api_reply_json(req, 202, api_state_object("stopping"));
		return;
	}
	if (api_refuse_busy(s, req, "shut down"))
		return;
	/*
	 * Stop once the reply is on the wire, so that the client sees it before
	 * the event loop ends; the timer covers a client that went away.
	 */
	evhttp_request_set_on_complete_cb(req, on_shutdown_replied, s);
	if (!s->shutdown_timer)
		s->shutdown_timer = evtimer_new(s->base, on_shutdown_timer, s);
	if (!s->shutdown_timer || evtimer_add(s->shutdown_timer, &grace))
		stop_vm(s);
	api_reply_json(req, 202, api_state_object("stopping"));
}

static void get_events(struct api_routes *s, struct evhttp_request *req)
{
	int ret;

	/* A stream is api_events' to count (open), not a reply to wait for. */
	evhttp_request_set_on_complete_cb(req, NULL, NULL);
	api_routes_replied(s, req);

	if (!s->events)
		s->events = api_events_new(s->rt);
	ret = s->events ? api_events_watch(s->events, req) : -ENOMEM;
	if (ret == -EBUSY)
		api_reply_error(req, 503,
				"too many event streams: %d are open, the most this VMM serves",
				API_EVENTS_MAX_WATCHERS);
	else if (ret)
		api_reply_json(req, 500, NULL);
}

/* ---- routing ---- */

typedef void (*api_handler)(struct api_routes *, struct evhttp_request *);

static const struct route {
	const char *path;
	enum evhttp_cmd_type method;
	api_handler fn;
	bool without_vm; /* served by a --restore-wait process before its VM */
} routes[] = {
    {"/api/v1/vm", EVHTTP_REQ_GET, get_vm, true},
    {"/api/v1/vm/restore", EVHTTP_REQ_PUT, api_put_restore, true},
    {"/api/v1/vm/pause", EVHTTP_REQ_PUT, put_pause, false},
    {"/api/v1/vm/resume", EVHTTP_REQ_PUT, put_resume, false},
    {"/api/v1/vm/migrate", EVHTTP_REQ_PUT, api_put_migrate, false},
    {"/api/v1/vm/migrate", EVHTTP_REQ_GET, api_get_migrate, false},
    {"/api/v1/vm/migrate/cancel", EVHTTP_REQ_PUT, api_put_cancel, false},
    {"/api/v1/vm/migrate/resume", EVHTTP_REQ_PUT, api_put_migrate_resume, false},
    {"/api/v1/vm/migrate/recover", EVHTTP_REQ_PUT, api_put_migrate_recover, false},
    {"/api/v1/vm/snapshot", EVHTTP_REQ_PUT, api_put_snapshot, false},
    {"/api/v1/vm/snapshot", EVHTTP_REQ_GET, api_get_snapshot, false},
    {"/api/v1/vm/shutdown", EVHTTP_REQ_PUT, put_shutdown, true},
    {"/api/v1/vm/events", EVHTTP_REQ_GET, get_events, false},
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static bool peer_allowed(struct evhttp_request *req)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || len != sizeof(cred))
		return false;
	return cred.uid == geteuid() || cred.uid == 0;
}

static const char *method_name(enum evhttp_cmd_type m)
{
	return m == EVHTTP_REQ_GET ? "GET" : m == EVHTTP_REQ_PUT ? "PUT" : "?";
}

void api_forbidden_text(char *buf, size_t len, unsigned owner)
{
	if (owner == 0)
		snprintf(buf, len, "permission denied: only root (uid 0) may use this socket");
	else
		snprintf(buf, len, "permission denied: only uid %u and root may use this socket",
			 owner);
}

static void on_replied(struct evhttp_request *req, void *arg)
{
	api_routes_replied(arg, req);
}

/*
 * The client left before its reply was written: evhttp frees the request
 * without completing it, and this close is all that says so.
 */
static void on_unreplied_close(struct evhttp_connection *c, void *arg)
{
	(void)c;
	api_routes_replied(arg, NULL);
}

void api_routes_dispatch(struct evhttp_request *req, void *arg)
{
	struct api_routes *s = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	char allow[32] = "";
	bool known = false;

	/* Counted until written; a handler with its own completion counts it off there. */
	s->replying++;
	evhttp_request_set_on_complete_cb(req, on_replied, s);
	evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_unreplied_close, s);

	if (!peer_allowed(req)) {
		char text[96];

		api_forbidden_text(text, sizeof(text), (unsigned)geteuid());
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		api_reply_error(req, 403, "%s", text);
		return;
	}
	/* evhttp itself refuses only past API_MAX_BODY_HARD, with an HTML page */
	if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) > API_MAX_BODY) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		api_reply_error(req, 413, "the request body is larger than %d bytes", API_MAX_BODY);
		return;
	}
	if (!path || !*path)
		path = "/";
	for (size_t i = 0; i < NROUTES; i++) {
		if (strcmp(routes[i].path, path))
			continue;
		if (routes[i].method == method) {
			char why[256], what[160];

			/* No VM yet: a handler that needs one never runs. */
			snprintf(what, sizeof(what), "%s %.128s", method_name(method), path);
			if (runtime_waits_restore(s->rt) && !routes[i].without_vm)
				api_reply_error(
				    req, 409, "%s",
				    runtime_refusal(s->rt, what, true, why, sizeof(why)));
			else
				routes[i].fn(s, req);
			return;
		}
		known = true;
		snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow), "%s%s",
			 allow[0] ? ", " : "", method_name(routes[i].method));
	}
	if (!known) {
		api_reply_error(req, 404, "unknown path '%.128s'", path);
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", allow);
	api_reply_error(req, 405, "method not allowed on %s; use %s", path, allow);
}

void api_routes_release(struct api_routes *r)
{
	/* The server is gone: a PUT /snapshot still waiting has no one to answer. */
	if (r->snap_ev)
		event_free(r->snap_ev);
	r->snap_ev = NULL;
	if (r->snap_stop_timer)
		event_free(r->snap_stop_timer);
	r->snap_stop_timer = NULL;
	if (r->shutdown_timer)
		event_free(r->shutdown_timer);
	r->shutdown_timer = NULL;
	api_events_free(r->events);
	r->events = NULL;
}

bool api_routes_events_settled(const struct api_routes *r, unsigned *open)
{
	return api_events_settled(r->events, open);
}
