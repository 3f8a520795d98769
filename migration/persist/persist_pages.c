/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_pages.c - guest pages to and from a snapshot's memory file, in
 * parallel (persist.h, struct page_io). The work is cut in chunks of
 * CHUNK_PAGES, aligned within each slot, that workers claim with one
 * atomic add: a chunk's 8 bitmap words belong to exactly one worker, so
 * the present bits need no atomics, and a fast worker takes more chunks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bitmap.h"
#include "dirtylog.h"
#include "guest_mem.h"
#include "persist.h"
#include "team.h"
#include "zero_page.h"

#define CHUNK_PAGES 512u /* 2 MiB: a page-table's worth, 8 bitmap words */

struct run {
	struct page_io *io;
	uint64_t nchunks;
	uint64_t *chunk_first; /* per slot: its first chunk's global number */
	uint64_t next;	       /* atomic: the next chunk to claim */
	pthread_mutex_t lock;
	int error; /* the first failure, under lock */
	char err[256];
};

static void fail(struct run *r, int error, const char *fmt, uint32_t slot, uint64_t off)
{
	pthread_mutex_lock(&r->lock);
	if (!r->error) {
		r->error = error;
		snprintf(r->err, sizeof(r->err), fmt, slot, (unsigned long long)off,
			 strerror(-error));
	}
	pthread_mutex_unlock(&r->lock);
}

int persist_io_full(int fd, bool writing, void *buf, uint64_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n =
		    writing ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* reading past the end: the file was cut under us */
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/*
 * Writing: which of the chunk's pages go to the file (bits in want,
 * relative to first); their present bits are set. With `only`, the chunk's
 * dirty log is re-armed before any of its pages is read, so a write that
 * lands after the read is caught by the next pass.
 */
static int chunk_want(const struct page_io *io, uint32_t slot, uint64_t first, uint64_t n,
		      uint64_t *want)
{
	const struct memslot *s = &io->mem->slots[slot];
	uint64_t words = (n + 63) / 64, *present = &io->present[slot][first / 64];
	unsigned char vec[CHUNK_PAGES];
	bool resident_known = false;

	memset(want, 0, CHUNK_PAGES / 8);
	if (io->only) {
		uint64_t *only = &io->only[slot][first / 64], any = 0;
		int ret;

		for (uint64_t w = 0; w < words; w++)
			any |= only[w];
		if (!any)
			return 0;
		ret = io->dl ? dirtylog_clear(io->dl, s, first, n, only) : 0;
		if (ret)
			return ret;
		for (uint64_t p = 0; p < n; p++) {
			uint64_t bit = 1ull << (p % 64);
			bool was;

			if (!(only[p / 64] & bit))
				continue;
			was = present[p / 64] & bit;
			/* A diff layer holds every page written since its parent: zero ones as
			 * holes. */
			if (io->diff)
				present[p / 64] |= bit;
			/*
			 * A page that became zero after an earlier pass (a live snapshot's)
			 * wrote it is written again, as zeros: the file must not keep
			 * the old data. Never in a single pass.
			 */
			if (!page_is_zero(s->hva + (first + p) * GUEST_PAGE_SIZE) || was)
				want[p / 64] |= bit;
		}
		memset(only, 0, words * 8);
	} else {
		resident_known = io->skip_absent && mincore(s->hva + first * GUEST_PAGE_SIZE,
							    n * GUEST_PAGE_SIZE, vec) == 0;
		for (uint64_t p = 0; p < n; p++) {
			if (resident_known && !(vec[p] & 1))
				continue; /* never written: no swap to hide it */
			if (!page_is_zero(s->hva + (first + p) * GUEST_PAGE_SIZE))
				want[p / 64] |= 1ull << (p % 64);
		}
	}
	for (uint64_t w = 0; w < words; w++)
		present[w] |= want[w];
	return 0;
}

static int do_chunk(struct run *r, uint32_t slot, uint64_t first)
{
	struct page_io *io = r->io;
	const struct memslot *s = &io->mem->slots[slot];
	uint64_t n = s->npages - first < CHUNK_PAGES ? s->npages - first : CHUNK_PAGES;
	uint64_t bits[CHUNK_PAGES / 64], moved = 0;

	if (io->writing) {
		int ret = chunk_want(io, slot, first, n, bits);

		if (ret) {
			fail(r, ret, "re-arming the dirty log of slot %u at page %llu: %s", slot,
			     first);
			return ret;
		}
	} else {
		memcpy(bits, &io->present[slot][first / 64], (n + 63) / 64 * 8);
	}
	for (uint64_t p = 0; p < n;) {
		uint64_t end = p, off;
		int ret;

		if (!(bits[p / 64] >> (p % 64) & 1)) {
			p++;
			continue;
		}
		while (end < n && (bits[end / 64] >> (end % 64) & 1))
			end++;
		off = io->slot_off[slot] + (first + p) * GUEST_PAGE_SIZE;
		ret = persist_io_full(io->fd, io->writing, s->hva + (first + p) * GUEST_PAGE_SIZE,
				      (end - p) * GUEST_PAGE_SIZE, off);
		if (ret) {
			fail(r, ret,
			     io->writing ? "writing slot %u's pages at offset %llu of the memory "
					   "file: %s"
					 : "reading slot %u's pages at offset %llu of the memory "
					   "file: %s",
			     slot, off);
			return ret;
		}
		moved += end - p;
		p = end;
	}
	if (io->moved)
		__atomic_fetch_add(io->moved, moved, __ATOMIC_RELAXED);
	if (io->done)
		__atomic_fetch_add(io->done, n, __ATOMIC_RELAXED);
	return 0;
}

static void worker(void *arg, unsigned w)
{
	struct run *r = arg;
	uint32_t slot = 0;

	(void)w;
	for (;;) {
		uint64_t c = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);

		if (c >= r->nchunks || __atomic_load_n(&r->error, __ATOMIC_RELAXED))
			return;
		if (r->io->cancel && __atomic_load_n(r->io->cancel, __ATOMIC_ACQUIRE)) {
			fail(r, -ECANCELED, "stopped at slot %u, page %llu: %s", slot,
			     (c - r->chunk_first[slot]) * CHUNK_PAGES);
			return;
		}
		while (slot + 1 < r->io->mem->nslots && r->chunk_first[slot + 1] <= c)
			slot++;
		/* Chunks are claimed in increasing order, so `slot` only moves forward. */
		if (do_chunk(r, slot, (c - r->chunk_first[slot]) * CHUNK_PAGES))
			return;
	}
}

