/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime.h - what one `vmm run` process holds: the VM, its outgoing or
 * incoming migration, its control API and event loop. The machine layer's
 * struct vm knows nothing of these; the front end owns them all here.
 *
 * Every field and function is used from the event-loop thread only (the
 * main thread of `vmm run`); the engine's threads never see this struct,
 * but for `log`, which its hook callbacks write to (log.h: thread-safe).
 */
#ifndef VMM_FRONTEND_RUNTIME_H
#define VMM_FRONTEND_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include "frontend_config.h"
#include "log.h"
#include "migration.h"
#include "snapshot.h"
#include "test_hooks.h"

struct vm;
struct event_base;
struct api_server;
struct runtime;

/* What a restore into a waiting process answers (PUT /api/v1/vm/restore, docs/api.md). */
struct runtime_restore {
	char id[33];	     /* the snapshot's */
	char name[64];	     /* the restored VM's [vm] name */
	bool lazy;	     /* its pages come in on first touch */
	uint64_t restore_us; /* from the request to the vCPUs started */
};

/*
 * `vmm run --restore-wait SOCKET` (run_restore.c): restores the snapshot in
 * dir into this process, on the loop thread, while the PUT waits; lazy -1
 * takes the command's --lazy. -errno with one line: before any VM exists
 * (the snapshot refused, a bad config) the process waits on (rt->vm NULL);
 * after, the VM is stopping and the process ends.
 */
typedef int (*runtime_restore_fn)(struct runtime *rt, const char *dir, int lazy,
				  struct runtime_restore *out, char *err, size_t errlen);

struct runtime {
	struct vm *vm;
	/*
	 * This host's [console], [api], [log] and [migration] TLS settings
	 * (frontend_config.h): set before the VM exists, read-only after; the
	 * engine reads it through migration_host for every migration and
	 * snapshot, so it lives as long as the process.
	 */
	struct frontend_config fe;
	struct migration *mig;	    /* the last outgoing migration, NULL before the first */
	struct incoming *in;	    /* target: the received migration, until the source is gone */
	struct snapshot *snap;	    /* the last snapshot, NULL before the first */
	unsigned snapshots;	    /* snapshots started: which one `snap` is */
	struct snapshot_lazy *lazy; /* --restore --lazy: filling RAM, until the VM is gone */
	struct test_hooks hooks;
	struct vmm_log log;	 /* stderr; the one field other threads use too (log.h) */
	struct event_base *base; /* the event loop everything below runs on */
	struct api_server *api;	 /* the control API, NULL until started */
	bool user_paused;	 /* PUT /vm/pause, not the engine's own pauses */
	bool migration_reported; /* the completed migration's final progress was served */
	unsigned migrations;	 /* outgoing migrations started: which one `mig` is */
	/* A waiting or receiving target asked to end (runtime_incoming_stop): its exit status. */
	bool stop_asked;
	int stop_status;
	const char *local_name; /* target: this host's [vm] name (GET /vm before VM_DESC) */
	/*
	 * --restore-wait: set from the start; until a restore brings a VM (vm
	 * NULL, in NULL) the API serves only GET /vm, PUT /vm/restore and PUT
	 * /vm/shutdown (stop_asked, stop_status: the waiting process ends).
	 */
	runtime_restore_fn restore;
	void *restore_arg;
	/*
	 * Target: the incoming migration ended with no VM here (failed,
	 * cancelled, or discarded after PREPARED; `in` and the VM are freed
	 * by then): its last status, with the reason, which the API shows
	 * until the process exits. in_leave: a stop came after that end, so
	 * the process exits as soon as its event streams got the end's line,
	 * without waiting for a poller.
	 */
	bool in_ended;
	struct incoming_status in_final;
	bool in_leave;
};

/* A --restore-wait process still without its VM. */
static inline bool runtime_waits_restore(const struct runtime *rt)
{
	return rt->restore && !rt->vm;
}

/*
 * The outgoing migration's progress, else the incoming one's once its VM is
 * here (before, the receive thread owns it: state "none"; the API reports
 * the target's own states, runtime_incoming_status()), else, on a target
 * whose incoming migration failed, "failed" (or "cancelled") with the
 * reason in `error`, else "none".
 */
void runtime_progress(struct runtime *rt, struct migration_progress *out);

/*
 * A target with no VM here: true with *st filled: waiting, receiving, or
 * INCOMING_FAILED with the reason (st->error, st->cancelled) from the
 * moment the receive failed (the receive thread records it) until the
 * process exits (rt->in_final, once in is freed). False when a VM is here
 * or this is no target.
 */
bool runtime_incoming_status(struct runtime *rt, struct incoming_status *st);

/*
 * The one stop/pause policy of the process. NULL when `what` ("pause",
 * "shut down", "stop", ...) may happen now; else the reason, written into
 * buf. `strict` (API verbs) refuses during any migration; a signal only
 * during postcopy, when the target needs pages only this process has.
 */
const char *runtime_refusal(struct runtime *rt, const char *what, bool strict, char *buf,
			    size_t len);

/* Starts an outgoing migration: refuses while one runs, frees a finished one. */
int runtime_migrate(struct runtime *rt, const struct migration_params *p, char *err, size_t errlen);

/* True while a migration is in any non-terminal state. */
bool runtime_migration_active(const struct migration_progress *p);

/*
 * A target with no VM here yet (waiting, or receiving before PREPARED):
 * cancels the incoming migration with `why` (the source is told and keeps
 * its VM); the process then exits with `status`. -EBUSY from PREPARED on
 * (the source decides), -EALREADY once it has failed or was cancelled
 * (the process exits with that end's status; the caller may set
 * in_leave so that it does at once), -ENOENT without an incoming
 * migration; err (may be NULL) says why.
 */
int runtime_incoming_stop(struct runtime *rt, int status, const char *why, char *err,
			  size_t errlen);

/*
 * Starts a snapshot of the VM (refused while one runs: -EBUSY; a finished
 * one is freed). The caller checked runtime_refusal() first.
 */
int runtime_snapshot(struct runtime *rt, const struct snapshot_params *p, char *err, size_t errlen);

/* True while a snapshot is being taken. */
bool runtime_snapshot_active(struct runtime *rt);

/* Frees the migrations and the snapshot (joins their threads); the VM and API are the caller's. */
void runtime_release_migrations(struct runtime *rt);

#endif /* VMM_FRONTEND_RUNTIME_H */
