/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migrate_print.h - what `vmm migrate` prints: the live progress line, the
 * final summary, the progress object as JSON, the postcopy-paused hint
 * (docs/api.md, "vmm migrate").
 *
 * The main thread of `vmm migrate` only. `state` is the progress object's
 * "state" string as the server sent it; p->state is the same state as an
 * enum (api_json.h). Only the summary and the JSON go to stdout; the rest
 * goes to stderr.
 */
#ifndef VMM_MIGRATE_PRINT_H
#define VMM_MIGRATE_PRINT_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "migration.h"

/*
 * The progress line on stderr: percent of the pass and its ETA, bytes and
 * rate in MiB and MiB/s, the dirty rate, the expected downtime; postcopy
 * and switchover have their own. live: rewritten in place (a terminal);
 * else one "vmm migrate: ..." line each call (--progress into a file).
 */
void migrate_print_progress(const struct migration_progress *p, const char *state, bool live);

/* Erases the live line (stderr) before another message. */
void migrate_print_clear(void);

/* The summary of a finished (or the last) migration, on stdout. */
void migrate_print_summary(const struct migration_progress *p, const char *state);

/*
 * `vmm migrate --status`: the summary once the migration is final; while
 * it runs, its state, destination, elapsed time and the progress line's
 * text, on stdout.
 */
void migrate_print_status(const struct migration_progress *p, const char *state);

/* One line of JSON on stdout. */
void migrate_print_json(const cJSON *j);

/* Why postcopy paused and how to finish it; `to` (may be NULL) is the target's address. */
void migrate_print_paused_hint(const struct migration_progress *p, const char *to);

#endif /* VMM_MIGRATE_PRINT_H */
