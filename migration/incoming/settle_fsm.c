/* SPDX-License-Identifier: Apache-2.0 */
/*
 * settle_fsm.c - the target's switchover commit as a transition function
 * (settle_fsm.h). The decisions of the source (COMMIT, ABORT, RELEASE),
 * of its resumed session and of this side's operator are taken here in
 * one switch per event; the state after a decision ignores or refuses the
 * others. The rows are docs/migration-protocol.md's target table, and
 * tests/unit/test_settle_fsm.c has one per transition.
 */
#include <stddef.h>

#include "settle_fsm.h"

void settle_fsm_init(struct settle_fsm *f, bool postcopy)
{
	*f =
	    (struct settle_fsm){.st = SETTLE_ST_PREPARED, .postcopy = postcopy, .main_alive = true};
}

bool settle_fsm_running(enum settle_state st)
{
	return st == SETTLE_ST_RUNNING || st == SETTLE_ST_RELEASED || st == SETTLE_ST_DONE ||
	       st == SETTLE_ST_STOPPED;
}

static enum settle_action to(struct settle_fsm *f, enum settle_state st, enum settle_action a)
{
	f->st = st;
	return a;
}

/* Still waiting for the decision, here or anywhere (the source may have committed). */
static bool undecided(enum settle_state st)
{
	return st == SETTLE_ST_UNKNOWN || st == SETTLE_ST_PENDING;
}

/* Main failed to bring a decision in time: UNKNOWN (main is still read after a timeout). */
static enum settle_action main_failed(struct settle_fsm *f, bool lost)
{
	if (lost)
		f->main_alive = false;
	return to(f, SETTLE_ST_UNKNOWN, SETTLE_ACT_UNKNOWN);
}

static enum settle_action commit(struct settle_fsm *f, bool in_time)
{
	if (f->st == SETTLE_ST_PREPARED && in_time)
		/* The source cannot be unknown (so resumed by its operator) within T. */
		return to(f, SETTLE_ST_RUNNING, SETTLE_ACT_RUN);
	/* Late by definition: answered, but it runs only on the RELEASE that follows. */
	if (f->st == SETTLE_ST_PREPARED || undecided(f->st))
		return to(f, SETTLE_ST_PENDING, SETTLE_ACT_COMMITTED_LATE);
	/* A duplicate, or after a proven ABORT (whichever came first stands). */
	return SETTLE_ACT_IGNORE;
}

static enum settle_action abort_rec(struct settle_fsm *f)
{
	/* Proven: the source runs the VM. Even a late COMMIT answered is void then. */
	if (f->st == SETTLE_ST_PREPARED || undecided(f->st))
		return to(f, SETTLE_ST_DISCARDED, SETTLE_ACT_DISCARD);
	/* It ran here, and the source's operator took it back anyway: only one copy runs. */
	if (f->st == SETTLE_ST_RUNNING)
		return to(f, SETTLE_ST_STOPPED, SETTLE_ACT_STOP_VM);
	return SETTLE_ACT_IGNORE; /* after RELEASE that source has no ABORT to give */
}

static enum settle_action release(struct settle_fsm *f)
{
	switch (f->st) {
	case SETTLE_ST_PREPARED:
		/* No RELEASE before a COMMIT: refused on main, as if main were lost. */
		return main_failed(f, true);
	case SETTLE_ST_PENDING:
		return to(f, SETTLE_ST_RELEASED, SETTLE_ACT_RUN_RELEASED);
	case SETTLE_ST_RUNNING:
		return to(f, SETTLE_ST_RELEASED, SETTLE_ACT_RELEASED);
	default:
		/* UNKNOWN never answered a COMMIT: no RELEASE runs it. */
		return SETTLE_ACT_IGNORE;
	}
}

static enum settle_action operator_word(struct settle_fsm *f, bool run)
{
	/* Running but never released (the source died after COMMITTED): "run" releases. */
	bool released_by_run = run && !f->postcopy && f->st == SETTLE_ST_RUNNING;

	if (!undecided(f->st) && !released_by_run)
		return SETTLE_ACT_REFUSE_NOT_UNKNOWN;
	if (!run && f->st == SETTLE_ST_PENDING)
		return SETTLE_ACT_REFUSE_PENDING; /* the source may have let go already */
	if (run && f->postcopy)
		return SETTLE_ACT_REFUSE_POSTCOPY_RUN; /* the pages are the source's */
	if (!run)
		return to(f, SETTLE_ST_DISCARDED, SETTLE_ACT_TELL_DISCARD);
	/* The operator says the source is gone: nobody will release us. */
	return to(f, f->main_alive ? SETTLE_ST_RELEASED : SETTLE_ST_DONE, SETTLE_ACT_TELL_RUN);
}

