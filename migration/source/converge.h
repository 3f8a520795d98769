/* SPDX-License-Identifier: Apache-2.0 */
/*
 * converge.h - precopy's switchover decision, pure: what precopy() (precopy.c)
 * decides after each harvest, from plain numbers. No I/O, no clock, no
 * state of its own; any thread may call it. precopy.c is its only caller in
 * the engine; the unit test (tests/unit/test_converge.c) the other.
 *
 * The decision estimates the blackout as pending pages over the page rate
 * of the last real pass. Pages per second, not bytes: compressed pages are
 * cheap on the wire, and what the blackout pays is reading, compressing and
 * applying each one.
 */
#ifndef VMM_MIGRATION_SOURCE_CONVERGE_H
#define VMM_MIGRATION_SOURCE_CONVERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "migration.h"

/* What precopy() does after a harvest. */
enum converge_decision {
	CONVERGE_KEEP_GOING,	   /* send the pending pages, then harvest again */
	CONVERGE_STOP_AND_COPY,	   /* converged: the rest fits downtime_ms, no longer halving */
	CONVERGE_LIMITS_STOP_COPY, /* past max_passes / max_time_ms, no_converge = switchover */
	CONVERGE_POSTCOPY,	   /* mode postcopy after postcopy_after passes, or auto stuck */
	CONVERGE_GIVE_UP,	   /* past the limits, no_converge = fail: -ETIMEDOUT */
};

/* The numbers one decision looks at. */
struct converge_input {
	unsigned pass;	       /* 0 at the first harvest, before any page went out */
	uint64_t pending;      /* dirty pages now (this harvest) */
	uint64_t prev_pending; /* pending at the previous decision; UINT64_MAX before the first */
	uint64_t est_us;       /* converge_estimate_us(pending, page rate) */
	uint64_t elapsed_ms;   /* since the migration started */
	bool target_postcopy;  /* the target's CAPS said it can do postcopy */
};

/*
 * The decision after a harvest. Switching over early while the dirty set
 * still halves each pass would waste downtime, so stop-and-copy also waits
 * for it to stop shrinking. p: the migration's validated parameters
 * (max_passes, max_time_ms >= 1; mode postcopy only with a target that can).
 */
enum converge_decision converge_decide(const struct migration_params *p,
				       const struct converge_input *in);

/* Expected blackout in us: pending pages at page_rate pages/s; UINT64_MAX with no rate yet. */
uint64_t converge_estimate_us(uint64_t pending, uint64_t page_rate);

/*
 * The page rate after a pass that sent `pages` in pass_ns (> 0) ns: a small
 * pass (under 1024 pages) measures latency, not throughput, so it keeps
 * prev_rate unless there is none yet (0). Never 0 once measured.
 */
uint64_t converge_page_rate(uint64_t prev_rate, uint64_t pages, uint64_t pass_ns);

#endif /* VMM_MIGRATION_SOURCE_CONVERGE_H */
