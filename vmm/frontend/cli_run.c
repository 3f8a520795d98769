/* SPDX-License-Identifier: Apache-2.0 */
/* `vmm run`: boot a VM from a config file and wait for it to end. */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "hostport.h"
#include "api_server.h"
#include "cli.h"
#include "migration.h"
#include "runtime.h"
#include "config.h"
#include "vm.h"

static const char run_usage[] =
	"usage: vmm run CONFIG [--set section.key=value]... [options]\n"
	"       vmm run --incoming HOST:PORT [CONFIG] [options]\n"
	"\n"
	"Boots the VM described by CONFIG (an INI file, see docs/config.md), or\n"
	"with --incoming waits for one VM migrated from another vmm (the stream\n"
	"describes the VM; CONFIG then only supplies [console] and [api]). The\n"
	"guest's console goes to stdout (or [console] output). The VM serves its\n"
	"control API on a Unix socket (docs/api.md). vmm exits with the guest's\n"
	"exit status, 0 after the VM migrated away, 128+N when stopped by signal\n"
	"N, 1 on a VMM or guest failure, and 2 on a bad command line or config.\n"
	"\n"
	"  --set section.key=value   override one config key (repeatable)\n"
	"  --incoming HOST:PORT      receive a migrating VM on this address\n"
	"  --api-socket PATH         control API socket (default: per VM name)\n"
	"  --timing                  print start-up timings on stderr\n"
	"  -h, --help                this text\n";

int cli_load_config(struct vm_config *cfg, const char *path, char **sets, int nsets)
{
	char err[CONFIG_ERR_MAX];

	config_defaults(cfg);
	if (path && config_load_file(cfg, path, err, sizeof(err))) {
		fprintf(stderr, "vmm: %s\n", err);
		return EXIT_USAGE;
	}
	for (int i = 0; i < nsets; i++) {
		if (config_set(cfg, sets[i], err, sizeof(err))) {
			fprintf(stderr, "vmm: %s\n", err);
			return EXIT_USAGE;
		}
	}
	if (config_validate(cfg, err, sizeof(err))) {
		fprintf(stderr, "vmm: %s\n", err);
		return EXIT_USAGE;
	}
	return 0;
}

