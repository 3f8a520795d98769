/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_commit_fsm.c - the source's switchover commit (migration/source/
 * commit_fsm.h) from a table: one row per transition of
 * docs/migration-protocol.md's source table ("Switchover"), in precopy
 * and postcopy, then the safety rows (after COMMIT no resume here but on
 * an operator's or the target's proven word; after the operator's resume
 * no COMMIT, RELEASE or RESUME ever), then every (state, event) pair
 * against the rules the table stands for, and paths of several steps.
 * Each row and path names the fault-matrix cell it stands for, or why no
 * cell reaches it (fsm_table.h runs them and checks the names).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "commit_fsm.h"
#include "fsm_table.h"

#define PRE  false
#define POST true

/* States. */
#define PREP  COMMIT_ST_PREPARING
#define CMTG  COMMIT_ST_COMMITTING
#define UNK   COMMIT_ST_UNKNOWN
#define DONE  COMMIT_ST_DONE
#define ABRT  COMMIT_ST_ABORTED
#define TAKEN COMMIT_ST_TAKEN_BACK
#define DISC  COMMIT_ST_DISCARDED
#define STOP  COMMIT_ST_STOPPED

/* Events. */
#define E_PREPARED  COMMIT_EV_PREPARED
#define E_NOPREP    COMMIT_EV_NO_PREPARED
#define E_CMTD	    COMMIT_EV_COMMITTED
#define E_CMTD_LATE COMMIT_EV_COMMITTED_LATE
#define E_RUNS	    COMMIT_EV_DECIDED_RUNS
#define E_DISCARD   COMMIT_EV_DECIDED_DISCARD
#define E_FORGED    COMMIT_EV_FORGED
#define E_TIMEOUT   COMMIT_EV_TIMEOUT
#define E_LOST	    COMMIT_EV_MAIN_LOST
#define E_REC_RUN   COMMIT_EV_RECOVER_RUNNING
#define E_REC_PREP  COMMIT_EV_RECOVER_PREPARED
#define E_REC_FAIL  COMMIT_EV_RECOVER_FAILED
#define E_OP_RESUME COMMIT_EV_OPERATOR_RESUME
#define E_RESUME    COMMIT_EV_RESUME
#define E_PC_DONE   COMMIT_EV_POSTCOPY_DONE
#define E_STOPPING  COMMIT_EV_VM_STOPPING

/* Actions. */
#define A_WAIT	  COMMIT_ACT_WAIT
#define A_COMMIT  COMMIT_ACT_SEND_COMMIT
#define A_ABORT	  COMMIT_ACT_ABORT
#define A_RELEASE COMMIT_ACT_RELEASE
#define A_THERE	  COMMIT_ACT_RUNS_THERE
#define A_UNKNOWN COMMIT_ACT_UNKNOWN
#define A_HERE	  COMMIT_ACT_RESUME_HERE
#define A_OVERR	  COMMIT_ACT_OVERRIDE
#define A_RESUME  COMMIT_ACT_SEND_RESUME
#define A_STOP	  COMMIT_ACT_STOP
#define A_REFUSE  COMMIT_ACT_REFUSE
#define A_IGNORE  COMMIT_ACT_IGNORE

/*
 * Why a row has no cell (fsm_table.h): the reasons that recur. The
 * matrix's peers are two vmm processes and its operator acts only once
 * `vmm migrate` has ended, so records only a misbehaving or forging peer
 * sends, and an operator's commands refused earlier, have no cell.
 */
#define NO_CELL FSM_NO_CELL
#define NO_OPERATOR                                                                                \
	NO_CELL                                                                                    \
	"the matrix's operator acts only once vmm migrate has ended, and only to recover or "      \
	"take back a switchover-unknown source"
#define NO_PEER NO_CELL "only a misbehaving peer sends this record here; the matrix's peers are vmm"
#define NO_FORGED                                                                                  \
	NO_CELL                                                                                    \
	"a forged record needs a peer without the session's key; the matrix's reader only "        \
	"replays COMMIT's proof to the target"
#define NO_DECIDED                                                                                 \
	NO_CELL "the matrix's target operator decides only with the source dead "                  \
		"(kill-source:sw-after-state): no source reads DECIDED"

/* The machine, for fsm_table.h's runners. */
FSM_MACHINE(machine, commit_fsm, commit, resume_sent);

