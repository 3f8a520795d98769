/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PRECOPY: pass after pass while the guest runs. Each pass harvests the
 * dirty log of every slot concurrently, decides whether to switch over,
 * and otherwise sends the pending pages on the data connections and waits
 * for the target to apply them (SYNC / SYNC_ACK).
 *
 * The decision itself, and the page rate it estimates the blackout with,
 * are pure functions in converge.c. With --converge throttle, each pass
 * that does not converge may slow the vCPUs (throttle_apply.c, its policy
 * in throttle.c); precopy() puts them back to full speed however it ends.
 */
#include <errno.h>

#include "clock.h"
#include "converge.h"
#include "phases.h"

/* What a pass measured, for the next decision. */
struct pass_rate {
	uint64_t prev_pending;	/* pending at the previous decision */
	uint64_t least_pending; /* the least pending at a decision after pass 0; 0: none yet */
	uint64_t page_rate;	/* pages/s of the last real pass, 0 before the first */
	uint64_t pass_ns;	/* the last pass's send time, 0 before the first */
};

/* Pages pass 0 sends before the "source-first-pass" step hook stops the source. */
#define FIRST_PASS_STOP_PAGES 256

/* The step hook's fire function: stop like a source frozen early in pass 0. */
static void stop_first_pass(void *arg)
{
	struct migration *m = arg;

	test_hook_step(&m->hooks, TEST_STEP_SOURCE_FIRST_PASS);
}

/*
 * Test hook only (one check per pass): the first pass stops once a few
 * pages are out, or at its end if it had fewer, so that a fault lands in
 * pass 0 however fast the pass is.
 */
static void first_pass_hook(struct migration *m, unsigned pass, bool begin)
{
	if (pass || m->hooks.stop_at != TEST_STEP_SOURCE_FIRST_PASS)
		return;
	if (begin) {
		uint64_t now = __atomic_load_n(&m->pages_sent, __ATOMIC_RELAXED);

		if (test_hook_watch_start(&m->commit.stop_watch, &m->pages_sent,
					  now + FIRST_PASS_STOP_PAGES, stop_first_pass, m)) {
			stop_first_pass(m); /* no watcher thread: stop at once instead */
			m->commit.stop_watch.fired = true;
		}
		return;
	}
	test_hook_watch_stop(&m->commit.stop_watch);
	if (!m->commit.stop_watch.fired)
		stop_first_pass(m);
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
	/*
	 * The rate counts the pages that cost the link (data, compressed or
	 * not), not zero markers: a first pass with hundreds of zero pages
	 * measured 722 pages/s on a link that carries 509 of the hot set's, and
	 * a rest it predicted at 1.42 s took 2.11 s, over a 1.5 s limit. The
	 * rest is counted as data too, so a zero page in it only errs long.
	 */
	pages0 = __atomic_load_n(&m->pages_sent, __ATOMIC_RELAXED);
	progress_phase_begin(m, todo);
	first_pass_hook(m, pass, true);
	ret = send_pass(m);
	first_pass_hook(m, pass, false);
	progress_phase_end(m);
	if (ret)
		return ret;
	r->pass_ns = now_ns() - t0 + 1;
	pages = __atomic_load_n(&m->pages_sent, __ATOMIC_RELAXED) - pages0;
	r->page_rate = converge_page_rate(r->page_rate, pages, r->pass_ns);
	update_live(m, t_start);
	return 0;
}

/* Why the loop switched over, in the progress record (docs/api.md). */
static void record_reason(struct migration *m, enum converge_decision d)
{
	if (d == CONVERGE_STOP_AND_COPY)
		progress_switchover_reason(m, true, MIGRATION_WHY_CONVERGED);
	else if (d == CONVERGE_LIMITS_STOP_COPY)
		progress_switchover_reason(m, false, MIGRATION_WHY_LIMITS);
	else if (d == CONVERGE_STALLED_STOP_COPY)
		progress_switchover_reason(m, false, MIGRATION_WHY_STALLED);
	else if (d == CONVERGE_POSTCOPY)
		progress_switchover_reason(m, -1,
					   m->params.mode == MIGRATION_MODE_POSTCOPY
					       ? MIGRATION_WHY_REQUESTED
					       : MIGRATION_WHY_NOT_CONVERGING);
}

/* The pass loop of precopy(); returns as precopy() does, the throttle possibly on. */
static int passes(struct migration *m, uint64_t t_start, enum precopy_outcome *out)
{
	struct migration_params *p = &m->params;
	struct pass_rate r = {.prev_pending = UINT64_MAX};
	bool throttling = p->converge == MIGRATION_CONVERGE_THROTTLE;

	for (unsigned pass = 0;; pass++) {
		struct harvest_stats st;
		struct converge_input in;
		uint64_t est_us, commit_us;
		enum converge_decision d;
		int ret;

		if (pass == 1)
			test_hook_step(&m->hooks, TEST_STEP_SOURCE_SECOND_PASS);
		ret = harvest_pass(m, pass, &st);
		if (ret)
			return ret;
		est_us = converge_estimate_us(st.pending, r.page_rate);
		commit_us = converge_commit_us(m->sync_wait_ns / 1000);
		m->pass = pass;
		in = (struct converge_input){
		    .pass = pass,
		    .pending = st.pending,
		    .prev_pending = r.prev_pending,
		    .est_us = est_us,
		    .elapsed_ms = ms_since(t_start),
		    .target_postcopy = m->target_postcopy,
		    .least_pending = r.least_pending,
		    .throttle_can_rise = throttling && m->throttle.level < p->throttle_max_pct,
		    .fixed_us = commit_us};
		d = converge_decide(p, &in);
		pthread_mutex_lock(&m->lock);
		m->progress.expected_downtime_ms = r.page_rate ? (est_us + commit_us) / 1000 : 0;
		m->clock.commit_us = commit_us;
		pthread_mutex_unlock(&m->lock);
		record_reason(m, d);
		switch (d) {
		case CONVERGE_STOP_AND_COPY:
		case CONVERGE_LIMITS_STOP_COPY:
		case CONVERGE_STALLED_STOP_COPY:
			*out = PRECOPY_STOP_AND_COPY;
			return 0;
		case CONVERGE_POSTCOPY:
			*out = PRECOPY_POSTCOPY;
			return 0;
		case CONVERGE_GIVE_UP:
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
		case CONVERGE_KEEP_GOING:
			break;
		}
		r.prev_pending = st.pending;
		if (pass && (!r.least_pending || st.pending < r.least_pending))
			r.least_pending = st.pending;
		/* After a pass that did not converge, the throttle; pass 0 is its baseline. */
		ret = 0;
		if (throttling && !pass)
			throttle_begin(m);
		else if (throttling)
			ret = throttle_after_pass(m, pass, r.page_rate);
		if (!ret)
			ret = send_and_measure(m, pass, st.pending, t_start, &r);
		if (ret)
			return ret;
	}
}

int precopy(struct migration *m, uint64_t t_start, enum precopy_outcome *out)
{
	int ret = passes(m, t_start, out);

	/* Full speed again: paused for the switchover, or running on after a failure. */
	throttle_end(m, m->pass);
	return ret;
}
