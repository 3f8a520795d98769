/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_json.h - JSON <-> structs for the control API (docs/api.md), shared
 * by the server (api_server.c) and `vmm migrate` (cli_migrate.c).
 *
 * Pure functions over cJSON values: no sockets, no engine calls, so that
 * they are unit-testable and the CLI links without the migration engine.
 * Errors are one line that names the field and the allowed values, e.g.
 *   'connections' must be an integer from 1 to 16
 */
#ifndef VMM_API_JSON_H
#define VMM_API_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "migration.h"

/* Allowed ranges of the migrate request's fields (docs/api.md). */
#define API_DOWNTIME_MS_MAX 600000ULL      /* 10 minutes */
#define API_MAX_TIME_MS_MAX 86400000ULL    /* one day */
#define API_TIMEOUT_MS_MAX 3600000ULL      /* one hour */
#define API_MAX_PASSES_MAX 10000ULL
#define API_CLEAR_CHUNK_MIN 64ULL          /* KVM clears dirty bits in units of 64 pages */
#define API_CLEAR_CHUNK_MAX 262144ULL      /* 1 GiB of 4 KiB pages */
#define API_BANDWIDTH_MAX (1ULL << 53)     /* largest integer a JSON number holds exactly */
#define API_ZSTD_LEVEL_MIN 1
#define API_ZSTD_LEVEL_MAX 19
#define API_ZSTD_LEVEL_DEFAULT 1           /* "compress": "zstd" */
#define API_POSTCOPY_AFTER_MAX 1000ULL     /* precopy passes before a postcopy switchover */

/* The progress object's "state" of the two postcopy states (docs/api.md). */
#define API_STATE_POSTCOPY_ACTIVE "postcopy-active"
#define API_STATE_POSTCOPY_PAUSED "postcopy-paused"

/*
 * Applies the fields of a PUT /api/v1/vm/migrate body to *p, which the
 * caller has filled with migration_params_defaults() (or anything else):
 * absent fields keep their value. "to" is required. Every field is
 * validated; unknown fields are refused, so that a typo is not silently
 * ignored. Returns 0, or -EINVAL with the message in err (p may then be
 * partly written).
 */
int api_params_from_json(const cJSON *body, struct migration_params *p, char *err, size_t errlen);

/*
 * The body of PUT /api/v1/vm/migrate/resume: {"to": "host:port"}, required
 * and validated like the migrate request's "to"; other members are
 * refused. Returns 0 with the address in to/tolen, or -EINVAL with the
 * message in err.
 */
int api_resume_from_json(const cJSON *body, char *to, size_t tolen, char *err, size_t errlen);

/*
 * The progress object's "state" string: "none", "setup", "precopy",
 * "switchover", "postcopy-active", "postcopy-paused", "completed",
 * "failed", "cancelled". The API's own table (the names are part of its
 * contract, docs/api.md), so that this file needs no engine symbol.
 */
const char *api_state_name(enum migration_state s);

/*
 * The progress object of GET /api/v1/vm/migrate: one member per field of
 * struct migration_progress, same names. `state` is the state's name,
 * i.e. api_state_name(p->state). NULL when out of memory.
 */
cJSON *api_progress_to_json(const struct migration_progress *p, const char *state);

/*
 * The reverse, for the client: fills *out (state is left MIGRATION_NONE)
 * and copies the "state" string into state/statelen. Missing members read
 * as 0/false/"". Returns 0, or -EINVAL when j is not an object or "state"
 * is missing.
 */
int api_progress_from_json(const cJSON *j, struct migration_progress *out, char *state,
			   size_t statelen);

/* "precopy" / "postcopy" / "auto"; "switchover" / "fail". */
const char *api_mode_name(enum migration_mode m);
const char *api_no_converge_name(enum migration_no_converge n);

/*
 * Parses "zstd", "zstd:LEVEL" (1..19) or "none" into a compress_level
 * (0 = none). Returns 0 or -EINVAL.
 */
int api_parse_compress(const char *s, int *level);

/* Reads an integer member: 0 when found and exact, -ENOENT when absent, -EINVAL otherwise. */
int api_json_get_u64(const cJSON *obj, const char *name, uint64_t *out);

#endif /* VMM_API_JSON_H */
