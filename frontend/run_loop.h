/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_loop.h - one `vmm run` process once its command line is read: boot
 * the VM from its config, or receive it from a migration source; serve its
 * control API; run the event loop until the VM ends; release it all.
 *
 * All functions run on the main thread, which is the event-loop thread, in
 * the order below; every callback (the VM's end, signals, the linger, the
 * API's requests) runs there too. The vCPU and engine threads never touch
 * struct run_ctx, but for the engine's hook callbacks' log records
 * (ctx->rt.log, thread-safe: log.h); a target's receive thread only reads
 * rt.in, rt.hooks, local_cfg and console_fd, writes its recv_* results (see
 * the fields) and wakes the loop (recv_efd); on a COMMIT in time it resumes
 * the VM's vCPUs and calls migration_incoming_started() itself, before the
 * loop takes over.
 *
 *   run_boot() or run_incoming()   0, or -errno with the message in err
 *   run_loop()                     only after a 0: returns the exit status
 *   run_release()                  always, even after a failed start
 */
#ifndef VMM_RUN_LOOP_H
#define VMM_RUN_LOOP_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log_limit.h"
#include "runtime.h"

struct console_input;
struct event;
struct vm_config;

struct run_ctx {
	struct runtime rt; /* the VM, its migrations, its API, the event base */
	/*
	 * Target: the receive thread (migration_incoming_receive, then
	 * _prepare) runs while the main thread serves the API. It writes
	 * recv_vm, recv_ret, recv_decision, recv_err and then recv_done
	 * (atomic, release); main reads them only after that, and joins it.
	 */
	pthread_t recv_thread;
	bool recv_started; /* main: running, not yet joined */
	bool recv_done;
	/*
	 * The receive thread writes it once recv_done is set: the loop acts
	 * at once (a COMMIT's vCPUs resume in microseconds, not at the next
	 * tick, which would add up to a tick to the guest's downtime).
	 */
	int recv_efd;
	struct event *ev_recv;
	struct vm *recv_vm;
	int recv_ret;
	int recv_decision; /* enum incoming_decision */
	bool recv_resumed; /* COMMIT in time: the receive thread resumed the vCPUs */
	char recv_err[512];
	const struct vm_config *local_cfg; /* this host's config (read by the receive thread) */
	int console_fd;
	bool seccomp;		 /* the local config's: main's filter before a VM exists */
	char wait_name[64];	 /* the local [vm] name the waiting socket was named for */
	bool api_explicit;	 /* --api-socket / [api] socket: never renamed */
	bool name_followed;	 /* the socket followed the VM_DESC's name (follow_name) */
	int pending_signal;	 /* SIGINT/SIGTERM after PREPARED: acted on once the VM is here */
	int end_status;		 /* the exit status when no VM ran here */
	uint64_t start_ns;	 /* the command's start (timings) */
	struct event *ev_end;	 /* the VM's end, once there is a VM */
	struct event *ev_source; /* target: polls for the source's end, until it is gone */
	struct event *linger;	 /* migrated away: waiting for the summary to be read */
	char api_path[PATH_MAX]; /* the VM's usual API socket path */
	uint64_t first_byte_ns;	 /* the guest's first console byte (--timing) */
	uint64_t end_ns;	 /* when a migrated-away VM (a failed incoming migration) ended */
	bool outcome_unknown;	 /* target: paused until the source's decision or recover */
	bool watched;		 /* migrated away: an event stream was open while lingering */
	/* Console input (console_input.h): from the VM's start here until its end. */
	int console_mode;	       /* enum console_input_mode, from this host's config */
	struct console_input *console; /* NULL: none, or not running here yet */
	struct event *ev_console_quit; /* Ctrl-A x */
	/* --restore --lazy: the restore's threads, and the event of their end */
	bool lazy;
	struct event *ev_lazy;
	char restored_id[33]; /* --restore: the snapshot's id, once restored */
	/*
	 * --restore-wait: the command's --set (applied on the snapshot's
	 * config) and --lazy (for a request that does not say), until a
	 * request brings the VM (run_restore.c).
	 */
	char **wait_sets;
	int wait_nsets;
	bool wait_lazy;
	/* Target: the refusals' log lines, a few per interval (engine threads log them). */
	struct log_limit refused_log;
	bool refused_log_ready;
};

/*
 * ctx->rt.base and ctx->rt.hooks must be set. Creates and boots the VM of
 * `cfg`, or restores it from `img` (an open snapshot whose config cfg was
 * read from), starts its API and its vCPUs.
 */
struct snapshot_image;
int run_boot(struct run_ctx *ctx, struct vm_config *cfg, struct snapshot_image *img, int console_fd,
	     char *err, size_t errlen);

/*
 * Same preconditions. Listens on `addr` ("host:port"), starts the API at
 * its waiting path (docs/api.md) and prints the waiting line, then returns
 * 0 with the receive thread running; the VM runs here only on the source's
 * COMMIT (docs/architecture.md, "Target after the switchover"). A failed or
 * cancelled receive ends the loop with run_loop() returning 1 (or the
 * stop's status: runtime_incoming_stop()).
 */
int run_incoming(struct run_ctx *ctx, const char *addr, struct vm_config *cfg, int console_fd,
		 char *err, size_t errlen);

/* Runs the event loop until the VM ends, joins it; returns the exit status. */
int run_loop(struct run_ctx *ctx);

/*
 * Stops the API, then frees the migrations and the VM (in that order: a
 * last status request may still read the progress); the event base stays
 * the caller's.
 */
void run_release(struct run_ctx *ctx);

/*
 * run_vm.c, main thread only: the VM's end event's callback, the console
 * input's start and stop, and the API socket path of a config.
 * run_linger_start(): the process is over (its VM migrated away, or its
 * incoming migration failed): the loop ends once its watchers know.
 */
void run_on_vm_end(int fd, short what, void *arg);
void run_linger_start(struct run_ctx *ctx);
void run_console_start(struct run_ctx *ctx);
void run_console_stop(struct run_ctx *ctx);
/* [api] socket (this host's, "" for the default) for the VM called name. */
int run_api_path_for(const char *api_socket, const char *name, char *buf, size_t len, char *err,
		     size_t errlen);

/*
 * run_restore.c, main thread: the VM's memory and state from the snapshot
 * instead of a boot (vm created, vCPUs not started): read eagerly, or with
 * ctx->lazy filled by threads the runtime keeps (rt.lazy) while it runs.
 */
int run_restore(struct run_ctx *ctx, struct vm *vm, struct snapshot_image *img, char *err,
		size_t errlen);
void run_restore_release(struct run_ctx *ctx);

/*
 * `vmm run --restore-wait SOCKET`, main thread, in place of run_boot():
 * serves the API on SOCKET with no VM (ctx->rt.restore set) and returns 0;
 * run_loop() then waits for PUT /api/v1/vm/restore, which restores the
 * snapshot it names into this process, counted from the request (timings:
 * ctx->start_ns becomes the request's arrival).
 */
int run_restore_wait(struct run_ctx *ctx, const char *socket, char *err, size_t errlen);

/* run_incoming.c: waits for a receive thread that a failed start left running. */
void run_receive_wait(struct run_ctx *ctx);

#endif /* VMM_RUN_LOOP_H */
