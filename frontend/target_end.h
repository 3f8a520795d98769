/* SPDX-License-Identifier: Apache-2.0 */
/*
 * target_end.h - how a process ends after a migration, decided as pure
 * functions: what a target does when its receive thread ends (a failure,
 * an unknown outcome, or a VM to run), how long a process whose VM left
 * (a migrated-away source) or never came (a failed target) lingers for
 * its watchers, and what a signal does to a target with no VM yet.
 *
 * Nothing here touches the VM, the event loop or the API: the callers
 * (run_incoming.c, run_vm.c, run_loop.c) gather the inputs and perform
 * what comes back, so that tests/unit/test_target_end.c can check every
 * case from a table, each row naming the test or fault-matrix cell it
 * stands for.
 */
#ifndef VMM_FRONTEND_TARGET_END_H
#define VMM_FRONTEND_TARGET_END_H

#include <stdbool.h>
#include <stdint.h>

/* The linger's limits, in ms since the VM's end (or the target's failure). */
#define MIGRATED_LINGER_MS 10000 /* nobody watches: a poller may still come */
#define FAILED_LINGER_MS   1000	 /* the same for a failed target, which has nothing to serve */
#define WATCHED_LINGER_MS  3000	 /* a watcher that does not read or close holds us this long */

/* What the receive thread left: its error, its decision, and what came meanwhile. */
struct target_end_in {
	bool failed;	    /* it returned an error: no VM to run */
	bool unknown;	    /* no error, but the outcome is switchover-unknown */
	bool stop_asked;    /* a stop (API or signal) came before the end */
	int stop_status;    /* that stop's exit status */
	int pending_signal; /* 0, or the SIGINT/SIGTERM that came while the source decided */
};

/* What the API reports from the end on. */
enum target_end_report {
	TARGET_END_FAILED,  /* failed, with the receive thread's reason */
	TARGET_END_UNKNOWN, /* switchover-unknown: wait for the decision */
	TARGET_END_RUNNING, /* the VM runs here */
};

struct target_end_out {
	enum target_end_report report;
	int exit_status; /* FAILED only: the process's status (the stop's, else 1) */
	bool leave_now;	 /* FAILED only: no waiting for a poller (rt.in_leave) */
	bool linger;	 /* FAILED only: linger for the watchers (run_linger_start()) */
	int stop_signal; /* not FAILED: stop the VM as this signal would (0: no stop) */
};

/*
 * The receive thread ended: in -> out. A failure's status is the stop's
 * when one was asked (its reply reached a client, which expects it),
 * else 1; a signal that came while the source decided makes a failed
 * target leave at once, and stops a VM that came, as if it came now.
 */
void target_end_received(const struct target_end_in *in, struct target_end_out *out);

/* One linger tick's inputs: the state (watched) and what the API says now. */
struct linger_in {
	bool has_vm;   /* a migrated-away source (its VM object stays); false: a failed target */
	uint64_t ms;   /* since the VM's end, or the failure */
	bool busy;     /* api_server_busy(): a request sent before the end, not answered yet */
	unsigned open; /* event streams open */
	bool settled;  /* api_server_events_settled(): every stream got its final line */
	bool watched;  /* a stream was open at an earlier tick */
	bool reported; /* a GET of the migration reported its end (rt.migration_reported) */
	bool in_leave; /* a stop came after the failure (rt.in_leave) */
};

struct linger_out {
	bool watched; /* the new state */
	bool leave;   /* break the loop: the process exits */
};

/*
 * One tick of the linger: a request sent before the end is answered
 * first (WATCHED_LINGER_MS past the poller's time at most: a client that
 * vanished mid-reply is never written to); then it leaves once every
 * stream has its final line, once a poller had it with no stream open
 * (or a stop came), once a stream held it WATCHED_LINGER_MS, or after
 * the poller's time (MIGRATED_LINGER_MS with a VM, FAILED_LINGER_MS
 * without).
 */
void linger_tick(const struct linger_in *in, struct linger_out *out);

/* What a SIGINT/SIGTERM does to a target with no VM yet, from runtime_incoming_stop()'s return. */
enum target_stop_action {
	TARGET_STOP_DONE,  /* the stop was passed on (or nothing was there to stop) */
	TARGET_STOP_PEND,  /* the source decides (-EBUSY): act on it once the VM is here */
	TARGET_STOP_LEAVE, /* the migration failed already (-EALREADY): leave at once */
};

enum target_stop_action target_stop_no_vm(int ret);

#endif /* VMM_FRONTEND_TARGET_END_H */
