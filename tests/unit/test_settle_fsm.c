/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_settle_fsm.c - the target's switchover commit (migration/incoming/
 * settle_fsm.h) from a table: one row per transition of
 * docs/migration-protocol.md's target table ("Switchover"), precopy and
 * postcopy, then the safety rows (never runs without COMMIT, or after a
 * proven ABORT; a late COMMIT runs only on RELEASE; a forged or replayed
 * record changes nothing), then every (state, event) pair against those
 * rules, and paths of several steps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "settle_fsm.h"

#define PRE  false
#define POST true
#define LIVE true  /* main alive before the event */
#define GONE false /* main gone */

#define PREP  SETTLE_ST_PREPARED
#define UNK   SETTLE_ST_UNKNOWN
#define PEND  SETTLE_ST_PENDING
#define RUN   SETTLE_ST_RUNNING
#define REL   SETTLE_ST_RELEASED
#define DONE  SETTLE_ST_DONE
#define DISC  SETTLE_ST_DISCARDED
#define STOPD SETTLE_ST_STOPPED

#define E_COMMIT  SETTLE_EV_COMMIT
#define E_LATE	  SETTLE_EV_COMMIT_LATE
#define E_ABORT	  SETTLE_EV_ABORT
#define E_RELEASE SETTLE_EV_RELEASE
#define E_FORGED  SETTLE_EV_FORGED
#define E_TIMEOUT SETTLE_EV_TIMEOUT
#define E_LOST	  SETTLE_EV_MAIN_LOST
#define E_LEFT	  SETTLE_EV_SOURCE_LEFT
#define E_RECOVER SETTLE_EV_RECOVER
#define E_RESUME  SETTLE_EV_RESUME
#define E_REPLAY  SETTLE_EV_RESUME_REPLAY
#define E_OP_RUN  SETTLE_EV_OPERATOR_RUN
#define E_OP_DISC SETTLE_EV_OPERATOR_DISCARD
#define E_UNWATCH SETTLE_EV_UNWATCHED

#define A_WAIT	   SETTLE_ACT_WAIT
#define A_RUN	   SETTLE_ACT_RUN
#define A_LATE	   SETTLE_ACT_COMMITTED_LATE
#define A_UNKNOWN  SETTLE_ACT_UNKNOWN
#define A_RUN_REL  SETTLE_ACT_RUN_RELEASED
#define A_RELEASED SETTLE_ACT_RELEASED
#define A_FINISH   SETTLE_ACT_FINISH
#define A_DISCARD  SETTLE_ACT_DISCARD
#define A_STOP	   SETTLE_ACT_STOP_VM
#define A_ANS_PREP SETTLE_ACT_ANSWER_PREPARED
#define A_ANS_RUN  SETTLE_ACT_ANSWER_RUNNING
#define A_TELL_RUN SETTLE_ACT_TELL_RUN
#define A_TELL_DIS SETTLE_ACT_TELL_DISCARD
#define A_RESUME   SETTLE_ACT_RESUME_SESSION
#define A_REFUSE   SETTLE_ACT_REFUSE
#define A_R_NOUNK  SETTLE_ACT_REFUSE_NOT_UNKNOWN
#define A_R_PEND   SETTLE_ACT_REFUSE_PENDING
#define A_R_PCRUN  SETTLE_ACT_REFUSE_POSTCOPY_RUN
#define A_IGNORE   SETTLE_ACT_IGNORE

struct row {
	const char *name;
	bool postcopy;
	enum settle_state from;
	bool main_alive;
	enum settle_event ev;
	enum settle_action want;
	enum settle_state to;
	bool main_after;
};

