/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_steps.h - the steps of a migration that VMM_TEST_STOP_AT can name.
 *
 * The hook mechanism is util's (test_hooks.h: reading the environment,
 * stopping the process at a step); the steps are the engine's, so they
 * live here, beside the engine's public face, and util names none of them.
 * The front end hands the names down once, at process start:
 *   test_hooks_read(&hooks, test_step_names(), TEST_STEP_COUNT);
 * and the engine calls test_hook_step(&hooks, TEST_STEP_...) where it
 * reaches one, or compares hooks.stop_at with a step.
 */
#ifndef VMM_MIGRATION_TEST_STEPS_H
#define VMM_MIGRATION_TEST_STEPS_H

#include <stddef.h>

/*
 * The points of a migration where a stall matters most. The quoted name is
 * what VMM_TEST_STOP_AT takes and what "vmm: test hook: stopped at NAME"
 * prints (test_step_names()).
 */
enum test_step {
	TEST_STEP_NONE,
	/* "target-first-sync": pass 0 applied on every data connection, before its SYNC_ACK */
	TEST_STEP_TARGET_FIRST_SYNC,
	TEST_STEP_SOURCE_SETUP,	      /* "source-setup": connected, before the first pass */
	TEST_STEP_SOURCE_FIRST_PASS,  /* "source-first-pass": pass 0, once 256 pages are out */
	TEST_STEP_SOURCE_SECOND_PASS, /* "source-second-pass": before pass 1 (0-based) */
	TEST_STEP_SOURCE_PAUSED,      /* "source-paused": vCPUs paused, before the final harvest */
	TEST_STEP_SOURCE_END_SENT,    /* "source-end-sent": END sent, before awaiting PREPARED */
	TEST_STEP_SOURCE_PREPARED,    /* "source-prepared": PREPARED read, before COMMIT */
	TEST_STEP_SOURCE_COMMIT_SENT, /* "source-commit-sent": COMMIT sent, before COMMITTED */
	TEST_STEP_SOURCE_POSTCOPY_EARLY, /* "source-postcopy-early": COMMIT done, before the push */
	TEST_STEP_SOURCE_POSTCOPY_LATE,	 /* "source-postcopy-late": after 2048 pushed pages */
	TEST_STEP_TARGET_END,		 /* "target-end": END read, before loading the state */
	TEST_STEP_TARGET_PREPARED,	 /* "target-prepared": PREPARED sent, before the decision */
	TEST_STEP_TARGET_COMMIT, /* "target-commit": COMMIT read, before COMMITTED / resume */
	/*
	 * "target-failed": the receive failed before PREPARED and its status
	 * says so (failed, with the reason), before the source is told and
	 * the VM discarded
	 */
	TEST_STEP_TARGET_FAILED,
	TEST_STEP_COUNT,
};

/*
 * The names, indexed by step; [TEST_STEP_NONE] is NULL. The table lives as
 * long as the process (test_hooks_read() keeps the pointer).
 */
static inline const char *const *test_step_names(void)
{
	static const char *const names[TEST_STEP_COUNT] = {
	    [TEST_STEP_SOURCE_SETUP] = "source-setup",
	    [TEST_STEP_SOURCE_FIRST_PASS] = "source-first-pass",
	    [TEST_STEP_SOURCE_SECOND_PASS] = "source-second-pass",
	    [TEST_STEP_SOURCE_PAUSED] = "source-paused",
	    [TEST_STEP_SOURCE_END_SENT] = "source-end-sent",
	    [TEST_STEP_SOURCE_PREPARED] = "source-prepared",
	    [TEST_STEP_SOURCE_COMMIT_SENT] = "source-commit-sent",
	    [TEST_STEP_SOURCE_POSTCOPY_EARLY] = "source-postcopy-early",
	    [TEST_STEP_SOURCE_POSTCOPY_LATE] = "source-postcopy-late",
	    [TEST_STEP_TARGET_FIRST_SYNC] = "target-first-sync",
	    [TEST_STEP_TARGET_END] = "target-end",
	    [TEST_STEP_TARGET_PREPARED] = "target-prepared",
	    [TEST_STEP_TARGET_COMMIT] = "target-commit",
	    [TEST_STEP_TARGET_FAILED] = "target-failed",
	};

	return names;
}

/* "source-setup", ...; NULL for TEST_STEP_NONE or out of range. */
static inline const char *test_step_name(enum test_step s)
{
	return s > TEST_STEP_NONE && s < TEST_STEP_COUNT ? test_step_names()[s] : NULL;
}

#endif /* VMM_MIGRATION_TEST_STEPS_H */
