/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migration.h - the live migration engine's public face: what the control
 * API, the CLI and tests call, and the only engine header the front end can
 * include. Internals live in wire/, dirty/, source/ and incoming/.
 *
 * Source side: migration_start() spawns the migration thread for a running
 * VM and returns at once; progress is read with migration_get_progress();
 * migration_cancel() asks the thread to stop and resume the VM on the
 * source. All are called from the front end's event-loop thread; they take
 * the migration's own lock.
 *
 * On success the source VM ends with VM_END_MIGRATED (its event loop then
 * exits the process with status 0). On any failure before the source has
 * committed the switchover (sent COMMIT), the VM keeps (or resumes)
 * running on the source with all of its memory and the error is in the
 * progress record. After COMMIT the source never resumes on its own: if
 * the target's COMMITTED does not come, the state is
 * MIGRATION_SWITCHOVER_UNKNOWN (precopy) or POSTCOPY_PAUSED (postcopy)
 * until migration_recover() settles it.
 */
#ifndef VMM_MIGRATION_H
#define VMM_MIGRATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "migration_params.h"

struct vm;
struct vm_config;
struct config_layer; /* config_layer.h, the machine's */

/*
 * What the host's front end gives a migration beyond the VM: none of it is
 * the VM's, so none of it is in its struct vm_config.
 */
struct migration_host {
	/* [migration] tls_cert/tls_key/tls_ca: TLS on every connection when set, all three */
	const char *tls_cert, *tls_key, *tls_ca; /* NULL or "": plain TCP */
	/*
	 * The front end's keys a VM description carries (config_format_with():
	 * [console] output, [api] socket), so VM_DESC is the same bytes as
	 * when they were the machine's; a target reads them with base NULL:
	 * checked, dropped, its own host's kept. A target must pass it: every
	 * source's VM_DESC carries those sections, which a target without
	 * the table refuses as unknown. NULL only on a source (a description
	 * without them, which no target of this version reads). The engine
	 * copies it; the struct it points into must outlive the migration.
	 */
	const struct config_layer *desc;
};

enum migration_mode {
	MIGRATION_MODE_PRECOPY, /* stop-and-copy when converged */
	/*
	 * switch over the postcopy way after postcopy_after passes; refused in
	 * SETUP (the VM never paused) when the target cannot do postcopy
	 */
	MIGRATION_MODE_POSTCOPY,
	/*
	 * precopy while it converges, else postcopy (default); a target that
	 * cannot do postcopy (its CAPS) makes it precopy, limits and all.
	 */
	MIGRATION_MODE_AUTO,
};

/* What to do when precopy does not converge within its limits. */
enum migration_no_converge {
	/*
	 * stop-and-copy anyway, report the downtime: at the pass with the
	 * least to send once passes stopped shrinking it, else at the limits
	 */
	MIGRATION_NO_CONVERGE_SWITCHOVER,
	MIGRATION_NO_CONVERGE_FAIL,	 /* give up at the limits, the VM stays on the source */
	MIGRATION_NO_CONVERGE_AT_LIMITS, /* keep passing until the limits, then stop-and-copy */
};

/* How precopy helps itself converge (docs/migration-protocol.md, "Convergence"). */
enum migration_converge {
	MIGRATION_CONVERGE_NONE,     /* passes only: the guest runs at full speed */
	MIGRATION_CONVERGE_THROTTLE, /* slow the vCPUs down while passes do not converge */
};

/* The fields of MIGRATION_PARAMS (migration_params.h: defaults, ranges, names). */
struct migration_params {
	char to[256]; /* "host:port" or "unix:PATH" */
	uint64_t downtime_ms;
	uint64_t max_bandwidth; /* bytes/s, 0 = unlimited */
	unsigned connections;
	int compress_level; /* zstd level, 0 = no compression */
	unsigned harvest_threads;
	unsigned clear_chunk_pages; /* KVM_CLEAR_DIRTY_LOG granularity */
	unsigned max_passes;
	uint64_t max_time_ms;
	enum migration_no_converge no_converge;
	enum migration_converge converge;
	unsigned throttle_max_pct; /* converge throttle: at most this share of each slice asleep */
	enum migration_mode mode;
	unsigned postcopy_after;
	bool no_final_bitmap;
	uint64_t timeout_ms;
	uint64_t blackout_poll_us; /* a blackout wait polls this long before it sleeps */
	bool local;		   /* hand RAM over (memfd, SCM_RIGHTS) to a vmm on this host */
};

