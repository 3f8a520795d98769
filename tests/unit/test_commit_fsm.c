/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_commit_fsm.c - the source's switchover commit (migration/source/
 * commit_fsm.h) from a table: one row per transition of
 * docs/migration-protocol.md's source table ("Switchover"), in precopy
 * and postcopy, then the safety rows (after COMMIT no resume here but on
 * an operator's or the target's proven word; after the operator's resume
 * no COMMIT, RELEASE or RESUME ever), then every (state, event) pair
 * against the rules the table stands for, and paths of several steps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "commit_fsm.h"

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

struct row {
	const char *name;
	bool postcopy;
	enum commit_state from;
	bool resume_sent; /* a RESUME went out before */
	enum commit_event ev;
	enum commit_action want;
	enum commit_state to;
};

static const struct row rows[] = {
    /* ---- PREPARING: END sent ---- */
    {"PREPARED: the decision, COMMIT goes out", PRE, PREP, 0, E_PREPARED, A_COMMIT, CMTG},
    {"postcopy PREPARED: COMMIT too", POST, PREP, 0, E_PREPARED, A_COMMIT, CMTG},
    {"no PREPARED within 3T / ERROR / EOF: ABORT, resume here", PRE, PREP, 0, E_NOPREP, A_ABORT,
     ABRT},
    {"postcopy: no PREPARED: ABORT, resume here", POST, PREP, 0, E_NOPREP, A_ABORT, ABRT},
    {"no operator resume before the outcome is unknown", PRE, PREP, 0, E_OP_RESUME, A_REFUSE, PREP},
    {"a COMMITTED before COMMIT changes nothing", PRE, PREP, 0, E_CMTD, A_IGNORE, PREP},

    /* ---- COMMITTING: COMMIT sent ---- */
    {"COMMITTED within T: RELEASE (precopy)", PRE, CMTG, 0, E_CMTD, A_RELEASE, DONE},
    {"postcopy COMMITTED within T: runs there, RELEASE after POSTCOPY_DONE", POST, CMTG, 0, E_CMTD,
     A_THERE, DONE},
    {"late COMMITTED (resume_mono_ns 0): RELEASE at once", PRE, CMTG, 0, E_CMTD_LATE, A_RELEASE,
     DONE},
    {"postcopy late COMMITTED: RELEASE at once too", POST, CMTG, 0, E_CMTD_LATE, A_RELEASE, DONE},
    {"proven DECIDED runs: as COMMITTED, RELEASE", PRE, CMTG, 0, E_RUNS, A_RELEASE, DONE},
    {"postcopy proven DECIDED runs: RELEASE", POST, CMTG, 0, E_RUNS, A_RELEASE, DONE},
    {"proven DECIDED discarded: resume here", PRE, CMTG, 0, E_DISCARD, A_HERE, DISC},
    {"postcopy DECIDED discarded: paused, its operator resumes here", POST, CMTG, 0, E_DISCARD,
     A_UNKNOWN, UNK},
    {"unproven DECIDED: the outcome is unknown", PRE, CMTG, 0, E_FORGED, A_UNKNOWN, UNK},
    {"no COMMITTED within T: UNKNOWN", PRE, CMTG, 0, E_TIMEOUT, A_UNKNOWN, UNK},
    {"postcopy no COMMITTED within T: UNKNOWN (postcopy-paused)", POST, CMTG, 0, E_TIMEOUT,
     A_UNKNOWN, UNK},
    {"EOF or reset after COMMIT: UNKNOWN, never a resume here", PRE, CMTG, 0, E_LOST, A_UNKNOWN,
     UNK},
    {"no operator resume while COMMITTED may still come", PRE, CMTG, 0, E_OP_RESUME, A_REFUSE,
     CMTG},
    {"a second PREPARED sends no second COMMIT", PRE, CMTG, 0, E_PREPARED, A_IGNORE, CMTG},

    /* ---- UNKNOWN (precopy) ---- */
    {"UNKNOWN: a late COMMITTED on main: RELEASE", PRE, UNK, 0, E_CMTD_LATE, A_RELEASE, DONE},
    {"UNKNOWN: a COMMITTED in time but read late: RELEASE", PRE, UNK, 0, E_CMTD, A_RELEASE, DONE},
    {"UNKNOWN: recover, RECOVER_STATE running: RELEASE", PRE, UNK, 0, E_REC_RUN, A_RELEASE, DONE},
    {"UNKNOWN: recover, RECOVER_STATE prepared: COMMIT again", PRE, UNK, 0, E_REC_PREP, A_COMMIT,
     UNK},
    {"UNKNOWN: recover unreachable: stays UNKNOWN", PRE, UNK, 0, E_REC_FAIL, A_WAIT, UNK},
    {"UNKNOWN: the operator resumes here: proven ABORT, override", PRE, UNK, 0, E_OP_RESUME,
     A_OVERR, TAKEN},
    {"UNKNOWN: proven DECIDED runs: RELEASE", PRE, UNK, 0, E_RUNS, A_RELEASE, DONE},
    {"UNKNOWN: proven DECIDED discarded: resume here", PRE, UNK, 0, E_DISCARD, A_HERE, DISC},
    {"UNKNOWN: an unproven DECIDED: ignored, stays UNKNOWN", PRE, UNK, 0, E_FORGED, A_WAIT, UNK},
    {"UNKNOWN: a silent tick", PRE, UNK, 0, E_TIMEOUT, A_WAIT, UNK},
    {"UNKNOWN: main lost: stays UNKNOWN", PRE, UNK, 0, E_LOST, A_WAIT, UNK},
    {"UNKNOWN: the VM stops: never runs here", PRE, UNK, 0, E_STOPPING, A_STOP, STOP},
    {"precopy has no RESUME", PRE, UNK, 0, E_RESUME, A_REFUSE, UNK},

    /* ---- UNKNOWN (postcopy: postcopy-paused) ---- */
    {"postcopy UNKNOWN: a resume, to a waiting target the COMMIT", POST, UNK, 0, E_RESUME, A_RESUME,
     DONE},
    {"postcopy UNKNOWN: operator resume while no RESUME went out", POST, UNK, 0, E_OP_RESUME,
     A_OVERR, TAKEN},
    {"postcopy UNKNOWN: operator resume after a RESUME went out: refused", POST, UNK, 1,
     E_OP_RESUME, A_REFUSE, UNK},
    {"postcopy UNKNOWN: DECIDED discarded: stays paused", POST, UNK, 0, E_DISCARD, A_WAIT, UNK},
    {"postcopy UNKNOWN: late COMMITTED: RELEASE", POST, UNK, 0, E_CMTD_LATE, A_RELEASE, DONE},

    /* ---- DONE: it runs on the target ---- */
    {"postcopy DONE: POSTCOPY_DONE: RELEASE", POST, DONE, 0, E_PC_DONE, A_RELEASE, DONE},
    {"postcopy DONE: a resume after a broken connection", POST, DONE, 0, E_RESUME, A_RESUME, DONE},
    {"postcopy DONE: no operator resume", POST, DONE, 0, E_OP_RESUME, A_REFUSE, DONE},
    {"DONE: a duplicate COMMITTED: nothing (one RELEASE)", PRE, DONE, 0, E_CMTD, A_IGNORE, DONE},
    {"DONE: no operator resume once it runs there", PRE, DONE, 0, E_OP_RESUME, A_REFUSE, DONE},
    {"DONE: a DECIDED discarded after the fact: ignored", PRE, DONE, 0, E_DISCARD, A_IGNORE, DONE},
    {"precopy DONE: POSTCOPY_DONE refused", PRE, DONE, 0, E_PC_DONE, A_REFUSE, DONE},

    /* ---- safety: after the operator's resume nothing runs the VM there ---- */
    {"taken back: a late COMMITTED sends no RELEASE", PRE, TAKEN, 0, E_CMTD_LATE, A_IGNORE, TAKEN},
    {"taken back: a recover's RUNNING sends no RELEASE", PRE, TAKEN, 0, E_REC_RUN, A_IGNORE, TAKEN},
    {"taken back: a recover's PREPARED sends no COMMIT", PRE, TAKEN, 0, E_REC_PREP, A_IGNORE,
     TAKEN},
    {"taken back (postcopy): POSTCOPY_DONE sends no RELEASE", POST, TAKEN, 0, E_PC_DONE, A_IGNORE,
     TAKEN},
    {"taken back (postcopy): no RESUME", POST, TAKEN, 0, E_RESUME, A_REFUSE, TAKEN},
    {"taken back: a second operator resume: refused", PRE, TAKEN, 0, E_OP_RESUME, A_REFUSE, TAKEN},
    {"aborted: a late PREPARED sends no COMMIT", PRE, ABRT, 0, E_PREPARED, A_IGNORE, ABRT},
    {"aborted: a forged COMMITTED sends no RELEASE", PRE, ABRT, 0, E_CMTD, A_IGNORE, ABRT},
    {"aborted (postcopy): no RESUME", POST, ABRT, 0, E_RESUME, A_REFUSE, ABRT},
    {"discarded: a late COMMITTED sends no RELEASE", PRE, DISC, 0, E_CMTD_LATE, A_IGNORE, DISC},
    {"stopped: a DECIDED runs changes nothing", PRE, STOP, 0, E_RUNS, A_IGNORE, STOP},
};

