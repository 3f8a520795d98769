/* SPDX-License-Identifier: Apache-2.0 */
/*
 * settle_state.h - the switchover commit's state on the target, shared by
 * settle.c (the receive thread's prepare, the settle thread, the front
 * end's calls) and settle_records.c (the decision records, from main or
 * from recover and resumed connections on the gate's workers). Internal to
 * migration/incoming.
 *
 * Locking: `lock` guards every field after it; each helper below takes it
 * itself and never holds it across I/O; a decision is taken whole under
 * it (several connections may race).
 */
#ifndef VMM_MIGRATION_TARGET_SETTLE_STATE_H
#define VMM_MIGRATION_TARGET_SETTLE_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel.h"
#include "migration.h"
#include "proof.h"
#include "settle_fsm.h"

struct incoming;

#define SETTLE_TICK_MS 100

struct settle {
	pthread_t thread;
	bool started;
	bool quit; /* atomic: incoming_free() */
	pthread_mutex_t lock;
	/*
	 * The commit's state (settle_fsm.h), stepped only by settle_step().
	 * The five flags after it are derived from it there, for the readers
	 * (the front end's calls, the settle thread's loop).
	 */
	struct settle_fsm fsm;
	enum incoming_decision decision;
	bool running;  /* the VM runs here (COMMIT seen) */
	bool pending;  /* a late COMMIT was answered COMMITTED (resume_mono_ns 0): run on RELEASE */
	bool released; /* RELEASE seen */
	bool finished; /* released and the source's main closed */
	bool main_alive;
	/*
	 * migration_incoming_prepare() read main for the decision in time, or
	 * gave up: from now on recover and resume connections may settle it.
	 */
	bool open;
	/*
	 * RELEASE came on a recover connection while main was gone: a copy of
	 * that connection's fd, whose end (the source's exit) finishes the
	 * migration, as main's would; or LEAVE_WAIT_MS after the RELEASE.
	 */
	int leave_fd;
	uint64_t released_ns;
	uint64_t running_ns; /* when `running` was set: the VM runs here from then on */
	char reason[256];
	/* The newest resume attempt whose RESUME proof was taken (0: none). */
	uint32_t resume_attempt;
	/*
	 * The target's own decision keys (its operator's RUN and DISCARD),
	 * drawn before VM_DESC (settle_keys_new); the one never to be taken is forgotten when the
	 * other is (settle.c).
	 */
	struct mig_keys own;
};

/* How long a released target waits for the source's exit before taking the API path. */
#define LEAVE_WAIT_MS 30000u

/* in->sw.settle, made on first use (NULL without memory). Any engine thread. */
struct settle *settle_get(struct incoming *in);
/* COMMITTED on c (main: under main_wlock); late: resume_mono_ns 0, run on RELEASE. */
void settle_send_committed(struct incoming *in, struct mig_chan *c, bool on_main, bool late);
/*
 * One decision record on c: COMMIT, ABORT (reason in err) or RELEASE, each
 * with its own proof bound to c, else -EACCES (err says what was wrong).
 * The type or -errno. The thread that reads c.
 */
int settle_read_decision(struct incoming *in, struct mig_chan *c, char *err, size_t errlen);
/* Why a decision record's proof was refused, in err: -EACCES. */
int settle_refuse_proof(uint32_t type, uint32_t len, char *err, size_t errlen);
/*
 * Steps the commit's state on ev (settle_fsm_step) and derives decision,
 * running, pending, released, finished and main_alive from it (running_ns
 * when it starts running): the one writer of all of them. `lock` held; the
 * caller does the action it returns, after dropping the lock for any I/O.
 */
enum settle_action settle_step(struct settle *s, enum settle_event ev);
/* A decision record read on c once the outcome was open (settle_records.c explains). */
void settle_apply(struct incoming *in, struct mig_chan *c, bool on_main, int type, const char *err);

#endif /* VMM_MIGRATION_TARGET_SETTLE_STATE_H */
