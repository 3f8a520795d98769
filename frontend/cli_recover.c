/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `vmm migrate --recover`: settles a switchover whose outcome is unknown
 * (docs/migration-protocol.md, "Switchover"). On the source it asks the
 * target which side runs the VM and finishes the commit, or, with
 * --decide resume, resumes the VM here because the target is known to be
 * gone. On a target (--decide run | discard) it takes the operator's word
 * when the source is known to be gone. A postcopy paused on the source is
 * resumed the same way as --resume.
 */
#include <stdio.h>
#include <string.h>

#include "api_client.h"
#include "api_json.h"
#include "cli.h"
#include "clock.h"
#include "migrate_follow.h"
#include "migrate_print.h"

/* Long enough for a recover connection's connect, TLS and two replies. */
#define RECOVER_WAIT_MS 120000
#define RECOVER_POLL_MS 200

static int get_progress(const struct migrate_cmd *c, struct migration_progress *p, char *state,
			size_t len)
{
	struct api_response r;
	char err[512];
	int ret = migrate_request(c, "GET", "/api/v1/vm/migrate", NULL, &r, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "vmm migrate: %s\n", err);
		return -1;
	}
	ret = r.status == 200 ? api_progress_from_json(r.json, p, state, len) : -1;
	if (ret)
		fprintf(stderr, "vmm migrate: status: HTTP %d: %s\n", r.status,
			api_response_error(&r));
	api_response_free(&r);
	return ret;
}

/* Source, asking the target: waits for the outcome or the attempt's failure. */
static int follow_recover(const struct migrate_cmd *c, unsigned attempts_before)
{
	struct migration_progress p;
	char state[32];
	uint64_t t0 = now_ns();

	while (ms_since(t0) < RECOVER_WAIT_MS) {
		if (get_progress(c, &p, state, sizeof(state))) {
			/* A recovered source exits once the target runs the VM. */
			fprintf(stderr, "vmm migrate: the source VMM is gone: check the target's "
					"status\n");
			return 1;
		}
		if (p.state == MIGRATION_COMPLETED) {
			printf("recovered: the VM runs on the target\n");
			return 0;
		}
		if (p.state == MIGRATION_FAILED) {
			printf("recovered: the VM runs on the source (%s)\n", p.error);
			return 0;
		}
		if (p.state == MIGRATION_SWITCHOVER_UNKNOWN &&
		    p.recover_attempts > attempts_before) {
			fprintf(stderr, "vmm migrate: recover failed: %s\n", p.error);
			return 1;
		}
		/* A postcopy paused source stays so until its thread takes the decision. */
		if (p.state != MIGRATION_SWITCHOVER_UNKNOWN &&
		    p.state != MIGRATION_POSTCOPY_PAUSED) {
			printf("recovered: the VM runs on the target (%s)\n", state);
			return 0;
		}
		sleep_ms(RECOVER_POLL_MS);
	}
	fprintf(stderr, "vmm migrate: recover: no outcome within %u s; see vmm migrate --status\n",
		RECOVER_WAIT_MS / 1000);
	return 1;
}

int migrate_recover(const struct migrate_cmd *c, const cJSON *body, bool on_target)
{
	struct migration_progress p;
	struct api_response r;
	char err[512], state[32];
	int ret;

	if (get_progress(c, &p, state, sizeof(state)))
		return 1;
	/* A postcopy paused after an unconfirmed commit: its resume settles it. */
	if (!on_target && p.state == MIGRATION_POSTCOPY_PAUSED &&
	    !cJSON_GetObjectItemCaseSensitive(body, "decide")) {
		if (!c->to) {
			fprintf(stderr, "vmm migrate: the postcopy is paused: --recover needs --to "
					"HOST:PORT (where the target waits) to resume it\n");
			return EXIT_USAGE;
		}
		return migrate_follow(c, true, body);
	}
	ret = migrate_request(c, "PUT", "/api/v1/vm/migrate/recover", body, &r, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "vmm migrate: %s\n", err);
		return 1;
	}
	ret = r.status == 202 ? 0 : r.status == 400 ? EXIT_USAGE : 1;
	if (ret)
		fprintf(stderr, "vmm migrate: recover: %s\n", api_response_error(&r));
	api_response_free(&r);
	if (ret)
		return ret;
	if (on_target) {
		printf(
		    "decided: the target will %s\n",
		    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(body, "decide")) &&
			    !strcmp(cJSON_GetObjectItemCaseSensitive(body, "decide")->valuestring,
				    "run")
			? "run the VM"
			: "discard its copy");
		return 0;
	}
	return follow_recover(c, p.recover_attempts);
}
