/* SPDX-License-Identifier: Apache-2.0 */
/*
 * settle_fsm.h - the switchover commit's state machine on the target,
 * pure: a state and an event (a decision record read and proven, a
 * timeout, main lost, the source's leaving, a recover or resumed
 * connection, the operator's word) give the next state and the one action
 * the caller takes (answer COMMITTED, run, discard, answer RECOVER_STATE,
 * tell the source DECIDED, ...). No I/O, no lock, no clock: settle.c and
 * settle_records.c read the connections and the operator, step this under
 * the settle lock (settle_step(), which also derives struct settle's flags
 * from the state), and do what the action says; tests/unit/
 * test_settle_fsm.c is the table of every transition of
 * docs/migration-protocol.md's target table ("Switchover").
 *
 * Why one place: "the target runs the VM only after COMMIT" had become
 * five flags written in seven places, with the races between main, the
 * gate's recover workers and the operator settled by the order of the
 * writes. Here the first decision wins by construction: a state after it
 * ignores or refuses every later one, and nothing here lets a VM discarded
 * by a proven ABORT run, or one that never saw COMMIT run without RELEASE.
 */
#ifndef VMM_MIGRATION_TARGET_SETTLE_FSM_H
#define VMM_MIGRATION_TARGET_SETTLE_FSM_H

#include <stdbool.h>

enum settle_state {
	SETTLE_ST_PREPARED = 0, /* PREPARED sent: the decision on main within T */
	SETTLE_ST_UNKNOWN,	/* no decision: paused; main, recover, the operator settle it */
	SETTLE_ST_PENDING,	/* a late COMMIT answered (resume_mono_ns 0): runs on RELEASE */
	SETTLE_ST_RUNNING,	/* the VM runs here; precopy: awaiting RELEASE */
	SETTLE_ST_RELEASED,	/* RELEASE (or the operator's run): awaiting the source's exit */
	SETTLE_ST_DONE,		/* the source left: the API may take the VM's socket path */
	SETTLE_ST_DISCARDED,	/* a proven ABORT, or the operator's discard: never runs here */
	SETTLE_ST_STOPPED,	/* it ran, then a proven ABORT: it stops (only one copy runs) */
	SETTLE_ST_COUNT
};

enum settle_event {
	SETTLE_EV_COMMIT = 0,	    /* a proven COMMIT on main within T of PREPARED */
	SETTLE_EV_COMMIT_LATE,	    /* one later, or once the outcome was open (main or recover) */
	SETTLE_EV_ABORT,	    /* a proven ABORT (main or recover) */
	SETTLE_EV_RELEASE,	    /* a proven RELEASE (main or recover) */
	SETTLE_EV_FORGED,	    /* a decision record whose proof does not verify */
	SETTLE_EV_TIMEOUT,	    /* no decision within T of PREPARED */
	SETTLE_EV_MAIN_LOST,	    /* main: EOF, reset, a record refused or cut off */
	SETTLE_EV_SOURCE_LEFT,	    /* the RELEASE's recover connection ended (or 30 s) */
	SETTLE_EV_RECOVER,	    /* a recover connection asks: RECOVER_STATE */
	SETTLE_EV_RESUME,	    /* postcopy: a main-resume with a fresh, proven RESUME */
	SETTLE_EV_RESUME_REPLAY,    /* ... whose attempt was taken before */
	SETTLE_EV_OPERATOR_RUN,	    /* `vmm migrate --recover --decide run` here */
	SETTLE_EV_OPERATOR_DISCARD, /* `... --decide discard` here */
	SETTLE_EV_UNWATCHED,	    /* precopy: no settle thread: the source's EOF is all we see */
	SETTLE_EV_COUNT
};

enum settle_action {
	SETTLE_ACT_WAIT = 0,	       /* nothing to do; keep waiting in the (new) state */
	SETTLE_ACT_RUN,		       /* COMMITTED (in time), resume the vCPUs */
	SETTLE_ACT_COMMITTED_LATE,     /* COMMITTED with resume_mono_ns 0; paused until RELEASE */
	SETTLE_ACT_UNKNOWN,	       /* report the outcome unknown; the settle thread waits */
	SETTLE_ACT_RUN_RELEASED,       /* a pending target's RELEASE: resume the vCPUs now */
	SETTLE_ACT_RELEASED,	       /* the source let go: now wait for its exit */
	SETTLE_ACT_FINISH,	       /* the source left: migration port closes, API path ours */
	SETTLE_ACT_DISCARD,	       /* discard the VM, `failed` with the reason */
	SETTLE_ACT_STOP_VM,	       /* it ran here: stop it, exit 1 */
	SETTLE_ACT_ANSWER_PREPARED,    /* RECOVER_STATE prepared, then read the decision */
	SETTLE_ACT_ANSWER_RUNNING,     /* RECOVER_STATE running, then read RELEASE */
	SETTLE_ACT_TELL_RUN,	       /* the operator's run: DECIDED runs to the source */
	SETTLE_ACT_TELL_DISCARD,       /* the operator's discard: DECIDED discarded */
	SETTLE_ACT_RESUME_SESSION,     /* postcopy: it runs here, the resume goes on */
	SETTLE_ACT_REFUSE,	       /* not in this state (a record, a resume): nothing changes */
	SETTLE_ACT_REFUSE_NOT_UNKNOWN, /* the operator: no switchover of unknown outcome */
	SETTLE_ACT_REFUSE_PENDING,     /* the operator's discard after a COMMITTED was answered */
	SETTLE_ACT_REFUSE_POSTCOPY_RUN, /* the operator's run of a postcopy copy lacking pages */
	SETTLE_ACT_IGNORE, /* a duplicate or too late: nothing changes, nothing goes out */
	SETTLE_ACT_COUNT
};

struct settle_fsm {
	enum settle_state st;
	bool postcopy;	 /* a postcopy switchover (the operator cannot run it; RESUME) */
	bool main_alive; /* the source's main connection is still read */
};

/* PREPARED, main alive. */
void settle_fsm_init(struct settle_fsm *f, bool postcopy);
/*
 * Steps f on ev: the new state in f, the action returned. Every (state,
 * event) pair has a row; REFUSE* and IGNORE leave f unchanged.
 */
enum settle_action settle_fsm_step(struct settle_fsm *f, enum settle_event ev);
/* The VM runs (or ran) here in st: COMMIT came, or the operator's run. */
bool settle_fsm_running(enum settle_state st);
/* Names for logs and tests; "?" out of range. */
const char *settle_state_name(enum settle_state st);
const char *settle_event_name(enum settle_event ev);
const char *settle_action_name(enum settle_action a);

#endif /* VMM_MIGRATION_TARGET_SETTLE_FSM_H */
