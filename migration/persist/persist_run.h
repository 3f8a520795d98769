/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_run.h - inside vmm_persist: one page pass's shared state, for
 * persist_pages.c (the workers, the chunks they claim, reading) and
 * persist_write.c (a chunk's pages chosen, then written in file order).
 *
 * The work is cut in chunks of CHUNK_PAGES, aligned within each slot, that
 * workers claim with one atomic add in file order: a chunk's 8 bitmap words
 * belong to exactly one worker, so the present bits need no atomics, and a
 * fast worker takes more chunks. Writing, each claimed chunk then takes its
 * turn (r->turn) after the one before it, whatever happened to it, so that
 * no worker waits for a turn that never comes.
 */
#ifndef VMM_PERSIST_RUN_H
#define VMM_PERSIST_RUN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "persist.h"

#define CHUNK_PAGES	512u	    /* 2 MiB: a page-table's worth, 8 bitmap words */
#define WRITE_BATCH	(16u << 20) /* the most one pwritev writes */
#define WRITE_BATCH_IOV 256u /* its pieces not adjacent in RAM (slot ends, direct I/O gaps) */
#define GAP_FILL_PAGES	8u   /* direct I/O: gaps up to this are written rather than left */

/* Runs of pages adjacent in the memory file, not yet written: the turn holder's. */
struct write_batch {
	struct iovec iov[WRITE_BATCH_IOV];
	unsigned n;
	uint64_t off, len; /* where in the file, how many bytes */
	uint32_t slot;	   /* the first run's (for the message) */
};

struct run {
	struct page_io *io;
	uint64_t nchunks;
	uint64_t *chunk_first; /* per slot: its first chunk's global number */
	uint64_t next;	       /* atomic: the next chunk to claim */
	pthread_mutex_t lock;  /* error and err; turn */
	pthread_cond_t turn_cv;
	uint64_t turn;		/* writing: the chunk whose pages go out next */
	struct write_batch out; /* writing: owned by the turn's holder */
	int error;		/* the first failure, under lock (read atomically) */
	char err[256];
};

/*
 * persist_write.c, any worker: records the first failure (later ones are
 * dropped); fmt takes the slot (%u), an offset (%llu) and strerror (%s).
 */
void run_fail(struct run *r, int error, const char *fmt, uint32_t slot, uint64_t off);

/*
 * persist_write.c, any worker, no lock: which of a chunk's n pages (from
 * page `first` of `slot`) go to the file, as bits relative to first in
 * want (CHUNK_PAGES / 64 words); their present bits are set. With
 * io->only, the chunk's dirty log is re-armed before any of its pages is
 * read, so a write that lands after the read is caught by the next pass.
 */
int chunk_want(const struct page_io *io, uint32_t slot, uint64_t first, uint64_t n, uint64_t *want);
/*
 * The worker that claimed chunk c: waits for its turn, adds the runs of
 * `bits` to the batch (written when a run cannot join it, and after the
 * last chunk), passes the turn on. !ok (a failure before, a cancel): only
 * the turn passes.
 */
void chunk_write(struct run *r, uint64_t c, uint32_t slot, uint64_t first, uint64_t n,
		 const uint64_t *bits, bool ok);

#endif /* VMM_PERSIST_RUN_H */
