/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_json.h - JSON <-> structs for the control API (docs/api.md), for the
 * server's handlers and for `vmm migrate`.
 *
 * Pure functions over cJSON values: no sockets, no engine threads, so that
 * they are unit-testable. Any thread may call them. The engine code they
 * reach is the parameter table's (migration_params.h), pure functions too.
 *
 * Errors are one line that names the field and the allowed values, e.g.
 *   'downtime_ms' must be an integer from 1 to 600000
 */
#ifndef VMM_API_JSON_H
#define VMM_API_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "migration.h"

/*
 * Applies the fields of a PUT /api/v1/vm/migrate body to *p, which the
 * caller has filled with migration_params_defaults() (or anything else that
 * passes migration_params_check()): absent fields keep their value. "to"
 * is required; every other member is a row of the parameter table
 * (migration_params.h), typed and ranged by it, with its one message; unknown
 * members are refused, so that a typo is not silently ignored. Returns 0, or -EINVAL with the
 * message in err (p may then be partly written).
 */
int api_params_from_json(const cJSON *body, struct migration_params *p, char *err, size_t errlen);

/*
 * The body of PUT /api/v1/vm/migrate/resume: {"to": "host:port"}, required
 * and validated like the migrate request's "to"; other members are
 * refused. Returns 0 with the address in to/tolen, or -EINVAL with the
 * message in err.
 */
int api_resume_from_json(const cJSON *body, char *to, size_t tolen, char *err, size_t errlen);

/* The body of PUT /api/v1/vm/migrate/recover: {"to"?: "host:port", "decide"?: ...}. */
enum api_decide {
	API_DECIDE_ASK,	    /* source: ask the target (the default) */
	API_DECIDE_RESUME,  /* source: the target is gone, resume here */
	API_DECIDE_RUN,	    /* target: the source is gone, run here */
	API_DECIDE_DISCARD, /* target: the source runs the VM, discard this copy */
};
/* "to" (optional: empty), "decide" (optional: API_DECIDE_ASK); other members refused. */
int api_recover_from_json(const cJSON *body, char *to, size_t tolen, enum api_decide *decide,
			  char *err, size_t errlen);

/*
 * The progress object of GET /api/v1/vm/migrate: "state" (the string
 * `state`, normally migration_state_name(p->state)) and one member per field of
 * struct migration_progress, each named and typed in api_json.c. NULL when
 * out of memory.
 */
cJSON *api_progress_to_json(const struct migration_progress *p, const char *state);

/*
 * The reverse, for the client: fills *out, its state from the "state"
 * string (MIGRATION_NONE for a name this build does not know), and copies
 * that string into state/statelen. Missing members read as 0/false/"".
 * Returns 0, or -EINVAL when j is not an object or "state" is missing.
 */
int api_progress_from_json(const cJSON *j, struct migration_progress *out, char *state,
			   size_t statelen);

/* "precopy" / "postcopy" / "auto" (the parameter table's names). */
const char *api_mode_name(enum migration_mode m);

/*
 * Parses "zstd", "zstd:LEVEL" (LEVEL a decimal integer from 1) or "none"
 * into a compress_level (0 = none). The upper limit of LEVEL is the
 * table's (migration_param_set()). Returns 0 or -EINVAL.
 */
int api_parse_compress(const char *s, int *level);

/* Reads an integer member: 0 when found and exact, -ENOENT when absent, -EINVAL otherwise. */
int api_json_get_u64(const cJSON *obj, const char *name, uint64_t *out);

#endif /* VMM_API_JSON_H */
