/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_view.c - the runtime as the API shows it (api_view.h): the VM's
 * state name, the migration's progress object, the one 409.
 */
#include <event2/http.h>
#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "api_json.h"
#include "api_reply.h"
#include "api_routes.h"
#include "api_view.h"
#include "migration.h"
#include "runtime.h"
#include "vm.h"

void api_routes_progress(struct api_routes *s, struct migration_progress *p)
{
	runtime_progress(s->rt, p);
}

/*
 * A target with no VM here (runtime_incoming_status()): "waiting" (no
 * source), "receiving" (a source's VM_DESC accepted, up to its decision),
 * "failed" or "cancelled" (from the failure to the exit); NULL otherwise.
 */
const char *api_incoming_state(struct runtime *rt, struct incoming_status *st)
{
	if (!runtime_incoming_status(rt, st))
		return NULL;
	if (st->phase == INCOMING_FAILED)
		return st->cancelled ? "cancelled" : "failed";
	return st->phase == INCOMING_WAITING ? "waiting" : "receiving";
}

/* Where a waiting target listens and, once a source came, from whom and how far. */
bool api_add_incoming(cJSON *j, const struct incoming_status *st)
{
	if (!cJSON_AddStringToObject(j, "listen", st->listen) ||
	    !cJSON_AddNumberToObject(j, "refused", (double)st->refused) ||
	    !cJSON_AddStringToObject(j, "last_refused", st->last_refused))
		return false;
	if (st->phase == INCOMING_WAITING || !st->peer[0])
		return true;
	return cJSON_AddStringToObject(j, "peer", st->peer) &&
	       cJSON_AddStringToObject(j, "incoming_vm", st->name) &&
	       cJSON_AddNumberToObject(j, "bytes_received", (double)st->bytes_received) &&
	       cJSON_AddNumberToObject(j, "pages_received", (double)st->pages_received);
}

cJSON *api_progress_json_rt(struct runtime *rt, const struct migration_progress *p)
{
	struct incoming_status st;
	const char *in_state = api_incoming_state(rt, &st);
	cJSON *j = api_progress_to_json(p, in_state ? in_state : migration_state_name(p->state));

	if (j && in_state && !api_add_incoming(j, &st)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

const char *api_vm_state(struct runtime *rt, const struct migration_progress *p)
{
	/*
	 * "migrated", "postcopy" and "postcopy-paused" say the guest left this
	 * process: only an outgoing migration's (rt->mig). A target's guest
	 * runs here through its incoming postcopy and after it completes.
	 */
	bool source = rt->mig != NULL;
	struct incoming_status st;
	const char *in_state = api_incoming_state(rt, &st);

	if (in_state)
		return in_state;
	if (source && p->state == MIGRATION_COMPLETED)
		return "migrated";
	if (vm_stopping(rt->vm))
		return "stopping";
	/* the guest does not run here any more, whatever the user asked before */
	if (source && p->state == MIGRATION_POSTCOPY_ACTIVE)
		return "postcopy";
	if (source && p->state == MIGRATION_POSTCOPY_PAUSED)
		return "postcopy-paused";
	if (p->state == MIGRATION_SWITCHOVER_UNKNOWN)
		return "switchover-unknown";
	if (runtime_migration_active(p))
		return "migrating";
	if (rt->user_paused)
		return "paused";
	return "running";
}

void api_routes_replied(struct api_routes *s, struct evhttp_request *req)
{
	struct evhttp_connection *c = req ? evhttp_request_get_connection(req) : NULL;

	/* Written: the connection's later close is no longer this request's. */
	if (c)
		evhttp_connection_set_closecb(c, NULL, NULL);
	if (s->replying)
		s->replying--;
}

/* 409 unless the VM is running (or user-paused); returns true when refused. */
bool api_refuse_busy(struct api_routes *s, struct evhttp_request *req, const char *what)
{
	char why[512];

	if (!runtime_refusal(s->rt, what, true, why, sizeof(why)))
		return false;
	api_reply_error(req, 409, "%s", why);
	return true;
}
