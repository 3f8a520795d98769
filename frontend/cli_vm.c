/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_vm.c - `vmm status|info|pause|resume|stop`: one API call each on a
 * running VM's socket (docs/api.md, "CLI verbs"), so that nothing everyday
 * needs curl. The server decides what is allowed (a pause during postcopy,
 * a stop in switchover-unknown: runtime_refusal()); these only ask and show
 * the answer, or the server's error, in one line.
 *
 * Exit status: 0 done, 1 the server refused or could not be reached, 2 a
 * bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_client.h"
#include "clock.h"
#include "api_server.h"
#include "cli.h"

#define VERB_TIMEOUT_MS 10000

struct verb {
	const char *name;   /* argv[0] */
	const char *method; /* HTTP */
	const char *uri;
	const char *help; /* one line for --help */
};

static const struct verb verbs[] = {
    {"status", "GET", "/api/v1/vm", "the VM's state (and its migration's, if any)"},
    {"info", "GET", "/api/v1/vm", "the VM's configuration and the versions of vmm"},
    {"pause", "PUT", "/api/v1/vm/pause", "pause the guest's vCPUs"},
    {"resume", "PUT", "/api/v1/vm/resume", "resume a VM paused with 'vmm pause'"},
    {"stop", "PUT", "/api/v1/vm/shutdown", "stop the VM (vmm run exits as on SIGTERM)"},
};

static const struct verb *find_verb(const char *name)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(verbs[i].name, name))
			return &verbs[i];
	return NULL;
}

bool cli_is_vm_verb(const char *name)
{
	return find_verb(name) != NULL;
}

static void usage(FILE *f, const struct verb *v)
{
	fprintf(f,
		"usage: vmm %s [--vm NAME | --api-socket PATH] [--json]\n"
		"\n"
		"%c%s.\n"
		"\n"
		"  --vm NAME          the VM's name (default \"vmm\"): its default socket\n"
		"  --api-socket PATH  the VM's API socket instead\n"
		"  --json             print the server's JSON reply\n",
		v->name, v->help[0] - ('a' - 'A'), v->help + 1);
}

