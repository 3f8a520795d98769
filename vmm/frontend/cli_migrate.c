/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `vmm migrate`: drives a live migration through the source VM's control
 * API (docs/api.md): PUT /api/v1/vm/migrate (or, for a paused postcopy
 * migration, PUT /api/v1/vm/migrate/resume), then polls GET
 * /api/v1/vm/migrate until the migration ends and the source has exited.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_client.h"
#include "api_json.h"
#include "api_server.h"
#include "cli.h"
#include "config.h"
#include "size.h"

static const char migrate_usage[] =
	"usage: vmm migrate --to HOST:PORT [--vm NAME | --api-socket PATH] [OPTIONS]\n"
	"       vmm migrate --resume --to HOST:PORT [--vm NAME | --api-socket PATH] [--json]\n"
	"       vmm migrate --status [--vm NAME | --api-socket PATH] [--json]\n"
	"       vmm migrate --cancel [--vm NAME | --api-socket PATH]\n"
	"\n"
	"Live-migrates a running VM to a target started with `vmm run --incoming`.\n"
	"Exits 0 once the migration has completed and the source VMM has exited,\n"
	"1 when it failed or was cancelled (the VM keeps running on the source),\n"
	"2 on a bad command line, 3 when a postcopy migration paused (its connection\n"
	"broke: the VM runs on the target, which still lacks pages; finish it with\n"
	"--resume). Ctrl-C cancels the migration (not once in postcopy).\n"
	"\n"
	"  --vm NAME               the VM's name (default \"vmm\"): its default socket\n"
	"  --api-socket PATH       the VM's API socket instead\n"
	"  --to HOST:PORT          the target's migration address\n"
	"  --downtime-ms N         allowed downtime (default 300)\n"
	"  --max-bandwidth SIZE    bytes/s on the wire, e.g. 1G or 200M (default unlimited)\n"
	"  --connections N         page-data connections, 1..16 (default 4)\n"
	"  --compress zstd[:LEVEL]|none   page compression, LEVEL 1..19 (default zstd:1)\n"
	"  --harvest-threads N     dirty-log harvest threads, 1..64 (default: online CPUs)\n"
	"  --clear-chunk PAGES     dirty-bit clear granularity, multiple of 64 (default 512)\n"
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
	"  --timeout-ms N          connect/ack timeout; also how long to wait for the\n"
	"                          source to exit (default 10000)\n"
	"  --json                  print the final progress object as JSON\n"
	"  --status                print the progress of the current/last migration\n"
	"  --cancel                cancel the running migration\n"
	"  --resume                finish a paused postcopy migration: reconnect to the\n"
	"                          target at --to and follow it like a migration\n"
	"  -h, --help              this text\n";

#define REQUEST_TIMEOUT_MS 5000
#define POLL_INTERVAL_MS 100
#define DEFAULT_EXIT_WAIT_MS 10000
#define MAX_POLL_ERRORS 20 /* consecutive failed polls (2 s) before giving up */

enum { ACT_MIGRATE, ACT_STATUS, ACT_CANCEL, ACT_RESUME };

/* Exit status when a postcopy migration paused (docs/api.md). */
#define EXIT_POSTCOPY_PAUSED 3