static const struct fsm_row rows[] = {
    /* ---- PREPARING: END sent ---- */
    {"PREPARED: the decision, COMMIT goes out", "stop-source:sw-after-state", PRE, PREP, 0,
     E_PREPARED, A_COMMIT, CMTG, 0},
    {"postcopy PREPARED: COMMIT too", "drop-commit:postcopy", POST, PREP, 0, E_PREPARED, A_COMMIT,
     CMTG, 0},
    {"no PREPARED within 3T / ERROR / EOF: ABORT, resume here", "kill-target:sw-before-state", PRE,
     PREP, 0, E_NOPREP, A_ABORT, ABRT, 0},
    {"postcopy: no PREPARED: ABORT, resume here", "drop-prepared:postcopy", POST, PREP, 0, E_NOPREP,
     A_ABORT, ABRT, 0},
    {"no operator resume before the outcome is unknown", NO_OPERATOR, PRE, PREP, 0, E_OP_RESUME,
     A_REFUSE, PREP, 0},
    {"a COMMITTED before COMMIT changes nothing", NO_PEER, PRE, PREP, 0, E_CMTD, A_IGNORE, PREP, 0},

    /* ---- COMMITTING: COMMIT sent ---- */
    {"COMMITTED within T: RELEASE (precopy)", "fd-exhaustion:sw-after-commit", PRE, CMTG, 0, E_CMTD,
     A_RELEASE, DONE, 0},
    {"postcopy COMMITTED within T: runs there, RELEASE after POSTCOPY_DONE", "reset:postcopy-early",
     POST, CMTG, 0, E_CMTD, A_THERE, DONE, 0},
    {"late COMMITTED (resume_mono_ns 0): RELEASE at once", "stop-source:sw-after-state", PRE, CMTG,
     0, E_CMTD_LATE, A_RELEASE, DONE, 0},
    {"postcopy late COMMITTED: RELEASE at once too",
     NO_CELL "no postcopy cell stalls the source between PREPARED and COMMIT: its postcopy phases "
	     "come after the commit",
     POST, CMTG, 0, E_CMTD_LATE, A_RELEASE, DONE, 0},
    {"proven DECIDED runs: as COMMITTED, RELEASE", NO_DECIDED, PRE, CMTG, 0, E_RUNS, A_RELEASE,
     DONE, 0},
    {"postcopy proven DECIDED runs: RELEASE", NO_DECIDED, POST, CMTG, 0, E_RUNS, A_RELEASE, DONE,
     0},
    {"proven DECIDED discarded: resume here", NO_DECIDED, PRE, CMTG, 0, E_DISCARD, A_HERE, DISC, 0},
    {"postcopy DECIDED discarded: paused, its operator resumes here", NO_DECIDED, POST, CMTG, 0,
     E_DISCARD, A_UNKNOWN, UNK, 0},
    {"unproven DECIDED: the outcome is unknown", NO_FORGED, PRE, CMTG, 0, E_FORGED, A_UNKNOWN, UNK,
     0},
    {"no COMMITTED within T: UNKNOWN", "stop-target:sw-after-state", PRE, CMTG, 0, E_TIMEOUT,
     A_UNKNOWN, UNK, 0},
    {"postcopy no COMMITTED within T: UNKNOWN (postcopy-paused)", "reader-resume:postcopy", POST,
     CMTG, 0, E_TIMEOUT, A_UNKNOWN, UNK, 0},
    {"EOF or reset after COMMIT: UNKNOWN, never a resume here", "kill-target:sw-after-commit", PRE,
     CMTG, 0, E_LOST, A_UNKNOWN, UNK, 0},
    {"no operator resume while COMMITTED may still come", NO_OPERATOR, PRE, CMTG, 0, E_OP_RESUME,
     A_REFUSE, CMTG, 0},
    {"a second PREPARED sends no second COMMIT", NO_PEER, PRE, CMTG, 0, E_PREPARED, A_IGNORE, CMTG,
     0},

    /* ---- UNKNOWN (precopy) ---- */
    {"UNKNOWN: a late COMMITTED on main: RELEASE", "stop-target:sw-after-state", PRE, UNK, 0,
     E_CMTD_LATE, A_RELEASE, DONE, 0},
    {"UNKNOWN: a COMMITTED in time but read late: RELEASE", "blackhole:sw-after-commit", PRE, UNK,
     0, E_CMTD, A_RELEASE, DONE, 0},
    {"UNKNOWN: recover, RECOVER_STATE running: RELEASE", "reset:sw-after-commit", PRE, UNK, 0,
     E_REC_RUN, A_RELEASE, DONE, 0},
    {"UNKNOWN: recover, RECOVER_STATE prepared: COMMIT again", "reset:sw-after-state", PRE, UNK, 0,
     E_REC_PREP, A_COMMIT, UNK, 0},
    {"UNKNOWN: recover unreachable: stays UNKNOWN", "kill-target:sw-after-state", PRE, UNK, 0,
     E_REC_FAIL, A_WAIT, UNK, 0},
    {"UNKNOWN: the operator resumes here: proven ABORT, override", "kill-target:sw-after-state",
     PRE, UNK, 0, E_OP_RESUME, A_OVERR, TAKEN, 0},
    {"UNKNOWN: proven DECIDED runs: RELEASE", NO_DECIDED, PRE, UNK, 0, E_RUNS, A_RELEASE, DONE, 0},
    {"UNKNOWN: proven DECIDED discarded: resume here", NO_DECIDED, PRE, UNK, 0, E_DISCARD, A_HERE,
     DISC, 0},
    {"UNKNOWN: an unproven DECIDED: ignored, stays UNKNOWN", NO_FORGED, PRE, UNK, 0, E_FORGED,
     A_WAIT, UNK, 0},
    {"UNKNOWN: a silent tick", "stop-target:sw-after-state", PRE, UNK, 0, E_TIMEOUT, A_WAIT, UNK,
     0},
    {"UNKNOWN: main lost: stays UNKNOWN",
     NO_CELL "main lost after the timeout rather than before it is timing: the cells that lose "
	     "main after COMMIT (kill-target:sw-after-commit) lose it within T",
     PRE, UNK, 0, E_LOST, A_WAIT, UNK, 0},
    {"UNKNOWN: the VM stops: never runs here",
     NO_CELL "the matrix never stops the source's VM while it is switchover-unknown; it kills the "
	     "process",
     PRE, UNK, 0, E_STOPPING, A_STOP, STOP, 0},
    {"precopy has no RESUME",
     NO_CELL "a precopy source is never asked to resume; the row guards the table", PRE, UNK, 0,
     E_RESUME, A_REFUSE, UNK, 0},

    /* ---- UNKNOWN (postcopy: postcopy-paused) ---- */
    {"postcopy UNKNOWN: a resume, to a waiting target the COMMIT", "drop-commit:postcopy", POST,
     UNK, 0, E_RESUME, A_RESUME, DONE, 1},
    {"postcopy UNKNOWN: operator resume while no RESUME went out", "reader-resume:postcopy", POST,
     UNK, 0, E_OP_RESUME, A_OVERR, TAKEN, 0},
    {"postcopy UNKNOWN: operator resume after a RESUME went out: refused",
     NO_CELL "the matrix's operator takes a postcopy VM back only before any --resume", POST, UNK,
     1, E_OP_RESUME, A_REFUSE, UNK, 1},
    {"postcopy UNKNOWN: DECIDED discarded: stays paused", NO_DECIDED, POST, UNK, 0, E_DISCARD,
     A_WAIT, UNK, 0},
    {"postcopy UNKNOWN: late COMMITTED: RELEASE",
     NO_CELL "no postcopy cell lets a target stalled after PREPARED answer before the operator "
	     "takes the VM back (reader-resume:postcopy)",
     POST, UNK, 0, E_CMTD_LATE, A_RELEASE, DONE, 0},

    /* ---- DONE: it runs on the target ---- */
    {"postcopy DONE: POSTCOPY_DONE: RELEASE", "fd-exhaustion:postcopy-late", POST, DONE, 0,
     E_PC_DONE, A_RELEASE, DONE, 0},
    {"postcopy DONE: a resume after a broken connection", "reset:postcopy-late", POST, DONE, 0,
     E_RESUME, A_RESUME, DONE, 1},
    {"postcopy DONE: no operator resume", NO_OPERATOR, POST, DONE, 0, E_OP_RESUME, A_REFUSE, DONE,
     0},
    {"DONE: a duplicate COMMITTED: nothing (one RELEASE)", NO_PEER, PRE, DONE, 0, E_CMTD, A_IGNORE,
     DONE, 0},
    {"DONE: no operator resume once it runs there", NO_OPERATOR, PRE, DONE, 0, E_OP_RESUME,
     A_REFUSE, DONE, 0},
    {"DONE: a DECIDED discarded after the fact: ignored", NO_DECIDED, PRE, DONE, 0, E_DISCARD,
     A_IGNORE, DONE, 0},
    {"precopy DONE: POSTCOPY_DONE refused", NO_CELL "a precopy target never sends POSTCOPY_DONE",
     PRE, DONE, 0, E_PC_DONE, A_REFUSE, DONE, 0},

    /* ---- safety: after the operator's resume nothing runs the VM there ---- */
    {"taken back: a late COMMITTED sends no RELEASE", "reader-resume:sw-after-state", PRE, TAKEN, 0,
     E_CMTD_LATE, A_IGNORE, TAKEN, 0},
    {"taken back: a recover's RUNNING sends no RELEASE",
     NO_CELL "no cell recovers after the operator took the VM back", PRE, TAKEN, 0, E_REC_RUN,
     A_IGNORE, TAKEN, 0},
    {"taken back: a recover's PREPARED sends no COMMIT",
     NO_CELL "no cell recovers after the operator took the VM back", PRE, TAKEN, 0, E_REC_PREP,
     A_IGNORE, TAKEN, 0},
    {"taken back (postcopy): POSTCOPY_DONE sends no RELEASE",
     NO_CELL "a postcopy target taken back never has every page to send POSTCOPY_DONE", POST, TAKEN,
     0, E_PC_DONE, A_IGNORE, TAKEN, 0},
    {"taken back (postcopy): no RESUME",
     NO_CELL "no cell resumes after the operator took the VM back", POST, TAKEN, 0, E_RESUME,
     A_REFUSE, TAKEN, 0},
    {"taken back: a second operator resume: refused", NO_OPERATOR, PRE, TAKEN, 0, E_OP_RESUME,
     A_REFUSE, TAKEN, 0},
    {"aborted: a late PREPARED sends no COMMIT", "stop-target:sw-before-state", PRE, ABRT, 0,
     E_PREPARED, A_IGNORE, ABRT, 0},
    {"aborted: a forged COMMITTED sends no RELEASE", NO_FORGED, PRE, ABRT, 0, E_CMTD, A_IGNORE,
     ABRT, 0},
    {"aborted (postcopy): no RESUME",
     NO_CELL "no cell resumes a postcopy migration that aborted before COMMIT", POST, ABRT, 0,
     E_RESUME, A_REFUSE, ABRT, 0},
    {"discarded: a late COMMITTED sends no RELEASE", NO_DECIDED, PRE, DISC, 0, E_CMTD_LATE,
     A_IGNORE, DISC, 0},
    {"stopped: a DECIDED runs changes nothing", NO_DECIDED, PRE, STOP, 0, E_RUNS, A_IGNORE, STOP,
     0},
};