static enum settle_action resume(struct settle_fsm *f)
{
	if (!f->postcopy || f->st == SETTLE_ST_PREPARED || f->st == SETTLE_ST_DISCARDED ||
	    f->st == SETTLE_ST_STOPPED)
		return SETTLE_ACT_REFUSE;
	/* Only a committed source resumes: to a waiting target it is the COMMIT. */
	if (undecided(f->st))
		f->st = SETTLE_ST_RUNNING;
	return SETTLE_ACT_RESUME_SESSION;
}

enum settle_action settle_fsm_step(struct settle_fsm *f, enum settle_event ev)
{
	switch (ev) {
	case SETTLE_EV_COMMIT:
	case SETTLE_EV_COMMIT_LATE:
		return commit(f, ev == SETTLE_EV_COMMIT);
	case SETTLE_EV_ABORT:
		return abort_rec(f);
	case SETTLE_EV_RELEASE:
		return release(f);
	case SETTLE_EV_FORGED:
		/* On main in PREPARED the outcome becomes unknown; elsewhere nothing changes. */
		return f->st == SETTLE_ST_PREPARED ? main_failed(f, true) : SETTLE_ACT_REFUSE;
	case SETTLE_EV_TIMEOUT:
		return f->st == SETTLE_ST_PREPARED ? main_failed(f, false) : SETTLE_ACT_IGNORE;
	case SETTLE_EV_MAIN_LOST:
		if (f->st == SETTLE_ST_PREPARED)
			return main_failed(f, true);
		f->main_alive = false;
		/* Released, and now the source's main closed: it left. */
		if (f->st == SETTLE_ST_RELEASED)
			return to(f, SETTLE_ST_DONE, SETTLE_ACT_FINISH);
		return SETTLE_ACT_WAIT;
	case SETTLE_EV_SOURCE_LEFT:
		return f->st == SETTLE_ST_RELEASED ? to(f, SETTLE_ST_DONE, SETTLE_ACT_FINISH)
						   : SETTLE_ACT_IGNORE;
	case SETTLE_EV_RECOVER:
		if (f->st == SETTLE_ST_PREPARED)
			return SETTLE_ACT_REFUSE; /* the decision is still being read on main */
		return settle_fsm_running(f->st) ? SETTLE_ACT_ANSWER_RUNNING
						 : SETTLE_ACT_ANSWER_PREPARED;
	case SETTLE_EV_RESUME:
		return resume(f);
	case SETTLE_EV_RESUME_REPLAY:
		return SETTLE_ACT_REFUSE; /* a proof read off an earlier attempt opens nothing */
	case SETTLE_EV_OPERATOR_RUN:
	case SETTLE_EV_OPERATOR_DISCARD:
		return operator_word(f, ev == SETTLE_EV_OPERATOR_RUN);
	case SETTLE_EV_UNWATCHED:
		return f->st == SETTLE_ST_RUNNING && !f->postcopy
			   ? to(f, SETTLE_ST_RELEASED, SETTLE_ACT_RELEASED)
			   : SETTLE_ACT_IGNORE;
	default:
		return SETTLE_ACT_REFUSE;
	}
}

static const char *const state_names[SETTLE_ST_COUNT] = {
    "PREPARED", "UNKNOWN", "PENDING", "RUNNING", "RELEASED", "DONE", "DISCARDED", "STOPPED",
};

static const char *const event_names[SETTLE_EV_COUNT] = {
    "COMMIT",		"COMMIT_LATE", "ABORT",	  "RELEASE", "FORGED",	      "TIMEOUT",
    "MAIN_LOST",	"SOURCE_LEFT", "RECOVER", "RESUME",  "RESUME_REPLAY", "OPERATOR_RUN",
    "OPERATOR_DISCARD", "UNWATCHED",
};

static const char *const action_names[SETTLE_ACT_COUNT] = {
    "WAIT",	      "RUN",
    "COMMITTED_LATE", "UNKNOWN",
    "RUN_RELEASED",   "RELEASED",
    "FINISH",	      "DISCARD",
    "STOP_VM",	      "ANSWER_PREPARED",
    "ANSWER_RUNNING", "TELL_RUN",
    "TELL_DISCARD",   "RESUME_SESSION",
    "REFUSE",	      "REFUSE_NOT_UNKNOWN",
    "REFUSE_PENDING", "REFUSE_POSTCOPY_RUN",
    "IGNORE",
};

const char *settle_state_name(enum settle_state st)
{
	return (unsigned)st < SETTLE_ST_COUNT ? state_names[st] : "?";
}

const char *settle_event_name(enum settle_event ev)
{
	return (unsigned)ev < SETTLE_EV_COUNT ? event_names[ev] : "?";
}

const char *settle_action_name(enum settle_action a)
{
	return (unsigned)a < SETTLE_ACT_COUNT ? action_names[a] : "?";
}
