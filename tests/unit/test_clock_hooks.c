/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_clock_hooks.c - the clock (vmm/util/clock.h) and the test hooks
 * (vmm/util/test_hooks.h, with the engine's steps and faults of
 * migration/api/test_steps.h and test_faults.h): what test_hooks_read() makes of the environment
 * with and without its variables, and the watcher thread that fires a fault
 * once when a counter reaches its threshold and is joined by stop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clock.h"
#include "test_faults.h"
#include "test_hooks.h"
#include "test_steps.h"

/* ---- clock ------------------------------------------------------------- */

static void test_clock(void **state)
{
	uint64_t t0 = now_ns(), t1;

	(void)state;
	sleep_ms(20);
	t1 = now_ns();
	assert_true(t1 > t0);
	assert_true(t1 - t0 >= 20000000ull); /* slept at least what was asked */
	assert_true(ms_since(t0) >= 20);
	for (int i = 0; i < 1000; i++) { /* never goes back */
		uint64_t t = now_ns();

		assert_true(t >= t1);
		t1 = t;
	}
	sleep_ms(0);
}

/* ---- test_hooks_read ---------------------------------------------------- */

static int clear_env(void **state)
{
	(void)state;
	unsetenv("VMM_TEST_DIGEST");
	unsetenv("VMM_TEST_FAULT");
	unsetenv("VMM_TEST_STOP_AT");
	return 0;
}

/* The engine's fault that h holds; TEST_FAULT_NONE when none (or one it does not own). */
static enum test_fault fault_of(const struct test_hooks *h)
{
	for (int f = TEST_FAULT_NONE + 1; f < TEST_FAULT_COUNT; f++)
		if (test_fault_on(h, (enum test_fault)f))
			return (enum test_fault)f;
	return TEST_FAULT_NONE;
}

static void test_read_unset(void **state)
{
	struct test_hooks h;

	(void)state;
	memset(&h, 0xff, sizeof(h));
	test_hooks_read(&h, test_step_names(), TEST_STEP_COUNT);
	assert_false(h.digest);
	assert_int_equal(fault_of(&h), TEST_FAULT_NONE);
}

static void test_read_set(void **state)
{
	static const struct {
		const char *name;
		enum test_fault fault;
	} faults[] = {
	    {"kill-during-precopy", TEST_FAULT_KILL_DURING_PRECOPY},
	    {"kill-before-ack", TEST_FAULT_KILL_BEFORE_ACK},
	    {"cut-postcopy", TEST_FAULT_CUT_POSTCOPY},
	    {"cut-before-commit", TEST_FAULT_CUT_BEFORE_COMMIT},
	    {"cut-after-commit", TEST_FAULT_CUT_AFTER_COMMIT},
	    {"no-such-fault", TEST_FAULT_NONE},
	    {"", TEST_FAULT_NONE},
	    {"KILL-BEFORE-ACK", TEST_FAULT_NONE}, /* names are exact */
	};
	struct test_hooks h;
	bool built = test_hooks_built();

	(void)state;
	setenv("VMM_TEST_DIGEST", "1", 1);
	test_hooks_read(&h, test_step_names(), TEST_STEP_COUNT);
	assert_int_equal(h.digest, built); /* a build without hooks ignores the variables */
	assert_int_equal(fault_of(&h), TEST_FAULT_NONE);
	unsetenv("VMM_TEST_DIGEST");

	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		setenv("VMM_TEST_FAULT", faults[i].name, 1);
		test_hooks_read(&h, test_step_names(), TEST_STEP_COUNT);
		assert_false(h.digest);
		if (fault_of(&h) != (built ? faults[i].fault : TEST_FAULT_NONE))
			fail_msg("VMM_TEST_FAULT=%s read as %d", faults[i].name, fault_of(&h));
	}
	/* every engine fault by its own name; the machine's is no engine fault */
	assert_null(test_fault_name(TEST_FAULT_NONE));
	assert_null(test_fault_name(TEST_FAULT_COUNT));
	for (int f = TEST_FAULT_NONE + 1; f < TEST_FAULT_COUNT; f++) {
		setenv("VMM_TEST_FAULT", test_fault_name((enum test_fault)f), 1);
		test_hooks_read(&h, test_step_names(), TEST_STEP_COUNT);
		if (fault_of(&h) != (built ? (enum test_fault)f : TEST_FAULT_NONE))
			fail_msg("VMM_TEST_FAULT=%s read as %d",
				 test_fault_name((enum test_fault)f), fault_of(&h));
	}
	setenv("VMM_TEST_FAULT", "forbidden-syscall-vcpu", 1);
	test_hooks_read(&h, test_step_names(), TEST_STEP_COUNT);
	assert_int_equal(fault_of(&h), TEST_FAULT_NONE);
	assert_int_equal(test_hook_fault_is(&h, "forbidden-syscall-vcpu"), built);
	assert_false(test_hook_fault_is(&h, "forbidden-syscall"));
	/* a name too long to hold is no fault, not a prefix of one */
	setenv("VMM_TEST_FAULT", "cut-postcopy-and-then-some-more-words-past-forty", 1);
	test_hooks_read(&h, test_step_names(), TEST_STEP_COUNT);
	assert_false(test_hook_fault_is(&h, "cut-postcopy-and-then-some-more-words-past-forty"));
	assert_int_equal(fault_of(&h), TEST_FAULT_NONE);
	/* both at once, then both gone again: the read is a snapshot, not sticky */
	setenv("VMM_TEST_DIGEST", "1", 1);
	setenv("VMM_TEST_FAULT", "cut-postcopy", 1);
	test_hooks_read(&h, test_step_names(), TEST_STEP_COUNT);
	assert_int_equal(h.digest, built);
	assert_int_equal(fault_of(&h), built ? TEST_FAULT_CUT_POSTCOPY : TEST_FAULT_NONE);
	clear_env(NULL);
	test_hooks_read(&h, test_step_names(), TEST_STEP_COUNT);
	assert_false(h.digest);
	assert_int_equal(fault_of(&h), TEST_FAULT_NONE);
}