struct migrate_opts {
	int action;
	bool json;
	const char *vm_name;
	const char *socket;
	uint64_t exit_wait_ms;
	cJSON *body; /* the PUT /api/v1/vm/migrate (or .../resume) request */
	const char *to;
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL); /* EINTR (Ctrl-C) just ends the nap early */
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

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
		O_TO = 256, O_VM, O_SOCKET, O_DOWNTIME, O_BW, O_CONN, O_COMPRESS, O_HARVEST,
		O_CHUNK, O_PASSES, O_MAXTIME, O_NOCONV, O_MODE, O_POSTCOPY_AFTER,
		O_NO_FINAL_BITMAP, O_TIMEOUT, O_JSON, O_STATUS, O_CANCEL, O_RESUME,
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
		{"status", no_argument, NULL, O_STATUS},
		{"cancel", no_argument, NULL, O_CANCEL},
		{"resume", no_argument, NULL, O_RESUME},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool status = false, cancel = false, resume = false, tuning = false;
	const char *timeout_arg = NULL;
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
			o->socket = optarg;
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
				parse_u64(optarg, &o->exit_wait_ms);
				timeout_arg = optarg;
			}
			break;
		case O_JSON:
			o->json = true;
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
	if (o->vm_name && o->socket) {
		fprintf(stderr, "vmm migrate: use either --vm or --api-socket, not both\n");
		return EXIT_USAGE;
	}
	if (status + cancel + resume + (to != NULL && !resume) != 1) {
		fprintf(stderr,
			"vmm migrate: use exactly one of --to, --resume --to, --status and --cancel\n%s",
			migrate_usage);
		return EXIT_USAGE;
	}
	if (resume && !to) {
		fprintf(stderr, "vmm migrate: --resume needs --to HOST:PORT (the target's migration "
				"address, where it waits for the source)\n");
		return EXIT_USAGE;
	}
	if (resume && tuning) {
		/* a resume keeps the parameters of the migration it finishes */
		fprintf(stderr, "vmm migrate: --resume takes only --to (and --timeout-ms, --json)\n");
		return EXIT_USAGE;
	}
	if (!to && (tuning || timeout_arg)) {
		fprintf(stderr, "vmm migrate: migration options need --to\n");
		return EXIT_USAGE;
	}
	o->to = to;
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

		memset(&p, 0, sizeof(p));
		if (api_params_from_json(o->body, &p, err, sizeof(err))) {
			fprintf(stderr, "vmm migrate: %s\n", err);
			return EXIT_USAGE;
		}
	}
	return 0;
}

/* ---- output ---- */

static double mib(uint64_t b)
{
	return (double)b / (1024.0 * 1024.0);
}

static const char *yes(bool b)
{
	return b ? "yes" : "no";
}

static bool is_postcopy_active(const char *state)
{
	/* "postcopy" too, should an engine name the state that way */
	return !strcmp(state, API_STATE_POSTCOPY_ACTIVE) || !strcmp(state, "postcopy");
}

static bool is_postcopy_paused(const char *state)
{
	return !strcmp(state, API_STATE_POSTCOPY_PAUSED);
}

/* Stale pages not yet sent: what postcopy still has to deliver. */
static uint64_t postcopy_left(const struct migration_progress *p)
{
	uint64_t done = p->pages_requested + p->pages_pushed;

	return p->postcopy_pages > done ? p->postcopy_pages - done : 0;
}

static void show_progress(const struct migration_progress *p, const char *state)
{
	if (is_postcopy_active(state)) {
		fprintf(stderr, "\r\033[Kpostcopy: %llu pages left, requested %llu, pushed %llu",
			(unsigned long long)postcopy_left(p),
			(unsigned long long)p->pages_requested,
			(unsigned long long)p->pages_pushed);
	} else if (is_postcopy_paused(state)) {
		fprintf(stderr, "\r\033[Kpostcopy paused: %llu pages left, waiting for the resume",
			(unsigned long long)postcopy_left(p));
	} else if (!strcmp(state, "setup")) {
		fprintf(stderr, "\r\033[Ksetting up the migration...");
	} else {
		fprintf(stderr,
			"\r\033[K%s pass %u: sent %.1f MiB, %.1f MiB remaining, %.1f MB/s, "
			"dirty %llu pages/s, expected downtime %llu ms",
			state, p->pass, mib(p->bytes_sent), mib(p->bytes_remaining),
			(double)p->throughput_bps / 1e6, (unsigned long long)p->dirty_rate_pps,
			(unsigned long long)p->expected_downtime_ms);
	}
	fflush(stderr);
}