enum migration_state {
	MIGRATION_NONE,
	MIGRATION_SETUP,
	MIGRATION_PRECOPY,
	MIGRATION_SWITCHOVER,
	/*
	 * COMMIT went out, COMMITTED did not come: the VM is paused here and
	 * may run on the target. Only migration_recover() (or a late
	 * COMMITTED) ends it. On the target: PREPARED went out and no decision
	 * came; the VM is paused there too.
	 */
	MIGRATION_SWITCHOVER_UNKNOWN,
	MIGRATION_POSTCOPY_ACTIVE, /* the VM runs on the target; pages still arriving */
	MIGRATION_POSTCOPY_PAUSED, /* postcopy connection lost: both sides wait for --resume */
	MIGRATION_COMPLETED,
	MIGRATION_FAILED,
	MIGRATION_CANCELLED,
	/*
	 * Target, precopy: the VM runs here since COMMIT, and the source has
	 * not let go yet (no RELEASE, or the source has not exited): recover
	 * connections are answered and the API stays at <name>.sock.incoming.
	 * The source's RELEASE and exit, or the operator's `--recover --decide
	 * run` on this target, end it (progress.error says since when).
	 */
	MIGRATION_AWAITING_RELEASE,
	MIGRATION_STATE_COUNT /* not a state: how many (names.c names each) */
};

/*
 * The progress record (struct migration_progress, MIGRATION_PROGRESS) and
 * its words (switchover reasons, modes used).
 */
#include "migration_progress.h"

/* Every parameter at its table default (harvest_threads: the online CPUs, at most the maximum). */
void migration_params_defaults(struct migration_params *p);
/*
 * The one check of a parameter set, used by the engine at start and by the
 * API before it answers: 0, or -EINVAL with one line naming the field and
 * the allowed values (migration_param_set()'s).
 */
int migration_params_check(const struct migration_params *p, char *err, size_t errlen);

/* The row called name, or NULL. */
const struct migration_param *migration_param_find(const char *name);
/* A row's value in p, widened (enums and bools as 0, 1, ...). */
uint64_t migration_param_get(const struct migration_params *p, const struct migration_param *d);
/*
 * Sets a row's field to v when v is allowed (its range; MP_POW2 a power of
 * two): 0, or -EINVAL with "'NAME' must be ALLOWED" in err and p unchanged.
 */
int migration_param_set(struct migration_params *p, const struct migration_param *d, uint64_t v,
			char *err, size_t errlen);
/* "'NAME' must be ALLOWED", the one message for a row's bad value. */
void migration_param_refusal(const struct migration_param *d, char *err, size_t errlen);
/* MP_ENUM: the name of value v ("?" out of range); the value of a name, or -EINVAL. */
const char *migration_param_value_name(const struct migration_param *d, uint64_t v);
int migration_param_value_of(const struct migration_param *d, const char *name, uint64_t *v);
/* The --clear-chunk / shard size rule: a power of two in MIGRATION_CLEAR_CHUNK_MIN..MAX. */
bool migration_clear_chunk_valid(uint64_t pages);

/*
 * Source side. One struct migration per outgoing migration, owned by the
 * caller (the front end's runtime) from migration_start() until
 * migration_free(). Every call below is made from one thread at a time
 * (the event loop); the engine's own threads never call back.
 */
struct migration;
struct test_hooks;

/*
 * Spawns the migration thread for a running VM; *out on success. host's
 * strings are read at once; its desc's struct must outlive the migration.
 */
int migration_start(struct vm *vm, const struct migration_params *p,
		    const struct migration_host *host, const struct test_hooks *hooks,
		    struct migration **out, char *err, size_t errlen);
/*
 * Asks the engine to stop; the VM keeps running on the source. -EBUSY with
 * the reason once the target may run the VM (switchover, postcopy).
 */
int migration_cancel(struct migration *m, char *err, size_t errlen);
/*
 * Postcopy paused by a broken connection: reconnect to `to` and finish
 * (the target tells which pages it still lacks). -ENOENT unless paused.
 */
int migration_resume(struct migration *m, const char *to, char *err, size_t errlen);
/*
 * Settles a switchover whose outcome is unknown (MIGRATION_SWITCHOVER_UNKNOWN):
 * the migration thread connects to `to` (NULL or "": the migration's
 * destination), asks the target whether it runs the VM and finishes the
 * commit (COMPLETED), or records why it could not (progress.error,
 * recover_attempts + 1) and stays paused. resume_here: the operator knows
 * the target is gone; the VM resumes here without asking (FAILED).
 * POSTCOPY_PAUSED: the same as migration_resume(). -ENOENT in any other state.
 */
int migration_recover(struct migration *m, const char *to, bool resume_here, char *err,
		      size_t errlen);
