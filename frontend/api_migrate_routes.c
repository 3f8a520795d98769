/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_migrate_routes.c - the control API's migration handlers
 * (docs/api.md): start, progress, cancel (a source's migration, or a
 * waiting target's), resume, recover. Loop thread; the routing, the VM
 * verbs and the shared state helpers are api_routes.c's.
 */
#include <errno.h>
#include <event2/http.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api_json.h"
#include "api_reply.h"
#include "api_routes.h"
#include "api_view.h"
#include "migration.h"
#include "runtime.h"
#include "vm.h"

#define progress_json(p) api_progress_json_rt(s->rt, (p))

void api_put_migrate(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_params params;
	struct migration_progress p;
	char err[512];
	cJSON *body;
	int ret;

	if (api_refuse_busy(s, req, "start a migration"))
		return;
	if (s->rt->user_paused) {
		api_reply_error(req, 409,
				"cannot start a migration: the VM is paused; resume it first");
		return;
	}
	body = api_read_body(req);
	if (!body)
		return;
	migration_params_defaults(&params);
	ret = api_params_from_json(body, &params, err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		api_reply_error(req, 400, "%s", err);
		return;
	}
	err[0] = '\0';
	ret = runtime_migrate(s->rt, &params, err, sizeof(err));
	if (ret) {
		int code = ret == -EINVAL || ret == -ENOTSUP || ret == -EOPNOTSUPP ? 400
			   : ret == -EBUSY || ret == -EALREADY			   ? 409
										   : 500;

		api_reply_error(req, code, "cannot start the migration: %s",
				err[0] ? err : strerror(-ret));
		return;
	}
	api_routes_progress(s, &p);
	api_reply_json(req, 202, progress_json(&p));
}

/* The final state has reached the client: a migrated source (a failed target) may now exit. */
static void on_final_progress_sent(struct evhttp_request *req, void *arg)
{
	struct api_routes *s = arg;

	api_routes_replied(s, req);
	s->rt->migration_reported = true;
}

void api_get_migrate(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;

	api_routes_progress(s, &p);
	/* The end this process exits after: a source's completion, a target's failure. */
	if (p.state == MIGRATION_COMPLETED ||
	    (!s->rt->vm && (p.state == MIGRATION_FAILED || p.state == MIGRATION_CANCELLED)))
		evhttp_request_set_on_complete_cb(req, on_final_progress_sent, s);
	api_reply_json(req, 200, progress_json(&p));
}

/*
 * A target with no VM yet: stop waiting, or abort the receive (the source
 * gets an ERROR with the reason and resumes); refused from PREPARED on.
 * The process then exits with status 1 (docs/api.md).
 */
static void put_cancel_incoming(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;
	struct incoming_status st;
	char why[256], err[256] = "";
	int ret;

	if (!runtime_incoming_status(s->rt, &st))
		memset(&st, 0, sizeof(st));
	if (st.phase == INCOMING_WAITING)
		snprintf(why, sizeof(why), "cancelled through the API while waiting on %s",
			 st.listen);
	else
		snprintf(why, sizeof(why),
			 "cancelled through the API while receiving from %s: the source keeps "
			 "the VM",
			 st.peer);
	ret = runtime_incoming_stop(s->rt, 1, why, err, sizeof(err));
	if (ret) {
		api_reply_error(req,
				ret == -EBUSY || ret == -EALREADY || ret == -ENOENT ? 409 : 500,
				"cannot cancel the incoming migration: %s", err);
		return;
	}
	api_routes_progress(s, &p);
	p.state = MIGRATION_CANCELLED;
	api_reply_json(req, 202, api_progress_to_json(&p, migration_state_name(p.state)));
}

void api_put_cancel(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;
	char err[512] = "";
	int ret;

	if (!s->rt->vm && (s->rt->in || s->rt->in_ended)) {
		put_cancel_incoming(s, req);
		return;
	}
	api_routes_progress(s, &p);
	if (!runtime_migration_active(&p) || !s->rt->mig) {
		api_reply_error(req, 409, "no migration is running (state %s)",
				migration_state_name(p.state));
		return;
	}
	/*
	 * In switchover and postcopy the engine refuses (-EBUSY) and says why
	 * (postcopy: the VM already runs on the target, the source's copy is no
	 * longer complete, use resume): 409 with its message.
	 */
	ret = migration_cancel(s->rt->mig, err, sizeof(err));
	if (ret) {
		api_reply_error(req, ret == -ESRCH || ret == -EALREADY || ret == -EBUSY ? 409 : 500,
				"cannot cancel the migration: %s", err[0] ? err : strerror(-ret));
		return;
	}
	api_routes_progress(s, &p);
	api_reply_json(req, 202, progress_json(&p));
}

void api_put_migrate_resume(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;
	char to[sizeof(((struct migration_params *)0)->to)];
	char err[512];
	cJSON *body;
	int ret;

	body = api_read_body(req);
	if (!body)
		return;
	ret = api_resume_from_json(body, to, sizeof(to), err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		api_reply_error(req, 400, "%s", err);
		return;
	}
	/* the engine knows whether a postcopy migration is paused: it answers */
	err[0] = '\0';
	if (!s->rt->mig) {
		api_reply_error(req, 409, "cannot resume the migration: no migration to resume");
		return;
	}
	ret = migration_resume(s->rt->mig, to, err, sizeof(err));
	if (ret) {
		int code = ret == -EINVAL || ret == -ENOENT || ret == -ESRCH || ret == -EBUSY ||
				   ret == -EALREADY
			       ? 409
			       : 500;

		api_reply_error(req, code, "cannot resume the migration: %s",
				err[0] ? err : strerror(-ret));
		return;
	}
	api_routes_progress(s, &p);
	api_reply_json(req, 202, progress_json(&p));
}

/*
 * The source asks the target (or, decide "resume", resumes here); the
 * target takes the operator's "run" or "discard". The engine answers
 * whether the outcome is unknown at all.
 */
void api_put_migrate_recover(struct api_routes *s, struct evhttp_request *req)
{
	struct migration_progress p;
	char to[sizeof(((struct migration_params *)0)->to)];
	char err[512] = "";
	enum api_decide decide;
	cJSON *body = api_read_body(req);
	int ret;

	if (!body)
		return;
	ret = api_recover_from_json(body, to, sizeof(to), &decide, err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		api_reply_error(req, 400, "%s", err);
		return;
	}
	if (s->rt->mig) {
		if (decide == API_DECIDE_RUN || decide == API_DECIDE_DISCARD) {
			api_reply_error(req, 400,
					"'decide' on a source must be \"resume\" (or absent)");
			return;
		}
		ret = migration_recover(s->rt->mig, to, decide == API_DECIDE_RESUME, err,
					sizeof(err));
	} else if (s->rt->in && s->rt->vm) { /* a VM here: the receive thread is done */
		if (decide != API_DECIDE_RUN && decide != API_DECIDE_DISCARD) {
			api_reply_error(
			    req, 400,
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
		api_reply_error(req, ret == -EINVAL ? 400 : 409, "cannot recover: %s",
				err[0] ? err : strerror(-ret));
		return;
	}
	api_routes_progress(s, &p);
	api_reply_json(req, 202, progress_json(&p));
}
