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
#include "log.h"
#include "migration.h"
#include "run_loop.h"
#include "runtime.h"
#include "snapshot.h"
#include "frontend_seccomp.h"
#include "target_end.h"
#include "vm.h"

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	char why[512];

	(void)what;
	if (runtime_waits_restore(&ctx->rt)) {
		/* --restore-wait with no VM yet: nothing to lose, the process ends. */
		ctx->end_status = 128 + (int)sig;
		event_base_loopbreak(ctx->rt.base);
		return;
	}
	if (!ctx->rt.vm) {
		int ret;

		/*
		 * No VM yet: a cancel (the source keeps it); after PREPARED, once
		 * it is here; after a failure, the process exits now (status 1).
		 */
		snprintf(why, sizeof(why), "stopped by %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
		ret = runtime_incoming_stop(&ctx->rt, 128 + (int)sig, why, why, sizeof(why));
		switch (target_stop_no_vm(ret)) {
		case TARGET_STOP_PEND:
			ctx->pending_signal = (int)sig;
			break;
		case TARGET_STOP_LEAVE:
			ctx->rt.in_leave = true;
			break;
		case TARGET_STOP_DONE:
			break;
		}
		return;
	}
	/* Exiting in postcopy would destroy the only copy of pages the target lacks. */
	if (runtime_refusal(&ctx->rt, "stop", false, why, sizeof(why))) {
		log_vm(&ctx->rt.log, LOG_LEVEL_WARN, "%s", why);
		return;
	}
	vm_request_stop(ctx->rt.vm, VM_END_SIGNAL, 128 + (int)sig, "stopped by %s",
			sig == SIGINT ? "SIGINT" : "SIGTERM");
}

static void on_first_byte(void *opaque)
{
	struct run_ctx *ctx = opaque;

	ctx->first_byte_ns = now_ns();
}

/* The end line's level: a failure is an error, a guest's own failure a warning. */
static enum log_level end_level(enum vm_end_reason why, int status)
{
	if (why == VM_END_ERROR)
		return LOG_LEVEL_ERROR;
	if (why == VM_END_GUEST_EXIT)
		return status ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG;
	return LOG_LEVEL_INFO;
}

/* Before the event loop runs: the loop cannot start, the VM (if any) must end. */
static int loop_failed(struct run_ctx *ctx, const char *msg)
{
	if (ctx->rt.vm) {
		vm_request_stop(ctx->rt.vm, VM_END_ERROR, 1, "%s", msg);
		return 0;
	}
	/* A waiting target: the receive thread must end before the process does. */
	log_msg(&ctx->rt.log, LOG_LEVEL_ERROR, "incoming migration: %s", msg);
	runtime_incoming_stop(&ctx->rt, 1, msg, NULL, 0);
	return 1;
}

