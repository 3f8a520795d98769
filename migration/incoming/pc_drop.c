/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The postcopy switchover's bitmaps on the target. The main thread reads
 * each BITMAP record (one memslot's compressed stale pages), ORs it into
 * `missing` and queues the slot; the dropper thread drops the target's
 * stale copy of those pages (MADV_DONTNEED / MADV_REMOVE) so that they
 * fault, while the main thread goes on reading. There are two rounds: a
 * preliminary one harvested while the guest still runs (the target drops
 * it, then answers POSTCOPY_ARMED and only then does the source pause),
 * and the final one after the pause, whose bitmaps are supersets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zstd.h>

#include "bitmap.h"
#include "codec.h"
#include "incoming.h"
#include "postcopy.h"
#include "vm.h"

struct pc_drop {
	pthread_t thread;
	bool started;	      /* main thread */
	pthread_mutex_t lock; /* drop_lock: the fields below up to `error`, and `stale` */
	pthread_cond_t cond;
	uint32_t *queue; /* slots whose bitmap is in, in arrival order */
	uint32_t cap;	 /* 2 x slots: a preliminary and a final round */
	uint32_t queued, taken;
	bool busy;   /* a slot is being dropped */
	bool closed; /* no more slots will come */
	int error;
	/* The main thread's: */
	void *dctx;	   /* ZSTD_DCtx for BITMAP records */
	uint64_t *scratch; /* one slot's expanded BITMAP */
	uint32_t nbitmaps; /* BITMAP records in this round */
	bool ended;	   /* final BITMAP_END seen */
	bool pre_done;	   /* the preliminary round was dropped and ARMED sent */
	/* The dropper's: */
	uint64_t *todo; /* pages of a slot to drop now */
};

static void *drop_main(void *arg);

int pc_drop_start(struct incoming *in)
{
	const struct guest_mem *mem = vm_mem(in->vm);
	struct pc_drop *d = calloc(1, sizeof(*d));
	uint64_t max_words = 0;
	int ret;

	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	in->post.drop = d;
	for (uint32_t i = 0; i < mem->nslots; i++)
		if (pc_slot_words(&in->pc, i) > max_words)
			max_words = pc_slot_words(&in->pc, i);
	d->cap = 2 * mem->nslots;
	d->queue = calloc(d->cap, sizeof(*d->queue));
	d->scratch = calloc(max_words, 8);
	d->todo = calloc(max_words, 8);
	d->dctx = ZSTD_createDCtx();
	if (!d->queue || !d->scratch || !d->todo || !d->dctx)
		return -ENOMEM;
	ret = -pthread_create(&d->thread, NULL, drop_main, in);
	d->started = !ret;
	return ret;
}

/* Hands a slot to the dropper. Under drop_lock. */
static int queue_slot(struct pc_drop *d, uint32_t slot)
{
	if (d->queued == d->cap)
		return -EPROTO;
	d->queue[d->queued++] = slot;
	pthread_cond_broadcast(&d->cond);
	return 0;
}

int pc_drop_bitmap(struct incoming *in, const void *p, uint32_t len, char *err, size_t errlen)
{
	struct pc_drop *d = in->post.drop;
	const struct guest_mem *mem = vm_mem(in->vm);
	struct mig_bitmap_hdr bh;
	uint64_t words, *bits = d->scratch;
	size_t n;
	int ret = mig_bitmap_hdr_decode(p, len, &bh, err, errlen);

	if (ret)
		return ret;
	ret = mig_bitmap_check_slot(
	    &bh, mem->nslots, bh.slot < mem->nslots ? mem->slots[bh.slot].npages : 0, err, errlen);
	if (ret)
		return ret;
	if (d->ended) {
		snprintf(err, errlen, "BITMAP for slot %u after the final BITMAP_END", bh.slot);
		return -EPROTO;
	}
	words = pc_slot_words(&in->pc, bh.slot);
	/* Little-endian words on the wire: the host's order (protocol.h). */
	n = ZSTD_decompressDCtx(d->dctx, bits, words * 8, (const uint8_t *)p + MIG_BITMAP_HDR_LEN,
				bh.data_len);
	if (ZSTD_isError(n) || n != words * 8) {
		snprintf(err, errlen, "BITMAP for slot %u does not expand to %llu bytes", bh.slot,
			 (unsigned long long)(words * 8));
		return -EPROTO;
	}
	ret = mig_bitmap_check_tail(bits, mem->slots[bh.slot].npages, bh.slot, err, errlen);
	if (ret)
		return ret;
	d->nbitmaps++;
	pthread_mutex_lock(&d->lock);
	for (uint64_t w = 0; w < words; w++)
		if (bits[w])
			__atomic_or_fetch(&in->pc.missing[bh.slot][w], bits[w], __ATOMIC_RELAXED);
	ret = queue_slot(d, bh.slot);
	pthread_mutex_unlock(&d->lock);
	if (ret)
		snprintf(err, errlen, "more BITMAP records than two rounds of %u slots",
			 mem->nslots);
	return ret;
}

int pc_drop_bitmap_end(struct incoming *in, const struct mig_bitmap_end *be, char *err,
		       size_t errlen)
{
	const struct guest_mem *ram = vm_mem(in->vm);
	struct pc_drop *d = in->post.drop;
	uint64_t pages = 0;
	int ret;

	if (d->ended || ((be->flags & MIG_BITMAP_END_PRELIMINARY) && d->pre_done)) {
		snprintf(err, errlen, "BITMAP_END (flags 0x%x) out of order", be->flags);
		return -EPROTO;
	}
	for (uint32_t i = 0; i < ram->nslots; i++)
		pages += bitmap_count(in->pc.missing[i], pc_slot_words(&in->pc, i));
	ret = mig_bitmap_end_check(be, d->nbitmaps, pages, err, errlen);
	if (ret)
		return ret;
	d->nbitmaps = 0;
	pthread_mutex_lock(&d->lock);
	if (be->flags & MIG_BITMAP_END_PRELIMINARY) {
		/* The source pauses only after ARMED: drop this round first. */
		while ((d->taken < d->queued || d->busy) && !d->error)
			pthread_cond_wait(&d->cond, &d->lock);
		ret = d->error;
		pthread_mutex_unlock(&d->lock);
		if (ret) {
			snprintf(err, errlen, "dropping stale pages: %s", strerror(-ret));
			return ret;
		}
		d->pre_done = true;
		return incoming_send_main(in, MIG_REC_POSTCOPY_ARMED, NULL, 0, NULL, 0);
	}
	if (in->post.flags & MIG_POSTCOPY_NO_FINAL_BITMAP) {
		/* Every page is stale: the slow baseline. */
		for (uint32_t i = 0; i < ram->nslots && !ret; i++) {
			bitmap_fill(in->pc.missing[i], ram->slots[i].npages);
			ret = queue_slot(d, i);
		}
	}
	d->ended = true;
	d->closed = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	if (ret)
		snprintf(err, errlen, "more BITMAP records than two rounds of %u slots",
			 ram->nslots);
	return ret;
}

/* Drops the target's copy of [first, first+n) pages of a slot: they must fault. */
static int drop_pages(struct incoming *in, const struct memslot *s, uint64_t first, uint64_t n)
{
	int advice = vm_mem(in->vm)->backend == MEM_BACKEND_MEMFD ? MADV_REMOVE : MADV_DONTNEED;

	if (madvise(s->hva + first * GUEST_PAGE_SIZE, n * GUEST_PAGE_SIZE, advice) < 0)
		return -errno;
	return 0;
}

/*
 * Drops the pages of a slot that are missing and not dropped yet (a slot's
 * final bitmap is a superset of its preliminary one); returns how many, or
 * -errno.
 */
static int64_t drop_slot(struct incoming *in, uint32_t i)
{
	struct pc_drop *d = in->post.drop;
	struct pc_state *ps = &in->pc;
	const struct memslot *s = &vm_mem(in->vm)->slots[i];
	uint64_t *todo = d->todo, run = 0, total = 0, words = pc_slot_words(ps, i);
	int ret;

	/* The fault thread decides on `stale`: set it before any page goes. */
	pthread_mutex_lock(&d->lock);
	for (uint64_t w = 0; w < words; w++) {
		todo[w] = ps->missing[i][w] & ~ps->stale[i][w];
		if (todo[w])
			__atomic_or_fetch(&ps->stale[i][w], todo[w], __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&d->lock);
	/*
	 * One madvise per run, found a word (64 pages) at a time: the final
	 * round runs inside the downtime. Runs are never merged across pages
	 * that are not to go: those hold good data (or were dropped already).
	 */
	for (uint64_t w = 0; w < words; w++) {
		uint64_t bits = todo[w];

		if (bits == ~0ull) {
			run += 64;
			continue;
		}
		for (unsigned b = 0; b < 64; b++) {
			uint64_t p = w * 64 + b;

			if (bits >> b & 1) {
				run++;
			} else if (run) {
				ret = drop_pages(in, s, p - run, run);
				if (ret)
					return ret;
				total += run;
				run = 0;
			}
			if (!(bits >> b) && !run)
				break; /* nothing more in this word */
		}
	}
	if (run) {
		ret = drop_pages(in, s, s->npages - run, run);
		if (ret)
			return ret;
		total += run;
	}
	return (int64_t)total;
}

/*
 * The dropper: takes slots in the order their bitmaps arrived until
 * BITMAP_END closes the queue (or a stop aborts it).
 */
static void *drop_main(void *arg)
{
	struct incoming *in = arg;
	struct pc_drop *d = in->post.drop;
	uint64_t total = 0;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_DROP, vm_config(in->vm)->seccomp);
	for (;;) {
		uint32_t slot;
		int64_t n;

		pthread_mutex_lock(&d->lock);
		while (d->taken == d->queued && !d->closed)
			pthread_cond_wait(&d->cond, &d->lock);
		if (d->taken == d->queued || __atomic_load_n(&in->abort, __ATOMIC_RELAXED)) {
			/* Aborted with work left: whoever waits for the drain must not wait on. */
			if (d->taken < d->queued && !d->error)
				d->error = -ECANCELED;
			pthread_cond_broadcast(&d->cond);
			pthread_mutex_unlock(&d->lock);
			break;
		}
		slot = d->queue[d->taken++];
		d->busy = true;
		pthread_mutex_unlock(&d->lock);
		n = drop_slot(in, slot);
		pthread_mutex_lock(&d->lock);
		d->busy = false;
		if (n < 0)
			d->error = (int)n;
		pthread_cond_broadcast(&d->cond);
		pthread_mutex_unlock(&d->lock);
		if (n < 0)
			break;
		total += (uint64_t)n;
	}
	pc_set_missing(&in->pc, total);
	return NULL;
}

void pc_drop_stop(struct incoming *in)
{
	struct pc_drop *d = in->post.drop;

	if (!d || !d->started)
		return;
	pthread_mutex_lock(&d->lock);
	d->closed = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	d->started = false;
}

int pc_drop_finish(struct incoming *in, char *err, size_t errlen)
{
	struct pc_drop *d = in->post.drop;

	if (!d->ended) {
		snprintf(err, errlen, "POSTCOPY without BITMAP_END");
		return -EPROTO;
	}
	pc_drop_stop(in);
	if (d->error) {
		snprintf(err, errlen, "dropping stale pages: %s", strerror(-d->error));
		return d->error;
	}
	return 0;
}

void pc_drop_free(struct incoming *in)
{
	struct pc_drop *d = in->post.drop;

	if (!d)
		return;
	free(d->queue);
	free(d->scratch);
	free(d->todo);
	ZSTD_freeDCtx(d->dctx);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d);
	in->post.drop = NULL;
}
