/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pc_fsm.h - the target's postcopy phase as a pure transition function:
 * paused (a connection was lost, waiting for the source's resume),
 * complete (every stale page in place: POSTCOPY_DONE decided), released
 * (after DONE, the source's proven RELEASE came: its exit ends the
 * migration) and stopping (postcopy_incoming_stop() began) with the events
 * that change them. No
 * I/O, no lock, no clock: pc_state.c steps it under pc_lock and mirrors
 * the bits into struct pc_state's atomics for the lock-free readers
 * (pc_paused() and the others); tests/unit/test_pc_fsm.c is its table
 * (docs/migration-protocol.md, "Postcopy", "Resume").
 *
 * Why bits, not one enum: they are independent on purpose. A stop may
 * begin while paused (progress still says paused, with its reason), and
 * completion is decided by the pages alone, so a connection lost after
 * the last page arrived pauses nothing and the DONE still goes out.
 *
 * After DONE the control thread reads main for RELEASE (pc_control.c):
 * main ending then finishes the migration when RELEASE came, and otherwise
 * means DONE may be lost, so the source's resume gets it again. Those two
 * events are rows of this table too; pc_control.c only acts on them.
 */
#ifndef VMM_MIGRATION_TARGET_PC_FSM_H
#define VMM_MIGRATION_TARGET_PC_FSM_H

#include <stdbool.h>

struct pc_fsm {
	bool paused;
	bool complete;
	bool stopping;
	bool released; /* after DONE: the source's RELEASE came */
};

enum pc_event {
	PC_EV_LOST = 0,	     /* a connection failed (any thread) */
	PC_EV_RESUMED,	     /* the control thread's resume succeeded */
	PC_EV_RESUME_FAILED, /* ... failed: still paused */
	PC_EV_STOP,	     /* postcopy_incoming_stop() began */
	PC_EV_ALL_IN,	     /* the vCPUs run and no stale page is missing */
	PC_EV_RELEASE,	     /* a proven RELEASE read on main */
	PC_EV_MAIN_ENDED,    /* main failed or ended while read for RELEASE */
	PC_EV_COUNT
};

enum pc_action {
	PC_ACT_NONE = 0,  /* nothing to do */
	PC_ACT_PAUSE,	  /* record the reason, wake the control thread; pages stay missing */
	PC_ACT_RESUMED,	  /* count the resume */
	PC_ACT_STOP,	  /* wake the control thread: it ends postcopy */
	PC_ACT_SEND_DONE, /* POSTCOPY_DONE, exactly once: collect the latencies */
	PC_ACT_IGNORE,	  /* too late (complete, stopping) or already paused: nothing changes */
	PC_ACT_RELEASED,  /* the source let go: no more heartbeats; its exit ends it */
	PC_ACT_FINISH,	  /* main ended after RELEASE: the migration is finished */
	PC_ACT_REDO_DONE, /* main ended after DONE, before RELEASE: resume, DONE again */
	PC_ACT_COUNT
};

/* Steps f on ev: the bits in f, the action returned. */
enum pc_action pc_fsm_step(struct pc_fsm *f, enum pc_event ev);
/* Names for logs and tests; "?" out of range. */
const char *pc_event_name(enum pc_event ev);
const char *pc_action_name(enum pc_action a);

#endif /* VMM_MIGRATION_TARGET_PC_FSM_H */
