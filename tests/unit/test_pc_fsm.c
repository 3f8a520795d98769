/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pc_fsm.c - the target's postcopy phase (migration/incoming/pc_fsm.h)
 * from a table: pause once on a lost connection, a resume's end, the stop,
 * POSTCOPY_DONE exactly once; then every state and event against the
 * rules (docs/migration-protocol.md, "Postcopy": the faulting vCPUs stay
 * blocked while paused, and DONE goes out once, never after a stop).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

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

struct row {
	const char *name;
	struct pc_fsm from;
	enum pc_event ev;
	enum pc_action want;
	struct pc_fsm to;
};

static const struct row rows[] = {
    {"a connection lost while active: pause", ACTIVE, PC_EV_LOST, PC_ACT_PAUSE, PAUSED},
    {"a second loss while paused: once only", PAUSED, PC_EV_LOST, PC_ACT_IGNORE, PAUSED},
    {"a loss after DONE: nothing is missing, nothing pauses", COMPLETE, PC_EV_LOST, PC_ACT_IGNORE,
     COMPLETE},
    {"a loss while stopping: no pause", STOPPING, PC_EV_LOST, PC_ACT_IGNORE, STOPPING},
    {"the resume worked: active again", PAUSED, PC_EV_RESUMED, PC_ACT_RESUMED, ACTIVE},
    {"the resume failed: still paused", PAUSED, PC_EV_RESUME_FAILED, PC_ACT_RESUMED, PAUSED},
    {"a resume's failure while active pauses", ACTIVE, PC_EV_RESUME_FAILED, PC_ACT_RESUMED, PAUSED},
    {"the stop begins while active", ACTIVE, PC_EV_STOP, PC_ACT_STOP, STOPPING},
    {"the stop begins while paused: still paused (its reason stays)", PAUSED, PC_EV_STOP,
     PC_ACT_STOP, P_STOP},
    {"the stop after DONE", COMPLETE, PC_EV_STOP, PC_ACT_STOP, C_STOP},
    {"every page in while active: DONE", ACTIVE, PC_EV_ALL_IN, PC_ACT_SEND_DONE, COMPLETE},
    {"DONE only once", COMPLETE, PC_EV_ALL_IN, PC_ACT_IGNORE, COMPLETE},
    {"no DONE once a stop began", STOPPING, PC_EV_ALL_IN, PC_ACT_IGNORE, STOPPING},
    {"the last page was in before the loss: DONE decided by the pages", PAUSED, PC_EV_ALL_IN,
     PC_ACT_SEND_DONE, P_COMP},
};

static void test_rows(void **state)
{
	unsigned bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct pc_fsm f = r->from;
		enum pc_action got = pc_fsm_step(&f, r->ev);

		if (got != r->want || memcmp(&f, &r->to, sizeof(f))) {
			fprintf(stderr, "row %zu \"%s\": %s gave %s -> %d%d%d, want %s -> %d%d%d\n",
				i, r->name, pc_event_name(r->ev), pc_action_name(got), f.paused,
				f.complete, f.stopping, pc_action_name(r->want), r->to.paused,
				r->to.complete, r->to.stopping);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
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