int run_loop(struct run_ctx *ctx)
{
	struct vm *vm = ctx->rt.vm;
	struct event *ev_int, *ev_term;
	struct vm_end end;
	bool seccomp = vm ? vm_config(vm)->seccomp : ctx->seccomp;
	char err[160];
	int status;

	if (vm)
		ctx->ev_end = event_new(ctx->rt.base, vm_end_fd(vm), EV_READ, run_on_vm_end, ctx);
	ev_int = evsignal_new(ctx->rt.base, SIGINT, on_signal, ctx);
	ev_term = evsignal_new(ctx->rt.base, SIGTERM, on_signal, ctx);
	if ((vm && (!ctx->ev_end || event_add(ctx->ev_end, NULL))) || !ev_int || !ev_term ||
	    event_add(ev_int, NULL) || event_add(ev_term, NULL)) {
		if (loop_failed(ctx, "cannot set up the event loop"))
			run_receive_wait(ctx);
	} else if (seccomp_thread_enter(SECCOMP_THREAD_MAIN, seccomp, err, sizeof(err))) {
		/* Set up is over: from here main only serves its API and events. */
		if (loop_failed(ctx, err))
			run_receive_wait(ctx);
	} else {
		sigset_t stop;

		/* Blocked since the start (cli_run.c): a pending one is handled now. */
		sigemptyset(&stop);
		sigaddset(&stop, SIGINT);
		sigaddset(&stop, SIGTERM);
		pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
		event_base_dispatch(ctx->rt.base);
	}
	vm = ctx->rt.vm;
	if (!vm) {
		/* A target that ended before a VM ran here: cancelled, stopped or failed. */
		if (ev_int)
			event_free(ev_int);
		if (ev_term)
			event_free(ev_term);
		/* A --restore-wait process asked to shut down before its VM came: 0. */
		return ctx->rt.restore && ctx->rt.stop_asked ? ctx->rt.stop_status
							     : ctx->end_status;
	}
	vm_join(vm);
	run_console_stop(ctx); /* the terminal back in its mode before the last lines */
	/* The machine layer knows no exit statuses: a reset's is the front end's (cli.h). */
	vm_end_state(vm, &end);
	status = end.reason == VM_END_GUEST_RESET ? EXIT_GUEST_RESET : end.status;
	/*
	 * Every end says why; a guest that exited with 0 through the vmm exit
	 * port only at debug, so that a good run stays quiet.
	 */
	if (end.reason != VM_END_NONE)
		log_vm(&ctx->rt.log, end_level(end.reason, status), "%s", end.message);
	if (ctx->ev_end)
		event_free(ctx->ev_end);
	ctx->ev_end = NULL;
	if (ev_int)
		event_free(ev_int);
	if (ev_term)
		event_free(ev_term);
	return status;
}

int run_boot(struct run_ctx *ctx, struct vm_config *cfg, struct snapshot_image *img, int console_fd,
	     char *err, size_t errlen)
{
	struct vm *vm = vm_new();
	int ret;

	ctx->rt.vm = vm;
	if (!vm)
		return -ENOMEM;
	ret = vm_create(vm, cfg, console_fd, err, errlen);
	vm_set_test_hooks(vm, &ctx->rt.hooks);
	if (!ret)
		ret = img ? run_restore(ctx, vm, img, err, errlen) : vm_boot_setup(vm, err, errlen);
	vm_on_console_first_byte(vm, on_first_byte, ctx);
	/* A --restore-wait process serves its API from the start, on its own path. */
	if (!ret && !ctx->rt.api)
		ret = run_api_path_for(ctx->rt.fe.api_socket, cfg->name, ctx->api_path,
				       sizeof(ctx->api_path), err, errlen);
	if (!ret && !ctx->rt.api)
		ret = api_server_start(&ctx->rt.api, &ctx->rt, ctx->api_path, err, errlen);
	if (!ret)
		ret = vm_start(vm, err, errlen);
	ctx->console_mode = (int)ctx->rt.fe.console_input;
	if (!ret)
		run_console_start(ctx);
	return ret;
}

void run_release(struct run_ctx *ctx)
{
	run_restore_release(ctx);
	run_receive_wait(ctx); /* a start that failed after the receive thread began */
	if (ctx->ev_recv)
		event_free(ctx->ev_recv);
	ctx->ev_recv = NULL;
	if (ctx->recv_efd > 0) /* 0: never made (the struct starts zeroed) */
		close(ctx->recv_efd);
	ctx->recv_efd = 0;
	run_console_stop(ctx);
	if (ctx->ev_source)
		event_free(ctx->ev_source);
	ctx->ev_source = NULL;
	if (ctx->linger)
		event_free(ctx->linger);
	ctx->linger = NULL;
	api_server_stop(ctx->rt.api);
	ctx->rt.api = NULL;
	if (!ctx->rt.vm)
		runtime_release_migrations(&ctx->rt);
	if (ctx->rt.vm) {
		/* After the API: a last status request may still read the progress. */
		runtime_release_migrations(&ctx->rt);
		vm_destroy(ctx->rt.vm);
		vm_free(ctx->rt.vm);
		ctx->rt.vm = NULL;
	}
	/* After the migrations: their threads were the ones that used it. */
	if (ctx->refused_log_ready)
		log_limit_destroy(&ctx->refused_log);
	ctx->refused_log_ready = false;
}
