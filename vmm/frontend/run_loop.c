/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_loop.c - the life of one `vmm run` VM after its command line: boot or
 * receive it, serve its API, run its event loop until it ends.
 */
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_server.h"
#include "cli.h"
#include "clock.h"
#include "config.h"
#include "console_input.h"
#include "migration.h"
#include "run_loop.h"
#include "runtime.h"
#include "seccomp_filter.h"
#include "vm.h"

#define MIGRATED_LINGER_MS 10000

/*
 * A VM that migrated away lingers until `vmm migrate` has read the final
 * progress (or MIGRATED_LINGER_MS passed), then the process exits.
 */
static void on_linger_tick(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;

	(void)fd;
	(void)what;
	if (ctx->rt.migration_reported || ms_since(ctx->end_ns) >= MIGRATED_LINGER_MS)
		event_base_loopbreak(ctx->rt.base);
}

static void on_vm_end(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	struct timeval tick = {0, 10000};

	(void)fd;
	(void)what;
	if (ctx->rt.vm->end_reason != VM_END_MIGRATED || ctx->linger) {
		event_base_loopbreak(ctx->rt.base);
		return;
	}
	ctx->end_ns = now_ns();
	ctx->linger = event_new(ctx->rt.base, -1, EV_PERSIST, on_linger_tick, ctx);
	if (!ctx->linger || event_add(ctx->linger, &tick))
		event_base_loopbreak(ctx->rt.base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	char why[512];

	(void)what;
	/* Exiting in postcopy would destroy the only copy of pages the target lacks. */
	if (runtime_refusal(&ctx->rt, "stop", false, why, sizeof(why))) {
		fprintf(stderr, "vmm: %s: %s\n", ctx->rt.vm->cfg.name, why);
		return;
	}
	vm_request_stop(ctx->rt.vm, VM_END_SIGNAL, 128 + (int)sig, "stopped by %s",
			sig == SIGINT ? "SIGINT" : "SIGTERM");
}

/* Ctrl-A x: as SIGTERM, with its own message. */
static void on_console_quit(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	uint64_t n;
	char why[512];

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0)
		return;
	if (runtime_refusal(&ctx->rt, "stop", false, why, sizeof(why))) {
		fprintf(stderr, "vmm: %s: %s\n", ctx->rt.vm->cfg.name, why);
		return;
	}
	vm_request_stop(ctx->rt.vm, VM_END_SIGNAL, 128 + SIGTERM, "stopped by Ctrl-A x");
}

/*
 * Once the VM runs here (booted, or committed on a target): stdin goes to
 * its COM1. A failure is one line; the VM runs on without input.
 */
static void console_start(struct run_ctx *ctx)
{
	struct vm *vm = ctx->rt.vm;
	char err[256];
	int fd;

	if (ctx->console)
		return;
	if (console_input_pick_fd((enum console_input_mode)ctx->console_mode, &fd, err,
				  sizeof(err)) ||
	    (fd >= 0 && console_input_start(&ctx->console, &vm->serial, fd, vm->cfg.seccomp, err,
					    sizeof(err)))) {
		fprintf(stderr, "vmm: %s: %s; the guest gets no console input\n", vm->cfg.name,
			err);
		return;
	}
	if (!ctx->console)
		return;
	ctx->ev_console_quit = event_new(ctx->rt.base, console_input_quit_fd(ctx->console),
					 EV_READ | EV_PERSIST, on_console_quit, ctx);
	if (!ctx->ev_console_quit || event_add(ctx->ev_console_quit, NULL))
		fprintf(stderr, "vmm: %s: Ctrl-A x will not work (out of memory)\n", vm->cfg.name);
}

static void console_stop(struct run_ctx *ctx)
{
	if (ctx->ev_console_quit)
		event_free(ctx->ev_console_quit);
	ctx->ev_console_quit = NULL;
	console_input_stop(ctx->console);
	ctx->console = NULL;
}

static void on_first_byte(void *opaque)
{
	struct run_ctx *ctx = opaque;

	ctx->first_byte_ns = now_ns();
}

