/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_event_lines.c - the JSON of each line of GET /api/v1/vm/events
 * (api_event_lines.h). A progress line reuses GET /api/v1/vm/migrate's
 * progress object and a snapshot line GET /api/v1/vm/snapshot's, so that a
 * line reads like the reply a poller would have had.
 */
#include "api_event_lines.h"

#include <stdint.h>
#include <time.h>

#include "api_routes.h"
#include "api_view.h"

static double wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)(ts.tv_nsec / 1000000);
}

const char *api_event_change_type(enum migration_state s)
{
	switch (s) {
	case MIGRATION_COMPLETED:
		return "completed";
	case MIGRATION_FAILED:
		return "failed";
	case MIGRATION_CANCELLED:
		return "cancelled";
	default:
		return "state";
	}
}

/* A line's head: {"type", "timestamp_ms", "vm_state"[, "dropped_progress"]}. */
static cJSON *line_head(const char *type, const char *vm_state, unsigned dropped)
{
	cJSON *j = cJSON_CreateObject();

	if (!j || !cJSON_AddStringToObject(j, "type", type) ||
	    !cJSON_AddNumberToObject(j, "timestamp_ms", wall_ms()) ||
	    !cJSON_AddStringToObject(j, "vm_state", vm_state) ||
	    (dropped && !cJSON_AddNumberToObject(j, "dropped_progress", dropped))) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

cJSON *api_event_progress_line(struct runtime *rt, const char *type,
			       const struct migration_progress *p, const char *vm_state,
			       unsigned dropped)
{
	cJSON *j = line_head(type, vm_state, dropped);
	cJSON *prog = api_progress_json_rt(rt, p);

	if (!j || !prog) {
		cJSON_Delete(prog);
		cJSON_Delete(j);
		return NULL;
	}
	/* the progress object's members, flat: a line reads like GET .../migrate's reply */
	while (prog->child) {
		cJSON *item = cJSON_DetachItemViaPointer(prog, prog->child);

		cJSON_AddItemToObject(j, item->string, item);
	}
	cJSON_Delete(prog);
	return j;
}

cJSON *api_event_snapshot_line(const struct snapshot_progress *p, const char *vm_state,
			       unsigned dropped)
{
	cJSON *j = line_head("snapshot", vm_state, dropped);
	cJSON *snap = api_snapshot_json(p);

	if (!j || !snap || !cJSON_AddItemToObject(j, "snapshot", snap)) {
		cJSON_Delete(snap);
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

cJSON *api_event_throttle_line(const struct migration_throttle_change *c, unsigned change,
			       unsigned missed, const char *vm_state, unsigned dropped)
{
	cJSON *j = line_head("throttle", vm_state, dropped);
	cJSON *t = cJSON_CreateObject();

	if (!j || !t || !cJSON_AddItemToObject(j, "throttle", t)) {
		cJSON_Delete(t);
		cJSON_Delete(j);
		return NULL;
	}
	if (!cJSON_AddNumberToObject(t, "pct", c->pct) ||
	    !cJSON_AddNumberToObject(t, "vcpus", c->vcpus) ||
	    !cJSON_AddNumberToObject(t, "pass", c->pass) ||
	    !cJSON_AddNumberToObject(t, "at_ms", (double)c->at_ms) ||
	    !cJSON_AddNumberToObject(t, "change", change) ||
	    (missed && !cJSON_AddNumberToObject(t, "missed", missed))) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}
