/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PRECOPY: pass after pass while the guest runs. Each pass harvests the
 * dirty log of every slot concurrently, decides whether to switch over,
 * and otherwise sends the pending pages on the data connections and waits
 * for the target to apply them (SYNC / SYNC_ACK).
 *
 * The decision estimates the blackout as pending pages over the page rate
 * of the last real pass. Pages per second, not bytes: compressed pages are
 * cheap on the wire, and what the blackout pays is reading, compressing and
 * applying each one.
 */
#include <errno.h>

#include "clock.h"
#include "phases.h"

/* What a pass measured, for the next decision. */
struct pass_rate {
	uint64_t prev_pending; /* pending at the previous decision */
	uint64_t page_rate;    /* pages/s of the last real pass, 0 before the first */
	uint64_t pass_ns;      /* the last pass's send time, 0 before the first */
};

enum decision { KEEP_GOING, SWITCH_STOP_AND_COPY, SWITCH_POSTCOPY, GIVE_UP };

/*
 * Switching over early while the dirty set still halves each pass would
 * waste downtime, so stop-and-copy also waits for it to stop shrinking.
 * Sets *converged for a stop-and-copy decision.
 */
static enum decision decide(const struct migration_params *p, bool target_postcopy, unsigned pass,
			    uint64_t pending, uint64_t est_us, const struct pass_rate *r,
			    uint64_t elapsed_ms, bool *converged)
{
	bool fits, shrinking, stuck, limits;

	if (p->mode == MIGRATION_MODE_POSTCOPY && pass >= p->postcopy_after)
		return SWITCH_POSTCOPY;
	if (pass == 0)
		return KEEP_GOING;
	fits = est_us <= p->downtime_ms * 1000;
	/* Still halving and not yet tiny: one more pass shortens the blackout. */
	shrinking = pending * 2 <= r->prev_pending && est_us >= 1000;
	/* auto: three passes that do not shrink the rest by a fifth will not converge. */
	stuck = pass >= 3 && pending * 5 > r->prev_pending * 4;
	limits = pass >= p->max_passes || elapsed_ms >= p->max_time_ms;
	if (fits && !shrinking) {
		*converged = true;
		return SWITCH_STOP_AND_COPY;
	}
	/* A target that cannot do postcopy (CAPS) makes auto plain precopy. */
	if (p->mode == MIGRATION_MODE_AUTO && target_postcopy && !fits && (stuck || limits))
		return SWITCH_POSTCOPY;
	if (limits) {
		if (p->no_converge == MIGRATION_NO_CONVERGE_FAIL)
			return GIVE_UP;
		*converged = false;
		return SWITCH_STOP_AND_COPY;
	}
	return KEEP_GOING;
}

/* Sends one pass of `todo` pages and measures it into *r. */
static int send_and_measure(struct migration *m, unsigned pass, uint64_t todo, uint64_t t_start,
			    struct pass_rate *r)
{
	uint64_t t0, pages0, pages;
	int ret;

	m->first_pass = pass == 0;
	m->first_pass_pending = false;
	t0 = now_ns();
	pages0 = __atomic_load_n(&m->pages_sent, __ATOMIC_RELAXED) +
		 __atomic_load_n(&m->zero_pages, __ATOMIC_RELAXED);
	progress_phase_begin(m, todo);
	ret = send_pass(m);
	progress_phase_end(m);
	if (ret)
		return ret;
	r->pass_ns = now_ns() - t0 + 1;
	pages = __atomic_load_n(&m->pages_sent, __ATOMIC_RELAXED) +
		__atomic_load_n(&m->zero_pages, __ATOMIC_RELAXED) - pages0;
	/* A small pass measures latency, not throughput: keep the last real one. */
	if (pages >= 1024 || !r->page_rate)
		r->page_rate = pages * 1000000000ull / r->pass_ns + 1;
	update_live(m, t_start);
	return 0;
}

/* Why the loop switched over, in the progress record (docs/api.md). */
static void record_reason(struct migration *m, enum decision d, bool converged)
{
	if (d == SWITCH_STOP_AND_COPY)
		progress_switchover_reason(m, converged,
					   converged ? MIGRATION_WHY_CONVERGED : MIGRATION_WHY_LIMITS);
	else if (d == SWITCH_POSTCOPY)
		progress_switchover_reason(m, -1,
					   m->params.mode == MIGRATION_MODE_POSTCOPY
					       ? MIGRATION_WHY_REQUESTED
					       : MIGRATION_WHY_NOT_CONVERGING);
}

int precopy(struct migration *m, uint64_t t_start, enum precopy_outcome *out)
{
	struct migration_params *p = &m->params;
	struct pass_rate r = {.prev_pending = UINT64_MAX};

	for (unsigned pass = 0;; pass++) {
		struct harvest_stats st;
		uint64_t est_us;
		bool converged = false;
		enum decision d;
		int ret;

		if (pass == 1)
			test_hook_step(&m->hooks, TEST_STEP_SOURCE_SECOND_PASS);
		ret = harvest_pass(m, &st);
		if (ret)
			return ret;
		est_us = r.page_rate ? st.pending * 1000000 / r.page_rate : UINT64_MAX;
		m->pass = pass;
		d = decide(p, m->target_postcopy, pass, st.pending, est_us, &r, ms_since(t_start),
			   &converged);
		pthread_mutex_lock(&m->lock);
		m->progress.pass = pass;
		m->progress.expected_downtime_ms = r.page_rate ? est_us / 1000 : 0;
		pthread_mutex_unlock(&m->lock);
		record_reason(m, d, converged);
		switch (d) {
		case SWITCH_STOP_AND_COPY:
			*out = PRECOPY_STOP_AND_COPY;
			return 0;
		case SWITCH_POSTCOPY:
			*out = PRECOPY_POSTCOPY;
			return 0;
		case GIVE_UP:
			migration_fail(m, -ETIMEDOUT,
				       "precopy did not converge in %u passes / %llu ms "
				       "(expected downtime %llu ms > limit %llu ms)%s%s",
				       pass, (unsigned long long)ms_since(t_start),
				       (unsigned long long)(est_us / 1000),
				       (unsigned long long)p->downtime_ms,
				       p->mode == MIGRATION_MODE_AUTO && !m->target_postcopy
					   ? "; no postcopy: target cannot do postcopy: "
					   : "",
				       p->mode == MIGRATION_MODE_AUTO && !m->target_postcopy
					   ? m->progress.target_postcopy_reason
					   : "");
			return -ETIMEDOUT;
		case KEEP_GOING:
			break;
		}
		r.prev_pending = st.pending;
		ret = send_and_measure(m, pass, st.pending, t_start, &r);
		if (ret)
			return ret;
	}
}