/* COMMIT: the VM runs here from now on. */
static void incoming_run(struct run_ctx *ctx)
{
	struct vm *vm = ctx->rt.vm;

	vm_resume(vm);
	console_start(ctx);
	migration_incoming_started(ctx->rt.in);
	if (migration_incoming_digest(ctx->rt.in))
		fprintf(stderr, "vmm: %s: memory digest 0x%016llx matches the source's\n",
			vm->cfg.name, (unsigned long long)migration_incoming_digest(ctx->rt.in));
}

/* The outcome was unknown: the source's late decision, its recover, or the operator's. */
static void poll_decision(struct run_ctx *ctx)
{
	char why[256];
	enum incoming_decision d = migration_incoming_decision(ctx->rt.in, why, sizeof(why));

	if (d == INCOMING_UNDECIDED)
		return;
	ctx->outcome_unknown = false;
	if (d == INCOMING_COMMIT) {
		fprintf(stderr, "vmm: %s: switchover settled: the VM runs here\n",
			ctx->rt.vm->cfg.name);
		incoming_run(ctx);
		return;
	}
	vm_request_stop(ctx->rt.vm, VM_END_ERROR, 1, "switchover settled: %s",
			why[0] ? why : "the VM runs on the source");
}

/*
 * Target after a migration: once the source is gone (it exits right after
 * RELEASE, or after postcopy's last page), take over the VM's usual API
 * socket path. Polled: engine threads own the connection.
 */
static void on_incoming_tick(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	char err[256];

	(void)fd;
	(void)what;
	if (ctx->outcome_unknown) {
		poll_decision(ctx);
		return;
	}
	if (!migration_incoming_finished(ctx->rt.in))
		return;
	event_free(ctx->ev_source);
	ctx->ev_source = NULL;
	migration_incoming_free(ctx->rt.in);
	ctx->rt.in = NULL;
	if (ctx->rt.api && api_server_rename(ctx->rt.api, ctx->api_path, err, sizeof(err)))
		fprintf(stderr, "vmm: %s: %s\n", ctx->rt.vm->cfg.name, err);
}

int run_loop(struct run_ctx *ctx)
{
	struct vm *vm = ctx->rt.vm;
	struct event *ev_end, *ev_int, *ev_term;
	char err[160];
	int status;

	ev_end = event_new(ctx->rt.base, vm->end_fd, EV_READ, on_vm_end, ctx);
	ev_int = evsignal_new(ctx->rt.base, SIGINT, on_signal, ctx);
	ev_term = evsignal_new(ctx->rt.base, SIGTERM, on_signal, ctx);
	if (!ev_end || !ev_int || !ev_term || event_add(ev_end, NULL) || event_add(ev_int, NULL) ||
	    event_add(ev_term, NULL)) {
		vm_request_stop(vm, VM_END_ERROR, 1, "cannot set up the event loop");
	} else if (seccomp_thread_enter(SECCOMP_THREAD_MAIN, vm->cfg.seccomp, err, sizeof(err))) {
		/* Set up is over: from here main only serves its API and events. */
		vm_request_stop(vm, VM_END_ERROR, 1, "%s", err);
	} else {
		sigset_t stop;

		/* Blocked since the start (cli_run.c): a pending one is handled now. */
		sigemptyset(&stop);
		sigaddset(&stop, SIGINT);
		sigaddset(&stop, SIGTERM);
		pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
		event_base_dispatch(ctx->rt.base);
	}
	vm_join(vm);
	console_stop(ctx); /* the terminal back in its mode before the last lines */
	/* The machine layer knows no exit statuses: a reset's is the front end's (cli.h). */
	status = vm->end_reason == VM_END_GUEST_RESET ? EXIT_GUEST_RESET : vm->end_status;
	/* Every end says why, but a guest that exited with 0 through the vmm exit port. */
	if (vm->end_reason != VM_END_NONE &&
	    !(vm->end_reason == VM_END_GUEST_EXIT && status == 0))
		fprintf(stderr, "vmm: %s: %s\n", vm->cfg.name, vm->end_message);
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

int run_boot(struct run_ctx *ctx, struct vm_config *cfg, int console_fd, char *err, size_t errlen)
{
	struct vm *vm = calloc(1, sizeof(*vm));
	int ret;

	ctx->rt.vm = vm;
	if (!vm)
		return -ENOMEM;
	ret = vm_create(vm, cfg, console_fd, err, errlen);
	vm->hooks = &ctx->rt.hooks;
	if (!ret)
		ret = vm_boot_setup(vm, err, errlen);
	vm->serial.on_first_byte = on_first_byte;
	vm->serial.opaque = ctx;
	if (!ret)
		ret = api_path_for(cfg, ctx->api_path, sizeof(ctx->api_path), err, errlen);
	if (!ret)
		ret = api_server_start(&ctx->rt.api, &ctx->rt, ctx->api_path, err, errlen);
	if (!ret)
		ret = vm_start(vm, err, errlen);
	ctx->console_mode = (int)cfg->console_input;
	if (!ret)
		console_start(ctx);
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
	vm->hooks = &ctx->rt.hooks;
	if (!ret)
		ret = api_server_start(&ctx->rt.api, &ctx->rt, tmp_path, err, errlen);
	if (!ret) {
		ctx->ev_source = event_new(ctx->rt.base, -1, EV_PERSIST, on_incoming_tick, ctx);
		if (!ctx->ev_source || event_add(ctx->ev_source, &(struct timeval){0, 20000})) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
		}
	}
	if (!ret)
		ret = vm_start_paused(vm, err, errlen);
	return ret;
}

