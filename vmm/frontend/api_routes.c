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

#include "api_json.h"
#include "api_routes.h"
#include "migration.h"
#include "runtime.h"
#include "vm.h"

/* ---- responses ---- */

static const char *reason(int code)
{
	switch (code) {
	case 200:
		return "OK";
	case 202:
		return "Accepted";
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 409:
		return "Conflict";
	default:
		return "Internal Server Error";
	}
}

/* Sends `body` (consumed; NULL means out of memory) as the reply. */
static void send_json(struct evhttp_request *req, int code, cJSON *body)
{
	struct evbuffer *out = evhttp_request_get_output_buffer(req);
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;

	cJSON_Delete(body);
	if (!text) {
		code = 500;
		text = strdup("{\"error\":\"out of memory\"}");
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/json");
	if (text) {
		evbuffer_add(out, text, strlen(text));
		evbuffer_add(out, "\n", 1);
	}
	free(text);
	evhttp_send_reply(req, code, reason(code), NULL);
}

static void __attribute__((format(printf, 3, 4)))
send_error(struct evhttp_request *req, int code, const char *fmt, ...)
{
	char msg[512];
	cJSON *body = cJSON_CreateObject();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (body && !cJSON_AddStringToObject(body, "error", msg)) {
		cJSON_Delete(body);
		body = NULL;
	}
	send_json(req, code, body);
}

static cJSON *state_object(const char *state)
{
	cJSON *j = cJSON_CreateObject();

	if (j && !cJSON_AddStringToObject(j, "state", state)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/* ---- state ---- */

static void get_progress(struct api_routes *s, struct migration_progress *p)
{
	runtime_progress(s->rt, p);
}

static cJSON *progress_json(const struct migration_progress *p)
{
	return api_progress_to_json(p, api_state_name(p->state));
}

static const char *vm_state(struct api_routes *s, const struct migration_progress *p)
{
	if (p->state == MIGRATION_COMPLETED)
		return "migrated";
	if (__atomic_load_n(&s->rt->vm->stopping, __ATOMIC_ACQUIRE))
		return "stopping";
	/* the guest does not run here any more, whatever the user asked before */
	if (p->state == MIGRATION_POSTCOPY_ACTIVE)
		return "postcopy";
	if (p->state == MIGRATION_POSTCOPY_PAUSED)
		return "postcopy-paused";
	if (p->state == MIGRATION_SWITCHOVER_UNKNOWN)
		return "switchover-unknown";
	if (runtime_migration_active(p))
		return "migrating";
	if (s->rt->user_paused)
		return "paused";
	return "running";
}

/* 409 unless the VM is running (or user-paused); returns true when refused. */
static bool refuse_busy(struct api_routes *s, struct evhttp_request *req, const char *what)
{
	char why[512];

	if (!runtime_refusal(s->rt, what, true, why, sizeof(why)))
		return false;
	send_error(req, 409, "%s", why);
	return true;
}

/* Once the VM is ending: why ("guest-poweroff", "guest-reset", ...) and its message. */
static bool add_end(cJSON *j, struct vm *vm)
{
	enum vm_end_reason r;
	char msg[sizeof(vm->end_message)];

	pthread_mutex_lock(&vm->lock);
	r = vm->end_reason;
	memcpy(msg, vm->end_message, sizeof(msg));
	pthread_mutex_unlock(&vm->lock);
	if (r == VM_END_NONE)
		return true;
	return cJSON_AddStringToObject(j, "end_reason", vm_end_reason_name(r)) &&
	       cJSON_AddStringToObject(j, "end_message", msg);
}

/* ---- handlers ---- */

static void get_vm(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;
	cJSON *j = cJSON_CreateObject(), *mig;

	get_progress(s, &p);
	mig = progress_json(&p);
	if (!j || !mig || !cJSON_AddStringToObject(j, "name", s->rt->vm->cfg.name) ||
	    !cJSON_AddStringToObject(j, "state", vm_state(s, &p)) ||
	    !cJSON_AddNumberToObject(j, "memory", (double)s->rt->vm->cfg.memory) ||
	    !cJSON_AddNumberToObject(j, "vcpus", s->rt->vm->cfg.vcpus) ||
	    !cJSON_AddNumberToObject(j, "tsc_khz", s->rt->vm->tsc_khz) ||
	    !cJSON_AddStringToObject(j, "cpu_vendor", cpu_vendor_name(s->rt->vm->cfg.cpu_vendor)) ||
	    !cJSON_AddNumberToObject(j, "pid", getpid()) ||
	    !cJSON_AddStringToObject(j, "firmware", s->rt->vm->cfg.firmware_path) ||
	    !cJSON_AddStringToObject(j, "initrd", s->rt->vm->cfg.initrd_path) ||
	    !add_end(j, s->rt->vm) || !cJSON_AddItemToObject(j, "migration", mig)) {
		cJSON_Delete(j);
		cJSON_Delete(mig); /* not owned by j when AddItem was not reached */
		send_json(req, 500, NULL);
		return;
	}
	send_json(req, 200, j);
}

static void put_pause(struct api_routes *s, struct evhttp_request *req)
{
	if (refuse_busy(s, req, "pause"))
		return;
	if (!s->rt->user_paused) {
		vm_pause(s->rt->vm);
		s->rt->user_paused = true;
	}
	send_json(req, 200, state_object("paused"));
}

static void put_resume(struct api_routes *s, struct evhttp_request *req)
{
	if (refuse_busy(s, req, "resume"))
		return;
	if (s->rt->user_paused) {
		vm_resume(s->rt->vm);
		s->rt->user_paused = false;
	}
	send_json(req, 200, state_object("running"));
}

/* Parses the request body as JSON; sends 400 and returns NULL on failure. */
static cJSON *read_body(struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	char *text;
	cJSON *j;

	if (len == 0) {
		send_error(req, 400, "a JSON request body is required");
		return NULL;
	}
	text = malloc(len + 1);
	if (!text) {
		send_json(req, 500, NULL);
		return NULL;
	}
	evbuffer_copyout(in, text, len);
	text[len] = '\0';
	j = cJSON_ParseWithLength(text, len);
	free(text);
	if (!j)
		send_error(req, 400, "the request body is not valid JSON");
	return j;
}

static void put_migrate(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_params params;
	struct migration_progress p;
	char err[512];
	cJSON *body;
	int ret;

	if (refuse_busy(s, req, "start a migration"))
		return;
	if (s->rt->user_paused) {
		send_error(req, 409, "cannot start a migration: the VM is paused; resume it first");
		return;
	}
	body = read_body(req);
	if (!body)
		return;
	migration_params_defaults(&params);
	ret = api_params_from_json(body, &params, err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		send_error(req, 400, "%s", err);
		return;
	}
	err[0] = '\0';
	ret = runtime_migrate(s->rt, &params, err, sizeof(err));
	if (ret) {
		int code = ret == -EINVAL || ret == -ENOTSUP || ret == -EOPNOTSUPP ? 400
			   : ret == -EBUSY || ret == -EALREADY			   ? 409
										   : 500;

		send_error(req, code, "cannot start the migration: %s",
			   err[0] ? err : strerror(-ret));
		return;
	}
	get_progress(s, &p);
	send_json(req, 202, progress_json(&p));
}

/* The final state has reached the client: a migrated source may now exit. */
static void on_final_progress_sent(struct evhttp_request *req, void *arg)
{
	struct api_routes *s = arg;

	(void)req;
	s->rt->migration_reported = true;
}

static void get_migrate(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;

	get_progress(s, &p);
	if (p.state == MIGRATION_COMPLETED)
		evhttp_request_set_on_complete_cb(req, on_final_progress_sent, s);
	send_json(req, 200, progress_json(&p));
}

static void put_cancel(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;
	char err[512] = "";
	int ret;

	get_progress(s, &p);
	if (!runtime_migration_active(&p) || !s->rt->mig) {
		send_error(req, 409, "no migration is running (state %s)", api_state_name(p.state));
		return;
	}
	/*
	 * In switchover and postcopy the engine refuses (-EBUSY) and says why
	 * (postcopy: the VM already runs on the target, the source's copy is no
	 * longer complete, use resume): 409 with its message.
	 */
	ret = migration_cancel(s->rt->mig, err, sizeof(err));
	if (ret) {
		send_error(req, ret == -ESRCH || ret == -EALREADY || ret == -EBUSY ? 409 : 500,
			   "cannot cancel the migration: %s", err[0] ? err : strerror(-ret));
		return;
	}
	get_progress(s, &p);
	send_json(req, 202, progress_json(&p));
}

static void put_migrate_resume(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;
	char to[sizeof(((struct migration_params *)0)->to)];
	char err[512];
	cJSON *body;
	int ret;

	body = read_body(req);
	if (!body)
		return;
	ret = api_resume_from_json(body, to, sizeof(to), err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		send_error(req, 400, "%s", err);
		return;
	}
	/* the engine knows whether a postcopy migration is paused: it answers */
	err[0] = '\0';
	if (!s->rt->mig) {
		send_error(req, 409, "cannot resume the migration: no migration to resume");
		return;
	}
	ret = migration_resume(s->rt->mig, to, err, sizeof(err));
	if (ret) {
		int code = ret == -EINVAL || ret == -ENOENT || ret == -ESRCH || ret == -EBUSY ||
				   ret == -EALREADY
			       ? 409
			       : 500;

		send_error(req, code, "cannot resume the migration: %s",
			   err[0] ? err : strerror(-ret));
		return;
	}
	get_progress(s, &p);
	send_json(req, 202, progress_json(&p));
}

/*
 * The source asks the target (or, decide "resume", resumes here); the
 * target takes the operator's "run" or "discard". The engine answers
 * whether the outcome is unknown at all.
 */
static void put_migrate_recover(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;
	char to[sizeof(((struct migration_params *)0)->to)];
	char err[512] = "";
	enum api_decide decide;
	cJSON *body = read_body(req);
	int ret;

	if (!body)
		return;
	ret = api_recover_from_json(body, to, sizeof(to), &decide, err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		send_error(req, 400, "%s", err);
		return;
	}
	if (s->rt->mig) {
		if (decide == API_DECIDE_RUN || decide == API_DECIDE_DISCARD) {
			send_error(req, 400, "'decide' on a source must be \"resume\" (or absent)");
			return;
		}
		ret = migration_recover(s->rt->mig, to, decide == API_DECIDE_RESUME, err,
					sizeof(err));
	} else if (s->rt->in) {
		if (decide != API_DECIDE_RUN && decide != API_DECIDE_DISCARD) {
			send_error(req, 400,
				   "a target cannot ask the source: 'decide' must be \"run\" (the "
				   "source is gone) or \"discard\" (the source runs the VM)");
			return;
		}
		ret = migration_incoming_decide(s->rt->in, decide == API_DECIDE_RUN, err,
						sizeof(err));
	} else {
		ret = -ENOENT;
		snprintf(err, sizeof(err), "no migration to recover");
	}
	if (ret) {
		send_error(req, ret == -EINVAL ? 400 : 409, "cannot recover: %s",
			   err[0] ? err : strerror(-ret));
		return;
	}
	get_progress(s, &p);
	send_json(req, 202, progress_json(&p));
}

static void stop_vm(struct api_routes *s)
{
	vm_request_stop(s->rt->vm, VM_END_GUEST_EXIT, 0, "shut down through the API");
}

static void on_shutdown_replied(struct evhttp_request *req, void *arg)
{
	(void)req;
	stop_vm(arg);
}

static void on_shutdown_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	stop_vm(arg);
}

static void put_shutdown(struct api_routes *s, struct evhttp_request *req)
{
	static const struct timeval grace = {0, 200 * 1000};

	if (refuse_busy(s, req, "shut down"))
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
	send_json(req, 202, state_object("stopping"));
}

/* ---- routing ---- */

typedef void (*api_handler)(struct api_routes *, struct evhttp_request *);

static const struct route {
	const char *path;
	enum evhttp_cmd_type method;
	api_handler fn;
} routes[] = {
    {"/api/v1/vm", EVHTTP_REQ_GET, get_vm},
    {"/api/v1/vm/pause", EVHTTP_REQ_PUT, put_pause},
    {"/api/v1/vm/resume", EVHTTP_REQ_PUT, put_resume},
    {"/api/v1/vm/migrate", EVHTTP_REQ_PUT, put_migrate},
    {"/api/v1/vm/migrate", EVHTTP_REQ_GET, get_migrate},
    {"/api/v1/vm/migrate/cancel", EVHTTP_REQ_PUT, put_cancel},
    {"/api/v1/vm/migrate/resume", EVHTTP_REQ_PUT, put_migrate_resume},
    {"/api/v1/vm/migrate/recover", EVHTTP_REQ_PUT, put_migrate_recover},
    {"/api/v1/vm/shutdown", EVHTTP_REQ_PUT, put_shutdown},
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

void api_routes_dispatch(struct evhttp_request *req, void *arg)
{
	struct api_routes *s = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	char allow[32] = "";
	bool known = false;

	if (!peer_allowed(req)) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		send_error(req, 403, "permission denied: only uid %u and root may use this socket",
			   (unsigned)geteuid());
		return;
	}
	if (!path || !*path)
		path = "/";
	for (size_t i = 0; i < NROUTES; i++) {
		if (strcmp(routes[i].path, path))
			continue;
		if (routes[i].method == method) {
			routes[i].fn(s, req);
			return;
		}
		known = true;
		snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow), "%s%s",
			 allow[0] ? ", " : "", method_name(routes[i].method));
	}
	if (!known) {
		send_error(req, 404, "unknown path '%.128s'", path);
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", allow);
	send_error(req, 405, "method not allowed on %s; use %s", path, allow);
}

void api_routes_release(struct api_routes *r)
{
	if (r->shutdown_timer)
		event_free(r->shutdown_timer);
	r->shutdown_timer = NULL;
}