static void test_rows(void **state)
{
	(void)state;
	fsm_table_check_cells();
	fsm_rows_run(&machine, rows, sizeof(rows) / sizeof(rows[0]));
}

/*
 * Every pair, both modes, against the rules: the VM never runs on both
 * sides. Once COMMIT went out, only the operator (OVERRIDE) or the
 * target's proven DISCARD (RESUME_HERE) resumes it here; nothing but
 * PREPARED sends COMMIT the first time; where it runs here (or nowhere),
 * nothing goes out that lets the target run it; REFUSE and IGNORE change
 * nothing.
 */
static void test_every_pair(void **state)
{
	(void)state;
	for (int pc = 0; pc < 2; pc++)
		for (int st = 0; st < COMMIT_ST_COUNT; st++)
			for (int ev = 0; ev < COMMIT_EV_COUNT; ev++)
				for (int rs = 0; rs < 2; rs++) {
					struct commit_fsm f, before;
					enum commit_action a;

					commit_fsm_init(&f, pc);
					f.st = st;
					f.resume_sent = rs;
					before = f;
					a = commit_fsm_step(&f, ev);
					assert_true((unsigned)a < COMMIT_ACT_COUNT);
					assert_true((unsigned)f.st < COMMIT_ST_COUNT);
					if (a == COMMIT_ACT_REFUSE || a == COMMIT_ACT_IGNORE)
						assert_memory_equal(&f, &before, sizeof(f));
					if (st != COMMIT_ST_PREPARING)
						assert_int_not_equal(a, COMMIT_ACT_ABORT);
					if (a == COMMIT_ACT_OVERRIDE)
						assert_int_equal(ev, COMMIT_EV_OPERATOR_RESUME);
					if (a == COMMIT_ACT_RESUME_HERE)
						assert_int_equal(ev, COMMIT_EV_DECIDED_DISCARD);
					if (a == COMMIT_ACT_SEND_COMMIT)
						assert_true(ev == COMMIT_EV_PREPARED ||
							    ev == COMMIT_EV_RECOVER_PREPARED);
					if (commit_fsm_runs_here(st) || st == COMMIT_ST_STOPPED) {
						assert_int_equal(f.st, st);
						assert_true(a == COMMIT_ACT_REFUSE ||
							    a == COMMIT_ACT_IGNORE);
					}
					if (a == COMMIT_ACT_SEND_RESUME)
						assert_true(pc);
					/* After a RESUME the operator cannot take it back. */
					if (rs && ev == COMMIT_EV_OPERATOR_RESUME)
						assert_int_equal(a, COMMIT_ACT_REFUSE);
				}
}

