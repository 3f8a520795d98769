/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_write.c - a writing pass's chunks (persist_pages.c claims them):
 * which pages of a chunk go to the memory file (chunk_want(), in parallel:
 * the dirty log's re-arm, residency, the zero test), then the chunk's turn
 * to write them, in file order.
 *
 * Why turns. Every Linux file system serializes buffered writes to one
 * file on its inode lock, so workers that pwrite at once only take turns
 * in the kernel, where a waiter may spin while the holder's vCPU is
 * preempted (a 2-core nested host makes that the common case), and their
 * writes reach the file out of order. Here the workers take the turns
 * themselves: chunk c's runs go out once chunk c - 1's have, so the file
 * is written as one sequential stream while the next chunks are examined
 * on the other workers. The runs are gathered into one pwritev while they
 * stay adjacent in the file, across chunks and slots, up to WRITE_BATCH
 * bytes: large writes, and no system call per page. Direct I/O ([snapshot]
 * direct_io) goes the same way: guest RAM and the offsets are page aligned,
 * and a large write is split into parallel requests by the block layer.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "bitmap.h"
#include "dirtylog.h"
#include "guest_mem.h"
#include "persist_run.h"
#include "zero_page.h"

/*
 * Here rather than beside the workers (persist_pages.c), which call this
 * file: both record failures, and a call back up would make a loop.
 */
void run_fail(struct run *r, int error, const char *fmt, uint32_t slot, uint64_t off)
{
	pthread_mutex_lock(&r->lock);
	if (!r->error) {
		__atomic_store_n(&r->error, error, __ATOMIC_RELAXED);
		snprintf(r->err, sizeof(r->err), fmt, slot, (unsigned long long)off,
			 strerror(-error));
	}
	pthread_mutex_unlock(&r->lock);
}

int chunk_want(const struct page_io *io, uint32_t slot, uint64_t first, uint64_t n, uint64_t *want)
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

/* The gathered runs, as one pwritev (short writes and EINTR go on). */
static int batch_flush(struct run *r)
{
	struct write_batch *b = &r->out;
	struct iovec *iov = b->iov;
	unsigned n = b->n;
	uint64_t off = b->off, left = b->len;

	while (left) {
		ssize_t done = pwritev(r->io->fd, iov, (int)n, (off_t)off);

		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0) {
			int e = done < 0 ? -errno : -EIO;

			run_fail(r, e,
				 "writing slot %u's pages at offset %llu of the memory file: %s",
				 b->slot, off);
			b->n = 0;
			b->len = 0;
			return e;
		}
		off += (uint64_t)done;
		left -= (uint64_t)done;
		while (n && (uint64_t)done >= iov->iov_len) {
			done -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n && done) {
			iov->iov_base = (uint8_t *)iov->iov_base + done;
			iov->iov_len -= (size_t)done;
		}
	}
	b->n = 0;
	b->len = 0;
	return 0;
}

/* One run (file offset off, len bytes at p) into the batch; written first when it cannot join. */
static int batch_add(struct run *r, uint32_t slot, uint8_t *p, uint64_t len, uint64_t off)
{
	struct write_batch *b = &r->out;
	int ret = 0;

	if (b->n &&
	    (off != b->off + b->len || b->n == WRITE_BATCH_IOV || b->len + len > WRITE_BATCH))
		ret = batch_flush(r);
	if (ret)
		return ret;
	if (!b->n) {
		b->off = off;
		b->slot = slot;
	}
	/* Adjacent in RAM too (a slot's pages are one mapping): the same iovec grows. */
	if (b->n && (uint8_t *)b->iov[b->n - 1].iov_base + b->iov[b->n - 1].iov_len == p)
		b->iov[b->n - 1].iov_len += len;
	else
		b->iov[b->n++] = (struct iovec){.iov_base = p, .iov_len = len};
	b->len += len;
	return 0;
}