static void print_summary(const struct migration_progress *p, const char *state)
{
	printf("migration %s in %llu ms (setup %llu ms), downtime %.3f ms\n", state,
	       (unsigned long long)p->total_ms, (unsigned long long)p->setup_ms,
	       p->downtime_us ? p->downtime_us / 1000.0 : (double)p->downtime_ms);
	if (p->downtime_us)
		printf("  blackout:    %llu us (ACK received at %llu us): pause %llu, send %llu, "
		       "state %llu, ack %llu (target restore %llu)\n",
		       (unsigned long long)p->downtime_us, (unsigned long long)p->downtime_ack_us,
		       (unsigned long long)p->blackout_pause_us,
		       (unsigned long long)p->blackout_send_us,
		       (unsigned long long)p->blackout_state_us,
		       (unsigned long long)p->blackout_ack_us,
		       (unsigned long long)p->target_restore_us);
	printf("  on the wire: %.1f MiB (%llu bytes)\n", mib(p->bytes_sent),
	       (unsigned long long)p->bytes_sent);
	printf("  pages:       %llu data, %llu zero, %llu skipped\n",
	       (unsigned long long)p->pages_sent, (unsigned long long)p->zero_pages,
	       (unsigned long long)p->skipped_pages);
	printf("  passes:      %u (%s), converged: %s\n", p->pass,
	       p->mode_used[0] ? p->mode_used : "precopy", yes(p->converged));
	printf("  harvest:     last %llu us, final %llu us, total %llu us, %u threads\n",
	       (unsigned long long)p->harvest_us_last, (unsigned long long)p->harvest_us_final,
	       (unsigned long long)p->harvest_us_total, p->harvest_threads);
	printf("  dirty log:   manual protect %s, initially set %s%s\n", yes(p->manual_protect),
	       yes(p->initially_set),
	       p->sparse_guest ? " (sparse guest: first pass = resident pages)" : "");
	if (!strcmp(p->mode_used, "postcopy")) {
		if (p->bitmap_raw_bytes || p->bitmap_bytes)
			printf("  bitmap:      %.1f KiB raw, %.1f KiB compressed, sent in %llu us\n",
			       p->bitmap_raw_bytes / 1024.0, p->bitmap_bytes / 1024.0,
			       (unsigned long long)p->bitmap_send_us);
		else
			printf("  bitmap:      not sent (every page stale on the target)\n");
		printf("  postcopy:    %llu pages stale at switchover, %llu requested, %llu pushed\n",
		       (unsigned long long)p->postcopy_pages,
		       (unsigned long long)p->pages_requested,
		       (unsigned long long)p->pages_pushed);
		if (p->all_arrived_ms)
			printf("  all arrived: %llu ms after switchover\n",
			       (unsigned long long)p->all_arrived_ms);
		else
			printf("  all arrived: not yet (%llu pages left)\n",
			       (unsigned long long)postcopy_left(p));
		printf("  faults:      %llu, latency p50 %llu us, p99 %llu us, max %llu us\n",
		       (unsigned long long)p->faults, (unsigned long long)p->fault_p50_us,
		       (unsigned long long)p->fault_p99_us, (unsigned long long)p->fault_max_us);
		printf("  resumes:     %u\n", p->resumes);
	}
	if (p->error[0])
		printf("  error:       %s\n", p->error);
}

static void print_json(const cJSON *j)
{
	char *text = cJSON_PrintUnformatted(j);

	if (text) {
		puts(text);
		free(text);
	}
}

/* ---- the source process ---- */

