/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_vm.c - what a VM gets once it runs in this process, booted
 * (run_loop.c) or received (run_incoming.c): the end callback with the
 * linger of a migrated-away source (and of a target whose incoming
 * migration failed), console input with Ctrl-A x, and the path of its API
 * socket. Main thread only; it calls neither of those files.
 */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api_server.h"
#include "clock.h"
#include "config.h"
#include "console_input.h"
#include "log.h"
#include "run_loop.h"
#include "runtime.h"
#include "target_end.h"
#include "vm.h"

/*
 * A VM that migrated away lingers until its watchers know: every event
 * stream got the final line and closed (`vmm migrate` closes it once its
 * summary is out, so that it is printed before this process, maybe pid 1
 * of a container, exits), or a GET /api/v1/vm/migrate reported the
 * completion with no stream open. A stream left open holds it
 * WATCHED_LINGER_MS at most; with no watcher at all it waits
 * MIGRATED_LINGER_MS for a poller. A target whose incoming migration
 * failed lingers the same way for its "failed" (its VM is gone already),
 * FAILED_LINGER_MS for a poller; once a stop came (rt.in_leave) only until
 * its open streams got that line. Either way a request sent before the end
 * is answered first (api_server_busy(): one in the backlog, just accepted,
 * or a reply not written yet), WATCHED_LINGER_MS past the poller's time at
 * most: a client that vanished mid-reply is never written to. The
 * decision is linger_tick()'s (target_end.h); this tick only gathers its
 * inputs and breaks the loop when it says so.
 */
static void on_linger_tick(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	struct linger_in in = {
	    .has_vm = ctx->rt.vm != NULL,
	    .ms = ms_since(ctx->end_ns),
	    .watched = ctx->watched,
	    .reported = ctx->rt.migration_reported,
	    .in_leave = ctx->rt.in_leave,
	};
	struct linger_out out;

	(void)fd;
	(void)what;
	in.settled = api_server_events_settled(ctx->rt.api, &in.open);
	in.busy = api_server_busy(ctx->rt.api);
	linger_tick(&in, &out);
	ctx->watched = out.watched;
	if (out.leave)
		event_base_loopbreak(ctx->rt.base);
}

void run_linger_start(struct run_ctx *ctx)
{
	struct timeval tick = {0, 10000};

	ctx->end_ns = now_ns();
	ctx->linger = event_new(ctx->rt.base, -1, EV_PERSIST, on_linger_tick, ctx);
	if (!ctx->linger || event_add(ctx->linger, &tick))
		event_base_loopbreak(ctx->rt.base);
}

/* The VM ended: a migrated-away source lingers for its watchers, anything else stops. */
void run_on_vm_end(int fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	struct vm_end end;

	(void)fd;
	(void)what;
	vm_end_state(ctx->rt.vm, &end);
	if (end.reason != VM_END_MIGRATED || ctx->linger) {
		event_base_loopbreak(ctx->rt.base);
		return;
	}
	run_linger_start(ctx);
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
		log_vm(&ctx->rt.log, LOG_LEVEL_WARN, "%s", why);
		return;
	}
	vm_request_stop(ctx->rt.vm, VM_END_SIGNAL, 128 + SIGTERM, "stopped by Ctrl-A x");
}

/*
 * Once the VM runs here (booted, or committed on a target): stdin goes to
 * its COM1. A failure is one line; the VM runs on without input.
 */
void run_console_start(struct run_ctx *ctx)
{
	struct vm *vm = ctx->rt.vm;
	char err[256];
	int fd;

	if (ctx->console)
		return;
	if (console_input_pick_fd((enum console_input_mode)ctx->console_mode, &fd, err,
				  sizeof(err)) ||
	    (fd >= 0 && console_input_start(&ctx->console, vm_console(vm), fd,
					    vm_config(vm)->seccomp, err, sizeof(err)))) {
		log_vm(&ctx->rt.log, LOG_LEVEL_WARN, "%s; the guest gets no console input", err);
		return;
	}
	if (!ctx->console)
		return;
	ctx->ev_console_quit = event_new(ctx->rt.base, console_input_quit_fd(ctx->console),
					 EV_READ | EV_PERSIST, on_console_quit, ctx);
	if (!ctx->ev_console_quit || event_add(ctx->ev_console_quit, NULL))
		log_vm(&ctx->rt.log, LOG_LEVEL_WARN, "Ctrl-A x will not work (out of memory)");
}

void run_console_stop(struct run_ctx *ctx)
{
	if (ctx->ev_console_quit)
		event_free(ctx->ev_console_quit);
	ctx->ev_console_quit = NULL;
	console_input_stop(ctx->console);
	ctx->console = NULL;
}

int run_api_path_for(const char *api_socket, const char *name, char *buf, size_t len, char *err,
		     size_t errlen)
{
	if (api_socket[0]) {
		if (strlen(api_socket) >= len) {
			snprintf(err, errlen, "[api] socket: path longer than %zu bytes", len - 1);
			return -ENAMETOOLONG;
		}
		strcpy(buf, api_socket);
		return 0;
	}
	if (api_default_socket_path(name, buf, len)) {
		snprintf(err, errlen, "[api] socket: no default path for VM name '%s'", name);
		return -EINVAL;
	}
	return 0;
}
