/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pc_fsm.c - the target's postcopy phase (migration/incoming/pc_fsm.h)
 * from a table: pause once on a lost connection, a resume's end, the stop,
 * POSTCOPY_DONE exactly once; then every state and event against the
 * rules (docs/migration-protocol.md, "Postcopy": the faulting vCPUs stay
 * blocked while paused, and DONE goes out once, never after a stop), and
 * after DONE the RELEASE that lets the target go, or main's end without it
 * (DONE again to the source's resume).
 * Each row names the fault-matrix cell it stands for, or why no cell
 * reaches it (fsm_table.h runs them and checks the names).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "fsm_table.h"
#include "pc_fsm.h"

/* paused, complete, stopping, released */
/* clang-format off */
#define ACTIVE   {false, false, false, false}
#define PAUSED   {true,  false, false, false}
#define COMPLETE {false, true,  false, false}
#define STOPPING {false, false, true,  false}
#define P_STOP   {true,  false, true,  false}
#define C_STOP   {false, true,  true,  false}
#define P_COMP   {true,  true,  false, false}
#define C_REL    {false, true,  false, true} /* DONE sent, and the source's RELEASE read */
/* clang-format on */

#define NO_CELL FSM_NO_CELL

struct row {
	FSM_ROW_HEAD; /* what it is, and its fault-matrix cell */
	struct pc_fsm from;
	enum pc_event ev;
	enum pc_action want;
	struct pc_fsm to;
};

static const struct row rows[] = {
    {"a connection lost while active: pause", "reset:postcopy-late", ACTIVE, PC_EV_LOST,
     PC_ACT_PAUSE, PAUSED},
    {"a second loss while paused: once only", "reset:postcopy-early", PAUSED, PC_EV_LOST,
     PC_ACT_IGNORE, PAUSED},
    {"a loss after DONE: nothing is missing, nothing pauses", "drop-done:postcopy", COMPLETE,
     PC_EV_LOST, PC_ACT_IGNORE, COMPLETE},
    {"a loss while stopping: no pause",
     NO_CELL "not a fault: every postcopy run ends with a stop that closes the connections it "
	     "then reports lost",
     STOPPING, PC_EV_LOST, PC_ACT_IGNORE, STOPPING},
    {"the resume worked: active again", "reset:postcopy-late", PAUSED, PC_EV_RESUMED,
     PC_ACT_RESUMED, ACTIVE},
    {"the resume failed: still paused",
     NO_CELL "a resume that fails after its accept needs the "
	     "new link to break at once; no cell times that",
     PAUSED, PC_EV_RESUME_FAILED, PC_ACT_RESUMED, PAUSED},
    {"a resume's failure while active pauses",
     NO_CELL "a resume ends only from paused; the row pins what the table does with it anyway",
     ACTIVE, PC_EV_RESUME_FAILED, PC_ACT_RESUMED, PAUSED},
    {"the stop begins while active",
     NO_CELL "no cell stops the target while postcopy runs connected", ACTIVE, PC_EV_STOP,
     PC_ACT_STOP, STOPPING},
    {"the stop begins while paused: still paused (its reason stays)", "kill-source:postcopy-early",
     PAUSED, PC_EV_STOP, PC_ACT_STOP, P_STOP},
    {"the stop after DONE", "stop-source:postcopy-late", COMPLETE, PC_EV_STOP, PC_ACT_STOP, C_STOP},
    {"every page in while active: DONE", "stop-source:postcopy-late", ACTIVE, PC_EV_ALL_IN,
     PC_ACT_SEND_DONE, COMPLETE},
    {"DONE only once", "drop-done:postcopy", COMPLETE, PC_EV_ALL_IN, PC_ACT_IGNORE, COMPLETE},
    {"no DONE once a stop began", "kill-source:postcopy-late", STOPPING, PC_EV_ALL_IN,
     PC_ACT_IGNORE, STOPPING},
    {"the last page was in before the loss: DONE decided by the pages",
     NO_CELL "the last page and a loss landing together is timing no cell controls", PAUSED,
     PC_EV_ALL_IN, PC_ACT_SEND_DONE, P_COMP},

    /* ---- after DONE: main read for RELEASE (pc_control.c watch_release) ---- */
    {"RELEASE after DONE: released, the source's exit ends it", "stop-source:postcopy-late",
     COMPLETE, PC_EV_RELEASE, PC_ACT_RELEASED, C_REL},
    {"a second RELEASE: nothing new", NO_CELL "only a misbehaving source sends RELEASE twice",
     C_REL, PC_EV_RELEASE, PC_ACT_IGNORE, C_REL},
    {"a RELEASE before DONE: nothing changes",
     NO_CELL "before DONE the control thread reads no record on main; only a misbehaving "
	     "source sends RELEASE then",
     ACTIVE, PC_EV_RELEASE, PC_ACT_IGNORE, ACTIVE},
    {"main ends after RELEASE: the source exited, finished", "stop-source:postcopy-late", C_REL,
     PC_EV_MAIN_ENDED, PC_ACT_FINISH, C_REL},
    {"main ends after DONE, before RELEASE: DONE may be lost, a resume gets it again",
     "drop-done:postcopy", COMPLETE, PC_EV_MAIN_ENDED, PC_ACT_REDO_DONE, COMPLETE},
    {"RELEASE lost with main: the same, DONE again to a resume", "drop-release:postcopy", COMPLETE,
     PC_EV_MAIN_ENDED, PC_ACT_REDO_DONE, COMPLETE},
    {"main ends before DONE: a loss, not this event",
     NO_CELL "before DONE main's end is reported as a loss (PC_EV_LOST), never as this event",
     ACTIVE, PC_EV_MAIN_ENDED, PC_ACT_IGNORE, ACTIVE},
};

static bool run_row(const void *item, char *got, size_t len)
{
	const struct row *r = item;
	struct pc_fsm f = r->from;
	enum pc_action a = pc_fsm_step(&f, r->ev);

	snprintf(got, len, "%s gave %s -> %d%d%d%d, want %s -> %d%d%d%d", pc_event_name(r->ev),
		 pc_action_name(a), f.paused, f.complete, f.stopping, f.released,
		 pc_action_name(r->want), r->to.paused, r->to.complete, r->to.stopping,
		 r->to.released);
	return a == r->want && !memcmp(&f, &r->to, sizeof(f));
}

static void test_rows(void **state)
{
	(void)state;
	fsm_table_check_cells();
	fsm_table_run("row", rows, sizeof(rows) / sizeof(rows[0]), sizeof(rows[0]), run_row);
}

/*
 * Every state and event: a stop is never undone, DONE never un-decided,
 * RELEASE never forgotten, IGNORE changes nothing.
 */
static void test_every_pair(void **state)
{
	(void)state;
	for (int bits = 0; bits < 16; bits++)
		for (int ev = 0; ev < PC_EV_COUNT; ev++) {
			struct pc_fsm f = {bits & 1, (bits >> 1) & 1, (bits >> 2) & 1,
					   (bits >> 3) & 1},
				      before = f;
			enum pc_action a = pc_fsm_step(&f, ev);

			assert_true((unsigned)a < PC_ACT_COUNT);
			if (before.stopping)
				assert_true(f.stopping);
			if (before.complete)
				assert_true(f.complete);
			if (a == PC_ACT_IGNORE)
				assert_memory_equal(&f, &before, sizeof(f));
			if (a == PC_ACT_SEND_DONE)
				assert_true(!before.complete && !before.stopping);
			if (a == PC_ACT_PAUSE)
				assert_true(!before.paused && !before.complete && !before.stopping);
			/* RELEASE is read only after DONE, and counts once; it is never undone. */
			if (before.released)
				assert_true(f.released);
			if (a == PC_ACT_RELEASED)
				assert_true(before.complete && !before.released && f.released);
			/* Main's end after DONE: finished only when released, else DONE again. */
			if (a == PC_ACT_FINISH)
				assert_true(ev == PC_EV_MAIN_ENDED && before.released);
			if (a == PC_ACT_REDO_DONE)
				assert_true(ev == PC_EV_MAIN_ENDED && before.complete &&
					    !before.released);
		}
	assert_string_equal(pc_event_name(PC_EV_COUNT), "?");
	assert_string_equal(pc_action_name(PC_ACT_SEND_DONE), "SEND_DONE");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows),
	    cmocka_unit_test(test_every_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
