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
 * Passes stop when what is left fits the pause (LIVE_PAUSE_PAGES), stops
 * shrinking, or after LIVE_PASSES_MAX; live_final() then harvests once
 * more with the vCPUs paused and writes the rest.
 *
 * A live diff layer (--live --diff) goes on with the tracking its base left
 * armed: its first pass is what that caught since the base, not all of
 * RAM; each page looked at in any pass is the layer's (a zero one a hole,
 * or zeros when an earlier pass wrote it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "dirtylog.h"
#include "harvest.h"
#include "persist.h"
#include "vm.h"

/* What is left for the pause: 16 MiB, ~10 ms into the page cache on our hosts. */
#define LIVE_PAUSE_PAGES 4096u
#define LIVE_PASSES_MAX	 8u

int live_begin(struct persist_live *l, struct vm *vm, char *err, size_t errlen)
{
	int ret;

	memset(l, 0, sizeof(*l));
	l->only = calloc(vm->mem.nslots ? vm->mem.nslots : 1, sizeof(*l->only));
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
	for (uint32_t i = 0; i < vm->mem.nslots; i++)
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

int live_passes(struct persist_live *l, struct page_io *io, unsigned threads, unsigned *passes,
		char *err, size_t errlen)
{
	uint64_t pending, last = UINT64_MAX;
	int ret = 0;

	*passes = 0;
	if (!io->diff) {
		io->only = NULL; /* pass 0: every page */
		io->dl = NULL;
		ret = page_io_run(io, threads, err, errlen);
		io->done = NULL; /* pages_done counts pass 0's look at all of RAM */
		*passes = 1;
	}
	/* A diff layer's pass 0 is what the tracking caught since the layer below. */
	for (; !ret && *passes < LIVE_PASSES_MAX; ++*passes) {
		ret = harvest(l, &pending, err, errlen);
		/* Small enough for the pause, or the guest dirties as fast as we copy. */
		if (ret || pending <= LIVE_PAUSE_PAGES || pending > last / 4 * 3)
			break;
		last = pending;
		io->only = l->only;
		io->dl = &l->dl;
		ret = page_io_run(io, threads, err, errlen);
	}
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
	const struct guest_mem *mem = &l->h.vm->mem;
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
