/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_target_end.c - how a process ends after a migration
 * (frontend/target_end.h) from tables: the target's receive thread ending
 * (failed, unknown, or a VM to run; a stop or a signal that came
 * meanwhile), the linger of a failed target or a migrated-away source for
 * its watchers, and a signal to a target with no VM yet. Each row names
 * the fault-matrix cell it stands for, or, after "no cell: ", the
 * integration test (tests/integration/target_failed.sh and the migration
 * tests) or the reason no cell reaches it; fsm_table.h runs them and
 * checks the names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "fsm_table.h"
#include "target_end.h"

#define NO_CELL FSM_NO_CELL

/* The receive thread's end: in -> out. */
struct end_row {
	FSM_ROW_HEAD;
	struct target_end_in in;
	struct target_end_out want;
};

/* failed, unknown, stop_asked, stop_status, pending_signal */
/* clang-format off */
#define FAILED(sig)         {true,  false, false, 0, sig}
#define FAILED_STOP(s, sig) {true,  false, true,  s, sig}
#define DECIDED(unk, sig)   {false, unk,   false, 0, sig}

/* report, exit_status, leave_now, linger, stop_signal */
#define W_FAILED(st, now)   {TARGET_END_FAILED,  st, now,   true,  0}
#define W_UNKNOWN(sig)      {TARGET_END_UNKNOWN, 0,  false, false, sig}
#define W_RUNNING(sig)      {TARGET_END_RUNNING, 0,  false, false, sig}
/* clang-format on */

static const struct end_row end_rows[] = {
    {"the VM cannot be created here: failed, status 1, linger for a poller",
     NO_CELL "integration.target_failed_create-fails", FAILED(0), W_FAILED(1, false)},
    {"main ends after its VM description: failed, linger",
     NO_CELL "integration.target_failed_desc-then-close", FAILED(0), W_FAILED(1, false)},
    {"main ends after CAPS: failed, linger", NO_CELL "integration.target_failed_caps-then-close",
     FAILED(0), W_FAILED(1, false)},
    {"data 0 ends inside a record: failed, linger",
     NO_CELL "integration.target_failed_data-end-first", FAILED(0), W_FAILED(1, false)},
    {"main ends while the receiver runs: failed, linger",
     NO_CELL "integration.target_failed_main-end-first", FAILED(0), W_FAILED(1, false)},
    {"the source killed during setup: the target fails, status 1", "kill-source:setup",
     FAILED(0), W_FAILED(1, false)},
    {"the source killed in the first pass: the target fails, status 1", "kill-source:first-pass",
     FAILED(0), W_FAILED(1, false)},
    {"the link lost during setup: the target fails, status 1", "reset:setup", FAILED(0),
     W_FAILED(1, false)},
    {"a SIGTERM as it fails, acted on before the end: its status, leave at once",
     NO_CELL "integration.target_failed_stop-races (the signal passed on before the end)",
     FAILED_STOP(128 + SIGTERM, 0), W_FAILED(128 + SIGTERM, false)},
    {"a SIGTERM pended while the source decided, then a failure: leave at once, status 1",
     NO_CELL "integration.target_failed_stop-races (the signal came during the decision)",
     FAILED(SIGTERM), W_FAILED(1, true)},
    {"a shutdown answered before the failure: the stop's status, linger for the reply",
     NO_CELL "integration.target_failed_shutdown-races", FAILED_STOP(0, 0), W_FAILED(0, false)},
    {"a cancel (status 1) before the failure: status 1, linger for the reply",
     NO_CELL "a cancel's race with the failure: timing only, no cell or test fixes it",
     FAILED_STOP(1, 0), W_FAILED(1, false)},
    {"COMMIT arrived, then the source died: run", "kill-source:sw-after-commit", DECIDED(false, 0),
     W_RUNNING(0)},
    {"PREPARED, no decision, the source died: switchover-unknown", "kill-source:sw-after-state",
     DECIDED(true, 0), W_UNKNOWN(0)},
    {"run, with a SIGINT pended while the source decided: stop the VM as SIGINT",
     NO_CELL "a signal between PREPARED and the decision: timing only, no cell sends one",
     DECIDED(false, SIGINT), W_RUNNING(SIGINT)},
    {"unknown, with a SIGTERM pended: stop the VM as SIGTERM",
     NO_CELL "a signal between PREPARED and the decision: timing only, no cell sends one",
     DECIDED(true, SIGTERM), W_UNKNOWN(SIGTERM)},
};

