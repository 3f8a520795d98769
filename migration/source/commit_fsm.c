/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commit_fsm.c - the source's switchover commit as a transition function
 * (commit_fsm.h). One function per state; each event not named in it is
 * refused (an operator's word, a RESUME) or ignored (a record) without a
 * change. The rows are docs/migration-protocol.md's source table, and
 * tests/unit/test_commit_fsm.c has one per transition.
 */
#include <stddef.h>

#include "commit_fsm.h"

void commit_fsm_init(struct commit_fsm *f, bool postcopy)
{
	*f = (struct commit_fsm){
	    .st = COMMIT_ST_PREPARING, .postcopy = postcopy, .main_alive = true};
}

/* A record this state has no use for: dropped; an operator's word or a RESUME: refused. */
static enum commit_action other(enum commit_event ev)
{
	return ev == COMMIT_EV_OPERATOR_RESUME || ev == COMMIT_EV_RESUME ? COMMIT_ACT_REFUSE
									 : COMMIT_ACT_IGNORE;
}

static enum commit_action to(struct commit_fsm *f, enum commit_state st, enum commit_action a)
{
	f->st = st;
	return a;
}

static enum commit_action preparing(struct commit_fsm *f, enum commit_event ev)
{
	switch (ev) {
	case COMMIT_EV_PREPARED:
		/* The decision: from here on only an operator may resume the VM here. */
		return to(f, COMMIT_ST_COMMITTING, COMMIT_ACT_SEND_COMMIT);
	case COMMIT_EV_NO_PREPARED:
		/* Nothing was decided: a target that prepares later reads ABORT first. */
		return to(f, COMMIT_ST_ABORTED, COMMIT_ACT_ABORT);
	default:
		/* No outcome is unknown yet; anything but PREPARED there is NO_PREPARED. */
		return ev == COMMIT_EV_OPERATOR_RESUME || ev == COMMIT_EV_RESUME ||
			       ev == COMMIT_EV_POSTCOPY_DONE
			   ? COMMIT_ACT_REFUSE
			   : COMMIT_ACT_IGNORE;
	}
}

/* COMMITTED (or the target's operator running it): precopy releases at once. */
static enum commit_action runs_there(struct commit_fsm *f, bool late)
{
	/*
	 * A late COMMITTED (resume_mono_ns 0, or a DECIDED) says the target
	 * runs only on RELEASE: it goes out at once, postcopy too. In time,
	 * postcopy's RELEASE waits for POSTCOPY_DONE.
	 */
	return to(f, COMMIT_ST_DONE,
		  late || !f->postcopy ? COMMIT_ACT_RELEASE : COMMIT_ACT_RUNS_THERE);
}

/* The target's operator discarded its copy (proven). */
static enum commit_action discarded(struct commit_fsm *f, enum commit_action in_postcopy)
{
	/* Postcopy stays paused: its own operator resumes it here (`--decide resume`). */
	if (f->postcopy)
		return to(f, COMMIT_ST_UNKNOWN, in_postcopy);
	return to(f, COMMIT_ST_DISCARDED, COMMIT_ACT_RESUME_HERE);
}

static enum commit_action committing(struct commit_fsm *f, enum commit_event ev)
{
	switch (ev) {
	case COMMIT_EV_COMMITTED:
		return runs_there(f, false);
	case COMMIT_EV_COMMITTED_LATE:
	case COMMIT_EV_DECIDED_RUNS:
		return runs_there(f, true);
	case COMMIT_EV_DECIDED_DISCARD:
		return discarded(f, COMMIT_ACT_UNKNOWN);
	case COMMIT_EV_FORGED:
	case COMMIT_EV_TIMEOUT:
	case COMMIT_EV_MAIN_LOST:
		/* COMMIT went out: the target may run it. Never a resume here on our own. */
		return to(f, COMMIT_ST_UNKNOWN, COMMIT_ACT_UNKNOWN);
	default:
		return other(ev);
	}
}

static enum commit_action unknown(struct commit_fsm *f, enum commit_event ev)
{
	switch (ev) {
	case COMMIT_EV_COMMITTED:
	case COMMIT_EV_COMMITTED_LATE:
	case COMMIT_EV_DECIDED_RUNS:
	case COMMIT_EV_RECOVER_RUNNING:
		/* It runs there (or will, on our RELEASE): released at once. */
		return to(f, COMMIT_ST_DONE, COMMIT_ACT_RELEASE);
	case COMMIT_EV_DECIDED_DISCARD:
		return discarded(f, COMMIT_ACT_WAIT);
	case COMMIT_EV_RECOVER_PREPARED:
		/* We committed before the outcome got lost: the decision stands. */
		return COMMIT_ACT_SEND_COMMIT;
	case COMMIT_EV_FORGED:
	case COMMIT_EV_MAIN_LOST:
		/* Main says nothing trustworthy any more: recover or the operator settle it. */
		f->main_alive = false;
		return COMMIT_ACT_WAIT;
	case COMMIT_EV_TIMEOUT:
	case COMMIT_EV_RECOVER_FAILED:
		return COMMIT_ACT_WAIT;
	case COMMIT_EV_OPERATOR_RESUME:
		/* After a RESUME the target may run on it: the operator cannot take it back. */
		if (f->resume_sent)
			return COMMIT_ACT_REFUSE;
		return to(f, COMMIT_ST_TAKEN_BACK, COMMIT_ACT_OVERRIDE);
	case COMMIT_EV_RESUME:
		if (!f->postcopy)
			return COMMIT_ACT_REFUSE;
		/* To a target still waiting for the decision, the RESUME is the COMMIT. */
		f->resume_sent = true;
		return to(f, COMMIT_ST_DONE, COMMIT_ACT_SEND_RESUME);
	case COMMIT_EV_VM_STOPPING:
		return to(f, COMMIT_ST_STOPPED, COMMIT_ACT_STOP);
	default:
		return other(ev);
	}
}

static enum commit_action done(struct commit_fsm *f, enum commit_event ev)
{
	switch (ev) {
	case COMMIT_EV_POSTCOPY_DONE:
		/* The last page is in: the target may stop waiting for a resume. */
		return f->postcopy ? COMMIT_ACT_RELEASE : COMMIT_ACT_REFUSE;
	case COMMIT_EV_RESUME:
		if (!f->postcopy)
			return COMMIT_ACT_REFUSE;
		f->resume_sent = true;
		return COMMIT_ACT_SEND_RESUME;
	default:
		/* A duplicate COMMITTED, a DECIDED after the fact: it runs there already. */
		return other(ev);
	}
}

enum commit_action commit_fsm_step(struct commit_fsm *f, enum commit_event ev)
{
	if ((unsigned)ev >= COMMIT_EV_COUNT)
		return COMMIT_ACT_REFUSE;
	switch (f->st) {
	case COMMIT_ST_PREPARING:
		return preparing(f, ev);
	case COMMIT_ST_COMMITTING:
		return committing(f, ev);
	case COMMIT_ST_UNKNOWN:
		return unknown(f, ev);
	case COMMIT_ST_DONE:
		return done(f, ev);
	default:
		/*
		 * ABORTED, TAKEN_BACK, DISCARDED, STOPPED: final. The VM runs here
		 * (or nowhere): a late COMMITTED or POSTCOPY_DONE sends no RELEASE,
		 * a PREPARED no COMMIT, and no RESUME goes out.
		 */
		return other(ev);
	}
}

bool commit_fsm_runs_here(enum commit_state st)
{
	return st == COMMIT_ST_ABORTED || st == COMMIT_ST_TAKEN_BACK || st == COMMIT_ST_DISCARDED;
}

static const char *const state_names[COMMIT_ST_COUNT] = {
    "PREPARING", "COMMITTING", "UNKNOWN", "DONE", "ABORTED", "TAKEN_BACK", "DISCARDED", "STOPPED",
};

static const char *const event_names[COMMIT_EV_COUNT] = {
    "PREPARED",	       "NO_PREPARED",	  "COMMITTED",	      "COMMITTED_LATE",
    "DECIDED_RUNS",    "DECIDED_DISCARD", "FORGED",	      "TIMEOUT",
    "MAIN_LOST",       "RECOVER_RUNNING", "RECOVER_PREPARED", "RECOVER_FAILED",
    "OPERATOR_RESUME", "RESUME",	  "POSTCOPY_DONE",    "VM_STOPPING",
};

static const char *const action_names[COMMIT_ACT_COUNT] = {
    "WAIT",	   "SEND_COMMIT", "ABORT",	 "RELEASE", "RUNS_THERE", "UNKNOWN",
    "RESUME_HERE", "OVERRIDE",	  "SEND_RESUME", "STOP",    "REFUSE",	  "IGNORE",
};

const char *commit_state_name(enum commit_state st)
{
	return (unsigned)st < COMMIT_ST_COUNT ? state_names[st] : "?";
}

const char *commit_event_name(enum commit_event ev)
{
	return (unsigned)ev < COMMIT_EV_COUNT ? event_names[ev] : "?";
}

const char *commit_action_name(enum commit_action a)
{
	return (unsigned)a < COMMIT_ACT_COUNT ? action_names[a] : "?";
}
