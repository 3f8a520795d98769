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

static const char migrate_usage[] =
    "usage: vmm migrate --to HOST:PORT [--vm NAME | --api-socket PATH] [OPTIONS]\n"
    "       vmm migrate --resume --to HOST:PORT [--vm NAME | --api-socket PATH] [--json]\n"
    "       vmm migrate --status [--vm NAME | --api-socket PATH] [--json]\n"
    "       vmm migrate --cancel [--vm NAME | --api-socket PATH]\n"
    "       vmm migrate --recover [--to HOST:PORT] [--decide resume|run|discard]\n"
    "                   [--vm NAME | --api-socket PATH]\n"
    "\n"
    "Live-migrates a running VM to a target started with `vmm run --incoming`.\n"
    "Exits 0 once the migration has completed (the target committed),\n"
    "1 when it failed or was cancelled (the VM keeps running on the source),\n"
    "2 on a bad command line, 3 when a postcopy migration paused (its connection\n"
    "broke: the VM runs on the target, which still lacks pages; finish it with\n"
    "--resume), 4 when the switchover's outcome is unknown (both sides keep the\n"
    "VM paused; settle it with --recover). Ctrl-C cancels the migration (not once\n"
    "in postcopy).\n"
    "\n"
    "  --vm NAME               the VM's name (default \"vmm\"): its default socket\n"
    "  --api-socket PATH       the VM's API socket instead\n"
    "  --to HOST:PORT          the target's migration address\n"
    "  --downtime-ms N         allowed downtime (default 300)\n"
    "  --max-bandwidth SIZE    bytes/s on the wire, e.g. 1G or 200M (default unlimited)\n"
    "  --connections N         page-data connections, 1..16 (default 4)\n"
    "  --compress zstd[:LEVEL]|none   page compression, LEVEL 1..19 (default zstd:1)\n"
    "  --harvest-threads N     dirty-log harvest threads, 1..64 (default: online CPUs)\n"
    "  --clear-chunk PAGES     dirty-bit clear granularity, a power of two\n"
    "                          from 64 to 65536 (default 512)\n"
    "  --max-passes N          precopy passes before giving up converging (default 30)\n"
    "  --max-time-ms N         precopy time before giving up converging (default 60000)\n"
    "  --no-converge switchover|fail   what to do then (default switchover)\n"
    "  --mode precopy|postcopy|auto    precopy: stop-and-copy only; postcopy: run the\n"
    "                          VM on the target after --postcopy-after passes and\n"
    "                          send the rest on demand; auto: precopy while it\n"
    "                          converges, else postcopy (default: the engine's, auto)\n"
    "  --postcopy-after N      full precopy passes before a postcopy switchover,\n"
    "                          0..1000 (default 1)\n"
    "  --no-final-bitmap       postcopy: do not send the final dirty bitmap, the\n"
    "                          target fetches every page (a baseline to compare with)\n"
    "  --timeout-ms N          connect/ack timeout; also how long a switchover-unknown\n"
    "                          or a resume's reconnection is waited for (default 10000)\n"
    "  --json                  print the final progress object as JSON\n"
    "  --progress              a progress line a second on stderr even when it is\n"
    "                          not a terminal (on a terminal one line is rewritten)\n"
    "  --status                print the progress of the current/last migration\n"
    "  --cancel                cancel the running migration\n"
    "  --resume                finish a paused postcopy migration: reconnect to the\n"
    "                          target at --to and follow it like a migration\n"
    "  --recover               settle a switchover whose outcome is unknown\n"
    "                          (state switchover-unknown): on the source, ask the\n"
    "                          target (at --to, default the migration's) who runs\n"
    "                          the VM and finish the commit\n"
    "  --decide resume         with --recover on the source: the target is known to\n"
    "                          be gone; resume the VM here without asking\n"
    "  --decide run|discard    with --recover on the target (its socket is\n"
    "                          <name>.sock.incoming): the source is known to be gone\n"
    "                          (run) or to run the VM (discard)\n"
    "  -h, --help              this text\n";

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
	if (ret || v > API_BANDWIDTH_MAX) {
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
	enum {
		O_TO = 256,
		O_VM,
		O_SOCKET,
		O_DOWNTIME,
		O_BW,
		O_CONN,
		O_COMPRESS,
		O_HARVEST,
		O_CHUNK,
		O_PASSES,
		O_MAXTIME,
		O_NOCONV,
		O_MODE,
		O_POSTCOPY_AFTER,
		O_NO_FINAL_BITMAP,
		O_TIMEOUT,
		O_JSON,
		O_PROGRESS,
		O_STATUS,
		O_CANCEL,
		O_RESUME,
		O_RECOVER,
		O_DECIDE,
	};
	static const struct option opts[] = {
	    {"to", required_argument, NULL, O_TO},
	    {"vm", required_argument, NULL, O_VM},
	    {"api-socket", required_argument, NULL, O_SOCKET},
	    {"downtime-ms", required_argument, NULL, O_DOWNTIME},
	    {"max-bandwidth", required_argument, NULL, O_BW},
	    {"connections", required_argument, NULL, O_CONN},
	    {"compress", required_argument, NULL, O_COMPRESS},
	    {"harvest-threads", required_argument, NULL, O_HARVEST},
	    {"clear-chunk", required_argument, NULL, O_CHUNK},
	    {"max-passes", required_argument, NULL, O_PASSES},
	    {"max-time-ms", required_argument, NULL, O_MAXTIME},
	    {"no-converge", required_argument, NULL, O_NOCONV},
	    {"mode", required_argument, NULL, O_MODE},
	    {"postcopy-after", required_argument, NULL, O_POSTCOPY_AFTER},
	    {"no-final-bitmap", no_argument, NULL, O_NO_FINAL_BITMAP},
	    {"timeout-ms", required_argument, NULL, O_TIMEOUT},
	    {"json", no_argument, NULL, O_JSON},
	    {"progress", no_argument, NULL, O_PROGRESS},
	    {"status", no_argument, NULL, O_STATUS},
	    {"cancel", no_argument, NULL, O_CANCEL},
	    {"resume", no_argument, NULL, O_RESUME},
	    {"recover", no_argument, NULL, O_RECOVER},
	    {"decide", required_argument, NULL, O_DECIDE},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool status = false, cancel = false, resume = false, tuning = false, recover = false;
	const char *timeout_arg = NULL, *decide = NULL;
	const char *to = NULL;
	int opt, ret = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (opt >= O_DOWNTIME && opt <= O_NO_FINAL_BITMAP)
			tuning = true;
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
		case O_DOWNTIME:
			ret = add_number(o->body, "--downtime-ms", "downtime_ms", optarg, false);
			break;
		case O_BW:
			ret = add_number(o->body, "--max-bandwidth", "max_bandwidth", optarg, true);
			break;
		case O_CONN:
			ret = add_number(o->body, "--connections", "connections", optarg, false);
			break;
		case O_COMPRESS:
			ret = add_string(o->body, "compress", optarg);
			break;
		case O_HARVEST:
			ret = add_number(o->body, "--harvest-threads", "harvest_threads", optarg,
					 false);
			break;
		case O_CHUNK:
			ret = add_number(o->body, "--clear-chunk", "clear_chunk_pages", optarg,
					 false);
			break;
		case O_PASSES:
			ret = add_number(o->body, "--max-passes", "max_passes", optarg, false);
			break;
		case O_MAXTIME:
			ret = add_number(o->body, "--max-time-ms", "max_time_ms", optarg, false);
			break;
		case O_NOCONV:
			ret = add_string(o->body, "no_converge", optarg);
			break;
		case O_MODE:
			ret = add_string(o->body, "mode", optarg);
			break;
		case O_POSTCOPY_AFTER:
			ret = add_number(o->body, "--postcopy-after", "postcopy_after", optarg,
					 false);
			break;
		case O_NO_FINAL_BITMAP:
			cJSON_DeleteItemFromObjectCaseSensitive(o->body, "no_final_bitmap");
			ret = cJSON_AddTrueToObject(o->body, "no_final_bitmap") ? 0 : -ENOMEM;
			break;
		case O_TIMEOUT:
			ret = add_number(o->body, "--timeout-ms", "timeout_ms", optarg, false);
			if (!ret) {
				parse_u64(optarg, &o->cmd.exit_wait_ms);
				timeout_arg = optarg;
			}
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
		case 'h':
			fputs(migrate_usage, stdout);
			return -1;
		default:
			fputs(migrate_usage, stderr);
			return EXIT_USAGE;
		}
		if (ret)
			return EXIT_USAGE;
	}
	if (optind != argc) {
		fprintf(stderr, "vmm migrate: unexpected argument '%s'\n%s", argv[optind],
			migrate_usage);
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
		fprintf(
		    stderr,
		    "vmm migrate: use exactly one of --to, --resume --to, --recover, --status and "
		    "--cancel\n%s",
		    migrate_usage);
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

/* A waiting target's API (docs/api.md): where it listens, and what it received so far. */
static void print_incoming(const cJSON *j, const char *state)
{
	const cJSON *listen = cJSON_GetObjectItemCaseSensitive(j, "listen");
	const cJSON *peer = cJSON_GetObjectItemCaseSensitive(j, "peer");
	uint64_t bytes = 0, pages = 0;

	if (!strcmp(state, "waiting")) {
		printf("waiting for an incoming migration on %s\n",
		       cJSON_IsString(listen) ? listen->valuestring : "?");
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
	else if (!strcmp(state, api_state_name(MIGRATION_NONE)))
		printf("no migration has been started\n");
	else if (!strcmp(state, "waiting") || !strcmp(state, "receiving"))
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
