/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pc_fsm.c - the target's postcopy phase (migration/incoming/pc_fsm.h)
 * from a table: pause once on a lost connection, a resume's end, the stop,
 * POSTCOPY_DONE exactly once; then every state and event against the
 * rules (docs/migration-protocol.md, "Postcopy": the faulting vCPUs stay
 * blocked while paused, and DONE goes out once, never after a stop).
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

/* paused, complete, stopping */
#define ACTIVE                                                                                     \
	{                                                                                          \
		false, false, false                                                                \
	}
#define PAUSED                                                                                     \
	{                                                                                          \
		true, false, false                                                                 \
	}
#define COMPLETE                                                                                   \
	{                                                                                          \
		false, true, false                                                                 \
	}
#define STOPPING                                                                                   \
	{                                                                                          \
		false, false, true                                                                 \
	}
#define P_STOP                                                                                     \
	{                                                                                          \
		true, false, true                                                                  \
	}
#define C_STOP                                                                                     \
	{                                                                                          \
		false, true, true                                                                  \
	}
#define P_COMP                                                                                     \
	{                                                                                          \
		true, true, false                                                                  \
	}

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
};

static bool run_row(const void *item, char *got, size_t len)
{
	const struct row *r = item;
	struct pc_fsm f = r->from;
	enum pc_action a = pc_fsm_step(&f, r->ev);

	snprintf(got, len, "%s gave %s -> %d%d%d, want %s -> %d%d%d", pc_event_name(r->ev),
		 pc_action_name(a), f.paused, f.complete, f.stopping, pc_action_name(r->want),
		 r->to.paused, r->to.complete, r->to.stopping);
	return a == r->want && !memcmp(&f, &r->to, sizeof(f));
}

static void test_rows(void **state)
{
	(void)state;
	fsm_table_check_cells();
	fsm_table_run("row", rows, sizeof(rows) / sizeof(rows[0]), sizeof(rows[0]), run_row);
}

/* Every state and event: a stop is never undone, DONE never un-decided, IGNORE changes nothing. */
static void test_every_pair(void **state)
{
	(void)state;
	for (int bits = 0; bits < 8; bits++)
		for (int ev = 0; ev < PC_EV_COUNT; ev++) {
			struct pc_fsm f = {bits & 1, (bits >> 1) & 1, (bits >> 2) & 1}, before = f;
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
