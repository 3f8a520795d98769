/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migrate_follow.h - `vmm migrate --to` and `--resume`: start (or resume)
 * the migration through the source VM's API, then follow it on the event
 * stream GET /api/v1/vm/events (polling GET /api/v1/vm/migrate when the
 * stream is not served or breaks) until it ends (docs/api.md, "vmm
 * migrate"). Never through process ids: the source may live in another
 * pid namespace. The summary is printed before the stream is closed,
 * which is what lets a completed source exit (run_loop.c).
 *
 * On the main thread of `vmm migrate`, once, after the options are parsed.
 * While following, it installs a SIGINT handler: the first Ctrl-C asks the
 * server to cancel (the server decides whether a cancel is allowed,
 * runtime_refusal() and migration_cancel()); the second one kills the
 * process.
 */
#ifndef VMM_MIGRATE_FOLLOW_H
#define VMM_MIGRATE_FOLLOW_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "api_client.h"

#define MIGRATE_REQUEST_TIMEOUT_MS 5000	 /* one API request */
#define MIGRATE_EXIT_WAIT_MS	   10000 /* default --timeout-ms: switchover-unknown, a resume */

/* What `vmm migrate` was asked to act on. */
struct migrate_cmd {
	const char *socket;    /* the source VM's API socket */
	const char *to;	       /* the target's address (--to), NULL for --status/--cancel */
	bool json;	       /* print the final progress object instead of the summary */
	bool progress;	       /* --progress: a progress line a second even off a terminal */
	uint64_t exit_wait_ms; /* --timeout-ms: how long switchover-unknown, a resume may last */
};

/* One request to the source's API, bounded by MIGRATE_REQUEST_TIMEOUT_MS (api_client.h). */
int migrate_request(const struct migrate_cmd *c, const char *method, const char *uri,
		    const cJSON *body, struct api_response *resp, char *err, size_t errlen);

/*
 * Sends PUT /api/v1/vm/migrate (resume: PUT /api/v1/vm/migrate/resume) with
 * `body`, then follows the migration. Returns the exit status: 0 completed,
 * 1 failed/cancelled/lost, EXIT_USAGE when the
 * server refused the request with 400, EXIT_POSTCOPY_PAUSED (cli.h).
 */
int migrate_follow(const struct migrate_cmd *c, bool resume, const cJSON *body);

/*
 * cli_recover.c: PUT /api/v1/vm/migrate/recover with `body` ({"to"?,
 * "decide"?}) and, on a source, follows until the outcome is settled or
 * the attempt failed. 0 settled, 1 not, EXIT_USAGE for a refused request.
 */
int migrate_recover(const struct migrate_cmd *c, const cJSON *body, bool on_target);

#endif /* VMM_MIGRATE_FOLLOW_H */