static const char *report_name(enum target_end_report r)
{
	return r == TARGET_END_FAILED ? "FAILED" : r == TARGET_END_UNKNOWN ? "UNKNOWN" : "RUNNING";
}

static bool run_end_row(const void *item, char *got, size_t len)
{
	const struct end_row *r = item;
	struct target_end_out out;

	target_end_received(&r->in, &out);
	snprintf(got, len, "%s status %d leave_now %d linger %d stop_signal %d",
		 report_name(out.report), out.exit_status, out.leave_now, out.linger,
		 out.stop_signal);
	return out.report == r->want.report && out.exit_status == r->want.exit_status &&
	       out.leave_now == r->want.leave_now && out.linger == r->want.linger &&
	       out.stop_signal == r->want.stop_signal;
}

static void test_received(void **state)
{
	(void)state;
	fsm_table_run("row", end_rows, sizeof(end_rows) / sizeof(end_rows[0]), sizeof(end_rows[0]),
		      run_end_row);
}

/* One linger tick: its inputs -> the new watched state, and whether to leave. */
struct linger_row {
	FSM_ROW_HEAD;
	struct linger_in in;
	bool want_watched, want_leave;
};

/* A source (its VM stays) or a failed target, ms since the end; the rest as named. */
#define SRC(m) .has_vm = true, .ms = (m)
#define TGT(m) .has_vm = false, .ms = (m)

static const struct linger_row linger_rows[] = {
    {"a source just migrated, nobody watches yet: wait for a poller",
     NO_CELL "integration migration tests: every completed migration lingers",
     {SRC(0)},
     false,
     false},
    {"a source whose poller got the completion, no stream: leave",
     NO_CELL "integration migration tests: `vmm migrate` without --follow polls",
     {SRC(20), .reported = true},
     false,
     true},
    {"a source whose streams all got the final line and closed: leave",
     NO_CELL "integration migration tests: `vmm migrate` follows the event stream",
     {SRC(20), .settled = true},
     false,
     true},
    {"a source with a stream that never reads: wait while under WATCHED_LINGER_MS",
     NO_CELL "a watcher that never reads: no fault cell stalls a client",
     {SRC(WATCHED_LINGER_MS - 1), .open = 1},
     true,
     false},
    {"a source with a stream that never reads: leave at WATCHED_LINGER_MS",
     NO_CELL "a watcher that never reads: no fault cell stalls a client",
     {SRC(WATCHED_LINGER_MS), .open = 1},
     true,
     true},
    {"a reported source whose stream stays open: the stream holds it",
     NO_CELL "a watcher that never reads: no fault cell stalls a client",
     {SRC(20), .open = 1, .reported = true},
     true,
     false},
    {"a stream that was open and closed unsettled: leave at WATCHED_LINGER_MS",
     NO_CELL "a watcher that vanished: timing only",
     {SRC(WATCHED_LINGER_MS), .watched = true},
     true,
     true},
    {"a source nobody watches: wait under MIGRATED_LINGER_MS",
     NO_CELL "a migration with no watcher: its client went away before the end",
     {SRC(MIGRATED_LINGER_MS - 1)},
     false,
     false},
    {"a source nobody watches: leave at MIGRATED_LINGER_MS",
     NO_CELL "a migration with no watcher: its client went away before the end",
     {SRC(MIGRATED_LINGER_MS)},
     false,
     true},
    {"a source with a request not answered yet: wait even though settled",
     NO_CELL "a request sent before the end: timing only",
     {SRC(20), .busy = true, .settled = true},
     false,
     false},
    {"a source with a request never answered: leave past the poller's time + WATCHED",
     NO_CELL "a client that vanished mid-reply: timing only",
     {SRC(MIGRATED_LINGER_MS + WATCHED_LINGER_MS), .busy = true},
     false,
     true},
    {"a failed target nobody watches: wait under FAILED_LINGER_MS",
     "kill-source:setup",
     {TGT(FAILED_LINGER_MS - 1)},
     false,
     false},
    {"a failed target nobody watches: leave at FAILED_LINGER_MS",
     "kill-source:first-pass",
     {TGT(FAILED_LINGER_MS)},
     false,
     true},
    {"a failed target whose poller asked (the stopped target's GET): leave",
     NO_CELL "integration.target_failed_create-fails",
     {TGT(20), .reported = true},
     false,
     true},
    {"a failed target whose event stream got \"failed\": leave",
     NO_CELL "integration.target_failed_data-end-first",
     {TGT(20), .open = 1, .settled = true},
     true,
     true},
    {"a failed target with a stream not settled: wait",
     NO_CELL "integration.target_failed_main-end-first",
     {TGT(20), .open = 1},
     true,
     false},
    {"a failed target signalled while the source decided, no stream: leave at once",
     NO_CELL "integration.target_failed_stop-races",
     {TGT(0), .in_leave = true},
     false,
     true},
    {"a failed target signalled, a stream open: wait for its line",
     NO_CELL "integration.target_failed_stop-races",
     {TGT(0), .open = 1, .in_leave = true},
     true,
     false},
    {"a failed target's shutdown not replied yet: wait for the reply",
     NO_CELL "integration.target_failed_shutdown-races",
     {TGT(20), .busy = true},
     false,
     false},
    {"a failed target's shutdown replied: leave at once",
     NO_CELL "integration.target_failed_shutdown-races",
     {TGT(20), .in_leave = true},
     false,
     true},
    {"a failed target with a reply never written: leave past FAILED + WATCHED",
     NO_CELL "a client that vanished mid-reply: timing only",
     {TGT(FAILED_LINGER_MS + WATCHED_LINGER_MS), .busy = true},
     false,
     true},
};

