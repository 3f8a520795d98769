/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_settle_fsm.c - the target's switchover commit (migration/incoming/
 * settle_fsm.h) from a table: one row per transition of
 * docs/migration-protocol.md's target table ("Switchover"), precopy and
 * postcopy, then the safety rows (never runs without COMMIT, or after a
 * proven ABORT; a late COMMIT runs only on RELEASE; a forged or replayed
 * record changes nothing), then every (state, event) pair against those
 * rules, and paths of several steps. Each row and path names the
 * fault-matrix cell it stands for, or why no cell reaches it (fsm_table.h
 * runs them and checks the names).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "fsm_table.h"
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

/*
 * Why a row has no cell (fsm_table.h): the reasons that recur. The
 * matrix's peers are two vmm processes and its operator acts only once
 * `vmm migrate` has ended (on the target: to run it, with the source
 * dead), so records only a misbehaving or forging peer sends, and an
 * operator's commands refused or never given, have no cell.
 */
#define NO_CELL FSM_NO_CELL
#define NO_OPERATOR                                                                                \
	NO_CELL "the matrix's target operator acts only to run a switchover-unknown precopy VM "   \
		"whose source is dead (kill-source:sw-after-state)"
#define NO_PEER NO_CELL "only a misbehaving peer sends this record here; the matrix's peers are vmm"
#define NO_FORGED                                                                                  \
	NO_CELL                                                                                    \
	"a forged record needs a peer without the session's key; the matrix's reader only "        \
	"replays COMMIT's proof"

/* The machine, for fsm_table.h's runners. */
FSM_MACHINE(machine, settle_fsm, settle, main_alive);

