/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The source's progress record, true at the moment it is read.
 *
 * The migration thread keeps the slow facts in m->progress (pass, harvest
 * times, the downtime and its parts, the switchover's reason) and marks
 * the sending phase under way (progress_phase_begin). What moves within a
 * phase is computed in migration_get_progress() from the engine's atomic
 * counters: elapsed time, bytes on every connection, pages done out of the
 * phase's, the rates since the phase began and the downtime they predict.
 * So a poll in the middle of the first pass of a large guest already shows
 * plausible, non-zero numbers, and nothing waits for a pass to end.
 *
 * Meanings of every field: docs/api.md, "the progress object".
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "converge.h"
#include "session.h"
#include "vm.h"

/* A phase shorter than this measures latency, not rates: keep the last ones. */
#define RATE_MIN_NS    200000000ull /* 200 ms */
#define RATE_MIN_PAGES 1024u	    /* or fewer pages than this */
#define NS_PER_S       1000000000ull
/* 50 ms between two harvests, or the last dirty rate stays (see harvest_pass) */
#define DIRTY_RATE_MIN_NS 50000000ull

static uint64_t load(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* Pages the current phase has dealt with: precopy's send, or postcopy's push and requests. */
static uint64_t done_pages(struct migration *m)
{
	if (m->clock.postcopy_started)
		return load(&m->pc.pages_requested) + load(&m->pc.pages_pushed);
	return load(&m->pages_sent) + load(&m->zero_pages) + load(&m->skipped_pages);
}

static bool final(enum migration_state s)
{
	return s == MIGRATION_COMPLETED || s == MIGRATION_FAILED || s == MIGRATION_CANCELLED;
}

void update_live(struct migration *m, uint64_t t_start)
{
	pthread_mutex_lock(&m->lock);
	m->progress.sent_bytes = load(&m->wire_bytes);
	m->progress.pages_sent = load(&m->pages_sent);
	m->progress.zero_pages = load(&m->zero_pages);
	m->progress.skipped_pages = load(&m->skipped_pages);
	m->progress.total_ms = ms_since(t_start);
	pthread_mutex_unlock(&m->lock);
}

/*
 * The dirty rate, measured per memslot and summed: each slot's pages found
 * dirty over the time since that slot's previous GET (the sharded RAM makes
 * it a count the harvest has already made). Slots are harvested one after
 * the other, on several threads: each over its own interval, not the
 * harvest's. A slot read for the first time adds nothing.
 */
static uint64_t slots_dirty_rate(const struct harvest *h)
{
	uint64_t rate = 0;

	for (uint32_t i = 0; i < h->nslots; i++) {
		const struct harvest_slot *hs = &h->slots[i];

		if (hs->prev_got_ns && hs->got_ns > hs->prev_got_ns)
			rate += hs->npending * NS_PER_S / (hs->got_ns - hs->prev_got_ns);
	}
	return rate;
}

int harvest_pass(struct migration *m, unsigned pass, struct harvest_stats *st)
{
	uint64_t t0 = now_ns();
	int ret = harvest_run(&m->harvest, false, st);

	if (ret) {
		migration_fail(m, ret, "harvesting the dirty log: %s", chan_strerror(ret));
		return ret;
	}
	pthread_mutex_lock(&m->lock);
	m->progress.harvest_last_us = st->wall_ns / 1000;
	m->progress.harvest_total_us += st->wall_ns / 1000;
	/* What it found is the next phase's work, none of it sent yet: one consistent record. */
	m->progress.pass = pass;
	m->progress.pass_pages = st->pending;
	m->progress.pass_done_pages = 0;
	m->progress.remaining_bytes = st->pending * GUEST_PAGE_SIZE;
	/*
	 * Only a harvest after a pass was sent finds what the guest dirtied
	 * since the previous one: before the first pass it finds every page
	 * (INITIALLY_SET) or every resident one (a sparse guest's setup
	 * harvests too, milliseconds earlier: 17k pages in 9 ms read as 1.9M
	 * pages/s). A short pass keeps the last rate: what a harvest finds is
	 * what was dirtied since each chunk's last clear, which over a pass of
	 * a millisecond reads as an impossible rate.
	 */
	if (m->clock.phase_since_harvest && t0 >= m->clock.last_harvest_ns + DIRTY_RATE_MIN_NS) {
		m->progress.dirty_rate_pages_per_s = slots_dirty_rate(&m->harvest);
		m->progress.dirty_rate_known = true;
	}
	m->clock.last_harvest_ns = t0;
	m->clock.phase_since_harvest = false;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

void progress_phase_begin(struct migration *m, uint64_t todo)
{
	uint64_t done = done_pages(m), wire = load(&m->wire_bytes);

	pthread_mutex_lock(&m->lock);
	m->clock.phase_t0_ns = now_ns();
	m->clock.phase_todo = todo;
	m->clock.phase_done0 = done;
	m->clock.phase_wire0 = wire;
	m->progress.pass_pages = todo;
	m->progress.pass_done_pages = 0;
	m->progress.remaining_bytes = todo * GUEST_PAGE_SIZE;
	pthread_mutex_unlock(&m->lock);
}

/* The phase's rates so far; false while it is too young to say. `lock` held. */
static bool phase_rates(struct migration *m, uint64_t now, uint64_t done, uint64_t wire,
			uint64_t *bytes_per_s, uint64_t *pages_per_s)
{
	uint64_t ns = now > m->clock.phase_t0_ns ? now - m->clock.phase_t0_ns : 0;
	uint64_t pages = done - m->clock.phase_done0;

	if (!m->clock.phase_t0_ns || ns < RATE_MIN_NS || (pages < RATE_MIN_PAGES && ns < NS_PER_S))
		return false;
	*bytes_per_s = (uint64_t)((double)(wire - m->clock.phase_wire0) * NS_PER_S / (double)ns);
	*pages_per_s = (uint64_t)((double)pages * NS_PER_S / (double)ns);
	return true;
}

/*
 * The phase's pages done (`done`, since it began) into *out: capped at its pages, what is
 * left of it, and the downtime a switchover now would take: the rest at out's page rate,
 * plus the commit (none in postcopy, where it happened). `lock` held.
 */
static void phase_left(struct migration *m, struct migration_progress *out, uint64_t done)
{
	uint64_t left;

	out->pass_done_pages = done < m->clock.phase_todo ? done : m->clock.phase_todo;
	left = m->clock.phase_todo - out->pass_done_pages;
	out->remaining_bytes = left * GUEST_PAGE_SIZE;
	if (out->page_rate_pages_per_s && !m->clock.postcopy_started)
		out->expected_downtime_ms =
		    left * 1000u / out->page_rate_pages_per_s + m->clock.commit_us / 1000;
}

void progress_phase_end(struct migration *m)
{
	uint64_t done = done_pages(m), wire = load(&m->wire_bytes), now = now_ns();
	uint64_t bps, pps;

	pthread_mutex_lock(&m->lock);
	if (phase_rates(m, now, done, wire, &bps, &pps)) {
		m->progress.throughput_bytes_per_s = bps;
		m->progress.page_rate_pages_per_s = pps;
	}
	/*
	 * Until the next harvest, what is left is what this phase did not send (nothing, unless
	 * it failed), and the downtime that predicts counts the commit this pass's SYNC just
	 * measured: the record a poll sees between passes agrees with itself.
	 */
	if (m->sync_wait_ns)
		m->clock.commit_us = converge_commit_us(m->sync_wait_ns / 1000);
	phase_left(m, &m->progress, done - m->clock.phase_done0);
	m->clock.phase_t0_ns = 0;
	m->clock.phase_since_harvest = true;
	pthread_mutex_unlock(&m->lock);
}

void progress_postcopy_begin(struct migration *m)
{
	uint64_t wire = load(&m->wire_bytes);

	pthread_mutex_lock(&m->lock);
	m->clock.postcopy_wire0 = wire;
	m->clock.postcopy_started = true;
	pthread_mutex_unlock(&m->lock);
}

void progress_switchover_reason(struct migration *m, int converged, const char *why)
{
	pthread_mutex_lock(&m->lock);
	m->progress.converged = converged;
	snprintf(m->progress.switchover_reason, sizeof(m->progress.switchover_reason), "%s", why);
	pthread_mutex_unlock(&m->lock);
}

/* The live part of *out, at `now`. `lock` held. */
static void live(struct migration *m, struct migration_progress *out, uint64_t now)
{
	uint64_t wire = load(&m->wire_bytes), done = done_pages(m), bps, pps;

	out->total_ms = (now - m->clock.t_start_ns) / 1000000u;
	out->sent_bytes = wire;
	out->pages_sent = load(&m->pages_sent);
	out->zero_pages = load(&m->zero_pages);
	out->skipped_pages = load(&m->skipped_pages);
	if (m->clock.postcopy_started) {
		out->pages_requested = load(&m->pc.pages_requested);
		out->pages_pushed = load(&m->pc.pages_pushed);
		out->expected_downtime_ms = 0; /* it happened: downtime_us */
	}
	if (!m->clock.phase_t0_ns)
		return;
	if (phase_rates(m, now, done, wire, &bps, &pps)) {
		out->throughput_bytes_per_s = bps;
		out->page_rate_pages_per_s = pps;
	}
	/* If the switchover came now: what is left of this pass, at this pass's pace. */
	phase_left(m, out, done - m->clock.phase_done0);
}

/* Once final: nothing remains, nothing is expected; the rate is the whole migration's. */
static void settled(struct migration_progress *out)
{
	out->remaining_bytes = 0;
	out->expected_downtime_ms = 0;
	out->page_rate_pages_per_s = 0;
	if (out->total_ms)
		out->throughput_bytes_per_s = out->sent_bytes * 1000u / out->total_ms;
}

void migration_get_progress(struct migration *m, struct migration_progress *out)
{
	uint64_t now = now_ns(), slept = 0;

	/* The vCPUs' atomics, outside `lock` (a leaf); params do not change. */
	if (m->params.converge == MIGRATION_CONVERGE_THROTTLE)
		slept = throttle_slept_now(m->vm);
	pthread_mutex_lock(&m->lock);
	*out = m->progress;
	if (final(out->state))
		settled(out);
	else
		live(m, out, now);
	if (m->throttle.slept_live && slept >= m->throttle.slept0)
		out->throttle_slept_ms = (slept - m->throttle.slept0) / 1000000u;
	if (m->clock.postcopy_started) {
		out->precopy_bytes = m->clock.postcopy_wire0;
		out->postcopy_bytes = out->sent_bytes - m->clock.postcopy_wire0;
	} else {
		out->precopy_bytes = out->sent_bytes;
	}
	pthread_mutex_unlock(&m->lock);
}
