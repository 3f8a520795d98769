/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_commit_pair.c - both sides' commit state machines together
 * (commit_fsm.h, settle_fsm.h), through docs/migration-protocol.md's table
 * of where a stall or a fault lands: each path is the events each side
 * sees in order (a record the other sent only after that side's action
 * said to send it), and after every step the VM runs on at most one side.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "commit_fsm.h"
#include "settle_fsm.h"

enum side { S, T };

struct step {
	enum side side;
	int ev;	  /* enum commit_event (S) or enum settle_event (T) */
	int want; /* enum commit_action or enum settle_action */
};

struct path {
	const char *name;
	bool postcopy;
	struct step steps[8];
	size_t n;
	bool src_runs, tgt_runs; /* at the end */
};

#define SP(e, a)                                                                                   \
	{                                                                                          \
		S, COMMIT_EV_##e, COMMIT_ACT_##a                                                   \
	}
#define TP(e, a)                                                                                   \
	{                                                                                          \
		T, SETTLE_EV_##e, SETTLE_ACT_##a                                                   \
	}

static const struct path paths[] = {
    {"all in time",
     false,
     {SP(PREPARED, SEND_COMMIT), TP(COMMIT, RUN), SP(COMMITTED, RELEASE), TP(RELEASE, RELEASED),
      TP(MAIN_LOST, FINISH)},
     5,
     false,
     true},
    {"source stalled before COMMIT: the target's late COMMIT, RELEASE",
     false,
     {TP(TIMEOUT, UNKNOWN), SP(PREPARED, SEND_COMMIT), TP(COMMIT_LATE, COMMITTED_LATE),
      SP(COMMITTED_LATE, RELEASE), TP(RELEASE, RUN_RELEASED)},
     5,
     false,
     true},
    {"target stalled before PREPARED: the source keeps it, the target reads ABORT",
     false,
     {SP(NO_PREPARED, ABORT), TP(ABORT, DISCARD)},
     2,
     true,
     false},
    {"target stalled after PREPARED: late COMMIT, COMMITTED late, RELEASE",
     false,
     {SP(PREPARED, SEND_COMMIT), SP(TIMEOUT, UNKNOWN), TP(COMMIT_LATE, COMMITTED_LATE),
      SP(COMMITTED_LATE, RELEASE), TP(RELEASE, RUN_RELEASED)},
     5,
     false,
     true},
    {"target stalled after PREPARED, the source's operator resumed: ABORT follows COMMIT",
     false,
     {SP(PREPARED, SEND_COMMIT), SP(TIMEOUT, UNKNOWN), SP(OPERATOR_RESUME, OVERRIDE),
      TP(COMMIT_LATE, COMMITTED_LATE), SP(COMMITTED_LATE, IGNORE), TP(ABORT, DISCARD)},
     6,
     true,
     false},
    {"... and that ABORT lost too: no RELEASE ever, the target stays paused",
     false,
     {SP(PREPARED, SEND_COMMIT), SP(TIMEOUT, UNKNOWN), SP(OPERATOR_RESUME, OVERRIDE),
      TP(COMMIT_LATE, COMMITTED_LATE), SP(COMMITTED_LATE, IGNORE), TP(MAIN_LOST, WAIT)},
     6,
     true,
     false},
    {"target killed after PREPARED: recover fails, the operator resumes the source",
     false,
     {SP(PREPARED, SEND_COMMIT), SP(MAIN_LOST, UNKNOWN), SP(RECOVER_FAILED, WAIT),
      SP(OPERATOR_RESUME, OVERRIDE)},
     4,
     true,
     false},
    {"source killed after END, before COMMIT: the target's operator runs it",
     false,
     {TP(MAIN_LOST, UNKNOWN), TP(OPERATOR_RUN, TELL_RUN)},
     2,
     false,
     true},
    {"source killed after COMMIT: the target runs it",
     false,
     {SP(PREPARED, SEND_COMMIT), TP(COMMIT, RUN), TP(MAIN_LOST, WAIT)},
     3,
     false,
     true},
    {"link lost between COMMIT and COMMITTED: recover finds it running",
     false,
     {SP(PREPARED, SEND_COMMIT), TP(COMMIT, RUN), SP(MAIN_LOST, UNKNOWN), TP(MAIN_LOST, WAIT),
      TP(RECOVER, ANSWER_RUNNING), SP(RECOVER_RUNNING, RELEASE), TP(RELEASE, RELEASED),
      TP(SOURCE_LEFT, FINISH)},
     8,
     false,
     true},
    {"link lost before COMMIT arrived: recover, COMMIT again, RELEASE",
     false,
     {SP(PREPARED, SEND_COMMIT), SP(MAIN_LOST, UNKNOWN), TP(MAIN_LOST, UNKNOWN),
      TP(RECOVER, ANSWER_PREPARED), SP(RECOVER_PREPARED, SEND_COMMIT),
      TP(COMMIT_LATE, COMMITTED_LATE), SP(COMMITTED_LATE, RELEASE), TP(RELEASE, RUN_RELEASED)},
     8,
     false,
     true},
    {"postcopy unconfirmed: the resume is the COMMIT",
     true,
     {SP(PREPARED, SEND_COMMIT), SP(TIMEOUT, UNKNOWN), TP(TIMEOUT, UNKNOWN),
      SP(RESUME, SEND_RESUME), TP(RESUME, RESUME_SESSION), SP(OPERATOR_RESUME, REFUSE),
      SP(POSTCOPY_DONE, RELEASE)},
     7,
     false,
     true},
    {"postcopy unconfirmed, the operator resumes the source: the target discards",
     true,
     {SP(PREPARED, SEND_COMMIT), SP(TIMEOUT, UNKNOWN), TP(TIMEOUT, UNKNOWN),
      SP(OPERATOR_RESUME, OVERRIDE), TP(ABORT, DISCARD), SP(RESUME, REFUSE)},
     6,
     true,
     false},
};

static void test_paths(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const struct path *p = &paths[i];
		struct commit_fsm s;
		struct settle_fsm t;
		bool src_runs = false, tgt_runs = false;

		commit_fsm_init(&s, p->postcopy);
		settle_fsm_init(&t, p->postcopy);
		for (size_t k = 0; k < p->n; k++) {
			const struct step *st = &p->steps[k];
			int got = st->side == S ? (int)commit_fsm_step(&s, st->ev)
						: (int)settle_fsm_step(&t, st->ev);

			if (got != st->want)
				fprintf(stderr, "path \"%s\" step %zu (%s %s): got %s, want %s\n",
					p->name, k, st->side == S ? "source" : "target",
					st->side == S ? commit_event_name(st->ev)
						      : settle_event_name(st->ev),
					st->side == S ? commit_action_name(got)
						      : settle_action_name(got),
					st->side == S ? commit_action_name(st->want)
						      : settle_action_name(st->want));
			assert_int_equal(got, st->want);
			src_runs = commit_fsm_runs_here(s.st);
			tgt_runs = settle_fsm_running(t.st) && t.st != SETTLE_ST_STOPPED;
			/* The one rule: at every instant at most one side runs the VM. */
			if (src_runs && tgt_runs)
				fprintf(stderr, "path \"%s\" step %zu: both run\n", p->name, k);
			assert_false(src_runs && tgt_runs);
		}
		assert_int_equal(src_runs, p->src_runs);
		assert_int_equal(tgt_runs, p->tgt_runs);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
