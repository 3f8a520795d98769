/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `vmm migrate`: its command line, turned into the request body of
 * PUT /api/v1/vm/migrate (or .../resume) and checked with the server's own
 * code (api_json.c) before anything is sent; the one-shot --status and
 * --cancel requests. Starting and following a migration is
 * migrate_follow.c's, printing migrate_print.c's (docs/api.md).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_client.h"
#include "api_json.h"
#include "api_server.h"
#include "cli.h"
#include "migrate_follow.h"
#include "migrate_print.h"
#include "size.h"

enum { ACT_MIGRATE, ACT_STATUS, ACT_CANCEL, ACT_RESUME, ACT_RECOVER };

struct migrate_opts {
	int action;
	struct migrate_cmd cmd;
	const char *vm_name;
	bool on_target; /* --recover --decide run|discard */
	cJSON *body;	/* the PUT /api/v1/vm/migrate (or .../resume, .../recover) request */
};

/* ---- options ---- */

static int add_number(cJSON *body, const char *opt, const char *field, const char *arg, bool size)
{
	uint64_t v;
	int ret;

	if (size) {
		char buf[64];
		size_t n = strlen(arg);

		/* "1G/s" reads as "1G" */
		snprintf(buf, sizeof(buf), "%s", arg);
		if (n > 2 && n < sizeof(buf) && !strcmp(buf + n - 2, "/s"))
			buf[n - 2] = '\0';
		ret = parse_size(buf, &v);
	} else {
		ret = parse_u64(arg, &v);
	}
	if (ret || v > MIGRATION_PARAM_U64_MAX) {
		fprintf(stderr, "vmm migrate: %s: bad %s '%s'%s\n", opt, size ? "size" : "number",
			arg, size ? " (use a number with K/M/G, e.g. 200M)" : "");
		return -EINVAL;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(body, field);
	return cJSON_AddNumberToObject(body, field, (double)v) ? 0 : -ENOMEM;
}

static int add_string(cJSON *body, const char *field, const char *arg)
{
	cJSON_DeleteItemFromObjectCaseSensitive(body, field);
	return cJSON_AddStringToObject(body, field, arg) ? 0 : -ENOMEM;
}

/* Returns 0, or the exit status to return (0 for --help is -1). */
static int parse_opts(int argc, char **argv, struct migrate_opts *o)
{
	/* The table's options are O_PARAM + their row; the rest are the verb's own. */
	enum {
		O_TO = 256,
		O_VM,
		O_SOCKET,
		O_JSON,
		O_PROGRESS,
		O_STATUS,
		O_CANCEL,
		O_RESUME,
		O_RECOVER,
		O_DECIDE,
		O_LIST_PARAMS,
		O_PARAM,
	};
#define PARAM_INDEX(NAME, ...) P_##NAME,
	enum { MIGRATION_PARAMS(PARAM_INDEX) P_COUNT };
#undef PARAM_INDEX
#define PARAM_OPTION(NAME, FIELD, KIND, DEF, MIN, MAX, FLAG, ARG, ...)                             \
	{FLAG, KIND == MP_BOOL ? no_argument : required_argument, NULL, O_PARAM + P_##NAME},
	static const struct option opts[] = {
	    {"to", required_argument, NULL, O_TO},
	    {"vm", required_argument, NULL, O_VM},
	    {"api-socket", required_argument, NULL, O_SOCKET},
	    MIGRATION_PARAMS(PARAM_OPTION){"json", no_argument, NULL, O_JSON},
	    {"progress", no_argument, NULL, O_PROGRESS},
	    {"status", no_argument, NULL, O_STATUS},
	    {"cancel", no_argument, NULL, O_CANCEL},
	    {"resume", no_argument, NULL, O_RESUME},
	    {"recover", no_argument, NULL, O_RECOVER},
	    {"decide", required_argument, NULL, O_DECIDE},
	    {"list-params", no_argument, NULL, O_LIST_PARAMS},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
#undef PARAM_OPTION
	bool status = false, cancel = false, resume = false, tuning = false, recover = false;
	const char *timeout_arg = NULL, *decide = NULL;
	const char *to = NULL;
	int opt, ret = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (opt >= O_PARAM && opt < O_PARAM + P_COUNT) {
			const struct migration_param *d = &migration_param_table[opt - O_PARAM];
			char flag[64];

			snprintf(flag, sizeof(flag), "--%s", d->flag);
			if (d->kind == MP_BOOL) {
				cJSON_DeleteItemFromObjectCaseSensitive(o->body, d->name);
				ret = cJSON_AddTrueToObject(o->body, d->name) ? 0 : -ENOMEM;
			} else if (d->kind == MP_ENUM || d->kind == MP_COMPRESS) {
				ret = add_string(o->body, d->name, optarg);
			} else {
				ret =
				    add_number(o->body, flag, d->name, optarg, d->kind == MP_SIZE);
			}
			/* --timeout-ms also bounds the CLI's own waits; it is no tuning of the copy
			 */
			if (opt == O_PARAM + P_timeout_ms) {
				if (!ret) {
					parse_u64(optarg, &o->cmd.exit_wait_ms);
					timeout_arg = optarg;
				}
			} else {
				tuning = true;
			}
			if (ret)
				return EXIT_USAGE;
			continue;
		}
		switch (opt) {
		case O_TO:
			to = optarg;
			ret = add_string(o->body, "to", optarg);
			break;
		case O_VM:
			o->vm_name = optarg;
			break;
		case O_SOCKET:
			o->cmd.socket = optarg;
			break;
		case O_JSON:
			o->cmd.json = true;
			break;
		case O_PROGRESS:
			o->cmd.progress = true;
			break;
		case O_STATUS:
			status = true;
			break;
		case O_CANCEL:
			cancel = true;
			break;
		case O_RESUME:
			resume = true;
			break;
		case O_RECOVER:
			recover = true;
			break;
		case O_DECIDE:
			decide = optarg;
			break;
		case O_LIST_PARAMS:
			return migrate_list_params();
		case 'h':
			migrate_usage(stdout);
			return -1;
		default:
			migrate_usage(stderr);
			return EXIT_USAGE;
		}
		if (ret)
			return EXIT_USAGE;
	}
	if (optind != argc) {
		fprintf(stderr, "vmm migrate: unexpected argument '%s'\n", argv[optind]);
		migrate_usage(stderr);
		return EXIT_USAGE;
	}
	if (o->vm_name && o->cmd.socket) {
		fprintf(stderr, "vmm migrate: use either --vm or --api-socket, not both\n");
		return EXIT_USAGE;
	}
	if (recover) {
		char addr[256], err[512];
		enum api_decide d;

		if (status || cancel || resume || tuning) {
			fprintf(stderr, "vmm migrate: --recover takes only --to, --decide, --vm, "
					"--api-socket and --json\n");
			return EXIT_USAGE;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(o->body, "timeout_ms");
		if (decide && add_string(o->body, "decide", decide))
			return EXIT_USAGE;
		if (api_recover_from_json(o->body, addr, sizeof(addr), &d, err, sizeof(err))) {
			fprintf(stderr, "vmm migrate: %s\n", err);
			return EXIT_USAGE;
		}
		o->on_target = d == API_DECIDE_RUN || d == API_DECIDE_DISCARD;
		o->cmd.to = to;
		o->action = ACT_RECOVER;
		return 0;
	}
	if (decide) {
		fprintf(stderr, "vmm migrate: --decide goes with --recover\n");
		return EXIT_USAGE;
	}
	if (status + cancel + resume + (to != NULL && !resume) != 1) {
		fprintf(stderr, "vmm migrate: use exactly one of --to, --resume --to, --recover, "
				"--status and --cancel\n");
		migrate_usage(stderr);
		return EXIT_USAGE;
	}
	if (resume && !to) {
		fprintf(stderr,
			"vmm migrate: --resume needs --to HOST:PORT (the target's migration "
			"address, where it waits for the source)\n");
		return EXIT_USAGE;
	}
	if (resume && tuning) {
		/* a resume keeps the parameters of the migration it finishes */
		fprintf(stderr,
			"vmm migrate: --resume takes only --to (and --timeout-ms, --json)\n");
		return EXIT_USAGE;
	}
	if (!to && (tuning || timeout_arg)) {
		fprintf(stderr, "vmm migrate: migration options need --to\n");
		return EXIT_USAGE;
	}
	o->cmd.to = to;
	o->action = status ? ACT_STATUS : cancel ? ACT_CANCEL : resume ? ACT_RESUME : ACT_MIGRATE;
	if (resume) {
		/* the body is {"to": ...} only; the server checks again */
		char addr[256], err[512];

		cJSON_DeleteItemFromObjectCaseSensitive(o->body, "timeout_ms");
		if (api_resume_from_json(o->body, addr, sizeof(addr), err, sizeof(err))) {
			fprintf(stderr, "vmm migrate: %s\n", err);
			return EXIT_USAGE;
		}
	} else if (to) {
		/* the server checks again; this gives the same message without a round trip */
		struct migration_params p;
		char err[512];

		migration_params_defaults(&p);
		if (api_params_from_json(o->body, &p, err, sizeof(err))) {
			fprintf(stderr, "vmm migrate: %s\n", err);
			return EXIT_USAGE;
		}
	}
	return 0;
}

/*
 * A target's API before a VM runs there (docs/api.md): where it listens,
 * what it received so far, or why its incoming migration ended.
 */
static void print_incoming(const cJSON *j, const char *state)
{
	const cJSON *listen = cJSON_GetObjectItemCaseSensitive(j, "listen");
	const cJSON *peer = cJSON_GetObjectItemCaseSensitive(j, "peer");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(j, "error");
	uint64_t bytes = 0, pages = 0;

	if (!strcmp(state, "waiting")) {
		printf("waiting for an incoming migration on %s\n",
		       cJSON_IsString(listen) ? listen->valuestring : "?");
		return;
	}
	if (!strcmp(state, "failed") || !strcmp(state, "cancelled")) {
		printf("the incoming migration on %s %s: %s\n",
		       cJSON_IsString(listen) ? listen->valuestring : "?",
		       !strcmp(state, "failed") ? "failed" : "was cancelled",
		       cJSON_IsString(error) ? error->valuestring : "?");
		return;
	}
	api_json_get_u64(j, "bytes_received", &bytes);
	api_json_get_u64(j, "pages_received", &pages);
	printf("receiving a migration on %s from %s: %.1f MiB in %llu pages so far\n",
	       cJSON_IsString(listen) ? listen->valuestring : "?",
	       cJSON_IsString(peer) ? peer->valuestring : "?", (double)bytes / (1024.0 * 1024.0),
	       (unsigned long long)pages);
}

/* ---- the one-shot requests ---- */

static int do_status(const struct migrate_opts *o)
{
	struct api_response r;
	struct migration_progress p;
	char err[512], state[32];

	if (migrate_request(&o->cmd, "GET", "/api/v1/vm/migrate", NULL, &r, err, sizeof(err))) {
		fprintf(stderr, "vmm migrate: %s\n", err);
		return 1;
	}
	if (r.status != 200 || api_progress_from_json(r.json, &p, state, sizeof(state))) {
		fprintf(stderr, "vmm migrate: status: HTTP %d: %s\n", r.status,
			api_response_error(&r));
		api_response_free(&r);
		return 1;
	}
	if (o->cmd.json)
		migrate_print_json(r.json);
	else if (!strcmp(state, migration_state_name(MIGRATION_NONE)))
		printf("no migration has been started\n");
	else if (cJSON_HasObjectItem(r.json, "listen")) /* a target with no VM here */
		print_incoming(r.json, state);
	else
		migrate_print_status(&p, state);
	if (p.state == MIGRATION_POSTCOPY_PAUSED)
		migrate_print_paused_hint(&p, o->cmd.to);
	api_response_free(&r);
	return 0;
}

static int do_cancel(const struct migrate_opts *o)
{
	struct api_response r;
	char err[512];
	int ret;

	if (migrate_request(&o->cmd, "PUT", "/api/v1/vm/migrate/cancel", NULL, &r, err,
			    sizeof(err))) {
		fprintf(stderr, "vmm migrate: %s\n", err);
		return 1;
	}
	ret = r.status == 202 ? 0 : 1;
	if (ret)
		fprintf(stderr, "vmm migrate: cancel: %s\n", api_response_error(&r));
	else
		fprintf(stderr, "vmm migrate: cancel requested\n");
	api_response_free(&r);
	return ret;
}

int cli_migrate(int argc, char **argv)
{
	struct migrate_opts o = {.cmd.exit_wait_ms = MIGRATE_EXIT_WAIT_MS};
	char path[PATH_MAX];
	int ret;

	signal(SIGPIPE, SIG_IGN);
	o.body = cJSON_CreateObject();
	if (!o.body) {
		fprintf(stderr, "vmm migrate: out of memory\n");
		return 1;
	}
	ret = parse_opts(argc, argv, &o);
	if (ret) {
		cJSON_Delete(o.body);
		return ret < 0 ? 0 : ret;
	}
	ret = cli_api_socket("migrate", o.vm_name, o.on_target, path, sizeof(path), &o.cmd.socket);
	if (ret) {
		cJSON_Delete(o.body);
		return ret;
	}
	switch (o.action) {
	case ACT_STATUS:
		ret = do_status(&o);
		break;
	case ACT_CANCEL:
		ret = do_cancel(&o);
		break;
	case ACT_RECOVER:
		ret = migrate_recover(&o.cmd, o.body, o.on_target);
		break;
	default:
		ret = migrate_follow(&o.cmd, o.action == ACT_RESUME, o.body);
		break;
	}
	cJSON_Delete(o.body);
	return ret;
}