int page_io_run(struct page_io *io, unsigned threads, char *err, size_t errlen)
{
	struct run r = {.io = io};
	struct team t;
	int ret;

	r.chunk_first = calloc(io->mem->nslots + 1u, sizeof(*r.chunk_first));
	if (!r.chunk_first) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < io->mem->nslots; i++) {
		r.chunk_first[i] = r.nchunks;
		r.nchunks += (io->mem->slots[i].npages + CHUNK_PAGES - 1) / CHUNK_PAGES;
	}
	pthread_mutex_init(&r.lock, NULL);
	threads = threads ? threads : 1;
	ret = threads > 1
		  ? team_init(&t, threads - 1, worker, &r, SECCOMP_THREAD_SNAPSHOT, io->seccomp)
		  : 0;
	if (ret) {
		snprintf(err, errlen, "starting %u page workers: %s", threads - 1, strerror(-ret));
	} else {
		if (threads > 1) {
			team_run(&t, true);
			team_destroy(&t);
		} else {
			worker(&r, 0);
		}
		ret = r.error;
		if (ret)
			snprintf(err, errlen, "%s", r.err);
	}
	pthread_mutex_destroy(&r.lock);
	free(r.chunk_first);
	return ret;
}

uint64_t **page_bitmaps_new(const struct guest_mem *mem)
{
	uint64_t **b = calloc(mem->nslots ? mem->nslots : 1, sizeof(*b));

	for (uint32_t i = 0; b && i < mem->nslots; i++) {
		b[i] = calloc(
		    bitmap_words(mem->slots[i].npages) ? bitmap_words(mem->slots[i].npages) : 1, 8);
		if (!b[i]) {
			page_bitmaps_free(b, mem);
			return NULL;
		}
	}
	return b;
}

void page_bitmaps_free(uint64_t **b, const struct guest_mem *mem)
{
	for (uint32_t i = 0; b && i < mem->nslots; i++)
		free(b[i]);
	free(b);
}