static const struct fsm_row rows[] = {
    /* ---- PREPARED: PREPARED sent, main read for the decision ---- */
    {"COMMIT within T: COMMITTED, run", "kill-source:sw-after-commit", PRE, PREP, LIVE, E_COMMIT,
     A_RUN, RUN, LIVE},
    {"postcopy COMMIT within T: run", "reset:postcopy-early", POST, PREP, LIVE, E_COMMIT, A_RUN,
     RUN, LIVE},
    {"COMMIT later than T (stalled): COMMITTED late, pending", "stop-target:sw-after-state", PRE,
     PREP, LIVE, E_LATE, A_LATE, PEND, LIVE},
    {"proven ABORT: discard", "stop-target:sw-before-state", PRE, PREP, LIVE, E_ABORT, A_DISCARD,
     DISC, LIVE},
    {"nothing within T: UNKNOWN, main still read", "stop-source:sw-after-state", PRE, PREP, LIVE,
     E_TIMEOUT, A_UNKNOWN, UNK, LIVE},
    {"EOF or reset: UNKNOWN, main gone", "kill-source:sw-after-state", PRE, PREP, LIVE, E_LOST,
     A_UNKNOWN, UNK, GONE},
    {"a forged decision on main: UNKNOWN, as if main were lost", NO_FORGED, PRE, PREP, LIVE,
     E_FORGED, A_UNKNOWN, UNK, GONE},
    {"RELEASE before COMMIT on main: as if main were lost", NO_PEER, PRE, PREP, LIVE, E_RELEASE,
     A_UNKNOWN, UNK, GONE},
    {"a recover connection while main is read: refused (try again)",
     NO_CELL "the matrix recovers only once vmm migrate has ended, when the target has lost main "
	     "or decided",
     PRE, PREP, LIVE, E_RECOVER, A_REFUSE, PREP, LIVE},
    {"no operator decision before the outcome is unknown", NO_OPERATOR, PRE, PREP, LIVE, E_OP_RUN,
     A_R_NOUNK, PREP, LIVE},
    {"postcopy: a resume while main is read: refused",
     NO_CELL "a source resumes only after losing main, which the target then loses too", POST, PREP,
     LIVE, E_RESUME, A_REFUSE, PREP, LIVE},

    /* ---- UNKNOWN ---- */
    {"UNKNOWN: a late COMMIT: COMMITTED late, pending", "stop-source:sw-after-state", PRE, UNK,
     LIVE, E_LATE, A_LATE, PEND, LIVE},
    {"UNKNOWN: a proven ABORT (main or recover): discard", "blackhole:sw-before-state", PRE, UNK,
     GONE, E_ABORT, A_DISCARD, DISC, GONE},
    {"UNKNOWN: recover: RECOVER_STATE prepared", "reset:sw-after-state", PRE, UNK, GONE, E_RECOVER,
     A_ANS_PREP, UNK, GONE},
    {"UNKNOWN: RELEASE without a COMMIT answered: nothing", NO_PEER, PRE, UNK, GONE, E_RELEASE,
     A_IGNORE, UNK, GONE},
    {"postcopy UNKNOWN: a main-resume: runs, the resume goes on", "drop-commit:postcopy", POST, UNK,
     GONE, E_RESUME, A_RESUME, RUN, GONE},
    {"precopy has no resume", NO_CELL "a precopy source never resumes; the row guards the table",
     PRE, UNK, GONE, E_RESUME, A_REFUSE, UNK, GONE},
    {"UNKNOWN: the operator's run (main open): DECIDED, awaiting the source's exit",
     NO_CELL "the matrix runs a target by its operator only with the source dead and main gone "
	     "(kill-source:sw-after-state)",
     PRE, UNK, LIVE, E_OP_RUN, A_TELL_RUN, REL, LIVE},
    {"UNKNOWN: the operator's run (main gone): done", "kill-source:sw-after-state", PRE, UNK, GONE,
     E_OP_RUN, A_TELL_RUN, DONE, GONE},
    {"UNKNOWN: the operator's discard: DECIDED, discarded", NO_OPERATOR, PRE, UNK, LIVE, E_OP_DISC,
     A_TELL_DIS, DISC, LIVE},
    {"postcopy UNKNOWN: the operator cannot run it (pages)", NO_OPERATOR, POST, UNK, GONE, E_OP_RUN,
     A_R_PCRUN, UNK, GONE},
    {"postcopy UNKNOWN: the operator's discard", NO_OPERATOR, POST, UNK, GONE, E_OP_DISC,
     A_TELL_DIS, DISC, GONE},
    {"UNKNOWN: a forged record: refused, nothing changes", NO_FORGED, PRE, UNK, LIVE, E_FORGED,
     A_REFUSE, UNK, LIVE},
    {"UNKNOWN: main lost: stays UNKNOWN",
     NO_CELL
     "main lost after the timeout rather than before it is timing: the cells that lose main after "
     "PREPARED (kill-source:sw-after-state, reset:sw-after-state) lose it within T",
     PRE, UNK, LIVE, E_LOST, A_WAIT, UNK, GONE},

    /* ---- PENDING: a late COMMIT answered ---- */
    {"pending: RELEASE: runs", "stop-target:sw-after-state", PRE, PEND, LIVE, E_RELEASE, A_RUN_REL,
     REL, LIVE},
    {"pending: RELEASE on recover, main gone: runs", "reset:sw-after-state", PRE, PEND, GONE,
     E_RELEASE, A_RUN_REL, REL, GONE},
    {"pending: a proven ABORT (that source forgot RELEASE): discard",
     NO_CELL "a source that answered the late COMMITTED with ABORT is not one the matrix plays "
	     "(reader-resume drops that ABORT)",
     PRE, PEND, LIVE, E_ABORT, A_DISCARD, DISC, LIVE},
    {"pending: a recover's COMMIT again: COMMITTED late again",
     NO_CELL "no cell loses main between a late COMMITTED and its RELEASE", PRE, PEND, GONE, E_LATE,
     A_LATE, PEND, GONE},
    {"pending: recover: RECOVER_STATE prepared",
     NO_CELL "no cell loses main between a late COMMITTED and its RELEASE", PRE, PEND, GONE,
     E_RECOVER, A_ANS_PREP, PEND, GONE},
    {"pending: the operator cannot discard", NO_OPERATOR, PRE, PEND, LIVE, E_OP_DISC, A_R_PEND,
     PEND, LIVE},
    {"pending: the operator's run", NO_OPERATOR, PRE, PEND, GONE, E_OP_RUN, A_TELL_RUN, DONE, GONE},
    {"postcopy pending: a main-resume runs it",
     NO_CELL "no postcopy cell answers a late COMMIT and then resumes (reader-resume:postcopy is "
	     "taken back)",
     POST, PEND, GONE, E_RESUME, A_RESUME, RUN, GONE},

    /* ---- RUNNING (precopy: awaiting RELEASE) ---- */
    {"running: RELEASE on main: awaiting the source's exit", "fd-exhaustion:sw-after-state", PRE,
     RUN, LIVE, E_RELEASE, A_RELEASED, REL, LIVE},
    {"running: RELEASE on recover, main gone: watch that connection", "reset:sw-after-commit", PRE,
     RUN, GONE, E_RELEASE, A_RELEASED, REL, GONE},
    {"running: recover: RECOVER_STATE running", "reset:sw-after-commit", PRE, RUN, GONE, E_RECOVER,
     A_ANS_RUN, RUN, GONE},
    {"running: a proven ABORT before RELEASE: the VM stops",
     NO_CELL "a source sends ABORT after COMMIT only by its operator's override, which the matrix "
	     "takes only where the target never ran",
     PRE, RUN, LIVE, E_ABORT, A_STOP, STOPD, LIVE},
    {"running: main lost before RELEASE: still awaiting it", "drop-committed:precopy", PRE, RUN,
     LIVE, E_LOST, A_WAIT, RUN, GONE},
    {"running, never released: the operator's run releases (main gone: done)",
     "drop-release:precopy", PRE, RUN, GONE, E_OP_RUN, A_TELL_RUN, DONE, GONE},
    {"running: the operator's run, main open: awaiting its exit", NO_OPERATOR, PRE, RUN, LIVE,
     E_OP_RUN, A_TELL_RUN, REL, LIVE},
    {"running: no discard", NO_OPERATOR, PRE, RUN, LIVE, E_OP_DISC, A_R_NOUNK, RUN, LIVE},
    {"postcopy running: no operator run", NO_OPERATOR, POST, RUN, LIVE, E_OP_RUN, A_R_NOUNK, RUN,
     LIVE},
    {"postcopy running: a resume goes on", "drop-committed:postcopy", POST, RUN, GONE, E_RESUME,
     A_RESUME, RUN, GONE},
    {"running: no settle thread: released as far as we can see",
     NO_CELL "a settle thread that fails to start is no fault the matrix injects", PRE, RUN, LIVE,
     E_UNWATCH, A_RELEASED, REL, LIVE},

    /* ---- RELEASED: awaiting the source's exit ---- */
    {"released: main's EOF: done", "fd-exhaustion:sw-after-state", PRE, REL, LIVE, E_LOST, A_FINISH,
     DONE, GONE},
    {"released: the recover connection ended (or 30 s): done", "reset:sw-after-commit", PRE, REL,
     GONE, E_LEFT, A_FINISH, DONE, GONE},
    {"released: an ABORT: too late, ignored", NO_PEER, PRE, REL, LIVE, E_ABORT, A_IGNORE, REL,
     LIVE},
    {"released: a second RELEASE: ignored", NO_PEER, PRE, REL, GONE, E_RELEASE, A_IGNORE, REL,
     GONE},
    {"released: recover: RECOVER_STATE running",
     NO_CELL
     "a source recovers only while switchover-unknown, which a released target's source is not",
     PRE, REL, LIVE, E_RECOVER, A_ANS_RUN, REL, LIVE},
    {"done: recover: RECOVER_STATE running",
     NO_CELL
     "a source recovers only while switchover-unknown, which a released target's source is not",
     PRE, DONE, GONE, E_RECOVER, A_ANS_RUN, DONE, GONE},
    {"done: nothing for the operator", NO_OPERATOR, PRE, DONE, GONE, E_OP_RUN, A_R_NOUNK, DONE,
     GONE},

    /* ---- safety ---- */
    {"discarded: a late COMMIT is not answered",
     NO_CELL "after a proven ABORT the source sends no COMMIT; only a misbehaving peer would", PRE,
     DISC, LIVE, E_LATE, A_IGNORE, DISC, LIVE},
    {"discarded: a RELEASE runs nothing", NO_FORGED, PRE, DISC, GONE, E_RELEASE, A_IGNORE, DISC,
     GONE},
    {"discarded: the operator's run refused", NO_OPERATOR, PRE, DISC, GONE, E_OP_RUN, A_R_NOUNK,
     DISC, GONE},
    {"discarded (postcopy): a resume refused",
     NO_CELL "no cell resumes a postcopy migration whose target was discarded", POST, DISC, GONE,
     E_RESUME, A_REFUSE, DISC, GONE},
    {"running: a duplicate COMMIT: ignored (one COMMITTED)", NO_PEER, PRE, RUN, LIVE, E_LATE,
     A_IGNORE, RUN, LIVE},
    {"running: a forged ABORT: refused, it keeps running", NO_FORGED, PRE, RUN, LIVE, E_FORGED,
     A_REFUSE, RUN, LIVE},
    {"pending: a forged RELEASE: refused, still paused", "reader-resume:sw-after-state", PRE, PEND,
     GONE, E_FORGED, A_REFUSE, PEND, GONE},
    {"postcopy: a replayed RESUME: refused", "reader-resume:postcopy", POST, UNK, GONE, E_REPLAY,
     A_REFUSE, UNK, GONE},
    {"stopped: a resume refused", NO_CELL "no cell resumes after an ABORT stopped the running VM",
     POST, STOPD, GONE, E_RESUME, A_REFUSE, STOPD, GONE},
    {"stopped: a RELEASE changes nothing",
     NO_CELL "no cell sends RELEASE after an ABORT stopped the running VM", PRE, STOPD, LIVE,
     E_RELEASE, A_IGNORE, STOPD, LIVE},
};

