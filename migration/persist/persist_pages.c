/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_pages.c - guest pages to and from a snapshot's memory file, in
 * parallel (persist.h, struct page_io): the workers and the chunks they
 * claim (persist_run.h), the reading of a chunk, the page bitmaps. What a
 * writing pass writes, and in which order, is persist_write.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bitmap.h"
#include "guest_mem.h"
#include "persist_run.h"
#include "team.h"

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

/* Reading: each run of the chunk's present pages with one pread, straight into RAM. */
static int read_chunk(struct run *r, uint32_t slot, uint64_t first, uint64_t n)
{
	struct page_io *io = r->io;
	const struct memslot *s = &io->mem->slots[slot];
	const uint64_t *bits = &io->present[slot][first / 64];
	uint64_t moved = 0;

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
		ret = persist_io_full(io->fd, false, s->hva + (first + p) * GUEST_PAGE_SIZE,
				      (end - p) * GUEST_PAGE_SIZE, off);
		if (ret) {
			run_fail(r, ret,
				 "reading slot %u's pages at offset %llu of the memory file: %s",
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
	struct page_io *io = r->io;
	uint32_t slot = 0;

	(void)w;
	for (;;) {
		uint64_t c = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED), first, n;
		uint64_t bits[CHUNK_PAGES / 64];
		bool ok;

		if (c >= r->nchunks)
			return;
		/* Chunks are claimed in increasing order, so `slot` only moves forward. */
		while (slot + 1 < io->mem->nslots && r->chunk_first[slot + 1] <= c)
			slot++;
		first = (c - r->chunk_first[slot]) * CHUNK_PAGES;
		n = io->mem->slots[slot].npages - first < CHUNK_PAGES
			? io->mem->slots[slot].npages - first
			: CHUNK_PAGES;
		ok = !__atomic_load_n(&r->error, __ATOMIC_RELAXED);
		if (ok && io->cancel && __atomic_load_n(io->cancel, __ATOMIC_ACQUIRE)) {
			run_fail(r, -ECANCELED, "stopped at slot %u, page %llu: %s", slot, first);
			ok = false;
		}
		if (!io->writing) {
			if (!ok || read_chunk(r, slot, first, n))
				return;
			continue;
		}
		if (ok) {
			int ret = chunk_want(io, slot, first, n, bits);

			if (ret) {
				run_fail(r, ret,
					 "re-arming the dirty log of slot %u at page %llu: %s",
					 slot, first);
				ok = false;
			}
		}
		/* Every claimed chunk takes its turn, or the ones after it would wait forever. */
		chunk_write(r, c, slot, first, n, bits, ok);
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
	pthread_cond_init(&r.turn_cv, NULL);
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
	pthread_cond_destroy(&r.turn_cv);
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