static const char *str(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static double num(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void print_status(const cJSON *j)
{
	const cJSON *throttle = cJSON_GetObjectItemCaseSensitive(j, "throttle");
	const cJSON *mig = cJSON_GetObjectItemCaseSensitive(j, "migration");
	const char *ms = str(mig, "state");

	/* A target with no VM yet (docs/api.md): where it listens, from whom, how far. */
	if (!strcmp(str(j, "state"), "failed") || !strcmp(str(j, "state"), "cancelled")) {
		printf("%s: the incoming migration on %s %s: %s\n", str(j, "name"),
		       str(j, "listen"),
		       !strcmp(str(j, "state"), "failed") ? "failed" : "was cancelled",
		       str(mig, "error"));
		return;
	}
	if (!strcmp(str(j, "state"), "waiting") || !strcmp(str(j, "state"), "receiving")) {
		printf("%s: %s for an incoming migration on %s", str(j, "name"), str(j, "state"),
		       str(j, "listen"));
		if (str(j, "peer")[0])
			printf(", from %s: %.1f MiB in %.0f pages so far", str(j, "peer"),
			       num(j, "bytes_received") / (1024 * 1024), num(j, "pages_received"));
		else if (num(j, "refused") > 0)
			printf(" (%.0f connection%s refused, the last %s)", num(j, "refused"),
			       num(j, "refused") == 1 ? "" : "s", str(j, "last_refused"));
		printf("\n");
		return;
	}
	printf("%s: %s (%.0f vCPUs, %.0f MiB)", str(j, "name"), str(j, "state"), num(j, "vcpus"),
	       num(j, "memory") / (1024 * 1024));
	if (ms[0] && strcmp(ms, "none"))
		printf(", migration %s", ms);
	/* An older server has no "throttle": num() reads 0. */
	if (num(throttle, "pct") > 0)
		printf(", throttled %.0f%% on %.0f vCPU%s", num(throttle, "pct"),
		       num(throttle, "vcpus"), num(throttle, "vcpus") == 1 ? "" : "s");
	if (str(j, "end_reason")[0])
		printf(", ending: %s", str(j, "end_reason"));
	printf("\n");
}

static void print_info(const cJSON *j)
{
	printf("name        %s\n", str(j, "name"));
	printf("state       %s\n", str(j, "state"));
	printf("memory      %.0f MiB\n", num(j, "memory") / (1024 * 1024));
	printf("vcpus       %.0f\n", num(j, "vcpus"));
	printf("cpu_vendor  %s\n", str(j, "cpu_vendor"));
	printf("cpu         %s\n", str(j, "cpu_features"));
	printf("tsc_khz     %.0f\n", num(j, "tsc_khz"));
	printf("firmware    %s\n", str(j, "firmware"));
	if (str(j, "initrd")[0])
		printf("initrd      %s\n", str(j, "initrd"));
	printf("pid         %.0f\n", num(j, "pid"));
	printf("vmm         %s (the VM's), %s (this command's)\n", str(j, "version"), VMM_VERSION);
	const cJSON *d;

	cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(j, "devices"))
	{
		const cJSON *ok = cJSON_GetObjectItemCaseSensitive(d, "driver_ok");
		const cJSON *nr = cJSON_GetObjectItemCaseSensitive(d, "needs_reset");

		printf("device      %s on %s at %s irq %.0f: %s, %.0f requests, %.0f errors\n",
		       str(d, "kind"), str(d, "backend"), str(d, "mmio"), num(d, "irq"),
		       cJSON_IsTrue(nr)	  ? "broken by the guest (needs a reset)"
		       : cJSON_IsTrue(ok) ? "driver running"
					  : "no driver yet",
		       num(d, "requests"), num(d, "errors"));
	}
}

/*
 * Whether something serves at the API socket path: a source killed with -9
 * leaves its socket file behind, with nobody behind it. A server of another
 * uid (refused by the check) or one too busy to accept at once is there.
 */
static bool socket_alive(const char *path)
{
	char err[256];
	int fd = api_client_connect(path, now_ns() + 200 * 1000000ull, err, sizeof(err));

	if (fd >= 0)
		close(fd);
	return fd >= 0 || fd == -EACCES || fd == -ETIMEDOUT;
}

int cli_api_socket(const char *prog, const char *name, bool incoming_first, char *buf, size_t len,
		   const char **socket)
{
	if (!*socket) {
		if (api_default_socket_path(name ? name : "vmm", buf, len)) {
			fprintf(stderr, "vmm %s: --vm '%s': no valid socket path for that name\n",
				prog, name ? name : "vmm");
			return EXIT_USAGE;
		}
		/*
		 * A target's API waits at <name>.sock.incoming until the source is
		 * gone: tried first for vmm migrate's target actions, and by every
		 * command when nothing listens at <name>.sock (a waiting target, or
		 * one whose source died without releasing it).
		 */
		if ((incoming_first || !socket_alive(buf)) &&
		    strlen(buf) + sizeof(".incoming") <= len) {
			size_t n = strlen(buf);

			memcpy(buf + n, ".incoming", sizeof(".incoming"));
			if (access(buf, F_OK))
				buf[n] = '\0';
		}
		*socket = buf;
	}
	if (access(*socket, F_OK)) {
		fprintf(stderr,
			"vmm %s: no API socket at '%s' (is the VM running? use --vm NAME or "
			"--api-socket PATH)\n",
			prog, *socket);
		return 1;
	}
	return 0;
}

int cli_vm_verb(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"vm", required_argument, NULL, 'n'},
	    {"api-socket", required_argument, NULL, 's'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const struct verb *v = find_verb(argv[0]);
	const char *name = NULL, *socket = NULL;
	char path[PATH_MAX], err[512];
	struct api_response r;
	bool json = false;
	int c, ret;

	if (!v)
		return EXIT_USAGE;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			name = optarg;
			break;
		case 's':
			socket = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout, v);
			return 0;
		default:
			fprintf(stderr, "vmm %s: bad option '%s' (try 'vmm %s --help')\n", v->name,
				argv[optind - 1], v->name);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vmm %s: unexpected argument '%s'\n", v->name, argv[optind]);
		return EXIT_USAGE;
	}
	if (name && socket) {
		fprintf(stderr, "vmm %s: use either --vm or --api-socket, not both\n", v->name);
		return EXIT_USAGE;
	}
	ret = cli_api_socket(v->name, name, false, path, sizeof(path), &socket);
	if (ret)
		return ret;
	ret = api_client_request(socket, v->method, v->uri, NULL, VERB_TIMEOUT_MS, &r, err,
				 sizeof(err));
	if (ret) {
		fprintf(stderr, "vmm %s: %s\n", v->name, err);
		return 1;
	}
	if (r.status < 200 || r.status > 299) {
		fprintf(stderr, "vmm %s: %s %s: HTTP %d: %s\n", v->name, v->method, v->uri,
			r.status, api_response_error(&r));
		api_response_free(&r);
		return 1;
	}
	if (json) {
		char *text = r.json ? cJSON_PrintUnformatted(r.json) : NULL;

		printf("%s\n", text ? text : r.text);
		cJSON_free(text);
	} else if (!strcmp(v->name, "status")) {
		print_status(r.json);
	} else if (!strcmp(v->name, "info")) {
		print_info(r.json);
	} else {
		printf("%s\n", str(r.json, "state")[0] ? str(r.json, "state") : "done");
	}
	api_response_free(&r);
	return 0;
}
