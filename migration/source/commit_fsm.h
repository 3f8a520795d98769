/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commit_fsm.h - the switchover commit's state machine on the source (the
 * coordinator), pure: a state and an event (a record read, a timeout, a
 * connection lost, a recover connection's answer, the operator's word) give
 * the next state and the one action the caller takes (send COMMIT, send
 * RELEASE, ABORT and resume here, wait, ...). No I/O, no lock, no clock:
 * commit.c, postcopy_switch.c, postcopy_serve.c and postcopy_done.c read
 * the wire and the operator, turn what happened into an event, and do
 * what the action says, nothing else; tests/unit/test_commit_fsm.c is the
 * table of every transition docs/migration-protocol.md ("Switchover",
 * source) lists, so the code and the table cannot disagree.
 *
 * Why one place: the rule the commit exists for ("the source never resumes
 * its own copy after sending COMMIT, unless its operator says the target is
 * gone; a target runs only on COMMIT") was spread over the I/O code's
 * return values. Here it is one switch: after COMMIT no event but the
 * operator's (or the target's proven DISCARD) leads to a resume here, and
 * once the operator took the VM back no event leads to COMMIT, RELEASE or
 * RESUME again.
 *
 * Migration thread only (struct src_commit's `fsm`); the state is plain data.
 */
#ifndef VMM_MIGRATION_SOURCE_COMMIT_FSM_H
#define VMM_MIGRATION_SOURCE_COMMIT_FSM_H

#include <stdbool.h>

enum commit_state {
	COMMIT_ST_PREPARING = 0, /* END sent: PREPARED within 3T, else ABORT */
	COMMIT_ST_COMMITTING,	 /* COMMIT sent (the decision): COMMITTED within T */
	COMMIT_ST_UNKNOWN,    /* no COMMITTED: paused until settled (postcopy: postcopy-paused) */
	COMMIT_ST_DONE,	      /* the VM runs on the target; this side never runs it again */
	COMMIT_ST_ABORTED,    /* gave up before COMMIT: the VM runs here */
	COMMIT_ST_TAKEN_BACK, /* after COMMIT, the operator resumed the VM here */
	COMMIT_ST_DISCARDED,  /* the target's operator discarded its copy (proven): runs here */
	COMMIT_ST_STOPPED,    /* the VM stopped while unknown: it runs nowhere from here */
	COMMIT_ST_COUNT
};

enum commit_event {
	COMMIT_EV_PREPARED = 0,	    /* a valid PREPARED on main */
	COMMIT_EV_NO_PREPARED,	    /* none within 3T, ERROR, EOF, reset, a refused record */
	COMMIT_EV_COMMITTED,	    /* COMMITTED with a resume time (in time) */
	COMMIT_EV_COMMITTED_LATE,   /* COMMITTED with resume_mono_ns 0: it runs on RELEASE */
	COMMIT_EV_DECIDED_RUNS,	    /* a proven DECIDED: the target's operator runs it */
	COMMIT_EV_DECIDED_DISCARD,  /* a proven DECIDED: the target's operator discarded it */
	COMMIT_EV_FORGED,	    /* a DECIDED whose proof does not verify */
	COMMIT_EV_TIMEOUT,	    /* no COMMITTED within T */
	COMMIT_EV_MAIN_LOST,	    /* main: EOF, reset, ERROR, a record refused */
	COMMIT_EV_RECOVER_RUNNING,  /* a recover connection's RECOVER_STATE running */
	COMMIT_EV_RECOVER_PREPARED, /* ... RECOVER_STATE prepared (it waits for the decision) */
	COMMIT_EV_RECOVER_FAILED,   /* ... unreachable, TLS or protocol failure */
	COMMIT_EV_OPERATOR_RESUME,  /* `vmm migrate --recover --decide resume` */
	COMMIT_EV_RESUME,	    /* postcopy: a main-resume's RESUME is about to go out */
	COMMIT_EV_POSTCOPY_DONE,    /* postcopy: POSTCOPY_DONE read (the last page is in) */
	COMMIT_EV_VM_STOPPING,	    /* the process is going away (a fatal VM error) */
	COMMIT_EV_COUNT
};

enum commit_action {
	COMMIT_ACT_WAIT = 0,	/* nothing goes out; keep waiting in the (new) state */
	COMMIT_ACT_SEND_COMMIT, /* set `committed`, then COMMIT on this connection */
	COMMIT_ACT_ABORT,	/* forget COMMIT/RELEASE/RESUME, ABORT, resume the vCPUs here */
	COMMIT_ACT_RELEASE,	/* the VM runs on the target: forget ABORT, send RELEASE */
	COMMIT_ACT_RUNS_THERE,	/* the VM runs on the target; RELEASE later (POSTCOPY_DONE) */
	COMMIT_ACT_UNKNOWN,	/* report the outcome unknown; the vCPUs stay paused */
	COMMIT_ACT_RESUME_HERE, /* the target's copy is gone (proven): resume the vCPUs here */
	COMMIT_ACT_OVERRIDE,	/* forget all but ABORT, proven ABORT to the target, resume here */
	COMMIT_ACT_SEND_RESUME, /* postcopy: RESUME with this attempt's proof */
	COMMIT_ACT_STOP,	/* fail; the vCPUs never run here again */
	COMMIT_ACT_REFUSE,	/* not in this state: refused, nothing changes */
	COMMIT_ACT_IGNORE,	/* too late or unproven: nothing changes, nothing goes out */
	COMMIT_ACT_COUNT
};

struct commit_fsm {
	enum commit_state st;
	bool postcopy;	  /* a postcopy switchover (UNKNOWN is postcopy-paused) */
	bool resume_sent; /* a RESUME went out: the target may run; no operator resume */
	bool main_alive;  /* UNKNOWN's wait may still read main (a late COMMITTED) */
};

/* PREPARING, main open. */
void commit_fsm_init(struct commit_fsm *f, bool postcopy);
/*
 * Steps f on ev: the new state in f, the action returned. Every (state,
 * event) pair has a row; a pair the protocol cannot produce is REFUSE or
 * IGNORE and leaves f unchanged (docs: "nothing changes").
 */
enum commit_action commit_fsm_step(struct commit_fsm *f, enum commit_event ev);
/* True in a state where the VM may run here again (never after COMMIT, but on the word of one who
 * knows). */
bool commit_fsm_runs_here(enum commit_state st);
/* Names for logs and tests ("UNKNOWN", "MAIN_LOST", "RELEASE"); "?" out of range. */
const char *commit_state_name(enum commit_state st);
const char *commit_event_name(enum commit_event ev);
const char *commit_action_name(enum commit_action a);

#endif /* VMM_MIGRATION_SOURCE_COMMIT_FSM_H */
