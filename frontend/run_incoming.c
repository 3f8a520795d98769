/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_incoming.c - `vmm run --incoming`: the waiting target. Its API
 * serves from the moment it listens (waiting, then receiving) while a
 * receive thread takes one migration (migration_incoming_receive, then
 * the commit: migration_incoming_prepare); on a COMMIT in time that thread
 * resumes the vCPUs itself and wakes the event loop (recv_efd), which then
 * serves the VM, follows its name, settles an unknown outcome and takes
 * over the VM's usual API path once the source is gone. Contracts:
 * run_loop.h.
 */
#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "api_server.h"
#include "clock.h"
#include "config.h"
#include "log.h"
#include "log_limit.h"
#include "migration.h"
#include "run_loop.h"
#include "runtime.h"
#include "target_end.h"
#include "vm.h"

/* Refusal lines: a burst, then one line per interval with the count left out. */
#define REFUSED_BURST	    8
#define REFUSED_INTERVAL_MS 10000

/* What this side's blackout waited for (the source's progress has its own half). */
static void log_blackout(struct run_ctx *ctx)
{
	struct incoming_status st;

	migration_incoming_status(ctx->rt.in, &st);
	log_vm(&ctx->rt.log, LOG_LEVEL_INFO,
	       "switchover: END to PREPARED %llu us; %u waits for the source in the blackout: "
	       "%u there already, %u polled (%llu us), %u slept",
	       (unsigned long long)st.end_to_prepared_us, st.blackout_waits, st.blackout_ready,
	       st.blackout_polled, (unsigned long long)st.blackout_polling_us, st.blackout_sleeps);
}

/*
 * COMMIT: the VM runs here from now on. The receive thread already
 * resumed it (recv_resumed) when the COMMIT came in time; a decision that
 * came late (poll_decision) resumes it here.
 */
static void incoming_run(struct run_ctx *ctx)
{
	struct vm *vm = ctx->rt.vm;

	if (!ctx->recv_resumed) {
		vm_resume(vm);
		migration_incoming_started(ctx->rt.in);
	}
	run_console_start(ctx);
	log_blackout(ctx);
	if (migration_incoming_digest(ctx->rt.in))
		log_vm(&ctx->rt.log, LOG_LEVEL_INFO, "memory digest 0x%016llx matches the source's",
		       (unsigned long long)migration_incoming_digest(ctx->rt.in));
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
		log_vm(&ctx->rt.log, LOG_LEVEL_INFO, "switchover settled: the VM runs here");
		incoming_run(ctx);
		return;
	}
	vm_request_stop(ctx->rt.vm, VM_END_ERROR, 1, "switchover settled: %s",
			why[0] ? why : "the VM runs on the source");
}

/*
 * Receiving: the API follows the incoming VM's name. A waiting socket at
 * the default path of this host's [vm] name moves to the default path of
 * the name in the source's VM_DESC, "<name>.sock.incoming", so that --vm
 * NAME finds it under the name the VM keeps; an explicit --api-socket /
 * [api] socket stays put.
 */
static void follow_name(struct run_ctx *ctx)
{
	struct incoming_status st;
	char path[PATH_MAX], usual[PATH_MAX], err[256];

	if (ctx->api_explicit || ctx->name_followed)
		return;
	migration_incoming_status(ctx->rt.in, &st);
	if (st.phase == INCOMING_WAITING || !st.name[0])
		return;
	ctx->name_followed = true;
	if (!strcmp(st.name, ctx->wait_name))
		return;
	if (api_default_socket_path(st.name, usual, sizeof(usual)) ||
	    (size_t)snprintf(path, sizeof(path), "%s.incoming", usual) >= sizeof(path)) {
		log_msg(&ctx->rt.log, LOG_LEVEL_WARN, "incoming: no API path for VM name '%s'",
			st.name);
		return;
	}
	/* Where it ends once the source is gone: the VM's name, not the waiting one. */
	memcpy(ctx->api_path, usual, sizeof(usual));
	if (api_server_rename(ctx->rt.api, path, err, sizeof(err)))
		log_msg(&ctx->rt.log, LOG_LEVEL_WARN, "incoming: %s", err);
	else
		log_msg(&ctx->rt.log, LOG_LEVEL_INFO,
			"incoming: receiving VM '%s': API moved to %s", st.name, path);
}

