/* SPDX-License-Identifier: Apache-2.0 */
/*
 * converge.c - when a loop of dirty passes stops (converge.h): precopy's
 * switchover decision and a live snapshot's pause, the rules only, out of
 * the pass loops so that each can be tested.
 */
#include "converge.h"

enum converge_decision converge_decide(const struct migration_params *p,
				       const struct converge_input *in)
{
	bool fits, shrinking, stuck, limits, stalled;

	if (p->mode == MIGRATION_MODE_POSTCOPY && in->pass >= p->postcopy_after)
		return CONVERGE_POSTCOPY;
	if (in->pass == 0)
		return CONVERGE_KEEP_GOING;
	/* The pages and the commit's round trips; no rate yet never fits. */
	fits = in->est_us != UINT64_MAX && in->fixed_us <= p->downtime_ms * 1000 &&
	       in->est_us <= p->downtime_ms * 1000 - in->fixed_us;
	/* Still halving and not yet tiny: one more pass shortens the blackout. */
	shrinking = in->pending * 2 <= in->prev_pending && in->est_us >= 1000;
	/* auto: three passes that do not shrink the rest by a fifth will not converge. */
	stuck = in->pass >= 3 && in->pending * 5 > in->prev_pending * 4;
	limits = in->pass >= p->max_passes || in->elapsed_ms >= p->max_time_ms;
	/*
	 * No pass shrinks the rest any more, and this one is as small as it
	 * gets: within a sixteenth of the least so far, not a fifth below it.
	 */
	stalled = in->pass >= 3 && in->least_pending && !in->throttle_can_rise &&
		  in->pending * 16 <= in->least_pending * 17 &&
		  in->pending * 5 > in->least_pending * 4;
	if (fits && !shrinking)
		return CONVERGE_STOP_AND_COPY;
	/* A target that cannot do postcopy (CAPS) makes auto plain precopy. */
	if (p->mode == MIGRATION_MODE_AUTO && in->target_postcopy && !fits &&
	    ((stuck && !in->throttle_can_rise) || limits))
		return CONVERGE_POSTCOPY;
	if (limits) {
		if (p->no_converge == MIGRATION_NO_CONVERGE_FAIL)
			return CONVERGE_GIVE_UP;
		return CONVERGE_LIMITS_STOP_COPY;
	}
	/* Mode postcopy switches over the postcopy way, at postcopy_after. */
	if (stalled && !fits && p->mode != MIGRATION_MODE_POSTCOPY &&
	    p->no_converge == MIGRATION_NO_CONVERGE_SWITCHOVER)
		return CONVERGE_STALLED_STOP_COPY;
	return CONVERGE_KEEP_GOING;
}

uint64_t converge_estimate_us(uint64_t pending, uint64_t page_rate)
{
	return page_rate ? pending * 1000000 / page_rate : UINT64_MAX;
}

uint64_t converge_commit_us(uint64_t sync_us)
{
	return sync_us > UINT64_MAX / CONVERGE_COMMIT_TRIPS ? UINT64_MAX
							    : sync_us * CONVERGE_COMMIT_TRIPS;
}

uint64_t converge_page_rate(uint64_t prev_rate, uint64_t pages, uint64_t pass_ns)
{
	if (pages >= 1024 || !prev_rate)
		return pages * 1000000000ull / pass_ns + 1;
	return prev_rate;
}
