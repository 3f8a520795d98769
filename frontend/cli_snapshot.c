/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_snapshot.c - `vmm snapshot --to DIR`: one PUT /api/v1/vm/snapshot on
 * a running VM's socket (docs/api.md, "Snapshots"), which the server
 * answers once the snapshot is whole on disk (or has failed, the VM
 * running on). Exit status: 0 written, 1 refused or failed, 2 bad usage.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_client.h"
#include "cli.h"
#include "migration.h"
#include "snapshot.h"

#define SNAPSHOT_TIMEOUT_MS_DEFAULT (30 * 60 * 1000) /* a large guest to a slow disk */

static const char usage_text[] =
    "usage: vmm snapshot --to DIR [--vm NAME | --api-socket PATH] [--live [LIMIT]...]\n"
    "                    [--diff] [--stop] [--threads N] [--format-version V]\n"
    "                    [--timeout-ms T] [--json]\n"
    "\n"
    "Writes a snapshot of the running VM to DIR (created if absent, and then\n"
    "empty: a snapshot never replaces another): its memory, sparse, with every\n"
    "page at a fixed offset, and its state (docs/snapshot-format.md). The VM\n"
    "pauses while its state and pages are copied and then runs on; 'vmm run\n"
    "--restore DIR' starts it again from that moment, here or on another host.\n"
    "Restoring one snapshot twice gives two VMs with the same memory (the same\n"
    "random state, the same identity): whether that is safe for the guest is\n"
    "the user's choice, as with Firecracker's snapshots.\n"
    "\n"
    "  --to DIR           where to write it\n"
    "  --live             copy the pages while the guest runs, pass after pass\n"
    "                     over what it dirtied, and pause only for the last\n"
    "                     pass and the state, when a migration's precopy would\n"
    "                     switch over: once what is left is expected to fit the\n"
    "                     allowed downtime and no longer halves, or at a cap\n"
    "                     (the LIMITs below, a migration's own)\n"
    "  --diff             write only the pages written since the last snapshot\n"
    "                     of this VM, as a layer on top of it (that snapshot\n"
    "                     must have left dirty tracking on: [snapshot]\n"
    "                     track_dirty); restoring the layer applies the layers\n"
    "                     below it first; with --live its pages are copied\n"
    "                     while the guest runs too\n"
    "  --stop             stop the VM once the snapshot is written (a failed\n"
    "                     snapshot never stops it)\n"
    "  --threads N        page writers (default 4, at most 64)\n"
    "  --format-version V write the state in the form release V restores (as\n"
    "                     0.3.0: 'vmm --version' lists the releases), or refuse\n"
    "                     naming what V cannot express; default: this vmm's\n"
    "  --timeout-ms T     give up waiting after T ms (default 30 minutes); the\n"
    "                     snapshot itself goes on\n"
    "  --vm NAME          the VM's name (default \"vmm\"): its default socket\n"
    "  --api-socket PATH  the VM's API socket instead\n"
    "  --json             print the server's JSON reply\n"
    "\n"
    "LIMIT, with --live (vmm migrate's parameters of the same names):\n";

/* The live limits: the migration parameters snapshot_live_param() names, from their table. */
static void usage(FILE *f)
{
	fputs(usage_text, f);
	for (size_t i = 0; i < migration_param_count; i++) {
		const struct migration_param *d = &migration_param_table[i];
		char opt[64];

		if (!snapshot_live_param(d))
			continue;
		snprintf(opt, sizeof(opt), "--%s %s", d->flag, d->arg);
		fprintf(f, "  %-18s %s (default %llu)\n", opt, d->help, (unsigned long long)d->def);
	}
}