static void test_rows(void **state)
{
	(void)state;
	fsm_table_check_cells();
	fsm_rows_run(&machine, rows, sizeof(rows) / sizeof(rows[0]));
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

/* Paths start in PREPARED. */

static const struct fsm_path paths[] = {
    {"precopy in time: COMMIT, RELEASE, the source's exit",
     "fd-exhaustion:sw-after-state",
     PRE,
     {E_COMMIT, E_RELEASE, E_LOST},
     {A_RUN, A_RELEASED, A_FINISH},
     DONE,
     3},
    {"stalled target: late COMMIT, RELEASE runs it",
     "stop-target:sw-after-state",
     PRE,
     {E_LATE, E_RELEASE, E_LOST},
     {A_LATE, A_RUN_REL, A_FINISH},
     DONE,
     3},
    {"stalled target, the source's operator resumed: COMMIT, then ABORT: discarded",
     NO_CELL "reader-resume drops the override's ABORT: the matrix shows the target staying "
	     "pending instead",
     PRE,
     {E_LATE, E_ABORT, E_RELEASE},
     {A_LATE, A_DISCARD, A_IGNORE},
     DISC,
     3},
    {"link lost after PREPARED: recover, COMMIT, RELEASE, its connection ends",
     "reset:sw-after-state",
     PRE,
     {E_LOST, E_RECOVER, E_LATE, E_RELEASE, E_LEFT},
     {A_UNKNOWN, A_ANS_PREP, A_LATE, A_RUN_REL, A_FINISH},
     DONE,
     5},
    {"source killed before COMMIT: the operator runs it",
     "kill-source:sw-after-state",
     PRE,
     {E_LOST, E_OP_RUN},
     {A_UNKNOWN, A_TELL_RUN},
     DONE,
     2},
    {"postcopy unconfirmed: a resume is the COMMIT, a replay refused",
     "drop-commit:postcopy",
     POST,
     {E_TIMEOUT, E_RESUME, E_REPLAY, E_ABORT},
     {A_UNKNOWN, A_RESUME, A_REFUSE, A_STOP},
     STOPD,
     4},
    {"a forged ABORT after a late COMMIT changes nothing; RELEASE runs it",
     NO_FORGED,
     PRE,
     {E_TIMEOUT, E_LATE, E_FORGED, E_RELEASE},
     {A_UNKNOWN, A_LATE, A_REFUSE, A_RUN_REL},
     REL,
     4},
};

static void test_paths(void **state)
{
	(void)state;
	fsm_paths_run(&machine, paths, sizeof(paths) / sizeof(paths[0]));
}

static void test_names(void **state)
{
	(void)state;
	fsm_names_check(&machine, SETTLE_ST_COUNT, SETTLE_EV_COUNT, SETTLE_ACT_COUNT);
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