/*
 * Direct I/O: each write is a device request the writer waits for, so
 * scattered pages cost a request each. A gap of at most GAP_FILL_PAGES
 * between what is gathered and the next run (in the same slot) goes out
 * with them: zeros where the file holds nothing there (a page never
 * written, or zero: what a hole reads as), the page itself where an
 * earlier pass of this snapshot wrote it (RAM still holds what the file
 * does, or the dirty log has the page for the next pass). Nothing a reader
 * looks at changes; the file is less sparse by the gaps.
 */
static int gap_fill(struct run *r, uint32_t slot, uint64_t off)
{
	static uint8_t zeros[GAP_FILL_PAGES * GUEST_PAGE_SIZE]
	    __attribute__((aligned(SNAP_DIRECT_BLOCK)));
	const struct page_io *io = r->io;
	const struct memslot *s = &io->mem->slots[slot];
	uint64_t end = r->out.off + r->out.len, first, n;
	int ret = 0;

	if (!io->direct || !r->out.n || off <= end || end < io->slot_off[slot] ||
	    (off - end) / GUEST_PAGE_SIZE > GAP_FILL_PAGES)
		return 0;
	first = (end - io->slot_off[slot]) / GUEST_PAGE_SIZE;
	n = (off - end) / GUEST_PAGE_SIZE;
	for (uint64_t g = first; !ret && g < first + n;) {
		uint64_t z = g;

		if (io->only && bitmap_test(io->present[slot], g)) {
			ret = batch_add(r, slot, s->hva + g * GUEST_PAGE_SIZE, GUEST_PAGE_SIZE,
					io->slot_off[slot] + g * GUEST_PAGE_SIZE);
			g++;
			continue;
		}
		while (z < first + n && !(io->only && bitmap_test(io->present[slot], z)))
			z++;
		ret = batch_add(r, slot, zeros, (z - g) * GUEST_PAGE_SIZE,
				io->slot_off[slot] + g * GUEST_PAGE_SIZE);
		g = z;
	}
	return ret;
}

/* Waits until chunk c has the turn (chunks go out in the order they were claimed). */
static void turn_wait(struct run *r, uint64_t c)
{
	pthread_mutex_lock(&r->lock);
	while (r->turn != c)
		pthread_cond_wait(&r->turn_cv, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

static void turn_pass(struct run *r, uint64_t c)
{
	pthread_mutex_lock(&r->lock);
	r->turn = c + 1;
	pthread_cond_broadcast(&r->turn_cv);
	pthread_mutex_unlock(&r->lock);
}

void chunk_write(struct run *r, uint64_t c, uint32_t slot, uint64_t first, uint64_t n,
		 const uint64_t *bits, bool ok)
{
	struct page_io *io = r->io;
	const struct memslot *s = &io->mem->slots[slot];
	uint64_t moved = 0;

	turn_wait(r, c);
	for (uint64_t p = 0; ok && p < n;) {
		uint64_t end = p;

		if (!(bits[p / 64] >> (p % 64) & 1)) {
			p++;
			continue;
		}
		while (end < n && (bits[end / 64] >> (end % 64) & 1))
			end++;
		if (__atomic_load_n(&r->error, __ATOMIC_RELAXED) ||
		    gap_fill(r, slot, io->slot_off[slot] + (first + p) * GUEST_PAGE_SIZE) ||
		    batch_add(r, slot, s->hva + (first + p) * GUEST_PAGE_SIZE,
			      (end - p) * GUEST_PAGE_SIZE,
			      io->slot_off[slot] + (first + p) * GUEST_PAGE_SIZE))
			ok = false;
		moved += end - p;
		p = end;
	}
	/* The last chunk writes what is gathered; after a failure nothing more is written. */
	if (c + 1 == r->nchunks && r->out.n && !__atomic_load_n(&r->error, __ATOMIC_RELAXED))
		batch_flush(r);
	turn_pass(r, c);
	if (ok && io->moved)
		__atomic_fetch_add(io->moved, moved, __ATOMIC_RELAXED);
	if (io->done)
		__atomic_fetch_add(io->done, n, __ATOMIC_RELAXED);
}
