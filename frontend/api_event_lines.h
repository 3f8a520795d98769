/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_event_lines.h - what each line of GET /api/v1/vm/events says
 * (docs/api.md): the JSON of a state, progress, final, snapshot or
 * throttle line. Which watcher gets which line, and when, is
 * api_events.c's; these only build a line from what a tick sampled.
 *
 * Every line starts with the same head: {"type", "timestamp_ms" (wall
 * clock), "vm_state"[, "dropped_progress": progress lines skipped for this
 * watcher since its last line, when any]}. Each function returns a new
 * object the caller owns, or NULL when out of memory.
 */
#ifndef VMM_API_EVENT_LINES_H
#define VMM_API_EVENT_LINES_H

#include <cjson/cJSON.h>

#include "migration.h"
#include "snapshot.h"

struct runtime;

/* The type of the line for a change to migration state s: "completed", "failed", ... "state". */
const char *api_event_change_type(enum migration_state s);

/*
 * {head, ...the progress object}, that object as GET /api/v1/vm/migrate
 * has it (a target with no VM: its own state and members), flat.
 */
cJSON *api_event_progress_line(struct runtime *rt, const char *type,
			       const struct migration_progress *p, const char *vm_state,
			       unsigned dropped);

/* {"type": "snapshot", ..., "snapshot": the snapshot object of GET /api/v1/vm/snapshot}. */
cJSON *api_event_snapshot_line(const struct snapshot_progress *p, const char *vm_state,
			       unsigned dropped);

/*
 * {"type": "throttle", ..., "throttle": {"pct", "vcpus", "pass", "at_ms",
 * "change"[, "missed"]}}: change number `change` of the migration's
 * throttle; `missed` changes before it had left the log.
 */
cJSON *api_event_throttle_line(const struct migration_throttle_change *c, unsigned change,
			       unsigned missed, const char *vm_state, unsigned dropped);

#endif /* VMM_API_EVENT_LINES_H */
