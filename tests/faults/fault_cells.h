/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_cells.h - the fault matrix as data: every fault x phase cell, the
 * step that puts the migration exactly at the phase, and
 * the outcome the design promises there (docs/fault-matrix.md).
 *
 * The table itself is fault_cells.c's `cells`, one line per cell; nothing
 * else in vmm-faults decides what a cell expects. A run classifies what it
 * saw into the same vocabulary (enum fx_outcome), so expected and observed
 * compare as equals.
 */
#ifndef VMM_FAULTS_CELLS_H
#define VMM_FAULTS_CELLS_H

#include <stdbool.h>
#include <stddef.h>

enum fx_fault {
	FX_KILL_TARGET,	  /* kill -9 the target */
	FX_KILL_SOURCE,	  /* kill -9 the source */
	FX_STOP_TARGET,	  /* SIGSTOP the target past every timeout, then SIGCONT */
	FX_STOP_SOURCE,	  /* SIGSTOP the source past every timeout, then SIGCONT */
	FX_RESET,	  /* ss -K every migration connection (RST both ways) */
	FX_BLACKHOLE,	  /* nftables DROP of the migration port both ways, then removed */
	FX_FD_EXHAUSTION, /* RLIMIT_NOFILE of both processes down to their lowest free fd */
	/*
	 * Record faults: the migration goes through recproxy.py, which drops
	 * the first record of that type and cuts the connection it was on
	 * (the record is lost with the link); their phases are the mode.
	 */
	FX_DROP_PREPARED,
	FX_DROP_COMMIT,
	FX_DROP_COMMITTED,
	FX_DROP_RELEASE,
	FX_DROP_DONE,
	/*
	 * 8 connections trickling a byte a second and 64 idle ones, all
	 * reconnecting, on the target's port while a reset (the phase's
	 * switchover or postcopy) is settled or resumed.
	 */
	FX_TRICKLE,
	/*
	 * 64 connections that each send a valid hello and then nothing, all
	 * reconnecting: at setup 32 main and 32 data with random session ids
	 * before a fresh migration; later, with the migration's own session id
	 * (read off the wire), 64 recover ones before the reset's `--recover`,
	 * or 32 main-resume and 32 data ones before the reset's `--resume`.
	 */
	FX_VALID_HELLO,
	/*
	 * A passive reader and an operator's override: through recproxy.py,
	 * which prints every decision record that passes (what a reader of
	 * the wire captures) and drops the first ABORT, the target stopped
	 * after PREPARED (its phase's step), the source switchover-unknown
	 * (postcopy: paused) and its operator's `--recover --decide resume`,
	 * whose proven ABORT is lost; then the target continues, and the
	 * reader replays the captured COMMIT proof as RELEASE (postcopy: and
	 * as a resumed session's RESUME). One owner, the replays refused.
	 */
	FX_READER_RESUME,
	FX_FAULT_COUNT,
};
/* The faults every phase of the grid has (the rest have the cells listed). */
#define FX_GRID_FAULTS FX_DROP_PREPARED

enum fx_phase {
	FX_SETUP,      /* connected, before the first pass */
	FX_FIRST_PASS, /* early in pass 0 */
	FX_LATER_PASS, /* before pass 1 */
	FX_SW_BEFORE,  /* switchover, before the state is in place on the target */
	FX_SW_STATE,   /* switchover, state loaded and PREPARED, before COMMIT */
	FX_SW_COMMIT,  /* switchover, COMMIT sent / read, before COMMITTED */
	FX_PC_EARLY,   /* postcopy, right after the switchover's commit, before the push */
	FX_PC_LATE,    /* postcopy, after 2048 pushed pages */
	FX_PRECOPY,    /* record faults: a precopy migration, the record wherever it comes */
	FX_POSTCOPY,   /* record faults: a postcopy migration */
	FX_PHASE_COUNT,
};
#define FX_GRID_PHASES FX_PRECOPY

/* What the operator sees at the end of a cell, and what it took. */
enum fx_outcome {
	FX_O_NONE,		/* not classified (the run itself failed) */
	FX_O_COMPLETED,		/* the VM runs on the target, the source exited as migrated */
	FX_O_SOURCE_KEEPS,	/* the migration failed; the VM runs on the source */
	FX_O_RESUME_COMPLETES,	/* postcopy paused; `vmm migrate --resume` completes it */
	FX_O_RECOVER_COMPLETES, /* both paused (switchover-unknown); `--recover` settles on the
				   target */
	FX_O_RECOVER_SOURCE,	/* source switchover-unknown, target dead: `--recover` says
				   unreachable,
				   `--recover --decide resume` runs it on the source */
	FX_O_DECIDE_TARGET, /* source dead after PREPARED: the target waits in switchover-unknown,
			       `--recover --decide run` on the target runs it */
	FX_O_CLEAR_ERROR,   /* the VM died with its only complete copy: nobody runs it, the
			       survivor says why (exits non-zero or stays postcopy-paused) */
	FX_O_COUNT,
};

/*
 * Which process a step stops, or none (the fault comes before `vmm migrate`
 * starts, or the proxy drops a record whenever it comes). Every phase is
 * reached by a step, never by polling the progress: a poll can be outrun.
 */
enum fx_side { FX_ON_SOURCE, FX_ON_TARGET, FX_NO_STEP };

/* How the migration is brought to a phase. */
struct fx_trigger {
	enum fx_side side;
	const char *step;    /* VMM_TEST_STOP_AT step; NULL with FX_NO_STEP */
	bool postcopy;	     /* run with --mode postcopy */
	bool before_migrate; /* apply before `vmm migrate` starts (no step at all) */
	const char *drop;    /* record faults: the record recproxy.py drops ("PREPARED") */
};

struct fx_cell {
	enum fx_fault fault;
	enum fx_phase phase;
	struct fx_trigger trig;
	enum fx_outcome expect;
	bool needs_commit; /* meaningful only with the switchover commit protocol */
	bool quick;	   /* in the CI subset (--quick) */
	const char *why;   /* the rule the expectation follows, one line */
};

extern const struct fx_cell fx_cells[];
extern const int fx_ncells;

const char *fx_fault_name(enum fx_fault f);
const char *fx_phase_name(enum fx_phase p);
const char *fx_outcome_name(enum fx_outcome o);

/* 0 when the table has each fault x phase exactly once; else -1 with the first gap or double. */
int fx_cells_check(char *why, size_t len);

/* The cell "FAULT:PHASE" (names as above), or NULL. */
const struct fx_cell *fx_cell_find(const char *fault_phase);

#endif /* VMM_FAULTS_CELLS_H */