/* The receive thread (main thread, once it said it is done): its VM runs here, or it ends. */
static void receive_ended(struct run_ctx *ctx)
{
	struct vm *vm = ctx->recv_vm;
	struct target_end_in in = {
	    .failed = ctx->recv_ret != 0,
	    .unknown = ctx->recv_decision == INCOMING_UNKNOWN,
	    .stop_asked = ctx->rt.stop_asked,
	    .stop_status = ctx->rt.stop_status,
	    .pending_signal = ctx->pending_signal,
	};
	struct target_end_out out;
	char why[256];

	pthread_join(ctx->recv_thread, NULL);
	ctx->recv_started = false;
	target_end_received(&in, &out);
	if (out.report == TARGET_END_FAILED) {
		struct incoming_status *st = &ctx->rt.in_final;
		const char *why = ctx->recv_err[0] ? ctx->recv_err : strerror(-ctx->recv_ret);

		log_msg(&ctx->rt.log, LOG_LEVEL_ERROR, "incoming migration: %s", why);
		/*
		 * What the API says from now until the exit: failed (or
		 * cancelled), with the reason; never "none" with no error.
		 */
		migration_incoming_status(ctx->rt.in, st);
		st->phase = INCOMING_FAILED;
		snprintf(st->error, sizeof(st->error), "%.255s", why);
		ctx->rt.in_ended = true;
		/* Engine threads first: they may still touch the VM's memory. */
		migration_incoming_free(ctx->rt.in);
		ctx->rt.in = NULL;
		if (vm) {
			vm_destroy(vm);
			vm_free(vm);
		}
		ctx->recv_vm = NULL;
		ctx->end_status = out.exit_status;
		if (out.leave_now)
			ctx->rt.in_leave = true;
		if (out.linger)
			run_linger_start(ctx);
		return;
	}
	ctx->recv_vm = NULL;
	follow_name(ctx); /* if no tick saw VM_DESC's name yet */
	ctx->rt.vm = vm;  /* the API serves it from now on */
	log_set_vm(&ctx->rt.log, vm_config(vm)->name);
	ctx->ev_end = event_new(ctx->rt.base, vm_end_fd(vm), EV_READ, run_on_vm_end, ctx);
	if (!ctx->ev_end || event_add(ctx->ev_end, NULL))
		vm_request_stop(vm, VM_END_ERROR, 1, "cannot set up the event loop");
	if (out.report == TARGET_END_UNKNOWN) {
		log_vm(&ctx->rt.log, LOG_LEVEL_WARN, "switchover-unknown: %s", ctx->recv_err);
		ctx->outcome_unknown = true;
	} else {
		incoming_run(ctx);
	}
	if (out.stop_signal) {
		snprintf(why, sizeof(why), "stopped by %s",
			 out.stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
		vm_request_stop(vm, VM_END_SIGNAL, 128 + out.stop_signal, "%s", why);
	}
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
	if (ctx->recv_started) {
		if (__atomic_load_n(&ctx->recv_done, __ATOMIC_ACQUIRE))
			receive_ended(ctx);
		else
			follow_name(ctx);
		return;
	}
	if (ctx->outcome_unknown) {
		poll_decision(ctx);
		return;
	}
	if (!ctx->rt.vm)
		return; /* it ended before a VM came: the loop exits shortly */
	if (!migration_incoming_finished(ctx->rt.in))
		return;
	event_free(ctx->ev_source);
	ctx->ev_source = NULL;
	migration_incoming_free(ctx->rt.in);
	ctx->rt.in = NULL;
	if (ctx->rt.api && api_server_rename(ctx->rt.api, ctx->api_path, err, sizeof(err)))
		log_vm(&ctx->rt.log, LOG_LEVEL_WARN, "%s", err);
}

/*
 * Once the received VM exists, before its memory arrives (the receive
 * thread): its vCPU threads, parked, so they do not add to the downtime.
 * The VM is the receive thread's until it returns: the API (main thread)
 * serves it only after that (receive_ended()).
 */
static int incoming_created(struct vm *vm, void *opaque, char *err, size_t errlen)
{
	struct run_ctx *ctx = opaque;

	vm_set_test_hooks(vm, &ctx->rt.hooks);
	return vm_start_paused(vm, err, errlen);
}

/*
 * The engine refused a peer and waits on (an engine thread calls this): a
 * line each, but a peer decides how many come, so at most REFUSED_BURST per
 * REFUSED_INTERVAL_MS; the next printed line counts the ones left out.
 */
static void incoming_refused(void *opaque, const char *peer, const char *why)
{
	struct run_ctx *ctx = opaque;
	uint64_t left_out;

	if (!log_limit_pass(&ctx->refused_log, now_ns(), &left_out))
		return;
	if (left_out)
		log_msg(&ctx->rt.log, LOG_LEVEL_WARN,
			"incoming: refused %s: %s (and %llu more refused since the last line)",
			peer, why, (unsigned long long)left_out);
	else
		log_msg(&ctx->rt.log, LOG_LEVEL_WARN, "incoming: refused %s: %s", peer, why);
}

/* The receive thread: receive, then the switchover's commit; main joins it. */
static void *receive_thread(void *arg)
{
	struct run_ctx *ctx = arg;
	struct incoming_hook hook = {
	    .created = incoming_created, .refused = incoming_refused, .opaque = ctx};
	enum incoming_decision d = INCOMING_ABORT;
	struct vm *vm = NULL;
	int ret;

	ret = migration_incoming_receive(ctx->rt.in, ctx->local_cfg, ctx->console_fd, &hook, &vm,
					 ctx->recv_err, sizeof(ctx->recv_err));
	/*
	 * Everything that can fail happened before PREPARED. The source
	 * decides: this VM runs only on its COMMIT.
	 */
	if (!ret)
		ret = migration_incoming_prepare(ctx->rt.in, &d, ctx->recv_err,
						 sizeof(ctx->recv_err));
	/*
	 * COMMITTED went out saying the vCPUs run now: they do, from this
	 * (still boosted) thread, and postcopy's fault service with them;
	 * waiting for the event loop to wake would be downtime.
	 */
	if (!ret && d == INCOMING_COMMIT) {
		vm_resume(vm);
		migration_incoming_started(ctx->rt.in);
		ctx->recv_resumed = true;
	}
	ctx->recv_vm = vm;
	ctx->recv_ret = ret;
	ctx->recv_decision = (int)d;
	__atomic_store_n(&ctx->recv_done, true, __ATOMIC_RELEASE);
	/* The loop's wake-up; if it fails the next tick still sees recv_done. */
	if (write(ctx->recv_efd, &(uint64_t){1}, sizeof(uint64_t)) < 0) {
		/* an eventfd's counter does not overflow at 1 */
	}
	return NULL;
}

/* The receive thread is done: its VM runs now (or the migration ended). Main thread. */
static void on_recv_done(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0) {
		/* nonblocking: nothing to read is fine */
	}
	if (ctx->recv_started && __atomic_load_n(&ctx->recv_done, __ATOMIC_ACQUIRE))
		receive_ended(ctx);
}