void migration_get_progress(struct migration *m, struct migration_progress *out);
/* COMPLETED, FAILED or CANCELLED: the migration thread has nothing left to do. */
bool migration_finished(struct migration *m);
/*
 * A state's name, the API's "state" (docs/api.md): "none", "setup",
 * "precopy", "switchover", "switchover-unknown", "postcopy-active",
 * "postcopy-paused", "completed", "failed", "cancelled", "awaiting-release";
 * "unknown" out of range. The one table of them (names.c), for the engine's
 * messages and the front end alike. Any thread.
 */
const char *migration_state_name(enum migration_state s);
/* The reverse: 0 with *out set, or -EINVAL for a name not in the table. */
int migration_state_from_name(const char *name, enum migration_state *out);
/*
 * The postcopy rule, in one place: in these states the VM runs on the
 * target and only the source has some of its pages, so the source must
 * neither go away nor resume, and the migration cannot be cancelled.
 */
bool migration_state_needs_source(enum migration_state s);
/*
 * Joins the migration thread and frees everything (NULL is fine). A failed
 * or cancelled migration has already given back its connections, threads
 * and buffers when it reached that state; only the progress record is left.
 */
void migration_free(struct migration *m);

/*
 * Target side. Called once the described VM exists, before any page
 * arrives: the caller starts what the VM will need when it resumes (its
 * API, its vCPU threads, parked), so none of it adds to the downtime. An
 * error fails the migration (the source is told why and resumes). After a
 * failure the caller undoes its part; the VM itself is already gone.
 */
struct incoming_hook {
	int (*created)(struct vm *vm, void *opaque, char *err, size_t errlen);
	/*
	 * Optional. A connection was refused on its own (failed handshake, idle,
	 * another protocol, busy) and the target keeps waiting: peer is its
	 * "host:port", why the reason it was also sent. Called from an engine
	 * thread while migration_incoming_receive() runs, one call at a time: it may
	 * only report (print, count), never call the engine.
	 */
	void (*refused)(void *opaque, const char *peer, const char *why);
	/*
	 * Optional. The target listens: addr is the "host:port" the socket is
	 * bound to, read back from it. Called once, from
	 * migration_incoming_open() on the caller's thread, before any peer can
	 * be accepted; it may only report.
	 */
	void (*listening)(void *opaque, const char *addr);
	void *opaque;
};

struct incoming;

/*
 * The target in two steps, so that the front end serves its API while it
 * waits and receives:
 *
 * migration_incoming_open() (the front end's thread) listens on
 * `listen_addr` ("host:port") and starts refusing every other peer on its
 * own until the source's VM description has been read and checked (and
 * answering later ones "busy"); it returns at once with *in_out set, or
 * -errno with nothing left allocated.
 *
 * migration_incoming_receive() (one thread of the caller's, which blocks
 * in it) waits for the source, creates the VM it describes (local_cfg
 * supplies prealloc, seccomp and the device bindings; host, to open, the
 * TLS files and the front end's sections of a description), receives
 * memory and state,
 * and returns with *vm_out created and loaded, vCPUs not yet running. The
 * caller then calls migration_incoming_prepare() on that same thread.
 * On error `err` says which record or step failed, the source was told
 * (ERROR) and *vm_out is the VM if one was created: the caller calls
 * migration_incoming_free() and then destroys it (engine threads first:
 * they may still touch its memory).
 */
int migration_incoming_open(const char *listen_addr, const struct vm_config *local_cfg,
			    const struct migration_host *host, const struct test_hooks *hooks,
			    const struct incoming_hook *hook, struct incoming **in_out, char *err,
			    size_t errlen);
int migration_incoming_receive(struct incoming *in, const struct vm_config *local_cfg,
			       int console_fd, const struct incoming_hook *hook, struct vm **vm_out,
			       char *err, size_t errlen);

/* Where a target is, for its status (migration_incoming_status()). */
enum incoming_phase {
	INCOMING_WAITING,   /* listening, no source yet */
	INCOMING_RECEIVING, /* a source's VM_DESC accepted: memory and state arriving */
	INCOMING_PREPARED,  /* loaded, PREPARED going out: the source decides; no cancel */
	INCOMING_FAILED,    /* receive (or a cancel) failed it, or prepare discarded the VM */
};

