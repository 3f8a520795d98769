/* SPDX-License-Identifier: Apache-2.0 */
/*
 * converge.h - when a loop of dirty passes stops, pure: what precopy()
 * (source/precopy.c) decides after each harvest, and a live snapshot
 * (persist/persist_live.c) the same way, from plain numbers. No I/O, no
 * clock, no state of its own; any thread may call it. Beside the dirty log
 * in vmm_dirty so that both can; the unit test is tests/unit/test_converge.c.
 *
 * The decision estimates the blackout as pending pages over the page rate
 * of the last real pass. Pages per second, not bytes: compressed pages are
 * cheap on the wire, and what the blackout pays is reading, compressing and
 * applying each one.
 */
#ifndef VMM_MIGRATION_CONVERGE_H
#define VMM_MIGRATION_CONVERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "migration.h"

/* What precopy() does after a harvest. */
enum converge_decision {
	CONVERGE_KEEP_GOING,	   /* send the pending pages, then harvest again */
	CONVERGE_STOP_AND_COPY,	   /* converged: the rest fits downtime_ms, no longer halving */
	CONVERGE_LIMITS_STOP_COPY, /* past max_passes / max_time_ms, no_converge = switchover
				      or at-limits */
	CONVERGE_POSTCOPY,	   /* mode postcopy after postcopy_after passes, or auto stuck */
	CONVERGE_GIVE_UP,	   /* past the limits, no_converge = fail: -ETIMEDOUT */
	/*
	 * passes stopped shrinking the rest and this one has as little to send
	 * as any before it: no_converge = switchover stops and copies now
	 * rather than at the limits (where the rest may be larger again)
	 */
	CONVERGE_STALLED_STOP_COPY,
};

/* The numbers one decision looks at. */
struct converge_input {
	unsigned pass;	       /* 0 at the first harvest, before any page went out */
	uint64_t pending;      /* dirty pages now (this harvest) */
	uint64_t prev_pending; /* pending at the previous decision; UINT64_MAX before the first */
	uint64_t est_us;       /* converge_estimate_us(pending, page rate) */
	uint64_t elapsed_ms;   /* since the migration started */
	bool target_postcopy;  /* the target's CAPS said it can do postcopy */
	/*
	 * From here on, 0 / false means "not known": a caller that leaves them
	 * out gets the decision without the stalled rule, without a throttle
	 * and with the pages alone held against downtime_ms.
	 */
	uint64_t least_pending; /* the least pending at an earlier decision after pass 0 */
	/* converge throttle and below throttle_max_pct: passes may yet shrink */
	bool throttle_can_rise;
	/*
	 * The blackout's cost besides the pages: the commit's round trips
	 * (converge_commit_us()); held against downtime_ms with est_us, so
	 * that the downtime fits, not only its pages.
	 */
	uint64_t fixed_us;
};

/*
 * The decision after a harvest. Switching over early while the dirty set
 * still halves each pass would waste downtime, so stop-and-copy also waits
 * for it to stop shrinking. A rest that does not fit is not waited out to
 * the limits once passes stopped shrinking it (three passes in, none a
 * fifth below the least so far): with no_converge = switchover the source
 * switches over at the first pass that has no more than the least seen
 * (within a sixteenth, the noise of a pass), unless a throttle that can
 * still rise may yet make the passes shrink; auto's postcopy fallback waits
 * for that throttle too. p: the migration's validated parameters
 * (max_passes, max_time_ms >= 1; mode postcopy only with a target that can).
 */
enum converge_decision converge_decide(const struct migration_params *p,
				       const struct converge_input *in);

/* Expected blackout in us: pending pages at page_rate pages/s; UINT64_MAX with no rate yet. */
uint64_t converge_estimate_us(uint64_t pending, uint64_t page_rate);

/*
 * The commit's share of a blackout (converge_input.fixed_us): its round
 * trips on the main connection, END to PREPARED and COMMIT to COMMITTED
 * (CONVERGE_COMMIT_TRIPS), each taken as long as the last pass's SYNC to
 * SYNC_ACK (sync_us: the senders done to the target's answer). A few
 * microseconds on a host; on a slow or loaded one, or far away, what makes
 * a downtime go over a limit its pages fit.
 */
#define CONVERGE_COMMIT_TRIPS 2u
uint64_t converge_commit_us(uint64_t sync_us);

/*
 * The page rate after a pass that sent `pages` in pass_ns (> 0) ns: a small
 * pass (under 1024 pages) measures latency, not throughput, so it keeps
 * prev_rate unless there is none yet (0). Never 0 once measured.
 */
uint64_t converge_page_rate(uint64_t prev_rate, uint64_t pages, uint64_t pass_ns);

#endif /* VMM_MIGRATION_CONVERGE_H */