static const struct row rows[] = {
    /* ---- PREPARED: PREPARED sent, main read for the decision ---- */
    {"COMMIT within T: COMMITTED, run", PRE, PREP, LIVE, E_COMMIT, A_RUN, RUN, LIVE},
    {"postcopy COMMIT within T: run", POST, PREP, LIVE, E_COMMIT, A_RUN, RUN, LIVE},
    {"COMMIT later than T (stalled): COMMITTED late, pending", PRE, PREP, LIVE, E_LATE, A_LATE,
     PEND, LIVE},
    {"proven ABORT: discard", PRE, PREP, LIVE, E_ABORT, A_DISCARD, DISC, LIVE},
    {"nothing within T: UNKNOWN, main still read", PRE, PREP, LIVE, E_TIMEOUT, A_UNKNOWN, UNK,
     LIVE},
    {"EOF or reset: UNKNOWN, main gone", PRE, PREP, LIVE, E_LOST, A_UNKNOWN, UNK, GONE},
    {"a forged decision on main: UNKNOWN, as if main were lost", PRE, PREP, LIVE, E_FORGED,
     A_UNKNOWN, UNK, GONE},
    {"RELEASE before COMMIT on main: as if main were lost", PRE, PREP, LIVE, E_RELEASE, A_UNKNOWN,
     UNK, GONE},
    {"a recover connection while main is read: refused (try again)", PRE, PREP, LIVE, E_RECOVER,
     A_REFUSE, PREP, LIVE},
    {"no operator decision before the outcome is unknown", PRE, PREP, LIVE, E_OP_RUN, A_R_NOUNK,
     PREP, LIVE},
    {"postcopy: a resume while main is read: refused", POST, PREP, LIVE, E_RESUME, A_REFUSE, PREP,
     LIVE},

    /* ---- UNKNOWN ---- */
    {"UNKNOWN: a late COMMIT: COMMITTED late, pending", PRE, UNK, LIVE, E_LATE, A_LATE, PEND, LIVE},
    {"UNKNOWN: a proven ABORT (main or recover): discard", PRE, UNK, GONE, E_ABORT, A_DISCARD, DISC,
     GONE},
    {"UNKNOWN: recover: RECOVER_STATE prepared", PRE, UNK, GONE, E_RECOVER, A_ANS_PREP, UNK, GONE},
    {"UNKNOWN: RELEASE without a COMMIT answered: nothing", PRE, UNK, GONE, E_RELEASE, A_IGNORE,
     UNK, GONE},
    {"postcopy UNKNOWN: a main-resume: runs, the resume goes on", POST, UNK, GONE, E_RESUME,
     A_RESUME, RUN, GONE},
    {"precopy has no resume", PRE, UNK, GONE, E_RESUME, A_REFUSE, UNK, GONE},
    {"UNKNOWN: the operator's run (main open): DECIDED, awaiting the source's exit", PRE, UNK, LIVE,
     E_OP_RUN, A_TELL_RUN, REL, LIVE},
    {"UNKNOWN: the operator's run (main gone): done", PRE, UNK, GONE, E_OP_RUN, A_TELL_RUN, DONE,
     GONE},
    {"UNKNOWN: the operator's discard: DECIDED, discarded", PRE, UNK, LIVE, E_OP_DISC, A_TELL_DIS,
     DISC, LIVE},
    {"postcopy UNKNOWN: the operator cannot run it (pages)", POST, UNK, GONE, E_OP_RUN, A_R_PCRUN,
     UNK, GONE},
    {"postcopy UNKNOWN: the operator's discard", POST, UNK, GONE, E_OP_DISC, A_TELL_DIS, DISC,
     GONE},
    {"UNKNOWN: a forged record: refused, nothing changes", PRE, UNK, LIVE, E_FORGED, A_REFUSE, UNK,
     LIVE},
    {"UNKNOWN: main lost: stays UNKNOWN", PRE, UNK, LIVE, E_LOST, A_WAIT, UNK, GONE},

    /* ---- PENDING: a late COMMIT answered ---- */
    {"pending: RELEASE: runs", PRE, PEND, LIVE, E_RELEASE, A_RUN_REL, REL, LIVE},
    {"pending: RELEASE on recover, main gone: runs", PRE, PEND, GONE, E_RELEASE, A_RUN_REL, REL,
     GONE},
    {"pending: a proven ABORT (that source forgot RELEASE): discard", PRE, PEND, LIVE, E_ABORT,
     A_DISCARD, DISC, LIVE},
    {"pending: a recover's COMMIT again: COMMITTED late again", PRE, PEND, GONE, E_LATE, A_LATE,
     PEND, GONE},
    {"pending: recover: RECOVER_STATE prepared", PRE, PEND, GONE, E_RECOVER, A_ANS_PREP, PEND,
     GONE},
    {"pending: the operator cannot discard", PRE, PEND, LIVE, E_OP_DISC, A_R_PEND, PEND, LIVE},
    {"pending: the operator's run", PRE, PEND, GONE, E_OP_RUN, A_TELL_RUN, DONE, GONE},
    {"postcopy pending: a main-resume runs it", POST, PEND, GONE, E_RESUME, A_RESUME, RUN, GONE},

    /* ---- RUNNING (precopy: awaiting RELEASE) ---- */
    {"running: RELEASE on main: awaiting the source's exit", PRE, RUN, LIVE, E_RELEASE, A_RELEASED,
     REL, LIVE},
    {"running: RELEASE on recover, main gone: watch that connection", PRE, RUN, GONE, E_RELEASE,
     A_RELEASED, REL, GONE},
    {"running: recover: RECOVER_STATE running", PRE, RUN, GONE, E_RECOVER, A_ANS_RUN, RUN, GONE},
    {"running: a proven ABORT before RELEASE: the VM stops", PRE, RUN, LIVE, E_ABORT, A_STOP, STOPD,
     LIVE},
    {"running: main lost before RELEASE: still awaiting it", PRE, RUN, LIVE, E_LOST, A_WAIT, RUN,
     GONE},
    {"running, never released: the operator's run releases (main gone: done)", PRE, RUN, GONE,
     E_OP_RUN, A_TELL_RUN, DONE, GONE},
    {"running: the operator's run, main open: awaiting its exit", PRE, RUN, LIVE, E_OP_RUN,
     A_TELL_RUN, REL, LIVE},
    {"running: no discard", PRE, RUN, LIVE, E_OP_DISC, A_R_NOUNK, RUN, LIVE},
    {"postcopy running: no operator run", POST, RUN, LIVE, E_OP_RUN, A_R_NOUNK, RUN, LIVE},
    {"postcopy running: a resume goes on", POST, RUN, GONE, E_RESUME, A_RESUME, RUN, GONE},
    {"running: no settle thread: released as far as we can see", PRE, RUN, LIVE, E_UNWATCH,
     A_RELEASED, REL, LIVE},

    /* ---- RELEASED: awaiting the source's exit ---- */
    {"released: main's EOF: done", PRE, REL, LIVE, E_LOST, A_FINISH, DONE, GONE},
    {"released: the recover connection ended (or 30 s): done", PRE, REL, GONE, E_LEFT, A_FINISH,
     DONE, GONE},
    {"released: an ABORT: too late, ignored", PRE, REL, LIVE, E_ABORT, A_IGNORE, REL, LIVE},
    {"released: a second RELEASE: ignored", PRE, REL, GONE, E_RELEASE, A_IGNORE, REL, GONE},
    {"released: recover: RECOVER_STATE running", PRE, REL, LIVE, E_RECOVER, A_ANS_RUN, REL, LIVE},
    {"done: recover: RECOVER_STATE running", PRE, DONE, GONE, E_RECOVER, A_ANS_RUN, DONE, GONE},
    {"done: nothing for the operator", PRE, DONE, GONE, E_OP_RUN, A_R_NOUNK, DONE, GONE},

    /* ---- safety ---- */
    {"discarded: a late COMMIT is not answered", PRE, DISC, LIVE, E_LATE, A_IGNORE, DISC, LIVE},
    {"discarded: a RELEASE runs nothing", PRE, DISC, GONE, E_RELEASE, A_IGNORE, DISC, GONE},
    {"discarded: the operator's run refused", PRE, DISC, GONE, E_OP_RUN, A_R_NOUNK, DISC, GONE},
    {"discarded (postcopy): a resume refused", POST, DISC, GONE, E_RESUME, A_REFUSE, DISC, GONE},
    {"running: a duplicate COMMIT: ignored (one COMMITTED)", PRE, RUN, LIVE, E_LATE, A_IGNORE, RUN,
     LIVE},
    {"running: a forged ABORT: refused, it keeps running", PRE, RUN, LIVE, E_FORGED, A_REFUSE, RUN,
     LIVE},
    {"pending: a forged RELEASE: refused, still paused", PRE, PEND, GONE, E_FORGED, A_REFUSE, PEND,
     GONE},
    {"postcopy: a replayed RESUME: refused", POST, UNK, GONE, E_REPLAY, A_REFUSE, UNK, GONE},
    {"stopped: a resume refused", POST, STOPD, GONE, E_RESUME, A_REFUSE, STOPD, GONE},
    {"stopped: a RELEASE changes nothing", PRE, STOPD, LIVE, E_RELEASE, A_IGNORE, STOPD, LIVE},
};