static int waiting_api_path(struct run_ctx *ctx, const struct vm_config *cfg, char *path,
			    size_t len, char *err, size_t errlen)
{
	int ret = run_api_path_for(ctx->rt.fe.api_socket, cfg->name, ctx->api_path,
				   sizeof(ctx->api_path), err, errlen);

	if (ret)
		return ret;
	ctx->api_explicit = ctx->rt.fe.api_socket[0] != '\0';
	snprintf(ctx->wait_name, sizeof(ctx->wait_name), "%s", cfg->name);
	/* An explicit path is final from the start; the default waits beside the source's. */
	if ((size_t)snprintf(path, len, ctx->api_explicit ? "%s" : "%s.incoming", ctx->api_path) >=
	    len) {
		snprintf(err, errlen, "api socket path '%.200s...' is too long", ctx->api_path);
		return -ENAMETOOLONG;
	}
	return 0;
}

int run_incoming(struct run_ctx *ctx, const char *addr, struct vm_config *cfg, int console_fd,
		 char *err, size_t errlen)
{
	struct incoming_hook hook = {.refused = incoming_refused, .opaque = ctx};
	struct config_layer desc = frontend_config_layer(&ctx->rt.fe);
	struct migration_host host = frontend_migration_host(&ctx->rt.fe, &desc);
	struct incoming_status st;
	char path[PATH_MAX];
	int ret;

	log_limit_init(&ctx->refused_log, REFUSED_BURST, REFUSED_INTERVAL_MS);
	ctx->refused_log_ready = true;
	ctx->console_mode = (int)ctx->rt.fe.console_input; /* this host's terminal */
	ctx->local_cfg = cfg;
	ctx->console_fd = console_fd;
	ctx->seccomp = cfg->seccomp;
	ctx->rt.local_name = cfg->name;
	ret = waiting_api_path(ctx, cfg, path, sizeof(path), err, errlen);
	if (!ret)
		ret = migration_incoming_open(addr, cfg, &host, &ctx->rt.hooks, &hook, &ctx->rt.in,
					      err, errlen);
	/* Before the waiting line: whoever reads it may ask the API at once. */
	if (!ret)
		ret = api_server_start(&ctx->rt.api, &ctx->rt, path, err, errlen);
	if (!ret) {
		ctx->ev_source = event_new(ctx->rt.base, -1, EV_PERSIST, on_incoming_tick, ctx);
		if (!ctx->ev_source || event_add(ctx->ev_source, &(struct timeval){0, 20000})) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
		}
	}
	if (!ret) {
		ctx->recv_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ctx->ev_recv = ctx->recv_efd < 0
				   ? NULL
				   : event_new(ctx->rt.base, ctx->recv_efd, EV_READ | EV_PERSIST,
					       on_recv_done, ctx);
		if (!ctx->ev_recv || event_add(ctx->ev_recv, NULL)) {
			snprintf(err, errlen, "cannot watch the receive thread: %s",
				 strerror(errno ? errno : ENOMEM));
			ret = -ENOMEM;
		}
	}
	if (!ret && pthread_create(&ctx->recv_thread, NULL, receive_thread, ctx)) {
		snprintf(err, errlen, "cannot start the receive thread");
		ret = -EAGAIN;
	}
	if (ret) {
		api_server_stop(ctx->rt.api);
		ctx->rt.api = NULL;
		migration_incoming_free(ctx->rt.in);
		ctx->rt.in = NULL;
		return ret;
	}
	ctx->recv_started = true;
	migration_incoming_status(ctx->rt.in, &st);
	/* The waiting target says where: an operator (or a script) knows it is ready. */
	log_msg(&ctx->rt.log, LOG_LEVEL_INFO, "waiting for an incoming migration on %s", st.listen);
	return 0;
}

/* The failure paths before the loop runs: wait for the receive thread, free its VM. */
void run_receive_wait(struct run_ctx *ctx)
{
	if (!ctx->recv_started)
		return;
	runtime_incoming_stop(&ctx->rt, 1, "the target could not run its event loop", NULL, 0);
	while (!__atomic_load_n(&ctx->recv_done, __ATOMIC_ACQUIRE))
		sleep_ms(10);
	receive_ended(ctx);
	if (ctx->rt.vm) /* it came anyway: it must not run */
		vm_request_stop(ctx->rt.vm, VM_END_ERROR, 1, "the event loop did not start");
}