static int open_console(const struct vm_config *cfg)
{
	int fd;

	if (!strcmp(cfg->console_output, "stdout"))
		return dup(STDOUT_FILENO);
	fd = open(cfg->console_output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		fprintf(stderr, "vmm: [console] output: cannot open '%s': %s\n",
			cfg->console_output, strerror(errno));
	return fd;
}

struct run_ctx {
	struct runtime rt;
	struct vm *vm; /* == rt.vm */
	struct event_base *base;
	struct api_server *api;
	struct event *ev_source; /* target: the source's connection, until it closes */
	char api_path[PATH_MAX];
	uint64_t first_byte_ns;
	struct event *linger; /* migrated away: waiting for the summary to be read */
	uint64_t end_ns;
};

#define MIGRATED_LINGER_MS 3000

/*
 * A VM that migrated away lingers until `vmm migrate` has read the final
 * progress (or MIGRATED_LINGER_MS passed), then the process exits.
 */
static void on_linger_tick(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;

	(void)fd;
	(void)what;
	if (ctx->rt.migration_reported ||
	    (now_ns() - ctx->end_ns) / 1000000 >= MIGRATED_LINGER_MS)
		event_base_loopbreak(ctx->base);
}

static void on_vm_end(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	struct timeval tick = {0, 10000};

	(void)fd;
	(void)what;
	if (ctx->vm->end_reason != VM_END_MIGRATED || ctx->linger) {
		event_base_loopbreak(ctx->base);
		return;
	}
	ctx->end_ns = now_ns();
	ctx->linger = event_new(ctx->base, -1, EV_PERSIST, on_linger_tick, ctx);
	if (!ctx->linger || event_add(ctx->linger, &tick))
		event_base_loopbreak(ctx->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	char why[512];

	(void)what;
	/* Exiting in postcopy would destroy the only copy of pages the target lacks. */
	if (runtime_refusal(&ctx->rt, "stop", false, why, sizeof(why))) {
		fprintf(stderr, "vmm: %s: %s\n", ctx->vm->cfg.name, why);
		return;
	}
	vm_request_stop(ctx->vm, VM_END_SIGNAL, 128 + (int)sig, "stopped by %s",
			sig == SIGINT ? "SIGINT" : "SIGTERM");
}

static void on_first_byte(void *opaque)
{
	struct run_ctx *ctx = opaque;

	ctx->first_byte_ns = now_ns();
}

/*
 * Target after a migration: once the source is gone (it exits right after
 * our ACK, or after postcopy's last page), take over the VM's usual API
 * socket path. Polled: in postcopy, engine threads own the connection.
 */
static void on_incoming_tick(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	char err[256];

	(void)fd;
	(void)what;
	if (!migration_incoming_finished(ctx->rt.in))
		return;
	event_free(ctx->ev_source);
	ctx->ev_source = NULL;
	migration_incoming_free(ctx->rt.in);
	ctx->rt.in = NULL;
	if (ctx->api && api_server_rename(ctx->api, ctx->api_path, err, sizeof(err)))
		fprintf(stderr, "vmm: %s: %s\n", ctx->vm->cfg.name, err);
}

/* Runs the VM's event loop until the VM ends; returns the exit status. */
static int run_loop(struct run_ctx *ctx)
{
	struct vm *vm = ctx->vm;
	struct event *ev_end, *ev_int, *ev_term;
	int status;

	ev_end = event_new(ctx->base, vm->end_fd, EV_READ, on_vm_end, ctx);
	ev_int = evsignal_new(ctx->base, SIGINT, on_signal, ctx);
	ev_term = evsignal_new(ctx->base, SIGTERM, on_signal, ctx);
	if (!ev_end || !ev_int || !ev_term || event_add(ev_end, NULL) || event_add(ev_int, NULL) ||
	    event_add(ev_term, NULL)) {
		vm_request_stop(vm, VM_END_ERROR, 1, "cannot set up the event loop");
	} else {
		event_base_dispatch(ctx->base);
	}
	vm_join(vm);
	status = vm->end_status;
	if (vm->end_reason == VM_END_ERROR || vm->end_reason == VM_END_SIGNAL ||
	    vm->end_reason == VM_END_MIGRATED ||
	    (vm->end_reason == VM_END_GUEST_EXIT && status != 0))
		fprintf(stderr, "vmm: %s: %s\n", vm->cfg.name, vm->end_message);
	if (ctx->linger)
		event_free(ctx->linger);
	event_free(ev_end);
	event_free(ev_int);
	event_free(ev_term);
	return status;
}

static int api_path_for(const struct vm_config *cfg, char *buf, size_t len, char *err,
			size_t errlen)
{
	if (cfg->api_socket[0]) {
		if (strlen(cfg->api_socket) >= len) {
			snprintf(err, errlen, "[api] socket: path longer than %zu bytes", len - 1);
			return -ENAMETOOLONG;
		}
		strcpy(buf, cfg->api_socket);
		return 0;
	}
	if (api_default_socket_path(cfg->name, buf, len)) {
		snprintf(err, errlen, "[api] socket: no default path for VM name '%s'", cfg->name);
		return -EINVAL;
	}
	return 0;
}

/* Boots a VM from its config. */
static int boot(struct run_ctx *ctx, struct vm_config *cfg, int console_fd, char *err,
		size_t errlen)
{
	int ret;

	ctx->vm = ctx->rt.vm = calloc(1, sizeof(*ctx->vm));
	if (!ctx->vm)
		return -ENOMEM;
	ret = vm_create(ctx->vm, cfg, console_fd, err, errlen);
	if (!ret)
		ret = vm_boot_setup(ctx->vm, err, errlen);
	ctx->vm->serial.on_first_byte = on_first_byte;
	ctx->vm->serial.opaque = ctx;
	if (!ret)
		ret = api_path_for(cfg, ctx->api_path, sizeof(ctx->api_path), err, errlen);
	if (!ret)
		ret = api_server_start(&ctx->api, &ctx->rt, ctx->api_path, err, errlen);
	if (!ret)
		ret = vm_start(ctx->vm, err, errlen);
	return ret;
}

/*
 * Once the received VM exists, before its memory arrives: its API (at a
 * temporary path while the source still serves the usual one) and its
 * vCPU threads, parked. Neither then adds to the downtime.
 */
static int incoming_created(struct vm *vm, void *opaque, char *err, size_t errlen)
{
	struct run_ctx *ctx = opaque;
	char tmp_path[PATH_MAX];
	int ret;

	ret = api_path_for(&vm->cfg, ctx->api_path, sizeof(ctx->api_path), err, errlen);
	if (!ret && (size_t)snprintf(tmp_path, sizeof(tmp_path), "%s.incoming", ctx->api_path) >=
			    sizeof(tmp_path)) {
		snprintf(err, errlen, "api socket path '%.200s...' is too long", ctx->api_path);
		ret = -ENAMETOOLONG;
	}
	ctx->rt.vm = vm; /* the API serves it from now on */
	if (!ret)
		ret = api_server_start(&ctx->api, &ctx->rt, tmp_path, err, errlen);
	if (!ret) {
		ctx->ev_source = event_new(ctx->base, -1, EV_PERSIST, on_incoming_tick, ctx);
		if (!ctx->ev_source || event_add(ctx->ev_source, &(struct timeval){0, 20000})) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
		}
	}
	if (!ret)
		ret = vm_start_paused(vm, err, errlen);
	return ret;
}

/* Receives a migrating VM, acknowledges and lets it run. */
static int incoming(struct run_ctx *ctx, const char *addr, struct vm_config *cfg, int console_fd,
		    char *err, size_t errlen)
{
	struct incoming_hook hook = {.created = incoming_created, .opaque = ctx};
	int ret;

	ret = migration_incoming(addr, cfg, console_fd, &ctx->rt.hooks, &hook, &ctx->rt.in, &ctx->vm,
				 err, errlen);
	ctx->rt.vm = ctx->vm;
	if (ret) {
		/* The VM is gone; its API and timer must not outlive it. */
		api_server_stop(ctx->api);
		ctx->api = NULL;
		if (ctx->ev_source)
			event_free(ctx->ev_source);
		ctx->ev_source = NULL;
		return ret;
	}
	/*
	 * Everything that can fail happened before the ACK: after it the
	 * source exits (precopy) or holds only what we lack (postcopy), so
	 * from then on this VM must run. The source still serves the usual
	 * API path; ours moves there once it is gone.
	 */
	ret = migration_incoming_ack(ctx->rt.in, err, errlen);
	if (ret)
		return ret;
	vm_resume(ctx->vm);
	if (migration_incoming_digest(ctx->rt.in))
		fprintf(stderr, "vmm: %s: memory digest 0x%016llx matches the source's\n",
			ctx->vm->cfg.name, (unsigned long long)migration_incoming_digest(ctx->rt.in));
	return 0;
}

int cli_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"set", required_argument, NULL, 's'},
		{"incoming", required_argument, NULL, 'i'},
		{"api-socket", required_argument, NULL, 'a'},
		{"timing", no_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char **sets = calloc((size_t)argc, sizeof(char *));
	const char *incoming_addr = NULL, *api_socket = NULL, *cfg_path = NULL;
	int nsets = 0, opt, status, console_fd;
	bool timing = false;
	struct vm_config cfg;
	struct run_ctx ctx = {0};
	char err[512] = "";
	uint64_t t0 = now_ns();

	if (!sets)
		return 1;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sets[nsets++] = optarg;
			break;
		case 'i':
			incoming_addr = optarg;
			break;
		case 'a':
			api_socket = optarg;
			break;
		case 't':
			timing = true;
			break;
		case 'h':
			fputs(run_usage, stdout);
			free(sets);
			return 0;
		default:
			fputs(run_usage, stderr);
			free(sets);
			return EXIT_USAGE;
		}
	}
	if (optind == argc - 1)
		cfg_path = argv[optind];
	if (optind < argc - 1 || (!cfg_path && !incoming_addr)) {
		fprintf(stderr, "vmm run: expected one CONFIG file%s\n%s",
			incoming_addr ? " at most" : "", run_usage);
		free(sets);
		return EXIT_USAGE;
	}
	if (incoming_addr) {
		if (hostport_check(incoming_addr)) {
			fprintf(stderr, "vmm run: --incoming: bad address '%s' (expected HOST:PORT)\n",
				incoming_addr);
			free(sets);
			return EXIT_USAGE;
		}
		/* Only [console] and [api] matter here: the stream brings the rest. */
		config_defaults(&cfg);
		status = 0;
		if (cfg_path && config_load_file(&cfg, cfg_path, err, sizeof(err)))
			status = EXIT_USAGE;
		for (int i = 0; !status && i < nsets; i++)
			if (config_set(&cfg, sets[i], err, sizeof(err)))
				status = EXIT_USAGE;
		if (status)
			fprintf(stderr, "vmm: %s\n", err);
	} else {
		status = cli_load_config(&cfg, cfg_path, sets, nsets);
	}
	free(sets);
	if (status)
		return status;
	if (api_socket) {
		if (strlen(api_socket) >= sizeof(cfg.api_socket)) {
			fprintf(stderr, "vmm run: --api-socket: path too long\n");
			return EXIT_USAGE;
		}
		strcpy(cfg.api_socket, api_socket);
	}
	console_fd = open_console(&cfg);
	if (console_fd < 0)
		return EXIT_USAGE;

	signal(SIGPIPE, SIG_IGN);
	test_hooks_read(&ctx.rt.hooks); /* once, for the whole process */
	ctx.base = ctx.rt.base = event_base_new();
	if (!ctx.base) {
		fprintf(stderr, "vmm: cannot create the event loop\n");
		return 1;
	}
	if (incoming_addr)
		status = incoming(&ctx, incoming_addr, &cfg, console_fd, err, sizeof(err));
	else
		status = boot(&ctx, &cfg, console_fd, err, sizeof(err));
	if (ctx.vm)
		ctx.vm->start_ns = t0; /* timings count from the command's start */
	if (status) {
		fprintf(stderr, "vmm: %s: %s%s\n", incoming_addr ? "incoming migration" : cfg.name,
			err[0] ? "" : "error ", err[0] ? err : strerror(-status));
		status = 1;
		if (ctx.vm)
			vm_request_stop(ctx.vm, VM_END_ERROR, 1, "%s", err);
	} else {
		uint64_t setup_ns = now_ns() - t0;

		status = run_loop(&ctx);
		if (timing) {
			struct rusage ru;

			getrusage(RUSAGE_SELF, &ru);
			fprintf(stderr,
				"vmm: timing: setup_ms=%.3f first_run_ms=%.3f first_byte_ms=%.3f "
				"total_ms=%.3f max_rss_kib=%ld\n",
				setup_ns / 1e6,
				ctx.vm->first_run_ns ? (ctx.vm->first_run_ns - t0) / 1e6 : -1.0,
				ctx.first_byte_ns ? (ctx.first_byte_ns - t0) / 1e6 : -1.0,
				(now_ns() - t0) / 1e6, ru.ru_maxrss);
		}
	}
	if (ctx.ev_source)
		event_free(ctx.ev_source);
	api_server_stop(ctx.api);
	if (ctx.vm) {
		/* After the API: a last status request may still read the progress. */
		runtime_release_migrations(&ctx.rt);
		vm_destroy(ctx.vm);
		free(ctx.vm);
	}
	close(console_fd);
	event_base_free(ctx.base);
	return status;
}