/* True while pid exists and is not a zombie waiting for its parent. */
static bool pid_alive(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;

	if (kill(pid, 0) && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true; /* no /proc: trust kill() */
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (p && (p = strrchr(buf, ')')) && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
		return false;
	return true;
}

static bool wait_pid_exit(pid_t pid, uint64_t timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms;

	while (pid_alive(pid)) {
		if (now_ms() >= deadline)
			return false;
		sleep_ms(20);
	}
	return true;
}

/* ---- actions ---- */

static int request(const struct migrate_opts *o, const char *method, const char *uri,
		   const cJSON *body, struct api_response *resp, char *err, size_t errlen)
{
	return api_client_request(o->socket, method, uri, body, REQUEST_TIMEOUT_MS, resp, err,
				  errlen);
}

static void paused_hint(const struct migrate_opts *o, const struct migration_progress *p)
{
	fprintf(stderr, "vmm migrate: migration %s: %s\n", API_STATE_POSTCOPY_PAUSED,
		p->error[0] ? p->error : "no reason given");
	fprintf(stderr, "vmm migrate: postcopy paused: run vmm migrate --resume --to HOST:PORT to "
			"finish");
	if (o->to)
		fprintf(stderr, " (the target's address: %s)", o->to);
	fputc('\n', stderr);
}

static int do_status(const struct migrate_opts *o)
{
	struct api_response r;
	struct migration_progress p;
	char err[512], state[32];

	if (request(o, "GET", "/api/v1/vm/migrate", NULL, &r, err, sizeof(err))) {
		fprintf(stderr, "vmm migrate: %s\n", err);
		return 1;
	}
	if (r.status != 200 || api_progress_from_json(r.json, &p, state, sizeof(state))) {
		fprintf(stderr, "vmm migrate: status: HTTP %d: %s\n", r.status,
			api_response_error(&r));
		api_response_free(&r);
		return 1;
	}
	if (o->json)
		print_json(r.json);
	else if (!strcmp(state, "none"))
		printf("no migration has been started\n");
	else
		print_summary(&p, state);
	if (is_postcopy_paused(state))
		paused_hint(o, &p);
	api_response_free(&r);
	return 0;
}

static int do_cancel(const struct migrate_opts *o)
{
	struct api_response r;
	char err[512];
	int ret;

	if (request(o, "PUT", "/api/v1/vm/migrate/cancel", NULL, &r, err, sizeof(err))) {
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

static bool terminal(const char *state)
{
	return !strcmp(state, "completed") || !strcmp(state, "failed") ||
	       !strcmp(state, "cancelled") || is_postcopy_paused(state);
}

/* A poll error that means "the source went away", not "try again". */
static bool source_gone_error(int ret)
{
	return ret == -ECONNREFUSED || ret == -ENOENT || ret == -ECONNRESET || ret == -EPIPE;
}

/*
 * ACT_MIGRATE: PUT /api/v1/vm/migrate; ACT_RESUME: PUT .../migrate/resume.
 * Then the same: follow the progress until it ends and the source exits.
 */
static int do_migrate(struct migrate_opts *o)
{
	bool resuming = o->action == ACT_RESUME;
	const char *uri = resuming ? "/api/v1/vm/migrate/resume" : "/api/v1/vm/migrate";
	uint64_t started;
	struct api_response r;
	struct migration_progress p;
	const cJSON *jpid;
	cJSON *last = NULL;
	char err[512], state[32] = "setup";
	bool tty = isatty(STDERR_FILENO), cancel_sent = false, lost = false;
	unsigned errors = 0;
	pid_t pid = 0;
	unsigned resumes0 = 0;
	int ret, status = 1;

	memset(&p, 0, sizeof(p));
	if (request(o, "GET", "/api/v1/vm", NULL, &r, err, sizeof(err))) {
		fprintf(stderr, "vmm migrate: %s\n", err);
		return 1;
	}
	jpid = cJSON_GetObjectItemCaseSensitive(r.json, "pid");
	if (r.status != 200 || !cJSON_IsNumber(jpid) || jpid->valuedouble < 1) {
		fprintf(stderr, "vmm migrate: GET /api/v1/vm: HTTP %d: %s\n", r.status,
			api_response_error(&r));
		api_response_free(&r);
		return 1;
	}
	pid = (pid_t)jpid->valuedouble;
	api_response_free(&r);

	if (request(o, "PUT", uri, o->body, &r, err, sizeof(err))) {
		fprintf(stderr, "vmm migrate: %s\n", err);
		return 1;
	}
	if (r.status != 202) {
		fprintf(stderr, "vmm migrate: %s\n", api_response_error(&r));
		ret = r.status == 400 ? EXIT_USAGE : 1;
		api_response_free(&r);
		return ret;
	}
	if (resuming) {
		if (!api_progress_from_json(r.json, &p, state, sizeof(state)))
			resumes0 = p.resumes;
		else
			snprintf(state, sizeof(state), "%s", API_STATE_POSTCOPY_PAUSED);
	}
	api_response_free(&r);
	started = now_ms();

	signal(SIGINT, on_sigint);
	for (;;) {
		if (interrupted && !cancel_sent) {
			cancel_sent = true;
			signal(SIGINT, SIG_DFL); /* a second Ctrl-C kills us */
			if (tty)
				fprintf(stderr, "\r\033[K");
			if (is_postcopy_active(state) || is_postcopy_paused(state)) {
				/* the server refuses it anyway: the VM already runs on the target */
				fprintf(stderr, "vmm migrate: a postcopy migration cannot be "
						"cancelled (the VM runs on the target); still "
						"following it, Ctrl-C again to stop watching\n");
			} else {
				fprintf(stderr, "vmm migrate: cancelling...\n");
				if (!request(o, "PUT", "/api/v1/vm/migrate/cancel", NULL, &r, err,
					     sizeof(err)))
					api_response_free(&r);
			}
		}
		ret = request(o, "GET", "/api/v1/vm/migrate", NULL, &r, err, sizeof(err));
		if (ret) {
			bool late = !strcmp(state, "switchover") || !strcmp(state, "completed");

			/* the source exits right after completion: the pid decides */
			if (source_gone_error(ret) && (late || !pid_alive(pid))) {
				lost = true;
				break;
			}
			if (++errors >= MAX_POLL_ERRORS) {
				if (tty)
					fprintf(stderr, "\r\033[K");
				fprintf(stderr, "vmm migrate: %s\n", err);
				goto out;
			}
			sleep_ms(POLL_INTERVAL_MS);
			continue;
		}
		errors = 0;
		if (r.status != 200 || api_progress_from_json(r.json, &p, state, sizeof(state))) {
			if (tty)
				fprintf(stderr, "\r\033[K");
			fprintf(stderr, "vmm migrate: GET /api/v1/vm/migrate: HTTP %d: %s\n",
				r.status, api_response_error(&r));
			api_response_free(&r);
			goto out;
		}
		cJSON_Delete(last);
		last = r.json;
		r.json = NULL;
		api_response_free(&r);
		/*
		 * Right after a resume the engine may still report the pause it is
		 * reconnecting from: give it the resume's connect timeout.
		 */
		if (resuming && is_postcopy_paused(state) && now_ms() - started < o->exit_wait_ms &&
		    p.resumes == resumes0) {
			sleep_ms(POLL_INTERVAL_MS);
			continue;
		}
		resuming = false;
		if (terminal(state))
			break;
		if (tty)
			show_progress(&p, state);
		sleep_ms(POLL_INTERVAL_MS);
	}
	if (tty)
		fprintf(stderr, "\r\033[K");

	if (lost && (is_postcopy_active(state) || is_postcopy_paused(state))) {
		fprintf(stderr,
			"vmm migrate: the source VMM (pid %d) exited during %s, before it reported "
			"completion: the VM on the target may lack pages\n",
			(int)pid, state);
		goto out;
	}
	if (lost && strcmp(state, "switchover") && strcmp(state, "completed")) {
		fprintf(stderr, "vmm migrate: the source VMM (pid %d) exited during %s\n", (int)pid,
			state);
		goto out;
	}
	if (!lost && is_postcopy_paused(state)) {
		if (o->json && last)
			print_json(last);
		paused_hint(o, &p);
		status = EXIT_POSTCOPY_PAUSED;
		goto out;
	}
	if (!lost && strcmp(state, "completed")) {
		if (o->json && last)
			print_json(last);
		fprintf(stderr, "vmm migrate: migration %s: %s\n", state,
			p.error[0] ? p.error : "no reason given");
		goto out;
	}
	if (!wait_pid_exit(pid, o->exit_wait_ms)) {
		fprintf(stderr,
			"vmm migrate: the migration %s but the source VMM (pid %d) has not exited "
			"after %llu ms\n",
			lost ? "reached switchover" : "completed", (int)pid,
			(unsigned long long)o->exit_wait_ms);
		goto out;
	}
	if (lost) {
		/* the last progress we saw was before completion: say so */
		snprintf(state, sizeof(state), "completed");
		if (last) {
			cJSON_DeleteItemFromObjectCaseSensitive(last, "state");
			cJSON_AddStringToObject(last, "state", "completed");
		}
		fprintf(stderr, "vmm migrate: the source exited after switchover; the figures "
				"below are from the last progress report\n");
	}
	if (o->json && last)
		print_json(last);
	else if (!o->json)
		print_summary(&p, state);
	status = 0;
out:
	cJSON_Delete(last);
	return status;
}

int cli_migrate(int argc, char **argv)
{
	struct migrate_opts o = {.exit_wait_ms = DEFAULT_EXIT_WAIT_MS};
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
	if (!o.socket) {
		const char *name = o.vm_name ? o.vm_name : "vmm";

		if (api_default_socket_path(name, path, sizeof(path))) {
			fprintf(stderr, "vmm migrate: --vm '%s': no valid socket path for that name\n",
				name);
			cJSON_Delete(o.body);
			return EXIT_USAGE;
		}
		o.socket = path;
	}
	if (access(o.socket, F_OK)) {
		fprintf(stderr, "vmm migrate: no API socket at '%s' (is the VM running? use --vm "
				"NAME or --api-socket PATH)\n",
			o.socket);
		cJSON_Delete(o.body);
		return 1;
	}
	switch (o.action) {
	case ACT_RESUME:
		ret = do_migrate(&o);
		break;
	case ACT_STATUS:
		ret = do_status(&o);
		break;
	case ACT_CANCEL:
		ret = do_cancel(&o);
		break;
	default:
		ret = do_migrate(&o);
		break;
	}
	cJSON_Delete(o.body);
	return ret;
}
