/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migrate_print.h - what `vmm migrate` prints: the live progress line, the
 * final summary, the progress object as JSON, the postcopy-paused hint
 * (docs/api.md, "vmm migrate").
 *
 * Called by cli_migrate.c and migrate_follow.c on the main thread of
 * `vmm migrate`. `state` is the progress object's "state" string as the
 * server sent it; p->state is the same state as an enum (api_json.h).
 * Only the summary and the JSON go to stdout; the rest goes to stderr.
 */
#ifndef VMM_MIGRATE_PRINT_H
#define VMM_MIGRATE_PRINT_H

#include <cjson/cJSON.h>

#include "migration.h"

/* The one live line on a terminal (stderr), rewritten in place. */
void migrate_print_progress(const struct migration_progress *p, const char *state);

/* Erases the live line (stderr) before another message. */
void migrate_print_clear(void);

/* The summary of a finished (or the last) migration, on stdout. */
void migrate_print_summary(const struct migration_progress *p, const char *state);

/* One line of JSON on stdout. */
void migrate_print_json(const cJSON *j);

/* Why postcopy paused and how to finish it; `to` (may be NULL) is the target's address. */
void migrate_print_paused_hint(const struct migration_progress *p, const char *to);

#endif /* VMM_MIGRATE_PRINT_H */
