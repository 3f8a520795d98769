/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_live.c - `vmm snapshot --live`: the pages are copied while the
 * guest runs, the way a migration's precopy copies them, so the pause
 * covers only what the guest dirtied during the last pass (and the state).
 *
 * Dirty logging goes on with manual protect but without INITIALLY_SET:
 * every page is write-protected at once, so pass 0 reads all of RAM and
 * any write after the enable is logged. Each later pass harvests the log
 * (KVM's bits and the VMM's own writes, harvest.h), re-arms each chunk's
 * log right before reading it (page_io's `dl`) and writes what changed.
 * When to stop is precopy's own decision (converge_decide(), converge.h):
 * the pages pending over the rate of the last pass estimate the pause; the
 * passes stop once that fits the pause limit and no longer halves, when
 * they stopped shrinking what is left and this one has about the least so
 * far (precopy's switchover rule), or at the caps on passes and time,
 * whatever is left then being the pause's.
 * live_final() then harvests once more with the vCPUs paused and writes
 * only that last dirty set.
 *
 * A live diff layer (--live --diff) goes on with the tracking its base left
 * armed: its first pass is what that caught since the base, not all of
 * RAM; each page looked at in any pass is the layer's (a zero one a hole,
 * or zeros when an earlier pass wrote it).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "clock.h"
#include "converge.h"
#include "dirtylog.h"
#include "harvest.h"
#include "persist.h"
#include "snapshot.h"
#include "vm.h"

/* A migration's defaults for the limits a live snapshot shares (migration_params.h). */
#define DEFAULT(NAME, FIELD, KIND, DEF, MIN, MAX, FLAG, ARG, HELP, NAMES)                          \
	LIVE_DEFAULT_##FIELD = (DEF),
enum { MIGRATION_PARAMS(DEFAULT) LIVE_DEFAULT_END };
#undef DEFAULT

int live_begin(struct persist_live *l, struct vm *vm, char *err, size_t errlen)
{
	const struct guest_mem *ram = vm_mem(vm);
	int ret;

	memset(l, 0, sizeof(*l));
	l->only = calloc(ram->nslots ? ram->nslots : 1, sizeof(*l->only));
	if (!l->only) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	ret = dirtylog_enable(&l->dl, vm, false);
	if (ret) {
		snprintf(err, errlen, "enabling dirty logging: %s", strerror(-ret));
		return ret;
	}
	l->dl_on = true;
	ret = harvest_init(&l->h, vm, &l->dl, 1);
	l->h_on = true; /* harvest_destroy() frees a half-made one too */
	if (ret) {
		snprintf(err, errlen, "setting up the dirty-log harvest: %s", strerror(-ret));
		return ret;
	}
	for (uint32_t i = 0; i < ram->nslots; i++)
		l->only[i] = l->h.slots[i].pending;
	return 0;
}

/* Harvests the log into the pending bitmaps: how many pages are pending. */
static int harvest(struct persist_live *l, uint64_t *pending, char *err, size_t errlen)
{
	struct harvest_stats st;
	int ret = harvest_run(&l->h, false, &st);

	if (ret) {
		snprintf(err, errlen, "harvesting the dirty log: %s", strerror(-ret));
		return ret;
	}
	*pending = st.pending;
	return 0;
}

bool snapshot_live_param(const struct migration_param *d)
{
	return d->offset == offsetof(struct migration_params, downtime_ms) ||
	       d->offset == offsetof(struct migration_params, max_passes) ||
	       d->offset == offsetof(struct migration_params, max_time_ms);
}

/* One pass, timed (ns, at least 1). */
static int timed_pass(struct page_io *io, unsigned threads, uint64_t *ns, char *err, size_t errlen)
{
	uint64_t t0 = now_ns();
	int ret = page_io_run(io, threads, err, errlen);

	*ns = now_ns() - t0 + 1;
	return ret;
}

int live_passes(struct persist_live *l, struct page_io *io, unsigned threads,
		const struct live_limits *lim, struct live_outcome *out, char *err, size_t errlen)
{
	/* Precopy's decision, for a peer that cannot take postcopy, that never gives up. */
	const struct migration_params p = {
	    .downtime_ms = lim->downtime_ms ? lim->downtime_ms : LIVE_DEFAULT_downtime_ms,
	    .max_passes = lim->max_passes ? lim->max_passes : LIVE_DEFAULT_max_passes,
	    .max_time_ms = lim->max_time_ms ? lim->max_time_ms : LIVE_DEFAULT_max_time_ms,
	    .mode = MIGRATION_MODE_PRECOPY,
	    .no_converge = MIGRATION_NO_CONVERGE_SWITCHOVER};
	uint64_t t0 = now_ns(), rate = 0, pending, prev = UINT64_MAX, written = 0, ns;
	uint64_t least = 0; /* the least pending at a decision after pass 0, as precopy's */
	unsigned pass = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (!io->diff) {
		uint64_t *moved = io->moved;

		/*
		 * Pass 0, every page: its rate, as precopy's first pass's, is every
		 * page of RAM over its time (pages never written cost a look each).
		 */
		io->only = NULL;
		io->dl = NULL;
		io->moved = &written;
		ret = timed_pass(io, threads, &ns, err, errlen);
		io->moved = moved;
		if (moved)
			__atomic_fetch_add(moved, written, __ATOMIC_RELAXED);
		rate = converge_page_rate(0, io->mem->size / GUEST_PAGE_SIZE, ns);
		io->done = NULL; /* pages_done counts pass 0's look at all of RAM */
		pass = 1;
	}
	/* A diff layer's pass 0 is what the tracking caught since the layer below. */
	for (; !ret; pass++) {
		struct converge_input in;
		enum converge_decision d;

		ret = harvest(l, &pending, err, errlen);
		if (ret)
			break;
		in = (struct converge_input){.pass = pass,
					     .pending = pending,
					     .prev_pending = prev,
					     .est_us = converge_estimate_us(pending, rate),
					     .elapsed_ms = (now_ns() - t0) / 1000000,
					     .least_pending = least};
		d = converge_decide(&p, &in);
		out->expected_pause_us = rate ? in.est_us : 0;
		if (d != CONVERGE_KEEP_GOING) {
			/* Left pending in l->only: live_final() writes it, with what comes next. */
			out->converged = d == CONVERGE_STOP_AND_COPY;
			break;
		}
		prev = pending;
		if (pass && (!least || pending < least))
			least = pending;
		io->only = l->only;
		io->dl = &l->dl;
		ret = timed_pass(io, threads, &ns, err, errlen);
		/* What the pause will do: look at each pending page, write those with data. */
		rate = converge_page_rate(rate, pending, ns);
	}
	out->passes = pass;
	return ret;
}

int live_final(struct persist_live *l, struct page_io *io, unsigned threads, bool rearm, char *err,
	       size_t errlen)
{
	uint64_t pending;
	int ret = harvest(l, &pending, err, errlen);

	io->only = l->only;
	/* Paused, nothing dirties a page now: re-armed only to go on tracking. */
	io->dl = rearm ? &l->dl : NULL;
	return ret ? ret : page_io_run(io, threads, err, errlen);
}

int live_rearm(struct persist_live *l, char *err, size_t errlen)
{
	const struct guest_mem *mem = vm_mem(l->h.vm);
	uint64_t pending;
	int ret = harvest(l, &pending, err, errlen);

	for (uint32_t i = 0; !ret && i < mem->nslots; i++) {
		uint64_t words = bitmap_words(mem->slots[i].npages);

		ret = dirtylog_clear(&l->dl, &mem->slots[i], 0, mem->slots[i].npages, l->only[i]);
		memset(l->only[i], 0, words * 8);
	}
	if (ret)
		snprintf(err, errlen, "re-arming the dirty log: %s", strerror(-ret));
	return ret;
}

void live_end(struct persist_live *l)
{
	if (l->h_on)
		harvest_destroy(&l->h);
	if (l->dl_on)
		dirtylog_disable(&l->dl);
	free(l->only);
	memset(l, 0, sizeof(*l));
}