static double num(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* DIR as the server needs it: absolute (the VM's working directory is not ours). */
static int absolute(const char *dir, char *out, size_t len)
{
	char cwd[PATH_MAX];

	if (dir[0] == '/')
		return (size_t)snprintf(out, len, "%s", dir) < len ? 0 : -1;
	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	return (size_t)snprintf(out, len, "%s/%s", cwd, dir) < len ? 0 : -1;
}

/* With --live, the limits given: their rows' values, and which rows (a bit per table index). */
struct live_opts {
	struct migration_params p;
	uint64_t given;
};

static bool add_limits(cJSON *body, const struct live_opts *o)
{
	for (size_t i = 0; i < migration_param_count; i++)
		if (o->given >> i & 1 &&
		    !cJSON_AddNumberToObject(
			body, migration_param_table[i].name,
			(double)migration_param_get(&o->p, &migration_param_table[i])))
			return false;
	return true;
}

static int request(const char *socket, const char *dir, bool stop, bool live, bool diff,
		   long threads, const struct live_opts *lo, const char *format_version,
		   long timeout_ms, bool json)
{
	cJSON *body = cJSON_CreateObject();
	struct api_response r;
	char err[512];
	int ret;

	if (!body || !cJSON_AddStringToObject(body, "to", dir) ||
	    !cJSON_AddBoolToObject(body, "stop", stop) ||
	    !cJSON_AddBoolToObject(body, "live", live) ||
	    !cJSON_AddBoolToObject(body, "diff", diff) ||
	    (threads && !cJSON_AddNumberToObject(body, "threads", (double)threads)) ||
	    !add_limits(body, lo) ||
	    (format_version && !cJSON_AddStringToObject(body, "format_version", format_version))) {
		cJSON_Delete(body);
		fprintf(stderr, "vmm snapshot: out of memory\n");
		return 1;
	}
	ret = api_client_request(socket, "PUT", "/api/v1/vm/snapshot", body, (int)timeout_ms, &r,
				 err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		fprintf(stderr, "vmm snapshot: %s\n", err);
		return 1;
	}
	if (r.status != 200) {
		fprintf(stderr, "vmm snapshot: %s\n", api_response_error(&r));
		api_response_free(&r);
		return 1;
	}
	if (json) {
		char *text = r.json ? cJSON_PrintUnformatted(r.json) : NULL;

		printf("%s\n", text ? text : r.text);
		cJSON_free(text);
	} else {
		char passes[96] = "";
		const cJSON *conv = cJSON_GetObjectItemCaseSensitive(r.json, "converged");

		if (live)
			snprintf(passes, sizeof(passes), "%.0f live passes (%s), ",
				 num(r.json, "passes"),
				 cJSON_IsTrue(conv) ? "converged" : "at the pass or time cap");
		if (diff)
			snprintf(passes, sizeof(passes), "diff layer %.0f on %.8s..., ",
				 num(r.json, "generation"), str(r.json, "parent"));
		printf("snapshot %s written to %s: %.0f pages written of %.0f (%.1f MiB), "
		       "%sVM paused %.1f ms, %.0f ms in all%s\n",
		       str(r.json, "id"), str(r.json, "dir"), num(r.json, "pages_written"),
		       num(r.json, "pages_total"), num(r.json, "pages_written") * 4096 / (1 << 20),
		       passes, num(r.json, "pause_us") / 1000, num(r.json, "total_ms"),
		       stop ? "; the VM stops" : "");
	}
	api_response_free(&r);
	return 0;
}

/* A live limit's option: a number the parameter's own rule allows (migration_param_set()). */
static int live_opt(size_t row, const char *arg, struct live_opts *lo)
{
	const struct migration_param *d = &migration_param_table[row];
	char err[256], *end;
	unsigned long long v = strtoull(arg, &end, 10);

	if (*end || !arg[0] || arg[0] == '-' ||
	    migration_param_set(&lo->p, d, v, err, sizeof(err))) {
		if (*end || !arg[0] || arg[0] == '-')
			migration_param_refusal(d, err, sizeof(err));
		fprintf(stderr, "vmm snapshot: --%s: %s, not '%s'\n", d->flag, err, arg);
		return -1;
	}
	lo->given |= 1ull << row;
	return 0;
}

int cli_snapshot(int argc, char **argv)
{
	enum { O_LIMIT = 0x100 }; /* + the parameter's table index */
	static const struct option base[] = {
	    {"to", required_argument, NULL, 't'},
	    {"vm", required_argument, NULL, 'n'},
	    {"api-socket", required_argument, NULL, 's'},
	    {"stop", no_argument, NULL, 'S'},
	    {"live", no_argument, NULL, 'l'},
	    {"diff", no_argument, NULL, 'd'},
	    {"threads", required_argument, NULL, 'T'},
	    {"format-version", required_argument, NULL, 'F'},
	    {"timeout-ms", required_argument, NULL, 'm'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	};
	struct option longopts[sizeof(base) / sizeof(base[0]) + 64 + 1];
	size_t nopts = sizeof(base) / sizeof(base[0]);
	const char *name = NULL, *socket = NULL, *to = NULL, *format_version = NULL;
	char path[PATH_MAX], dir[PATH_MAX], *end;
	long threads = 0, timeout_ms = SNAPSHOT_TIMEOUT_MS_DEFAULT;
	struct live_opts lo = {.given = 0};
	bool stop = false, json = false, live = false, diff = false;
	int c, ret;

	memcpy(longopts, base, sizeof(base));
	for (size_t i = 0; i < migration_param_count && i < 64; i++)
		if (snapshot_live_param(&migration_param_table[i]))
			longopts[nopts++] =
			    (struct option){migration_param_table[i].flag, required_argument, NULL,
					    O_LIMIT + (int)i};
	longopts[nopts] = (struct option){NULL, 0, NULL, 0};
	migration_params_defaults(&lo.p);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			to = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 's':
			socket = optarg;
			break;
		case 'S':
			stop = true;
			break;
		case 'l':
			live = true;
			break;
		case 'd':
			diff = true;
			break;
		case 'T':
			threads = strtol(optarg, &end, 10);
			if (*end || threads < 1 || threads > 64) {
				fprintf(stderr,
					"vmm snapshot: --threads: expected 1 to 64, not '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'F':
			format_version = optarg;
			break;
		case 'm':
			timeout_ms = strtol(optarg, &end, 10);
			if (*end || timeout_ms < 1 || timeout_ms > 24l * 3600 * 1000) {
				fprintf(stderr,
					"vmm snapshot: --timeout-ms: expected 1 to 86400000, not "
					"'%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			if (c >= O_LIMIT && c < O_LIMIT + 64) {
				if (live_opt((size_t)(c - O_LIMIT), optarg, &lo))
					return EXIT_USAGE;
				break;
			}
			fprintf(stderr,
				"vmm snapshot: bad option '%s' (try 'vmm snapshot --help')\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc || !to || !to[0]) {
		fprintf(stderr,
			optind < argc ? "vmm snapshot: unexpected argument '%s'\n"
				      : "vmm snapshot: --to DIR is required%s\n",
			optind < argc ? argv[optind] : "");
		return EXIT_USAGE;
	}
	if (!live && lo.given) {
		fprintf(stderr, "vmm snapshot: --%s goes with --live\n",
			migration_param_table[__builtin_ctzll(lo.given)].flag);
		return EXIT_USAGE;
	}
	if (name && socket) {
		fprintf(stderr, "vmm snapshot: use either --vm or --api-socket, not both\n");
		return EXIT_USAGE;
	}
	if (absolute(to, dir, sizeof(dir))) {
		fprintf(stderr, "vmm snapshot: --to: path too long\n");
		return EXIT_USAGE;
	}
	ret = cli_api_socket("snapshot", name, false, path, sizeof(path), &socket);
	if (ret)
		return ret;
	return request(socket, dir, stop, live, diff, threads, &lo, format_version, timeout_ms,
		       json);
}