struct incoming_status {
	enum incoming_phase phase;
	char listen[80];	   /* "host:port" the socket is bound to */
	char peer[80];		   /* the source's "host:port", from RECEIVING on; else "" */
	char name[64];		   /* the incoming VM's name (VM_DESC), from RECEIVING on */
	uint64_t bytes_received;   /* on the data connections so far (wire bytes) */
	uint64_t pages_received;   /* pages in PAGES records applied so far (zero or data) */
	uint64_t records_received; /* PAGES records applied so far */
	/*
	 * Connections refused while waiting (a failed handshake, a source that
	 * died before its VM_DESC was complete, busy, ...): how many, and the
	 * last one's "peer: reason", so an operator sees that a migration was
	 * tried and why it did not start.
	 */
	uint64_t refused;
	char last_refused[240];
	/*
	 * INCOMING_FAILED: why (the receive's error, a cancel's reason, or
	 * why the VM was discarded after PREPARED), and whether a cancel
	 * (migration_incoming_cancel()) ended it.
	 */
	bool cancelled;
	char error[256];
	/*
	 * The blackout's waits for the source on main, SWITCHOVER to COMMIT
	 * (the state's records, END, COMMIT): how many, of which the record
	 * was there already, arrived while polling, or needed a sleeping wait;
	 * the polling's time. And END received to PREPARED sent.
	 */
	unsigned blackout_waits;
	unsigned blackout_ready;
	unsigned blackout_polled;
	unsigned blackout_sleeps;
	uint64_t blackout_polling_us;
	uint64_t end_to_prepared_us;
};

/* Any thread, any time until migration_incoming_free(): a consistent snapshot. */
void migration_incoming_status(struct incoming *in, struct incoming_status *out);

/*
 * Any thread: stops a target before PREPARED. Waiting: it stops waiting.
 * Receiving: the migration fails with `why` (the source gets it in an
 * ERROR record and resumes its VM). Either way migration_incoming_receive()
 * then returns -ECANCELED. -EBUSY (err says why) from PREPARED on: the
 * source's two-phase commit decides; -EALREADY once it has failed.
 */
int migration_incoming_cancel(struct incoming *in, const char *why, char *err, size_t errlen);

/*
 * The target's half of the switchover commit, once
 * migration_incoming_receive() returned 0, on its thread: sends PREPARED and waits for the source's
 * decision for as long as the source waits for COMMITTED (its END says). COMMIT: COMMITTED goes
 * back and the caller resumes the vCPUs at once, then calls
 * migration_incoming_started(). ABORT (or the source failing before it
 * decided, or a lost main connection before PREPARED): -errno with the
 * reason; the caller discards the VM. No decision in time:
 * INCOMING_UNKNOWN: the VM stays paused, the engine keeps waiting for a
 * late decision on main and for the source's recover connection on the
 * migration port, and the caller polls migration_incoming_decision().
 */
enum incoming_decision {
	INCOMING_UNDECIDED, /* still waiting (migration_incoming_decision only) */
	INCOMING_COMMIT,    /* run the VM */
	INCOMING_ABORT,	    /* discard the VM: the source runs it */
	INCOMING_UNKNOWN,   /* paused, waiting for a recover */
};
int migration_incoming_prepare(struct incoming *in, enum incoming_decision *d, char *err,
			       size_t errlen);
/*
 * After INCOMING_UNKNOWN, from the front end's loop: UNDECIDED while it
 * waits; COMMIT (COMMITTED was sent: resume now, then
 * migration_incoming_started()), ABORT (err says why: discard).
 */
enum incoming_decision migration_incoming_decision(struct incoming *in, char *err, size_t errlen);
/*
 * The operator settles an unknown outcome on the target (the source is
 * known to be gone): run = INCOMING_COMMIT on the next poll, else ABORT.
 * -ENOENT unless the outcome is unknown.
 */
int migration_incoming_decide(struct incoming *in, bool run, char *err, size_t errlen);
/* The vCPUs run: postcopy's threads start serving faults, precopy waits for RELEASE. */
void migration_incoming_started(struct incoming *in);
/* The memory digest verified against the source's (test hook), or 0. */
uint64_t migration_incoming_digest(const struct incoming *in);
/*
 * True once the migration no longer needs the target's attention: precopy,
 * RELEASE came and the source's main connection closed (it exited);
 * postcopy, every page is in and the source left.
 */
bool migration_incoming_finished(struct incoming *in);
/* Target side progress (postcopy): state, pages left, faults. */
void migration_incoming_progress(struct incoming *in, struct migration_progress *out);
/* Stops the engine's threads and frees what is left (NULL is fine); before vm_destroy(). */
void migration_incoming_free(struct incoming *in);

/* The formats this engine speaks (`vmm --version`; docs/compatibility.md). */
struct migration_versions {
	unsigned protocol_major, protocol_minor; /* the wire (protocol.h) */
	unsigned snapshot_major, snapshot_minor; /* the snapshot directory (snap_format.h) */
};
void migration_versions(struct migration_versions *v);

#endif /* VMM_MIGRATION_H */