/* Every step name reads back as its step; unknown names and NONE are no stop. */
static void test_read_stop_at(void **state)
{
	struct test_hooks h;
	bool built = test_hooks_built();

	(void)state;
	assert_null(test_step_name(TEST_STEP_NONE));
	assert_null(test_step_name(TEST_STEP_COUNT));
	for (int s = TEST_STEP_NONE + 1; s < TEST_STEP_COUNT; s++) {
		const char *name = test_step_name((enum test_step)s);

		assert_non_null(name);
		setenv("VMM_TEST_STOP_AT", name, 1);
		test_hooks_read(&h, test_step_names(), TEST_STEP_COUNT);
		if (h.stop_at != (built ? (unsigned)s : (unsigned)TEST_STEP_NONE))
			fail_msg("VMM_TEST_STOP_AT=%s read as %d", name, h.stop_at);
		/* Any other step passes by without stopping (this test would hang). */
		test_hook_step(&h, s == TEST_STEP_SOURCE_SETUP ? TEST_STEP_TARGET_END
							       : TEST_STEP_SOURCE_SETUP);
	}
	setenv("VMM_TEST_STOP_AT", "target-nowhere", 1);
	test_hooks_read(&h, test_step_names(), TEST_STEP_COUNT);
	assert_int_equal(h.stop_at, TEST_STEP_NONE);
}

/* ---- the watcher -------------------------------------------------------- */

struct fired {
	unsigned count;
	uint64_t at; /* the counter when it fired */
	const uint64_t *counter;
};

static void on_fire(void *arg)
{
	struct fired *f = arg;

	f->at = __atomic_load_n(f->counter, __ATOMIC_RELAXED);
	__atomic_fetch_add(&f->count, 1, __ATOMIC_RELEASE);
}

/* Waits (bounded: 10 s) until the watcher fired. */
static bool wait_fired(struct fired *f)
{
	for (int i = 0; i < 10000; i++) {
		if (__atomic_load_n(&f->count, __ATOMIC_ACQUIRE))
			return true;
		sleep_ms(1);
	}
	return false;
}

static void test_watch_fires_once_at_threshold(void **state)
{
	struct test_hook_watch w;
	uint64_t counter = 0;
	struct fired f = {0, 0, &counter};

	(void)state;
	memset(&w, 0, sizeof(w));
	assert_int_equal(test_hook_watch_start(&w, &counter, 100, on_fire, &f), 0);
	/* below the threshold it never fires, however long it polls */
	for (uint64_t i = 0; i < 99; i++) {
		__atomic_store_n(&counter, i + 1, __ATOMIC_RELAXED);
		if (i % 10 == 0)
			sleep_ms(1);
	}
	sleep_ms(30);
	assert_int_equal(__atomic_load_n(&f.count, __ATOMIC_ACQUIRE), 0);
	__atomic_store_n(&counter, 100, __ATOMIC_RELAXED);
	assert_true(wait_fired(&f));
	assert_true(f.at >= 100);
	/* the counter runs on; the fault is not fired again */
	for (uint64_t i = 101; i < 1000; i++)
		__atomic_store_n(&counter, i, __ATOMIC_RELAXED);
	sleep_ms(30);
	test_hook_watch_stop(&w);
	assert_int_equal(f.count, 1);
	assert_false(w.started);
	test_hook_watch_stop(&w); /* stopping twice is harmless */
}

static void test_watch_already_past(void **state)
{
	struct test_hook_watch w;
	uint64_t counter = 5000;
	struct fired f = {0, 0, &counter};

	(void)state;
	memset(&w, 0, sizeof(w));
	assert_int_equal(test_hook_watch_start(&w, &counter, 2048, on_fire, &f), 0);
	assert_true(wait_fired(&f));
	test_hook_watch_stop(&w);
	assert_int_equal(f.count, 1);
	assert_int_equal(f.at, 5000);
}

static void test_watch_stopped_before_threshold(void **state)
{
	struct test_hook_watch w;
	uint64_t counter = 0;
	struct fired f = {0, 0, &counter};

	(void)state;
	memset(&w, 0, sizeof(w));
	assert_int_equal(test_hook_watch_start(&w, &counter, 10, on_fire, &f), 0);
	assert_true(w.started);
	sleep_ms(5);
	test_hook_watch_stop(&w); /* joins the polling thread */
	assert_false(w.started);
	/* joined: nothing polls any more, so reaching the threshold now fires nothing */
	__atomic_store_n(&counter, 10, __ATOMIC_RELAXED);
	sleep_ms(20);
	assert_int_equal(f.count, 0);
}

static void test_watch_never_started(void **state)
{
	struct test_hook_watch w;

	(void)state;
	memset(&w, 0, sizeof(w));
	test_hook_watch_stop(&w); /* a no-op */
	assert_false(w.started);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clock),
	    cmocka_unit_test_setup_teardown(test_read_unset, clear_env, clear_env),
	    cmocka_unit_test_setup_teardown(test_read_set, clear_env, clear_env),
	    cmocka_unit_test_setup_teardown(test_read_stop_at, clear_env, clear_env),
	    cmocka_unit_test(test_watch_fires_once_at_threshold),
	    cmocka_unit_test(test_watch_already_past),
	    cmocka_unit_test(test_watch_stopped_before_threshold),
	    cmocka_unit_test(test_watch_never_started),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