static void test_rows(void **state)
{
	unsigned bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct settle_fsm f;
		enum settle_action got;

		settle_fsm_init(&f, r->postcopy);
		f.st = r->from;
		f.main_alive = r->main_alive;
		got = settle_fsm_step(&f, r->ev);
		if (got != r->want || f.st != r->to || f.main_alive != r->main_after) {
			fprintf(stderr,
				"row %zu \"%s\": %s + %s gave %s -> %s (main %d), want %s -> %s "
				"(main %d)\n",
				i, r->name, settle_state_name(r->from), settle_event_name(r->ev),
				settle_action_name(got), settle_state_name(f.st), f.main_alive,
				settle_action_name(r->want), settle_state_name(r->to),
				r->main_after);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static bool refusal(enum settle_action a)
{
	return a == SETTLE_ACT_REFUSE || a == SETTLE_ACT_REFUSE_NOT_UNKNOWN ||
	       a == SETTLE_ACT_REFUSE_PENDING || a == SETTLE_ACT_REFUSE_POSTCOPY_RUN ||
	       a == SETTLE_ACT_IGNORE;
}

/*
 * Every pair against the rules: the VM starts running here only on COMMIT
 * (in time), on RELEASE after a COMMITTED answered, on a proven RESUME
 * (postcopy) or on the operator's run (precopy); never after a proven
 * ABORT or the operator's discard; a forged or replayed record changes
 * nothing once the decision left main; refusals change nothing.
 */
static void test_every_pair(void **state)
{
	(void)state;
	for (int pc = 0; pc < 2; pc++)
		for (int st = 0; st < SETTLE_ST_COUNT; st++)
			for (int ev = 0; ev < SETTLE_EV_COUNT; ev++)
				for (int alive = 0; alive < 2; alive++) {
					struct settle_fsm f, before;
					enum settle_action a;
					bool ran, runs;

					settle_fsm_init(&f, pc);
					f.st = st;
					f.main_alive = alive;
					before = f;
					a = settle_fsm_step(&f, ev);
					assert_true((unsigned)a < SETTLE_ACT_COUNT);
					assert_true((unsigned)f.st < SETTLE_ST_COUNT);
					if (refusal(a))
						assert_memory_equal(&f, &before, sizeof(f));
					ran = settle_fsm_running(st);
					runs = settle_fsm_running(f.st);
					if (!ran && runs)
						assert_true((ev == SETTLE_EV_COMMIT &&
							     st == SETTLE_ST_PREPARED) ||
							    (ev == SETTLE_EV_RELEASE &&
							     st == SETTLE_ST_PENDING) ||
							    (ev == SETTLE_EV_RESUME && pc) ||
							    (ev == SETTLE_EV_OPERATOR_RUN && !pc));
					/* Discarded never runs; nothing leaves DISCARDED or
					 * STOPPED. */
					if (st == SETTLE_ST_DISCARDED || st == SETTLE_ST_STOPPED)
						assert_int_equal(f.st, st);
					/* A running VM leaves running only by being stopped
					 * (ABORT). */
					if (ran && !runs)
						fail();
					if (ev == SETTLE_EV_RESUME_REPLAY)
						assert_int_equal(a, SETTLE_ACT_REFUSE);
					if (ev == SETTLE_EV_FORGED && st != SETTLE_ST_PREPARED)
						assert_int_equal(a, SETTLE_ACT_REFUSE);
					if (a == SETTLE_ACT_STOP_VM)
						assert_int_equal(ev, SETTLE_EV_ABORT);
					if (a == SETTLE_ACT_RUN)
						assert_int_equal(ev, SETTLE_EV_COMMIT);
				}
}

/* A path from PREPARED: the actions in order, and the end state. */
struct path {
	const char *name;
	bool postcopy;
	enum settle_event ev[6];
	enum settle_action want[6];
	enum settle_state end;
	size_t n;
};

static const struct path paths[] = {
    {"precopy in time: COMMIT, RELEASE, the source's exit",
     PRE,
     {E_COMMIT, E_RELEASE, E_LOST},
     {A_RUN, A_RELEASED, A_FINISH},
     DONE,
     3},
    {"stalled target: late COMMIT, RELEASE runs it",
     PRE,
     {E_LATE, E_RELEASE, E_LOST},
     {A_LATE, A_RUN_REL, A_FINISH},
     DONE,
     3},
    {"stalled target, the source's operator resumed: COMMIT, then ABORT: discarded",
     PRE,
     {E_LATE, E_ABORT, E_RELEASE},
     {A_LATE, A_DISCARD, A_IGNORE},
     DISC,
     3},
    {"link lost after PREPARED: recover, COMMIT, RELEASE, its connection ends",
     PRE,
     {E_LOST, E_RECOVER, E_LATE, E_RELEASE, E_LEFT},
     {A_UNKNOWN, A_ANS_PREP, A_LATE, A_RUN_REL, A_FINISH},
     DONE,
     5},
    {"source killed before COMMIT: the operator runs it",
     PRE,
     {E_LOST, E_OP_RUN},
     {A_UNKNOWN, A_TELL_RUN},
     DONE,
     2},
    {"postcopy unconfirmed: a resume is the COMMIT, a replay refused",
     POST,
     {E_TIMEOUT, E_RESUME, E_REPLAY, E_ABORT},
     {A_UNKNOWN, A_RESUME, A_REFUSE, A_STOP},
     STOPD,
     4},
    {"a forged ABORT after a late COMMIT changes nothing; RELEASE runs it",
     PRE,
     {E_TIMEOUT, E_LATE, E_FORGED, E_RELEASE},
     {A_UNKNOWN, A_LATE, A_REFUSE, A_RUN_REL},
     REL,
     4},
};

static void test_paths(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const struct path *p = &paths[i];
		struct settle_fsm f;

		settle_fsm_init(&f, p->postcopy);
		for (size_t k = 0; k < p->n; k++) {
			enum settle_action got = settle_fsm_step(&f, p->ev[k]);

			if (got != p->want[k])
				fprintf(stderr, "path \"%s\" step %zu (%s): got %s, want %s\n",
					p->name, k, settle_event_name(p->ev[k]),
					settle_action_name(got), settle_action_name(p->want[k]));
			assert_int_equal(got, p->want[k]);
		}
		assert_int_equal(f.st, p->end);
	}
}

static void test_names(void **state)
{
	(void)state;
	for (int i = 0; i < SETTLE_ST_COUNT; i++)
		assert_string_not_equal(settle_state_name(i), "?");
	for (int i = 0; i < SETTLE_EV_COUNT; i++)
		assert_string_not_equal(settle_event_name(i), "?");
	for (int i = 0; i < SETTLE_ACT_COUNT; i++)
		assert_string_not_equal(settle_action_name(i), "?");
	assert_string_equal(settle_action_name(SETTLE_ACT_COUNT), "?");
	assert_string_equal(settle_state_name(SETTLE_ST_PENDING), "PENDING");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows),
	    cmocka_unit_test(test_every_pair),
	    cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