/* Paths start in PREPARING. */

static const struct fsm_path paths[] = {
    {"precopy, all in time",
     "fd-exhaustion:sw-after-commit",
     PRE,
     {E_PREPARED, E_CMTD},
     {A_COMMIT, A_RELEASE},
     DONE,
     2},
    {"postcopy, all in time, then DONE",
     "fd-exhaustion:postcopy-late",
     POST,
     {E_PREPARED, E_CMTD, E_PC_DONE},
     {A_COMMIT, A_THERE, A_RELEASE},
     DONE,
     3},
    {"target stalled after PREPARED: UNKNOWN, then its late COMMITTED",
     "stop-target:sw-after-state",
     PRE,
     {E_PREPARED, E_TIMEOUT, E_TIMEOUT, E_CMTD_LATE},
     {A_COMMIT, A_UNKNOWN, A_WAIT, A_RELEASE},
     DONE,
     4},
    {"operator resumed, then the stalled target's late COMMITTED: no RELEASE",
     "reader-resume:sw-after-state",
     PRE,
     {E_PREPARED, E_TIMEOUT, E_OP_RESUME, E_CMTD_LATE, E_REC_RUN},
     {A_COMMIT, A_UNKNOWN, A_OVERR, A_IGNORE, A_IGNORE},
     TAKEN,
     5},
    {"link lost after COMMIT, recover finds it prepared",
     "drop-commit:precopy",
     PRE,
     {E_PREPARED, E_LOST, E_REC_FAIL, E_REC_PREP, E_CMTD_LATE},
     {A_COMMIT, A_UNKNOWN, A_WAIT, A_COMMIT, A_RELEASE},
     DONE,
     5},
    {"postcopy unconfirmed: resume sent, then the operator is refused",
     "drop-commit:postcopy",
     POST,
     {E_PREPARED, E_TIMEOUT, E_RESUME, E_OP_RESUME, E_PC_DONE},
     {A_COMMIT, A_UNKNOWN, A_RESUME, A_REFUSE, A_RELEASE},
     DONE,
     5},
    {"target killed before PREPARED: abort, and nothing after",
     "kill-target:sw-before-state",
     PRE,
     {E_NOPREP, E_PREPARED, E_CMTD},
     {A_ABORT, A_IGNORE, A_IGNORE},
     ABRT,
     3},
};

static void test_paths(void **state)
{
	(void)state;
	fsm_paths_run(&machine, paths, sizeof(paths) / sizeof(paths[0]));
}

static void test_names(void **state)
{
	(void)state;
	fsm_names_check(&machine, COMMIT_ST_COUNT, COMMIT_EV_COUNT, COMMIT_ACT_COUNT);
	assert_string_equal(commit_action_name(COMMIT_ACT_RELEASE), "RELEASE");
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