static bool run_linger_row(const void *item, char *got, size_t len)
{
	const struct linger_row *r = item;
	struct linger_out out;

	linger_tick(&r->in, &out);
	snprintf(got, len, "watched %d leave %d", out.watched, out.leave);
	return out.watched == r->want_watched && out.leave == r->want_leave;
}

static void test_linger(void **state)
{
	(void)state;
	fsm_table_run("row", linger_rows, sizeof(linger_rows) / sizeof(linger_rows[0]),
		      sizeof(linger_rows[0]), run_linger_row);
}

/* A signal to a target with no VM: runtime_incoming_stop()'s return -> what to do. */
struct stop_row {
	FSM_ROW_HEAD;
	int ret;
	enum target_stop_action want;
};

static const struct stop_row stop_rows[] = {
    {"a signal while waiting: passed on, the receive thread ends",
     NO_CELL "a signal to a waiting target: integration tests of --incoming", 0, TARGET_STOP_DONE},
    {"a signal while the source decides: pended until the VM is here",
     NO_CELL "a signal between PREPARED and the decision: timing only, no cell sends one", -EBUSY,
     TARGET_STOP_PEND},
    {"a signal after the failure: leave at once", NO_CELL "integration.target_failed_stop-races",
     -EALREADY, TARGET_STOP_LEAVE},
    {"a signal with no incoming migration: nothing else to do",
     NO_CELL "not a failure: a target whose migration finished has its VM", -ENOENT,
     TARGET_STOP_DONE},
};

static bool run_stop_row(const void *item, char *got, size_t len)
{
	const struct stop_row *r = item;
	enum target_stop_action a = target_stop_no_vm(r->ret);

	snprintf(got, len, "action %d", (int)a);
	return a == r->want;
}

static void test_stop_no_vm(void **state)
{
	(void)state;
	fsm_table_run("row", stop_rows, sizeof(stop_rows) / sizeof(stop_rows[0]),
		      sizeof(stop_rows[0]), run_stop_row);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_received),
	    cmocka_unit_test(test_linger),
	    cmocka_unit_test(test_stop_no_vm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