/* The engine refused a peer and waits on: one line each (an engine thread calls this). */
static void incoming_refused(void *opaque, const char *peer, const char *why)
{
	(void)opaque;
	fprintf(stderr, "vmm: incoming: refused %s: %s\n", peer, why);
}

int run_incoming(struct run_ctx *ctx, const char *addr, struct vm_config *cfg, int console_fd,
		 char *err, size_t errlen)
{
	struct incoming_hook hook = {
	    .created = incoming_created, .refused = incoming_refused, .opaque = ctx};
	enum incoming_decision d;
	struct vm *vm = NULL;
	int ret;

	ctx->console_mode = (int)cfg->console_input; /* this host's terminal, not the source's */
	ret = migration_incoming(addr, cfg, console_fd, &ctx->rt.hooks, &hook, &ctx->rt.in, &vm,
				 err, errlen);
	ctx->rt.vm = vm; /* NULL on failure: the engine destroyed it */
	if (ret) {
		/* The VM is gone; its API and timer must not outlive it. */
		api_server_stop(ctx->rt.api);
		ctx->rt.api = NULL;
		if (ctx->ev_source)
			event_free(ctx->ev_source);
		ctx->ev_source = NULL;
		return ret;
	}
	/*
	 * Everything that can fail happened before PREPARED. The source
	 * decides: this VM runs only on its COMMIT. The source still serves
	 * the usual API path; ours moves there once it is gone.
	 */
	ret = migration_incoming_prepare(ctx->rt.in, &d, err, errlen);
	if (ret)
		return ret;
	if (d == INCOMING_UNKNOWN) {
		fprintf(stderr, "vmm: %s: switchover-unknown: %s\n", vm->cfg.name, err);
		ctx->outcome_unknown = true;
		return 0;
	}
	incoming_run(ctx);
	return 0;
}

void run_release(struct run_ctx *ctx)
{
	console_stop(ctx);
	if (ctx->ev_source)
		event_free(ctx->ev_source);
	ctx->ev_source = NULL;
	if (ctx->linger)
		event_free(ctx->linger);
	ctx->linger = NULL;
	api_server_stop(ctx->rt.api);
	ctx->rt.api = NULL;
	if (ctx->rt.vm) {
		/* After the API: a last status request may still read the progress. */
		runtime_release_migrations(&ctx->rt);
		vm_destroy(ctx->rt.vm);
		free(ctx->rt.vm);
		ctx->rt.vm = NULL;
	}
}