static void test_rows(void **state)
{
	unsigned bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct commit_fsm f;
		enum commit_action got;

		commit_fsm_init(&f, r->postcopy);
		f.st = r->from;
		f.resume_sent = r->resume_sent;
		got = commit_fsm_step(&f, r->ev);
		if (got != r->want || f.st != r->to) {
			fprintf(stderr, "row %zu \"%s\": %s + %s gave %s -> %s, want %s -> %s\n", i,
				r->name, commit_state_name(r->from), commit_event_name(r->ev),
				commit_action_name(got), commit_state_name(f.st),
				commit_action_name(r->want), commit_state_name(r->to));
			bad++;
		}
	}
	assert_int_equal(bad, 0);
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

/* A path of events from PREPARING: the actions in order, and the end state. */
struct path {
	const char *name;
	bool postcopy;
	enum commit_event ev[6];
	enum commit_action want[6];
	enum commit_state end;
	size_t n; /* steps */
};

static const struct path paths[] = {
    {"precopy, all in time", PRE, {E_PREPARED, E_CMTD}, {A_COMMIT, A_RELEASE}, DONE, 2},
    {"postcopy, all in time, then DONE",
     POST,
     {E_PREPARED, E_CMTD, E_PC_DONE},
     {A_COMMIT, A_THERE, A_RELEASE},
     DONE,
     3},
    {"target stalled after PREPARED: UNKNOWN, then its late COMMITTED",
     PRE,
     {E_PREPARED, E_TIMEOUT, E_TIMEOUT, E_CMTD_LATE},
     {A_COMMIT, A_UNKNOWN, A_WAIT, A_RELEASE},
     DONE,
     4},
    {"operator resumed, then the stalled target's late COMMITTED: no RELEASE",
     PRE,
     {E_PREPARED, E_TIMEOUT, E_OP_RESUME, E_CMTD_LATE, E_REC_RUN},
     {A_COMMIT, A_UNKNOWN, A_OVERR, A_IGNORE, A_IGNORE},
     TAKEN,
     5},
    {"link lost after COMMIT, recover finds it prepared",
     PRE,
     {E_PREPARED, E_LOST, E_REC_FAIL, E_REC_PREP, E_CMTD_LATE},
     {A_COMMIT, A_UNKNOWN, A_WAIT, A_COMMIT, A_RELEASE},
     DONE,
     5},
    {"postcopy unconfirmed: resume sent, then the operator is refused",
     POST,
     {E_PREPARED, E_TIMEOUT, E_RESUME, E_OP_RESUME, E_PC_DONE},
     {A_COMMIT, A_UNKNOWN, A_RESUME, A_REFUSE, A_RELEASE},
     DONE,
     5},
    {"target killed before PREPARED: abort, and nothing after",
     PRE,
     {E_NOPREP, E_PREPARED, E_CMTD},
     {A_ABORT, A_IGNORE, A_IGNORE},
     ABRT,
     3},
};

static void test_paths(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const struct path *p = &paths[i];
		struct commit_fsm f;

		commit_fsm_init(&f, p->postcopy);
		for (size_t k = 0; k < p->n; k++) {
			enum commit_action got = commit_fsm_step(&f, p->ev[k]);

			if (got != p->want[k])
				fprintf(stderr, "path \"%s\" step %zu (%s): got %s, want %s\n",
					p->name, k, commit_event_name(p->ev[k]),
					commit_action_name(got), commit_action_name(p->want[k]));
			assert_int_equal(got, p->want[k]);
		}
		assert_int_equal(f.st, p->end);
	}
}

static void test_names(void **state)
{
	(void)state;
	for (int i = 0; i < COMMIT_ST_COUNT; i++)
		assert_string_not_equal(commit_state_name(i), "?");
	for (int i = 0; i < COMMIT_EV_COUNT; i++)
		assert_string_not_equal(commit_event_name(i), "?");
	for (int i = 0; i < COMMIT_ACT_COUNT; i++)
		assert_string_not_equal(commit_action_name(i), "?");
	assert_string_equal(commit_state_name(COMMIT_ST_COUNT), "?");
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
