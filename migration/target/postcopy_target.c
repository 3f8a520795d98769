/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target side of postcopy. At the switchover the source sends its
 * final dirty bitmap, compressed, one memslot at a time; each is expanded
 * into `missing` as it arrives. After END the target drops its stale copy
 * of every missing page (MADV_DONTNEED / MADV_REMOVE), registers guest RAM
 * with userfaultfd, and resumes the vCPUs at once. Then:
 *
 *   - the fault thread reads userfaultfd events. A fault on a missing page
 *     sends one PAGE_REQ on the urgent connection; a fault on any other
 *     absent page is memory neither side ever wrote: a zero page is placed
 *     at once. VMM accesses to guest RAM fault and are served the same way.
 *   - the receivers (urgent connection: requested pages; data connections:
 *     the background push) place each page with UFFDIO_COPY, which also
 *     wakes whoever waits on it, and clear its missing bit first, so a page
 *     is placed exactly once.
 *   - when the last missing page is in place: POSTCOPY_DONE to the source
 *     with the statistics, userfaultfd unregistered.
 *
 * Without the bitmap (--no-final-bitmap) every page counts as missing: the
 * slow baseline of shared/seeds/000.
 *
 * A connection lost before that leaves faulting vCPUs waiting (the guest
 * never sees stale memory) and keeps everything; the listening socket
 * accepts the source's reconnection, the target sends the bitmap of pages
 * it still lacks, re-sends outstanding requests, and carries on.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zstd.h>

#include "clock.h"
#include "harvest.h"
#include "incoming.h"
#include "migration.h"
#include "uffd.h"
#include "vm.h"

#define REQTAB_SIZE 8192u /* power of two; outstanding requests beyond it lose their timing */
#define LAT_MAX (1u << 20)

static uint64_t slot_words(const struct incoming *in, uint32_t i)
{
	return bitmap_words(in->vm->mem.slots[i].npages);
}

static int alloc_bitmaps(struct incoming *in)
{
	uint32_t n = in->vm->mem.nslots;

	in->missing = calloc(n, sizeof(*in->missing));
	in->stale = calloc(n, sizeof(*in->stale));
	in->requested = calloc(n, sizeof(*in->requested));
	in->reqtab = calloc(REQTAB_SIZE, sizeof(*in->reqtab));
	if (!in->missing || !in->stale || !in->requested || !in->reqtab)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		in->missing[i] = calloc(slot_words(in, i), 8);
		in->stale[i] = calloc(slot_words(in, i), 8);
		in->requested[i] = calloc(slot_words(in, i), 8);
		if (!in->missing[i] || !in->stale[i] || !in->requested[i])
			return -ENOMEM;
	}
	return 0;
}

static void *drop_main(void *arg);
static void *fault_main(void *arg);

/*
 * At POSTCOPY, before the source has even paused: userfaultfd on guest RAM
 * and the threads of the switchover. The data connections are idle (the
 * last pass ended with SYNC) and no vCPU runs, so nothing faults yet.
 */
static int arm(struct incoming *in, char *err, size_t errlen)
{
	struct guest_mem *mem = &in->vm->mem;
	uint64_t max_words = 0;
	int ret;

	for (uint32_t i = 0; i < mem->nslots; i++)
		if (slot_words(in, i) > max_words)
			max_words = slot_words(in, i);
	in->lat_cap = LAT_MAX;
	in->lat_us = malloc(LAT_MAX * sizeof(uint32_t));
	in->drop_cap = 2 * mem->nslots;
	in->drop_queue = calloc(in->drop_cap, sizeof(*in->drop_queue));
	in->bitmap_scratch = calloc(max_words, 8);
	in->drop_todo = calloc(max_words, 8);
	in->bitmap_dctx = ZSTD_createDCtx();
	in->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (!in->lat_us || !in->drop_queue || !in->bitmap_scratch || !in->drop_todo ||
	    !in->bitmap_dctx || in->stop_fd < 0)
		return -ENOMEM;
	ret = uffd_open(&in->uffd);
	if (!ret)
		ret = uffd_register(in->uffd, mem->base, mem->size);
	if (ret) {
		snprintf(err, errlen, "userfaultfd on guest RAM: %s", strerror(-ret));
		return ret;
	}
	ret = -pthread_create(&in->drop_thread, NULL, drop_main, in);
	in->drop_started = !ret;
	if (!ret) {
		ret = -pthread_create(&in->fault_thread, NULL, fault_main, in);
		in->fault_started = !ret;
	}
	if (!ret) {
		ret = -pthread_create(&in->urgent.thread, NULL, ram_recv_thread, &in->urgent);
		in->urgent.started = !ret;
	}
	if (ret)
		snprintf(err, errlen, "starting the postcopy threads: %s", strerror(-ret));
	return ret;
}

/* Hands a slot to the dropper. Under drop_lock. */
static int queue_slot(struct incoming *in, uint32_t slot)
{
	if (in->drop_queued == in->drop_cap)
		return -EPROTO;
	in->drop_queue[in->drop_queued++] = slot;
	pthread_cond_broadcast(&in->drop_cond);
	return 0;
}

/* BITMAP: expanded, ORed into `missing`, and the slot queued for the dropper. */
static int bitmap(struct incoming *in, const struct mig_rec_hdr *h, char *err, size_t errlen)
{
	struct mig_bitmap_hdr bh;
	uint64_t words, *bits = in->bitmap_scratch;
	void *z;
	size_t n;
	int ret;

	if (h->len < sizeof(bh)) {
		snprintf(err, errlen, "BITMAP record of %u bytes", h->len);
		return -EPROTO;
	}
	ret = chan_read(&in->main, &bh, sizeof(bh));
	if (ret)
		return ret;
	if (bh.slot >= in->vm->mem.nslots || bh.data_len != h->len - sizeof(bh) ||
	    bh.raw_len != slot_words(in, bh.slot) * 8 ||
	    bh.data_len > ZSTD_compressBound(bh.raw_len)) {
		snprintf(err, errlen, "BITMAP for slot %u: raw %u, %u compressed bytes do not "
			 "fit the slot", bh.slot, bh.raw_len, bh.data_len);
		return -EPROTO;
	}
	z = malloc(bh.data_len ? bh.data_len : 1);
	if (!z)
		return -ENOMEM;
	ret = chan_read(&in->main, z, bh.data_len);
	if (ret) {
		free(z);
		return ret;
	}
	if (in->bitmap_ended) {
		free(z);
		snprintf(err, errlen, "BITMAP for slot %u after the final BITMAP_END", bh.slot);
		return -EPROTO;
	}
	words = slot_words(in, bh.slot);
	n = ZSTD_decompressDCtx(in->bitmap_dctx, bits, words * 8, z, bh.data_len);
	free(z);
	if (ZSTD_isError(n) || n != words * 8) {
		snprintf(err, errlen, "BITMAP for slot %u does not expand to %llu bytes", bh.slot,
			 (unsigned long long)(words * 8));
		return -EPROTO;
	}
	/* Bits past the slot's last page would never be cleared. */
	if (in->vm->mem.slots[bh.slot].npages % 64 &&
	    bits[words - 1] >> (in->vm->mem.slots[bh.slot].npages % 64)) {
		snprintf(err, errlen, "BITMAP for slot %u marks pages past its end", bh.slot);
		return -EPROTO;
	}
	in->nbitmaps++;
	pthread_mutex_lock(&in->drop_lock);
	for (uint64_t w = 0; w < words; w++)
		if (bits[w])
			__atomic_or_fetch(&in->missing[bh.slot][w], bits[w], __ATOMIC_RELAXED);
	ret = queue_slot(in, bh.slot);
	pthread_mutex_unlock(&in->drop_lock);
	if (ret)
		snprintf(err, errlen, "more BITMAP records than two rounds of %u slots",
			 in->vm->mem.nslots);
	return ret;
}

/*
 * BITMAP_END. After the preliminary round: wait until the dropper has
 * dropped it, then POSTCOPY_ARMED (the source pauses only then). After the
 * final round: no more slots for the dropper.
 */
static int bitmap_end(struct incoming *in, const struct mig_rec_hdr *h, char *err,
		      size_t errlen)
{
	struct mig_bitmap_end be;
	uint64_t pages = 0;
	int ret;

	if (h->len != sizeof(be)) {
		snprintf(err, errlen, "BITMAP_END of %u bytes", h->len);
		return -EPROTO;
	}
	ret = chan_read(&in->main, &be, sizeof(be));
	if (ret)
		return ret;
	if (in->bitmap_ended || (be.flags & ~MIG_BITMAP_END_PRELIMINARY) ||
	    ((be.flags & MIG_BITMAP_END_PRELIMINARY) && in->pre_done)) {
		snprintf(err, errlen, "BITMAP_END (flags 0x%x) out of order", be.flags);
		return -EPROTO;
	}
	for (uint32_t i = 0; i < in->vm->mem.nslots; i++)
		for (uint64_t w = 0; w < slot_words(in, i); w++)
			pages += bits_count(in->missing[i][w]);
	if (be.nbitmaps != in->nbitmaps || be.pages != pages) {
		snprintf(err, errlen, "BITMAP_END announces %u bitmaps / %llu pages, got %u / %llu",
			 be.nbitmaps, (unsigned long long)be.pages, in->nbitmaps,
			 (unsigned long long)pages);
		return -EPROTO;
	}
	in->nbitmaps = 0;
	pthread_mutex_lock(&in->drop_lock);
	if (be.flags & MIG_BITMAP_END_PRELIMINARY) {
		while ((in->drop_taken < in->drop_queued || in->drop_busy) && !in->drop_error)
			pthread_cond_wait(&in->drop_cond, &in->drop_lock);
		pthread_mutex_unlock(&in->drop_lock);
		if (in->drop_error) {
			snprintf(err, errlen, "dropping stale pages: %s", strerror(-in->drop_error));
			return in->drop_error;
		}
		in->pre_done = true;
		pthread_mutex_lock(&in->main_wlock);
		ret = chan_send_record(&in->main, MIG_REC_POSTCOPY_ARMED, NULL, 0, NULL, 0);
		pthread_mutex_unlock(&in->main_wlock);
		return ret;
	}
	if (in->postcopy_flags & MIG_POSTCOPY_NO_FINAL_BITMAP) {
		/* Every page is stale: the slow baseline. */
		for (uint32_t i = 0; i < in->vm->mem.nslots && !ret; i++) {
			const struct memslot *s = &in->vm->mem.slots[i];

			memset(in->missing[i], 0xff, slot_words(in, i) * 8);
			if (s->npages % 64)
				in->missing[i][slot_words(in, i) - 1] = (1ull << (s->npages % 64)) - 1;
			ret = queue_slot(in, i);
		}
	}
	in->bitmap_ended = true;
	in->drop_closed = true;
	pthread_cond_broadcast(&in->drop_cond);
	pthread_mutex_unlock(&in->drop_lock);
	if (ret)
		snprintf(err, errlen, "more BITMAP records than two rounds of %u slots",
			 in->vm->mem.nslots);
	return ret;
}

int postcopy_target_record(struct incoming *in, const struct mig_rec_hdr *h, char *err,
			   size_t errlen)
{
	int ret;

	if (h->type == MIG_REC_POSTCOPY) {
		struct mig_postcopy pc;

		if (h->len != sizeof(pc) || in->postcopy) {
			snprintf(err, errlen, "POSTCOPY record of %u bytes, or sent twice", h->len);
			return -EPROTO;
		}
		ret = chan_read(&in->main, &pc, sizeof(pc));
		if (ret)
			return ret;
		if (pc.flags & ~MIG_POSTCOPY_NO_FINAL_BITMAP) {
			snprintf(err, errlen, "POSTCOPY with unknown flags 0x%x", pc.flags);
			return -EPROTO;
		}
		in->postcopy_flags = pc.flags;
		ret = alloc_bitmaps(in);
		if (ret)
			return ret;
		__atomic_store_n(&in->postcopy, true, __ATOMIC_RELEASE);
		return arm(in, err, errlen);
	}
	if (!in->postcopy) {
		snprintf(err, errlen, "%s before POSTCOPY", mig_rec_name(h->type));
		return -EPROTO;
	}
	if (h->type == MIG_REC_BITMAP_END)
		return bitmap_end(in, h, err, errlen);
	return bitmap(in, h, err, errlen);
}

/* Drops the target's copy of [first, first+n) pages of a slot: they must fault. */
static int drop_pages(struct incoming *in, const struct memslot *s, uint64_t first, uint64_t n)
{
	int advice = in->vm->mem.backend == MEM_BACKEND_MEMFD ? MADV_REMOVE : MADV_DONTNEED;

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
	const struct memslot *s = &in->vm->mem.slots[i];
	uint64_t *todo = in->drop_todo, run = 0, total = 0;
	int ret;

	/* The fault thread decides on `stale`: set it before any page goes. */
	pthread_mutex_lock(&in->drop_lock);
	for (uint64_t w = 0; w < slot_words(in, i); w++) {
		todo[w] = in->missing[i][w] & ~in->stale[i][w];
		if (todo[w])
			__atomic_or_fetch(&in->stale[i][w], todo[w], __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&in->drop_lock);
	/*
	 * One madvise per run, found a word (64 pages) at a time: the final
	 * round runs inside the downtime. Runs are never merged across pages
	 * that are not to go: those hold good data (or were dropped already).
	 */
	for (uint64_t w = 0; w < slot_words(in, i); w++) {
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
	uint64_t total = 0;

	for (;;) {
		uint32_t slot;
		int64_t n;

		pthread_mutex_lock(&in->drop_lock);
		while (in->drop_taken == in->drop_queued && !in->drop_closed)
			pthread_cond_wait(&in->drop_cond, &in->drop_lock);
		if (in->drop_taken == in->drop_queued ||
		    __atomic_load_n(&in->abort, __ATOMIC_RELAXED)) {
			/* Aborted with work left: whoever waits for the drain must not wait on. */
			if (in->drop_taken < in->drop_queued && !in->drop_error)
				in->drop_error = -ECANCELED;
			pthread_cond_broadcast(&in->drop_cond);
			pthread_mutex_unlock(&in->drop_lock);
			break;
		}
		slot = in->drop_queue[in->drop_taken++];
		in->drop_busy = true;
		pthread_mutex_unlock(&in->drop_lock);
		n = drop_slot(in, slot);
		pthread_mutex_lock(&in->drop_lock);
		in->drop_busy = false;
		if (n < 0)
			in->drop_error = (int)n;
		pthread_cond_broadcast(&in->drop_cond);
		pthread_mutex_unlock(&in->drop_lock);
		if (n < 0)
			break;
		total += (uint64_t)n;
	}
	in->missing_total = total;
	__atomic_store_n(&in->missing_left, total, __ATOMIC_RELEASE);
	return NULL;
}

static void stop_dropper(struct incoming *in)
{
	if (!in->drop_started)
		return;
	pthread_mutex_lock(&in->drop_lock);
	in->drop_closed = true;
	pthread_cond_broadcast(&in->drop_cond);
	pthread_mutex_unlock(&in->drop_lock);
	pthread_join(in->drop_thread, NULL);
	in->drop_started = false;
}

static const struct memslot *slot_of_hva(const struct incoming *in, uint64_t hva, uint64_t *page)
{
	const struct guest_mem *mem = &in->vm->mem;
	uint64_t off;
	uint32_t lo = 0, hi = mem->nslots;

	if (hva < (uint64_t)(uintptr_t)mem->base)
		return NULL;
	off = hva - (uint64_t)(uintptr_t)mem->base;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct memslot *s = &mem->slots[mid];

		if (off < s->ram_offset)
			hi = mid;
		else if (off - s->ram_offset >= s->size)
			lo = mid + 1;
		else {
			*page = (off - s->ram_offset) / GUEST_PAGE_SIZE;
			return s;
		}
	}
	return NULL;
}

static bool test_bit(uint64_t *map, uint64_t p)
{
	return __atomic_load_n(&map[p / 64], __ATOMIC_ACQUIRE) >> (p % 64) & 1;
}

static int send_request(struct incoming *in, uint32_t slot, uint64_t page)
{
	struct mig_page_req rq = {.slot = slot, .page = (uint32_t)page};
	int ret;

	pthread_mutex_lock(&in->urgent_wlock);
	ret = chan_send_record(&in->urgent.chan, MIG_REC_PAGE_REQ, &rq, sizeof(rq), NULL, 0);
	pthread_mutex_unlock(&in->urgent_wlock);
	return ret;
}

static void note_request(struct incoming *in, uint32_t slot, uint64_t page)
{
	uint64_t key = ((uint64_t)slot << 32 | page) + 1;

	pthread_mutex_lock(&in->pc_lock);
	for (uint32_t i = 0; i < 16; i++) {
		struct pc_req *r = &in->reqtab[(key * 0x9e3779b97f4a7c15ull + i) & (REQTAB_SIZE - 1)];

		if (!r->key) {
			r->key = key;
			r->t_ns = now_ns();
			break;
		}
	}
	pthread_mutex_unlock(&in->pc_lock);
}

static void note_arrival(struct incoming *in, uint32_t slot, uint64_t page, uint64_t now)
{
	uint64_t key = ((uint64_t)slot << 32 | page) + 1;

	pthread_mutex_lock(&in->pc_lock);
	for (uint32_t i = 0; i < 16; i++) {
		struct pc_req *r = &in->reqtab[(key * 0x9e3779b97f4a7c15ull + i) & (REQTAB_SIZE - 1)];

		if (r->key == key) {
			if (in->nlat < in->lat_cap)
				in->lat_us[in->nlat++] = (uint32_t)((now - r->t_ns) / 1000);
			r->key = 0;
			break;
		}
	}
	pthread_mutex_unlock(&in->pc_lock);
}

static void *fault_main(void *arg)
{
	struct incoming *in = arg;
	uint64_t addrs[64];

	for (;;) {
		struct pollfd p[2] = {{in->uffd, POLLIN, 0}, {in->stop_fd, POLLIN, 0}};
		int n;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			return NULL;
		n = uffd_read_faults(in->uffd, addrs, 64);
		for (int i = 0; i < n; i++) {
			uint64_t page;
			const struct memslot *s = slot_of_hva(in, addrs[i], &page);
			uint64_t bit;

			if (!s)
				continue;
			__atomic_fetch_add(&in->faults, 1, __ATOMIC_RELAXED);
			/*
			 * Decide on the fixed stale set, not on `missing`: a stale page
			 * whose bit was just cleared is being placed right now, and a zero
			 * page put there first would hide its data.
			 */
			if (!test_bit(in->stale[s->id], page)) {
				/* Never written on either side: zero. */
				uffd_zeropage(in->uffd, s->hva + page * GUEST_PAGE_SIZE,
					      GUEST_PAGE_SIZE);
				continue;
			}
			if (!test_bit(in->missing[s->id], page)) {
				/* Placed (or being placed): its UFFDIO_COPY wakes the waiter. */
				uffd_wake(in->uffd, s->hva + page * GUEST_PAGE_SIZE, GUEST_PAGE_SIZE);
				continue;
			}
			bit = 1ull << (page % 64);
			if (__atomic_fetch_or(&in->requested[s->id][page / 64], bit,
					      __ATOMIC_ACQ_REL) & bit)
				continue; /* already asked for; another vCPU waits on it too */
			note_request(in, s->id, page);
			__atomic_fetch_add(&in->nrequested, 1, __ATOMIC_RELAXED);
			if (!__atomic_load_n(&in->paused, __ATOMIC_ACQUIRE) &&
			    send_request(in, s->id, page))
				postcopy_connection_lost(in, "sending a page request failed");
			/* While paused the request is re-sent on resume. */
		}
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * The last page is in place: tell the source, stop trapping faults. Called
 * by whoever may have finished it (a receiver placing the last page, the ACK,
 * a resume); decided under pc_lock so it happens once, and only after the
 * vCPUs were started (each caller stored its own side before locking).
 */
static void maybe_complete(struct incoming *in)
{
	struct mig_postcopy_done d = {0};
	struct guest_mem *mem = &in->vm->mem;
	uint64_t one = 1;

	pthread_mutex_lock(&in->pc_lock);
	if (in->complete || in->stopping || !__atomic_load_n(&in->start_ns, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&in->missing_left, __ATOMIC_SEQ_CST) != 0) {
		pthread_mutex_unlock(&in->pc_lock);
		return;
	}
	in->complete = true;
	if (in->nlat) {
		qsort(in->lat_us, in->nlat, sizeof(uint32_t), cmp_u32);
		d.fault_p50_us = in->lat_us[in->nlat / 2];
		d.fault_p99_us = in->lat_us[(in->nlat * 99) / 100];
		d.fault_max_us = in->lat_us[in->nlat - 1];
	}
	pthread_mutex_unlock(&in->pc_lock);
	d.faults = __atomic_load_n(&in->faults, __ATOMIC_RELAXED);
	d.requested = __atomic_load_n(&in->nrequested, __ATOMIC_RELAXED);
	d.duplicates = __atomic_load_n(&in->duplicates, __ATOMIC_RELAXED);
	d.arrived_us = (now_ns() - in->start_ns) / 1000;
	/* Unregistering wakes anything still blocked; every page is in place now. */
	uffd_unregister(in->uffd, mem->base, mem->size);
	if (write(in->stop_fd, &one, sizeof(one)) < 0) {
		/* the fault thread also stops when the fd closes */
	}
	pthread_mutex_lock(&in->main_wlock);
	chan_send_record(&in->main, MIG_REC_POSTCOPY_DONE, &d, sizeof(d), NULL, 0);
	pthread_mutex_unlock(&in->main_wlock);
}

int postcopy_place(struct incoming *in, uint32_t slot, uint64_t page, const void *data)
{
	const struct memslot *s = &in->vm->mem.slots[slot];
	uint64_t bit = 1ull << (page % 64), now;
	uint8_t *dst = s->hva + page * GUEST_PAGE_SIZE;
	int ret;

	/* Claim first: whoever clears the bit places the page, exactly once. */
	if (!(__atomic_fetch_and(&in->missing[slot][page / 64], ~bit, __ATOMIC_ACQ_REL) & bit)) {
		__atomic_fetch_add(&in->duplicates, 1, __ATOMIC_RELAXED);
		return 0;
	}
	ret = data ? uffd_copy(in->uffd, dst, data, GUEST_PAGE_SIZE)
		   : uffd_zeropage(in->uffd, dst, GUEST_PAGE_SIZE);
	/* EEXIST too: only this call may place a stale page. */
	if (ret)
		return ret;
	now = now_ns();
	if (__atomic_load_n(&in->requested[slot][page / 64], __ATOMIC_RELAXED) & bit)
		note_arrival(in, slot, page, now);
	if (__atomic_sub_fetch(&in->missing_left, 1, __ATOMIC_SEQ_CST) == 0)
		maybe_complete(in);
	return 0;
}

int postcopy_target_ready(struct incoming *in, char *err, size_t errlen)
{
	if (!in->bitmap_ended) {
		snprintf(err, errlen, "POSTCOPY without BITMAP_END");
		return -EPROTO;
	}
	stop_dropper(in);
	if (in->drop_error) {
		snprintf(err, errlen, "dropping stale pages: %s", strerror(-in->drop_error));
		return in->drop_error;
	}
	__atomic_store_n(&in->uffd_ready, true, __ATOMIC_RELEASE);
	return 0;
}

/* Watches the main connection: before DONE, EOF or an error means the source is gone. */
static void *monitor_main(void *arg)
{
	struct incoming *in = arg;
	char c;

	/*
	 * Raw bytes, even under TLS: nothing more is read from this connection
	 * (a resume brings a new one). The socket is non-blocking under TLS, so
	 * wait with poll().
	 */
	for (;;) {
		struct pollfd p = {.fd = in->main.fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, -1) < 0)
			continue;
		n = recv(in->main.fd, &c, 1, MSG_DONTWAIT);
		if (n > 0)
			continue; /* nothing is expected here; ignore */
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (!__atomic_load_n(&in->complete, __ATOMIC_ACQUIRE)) {
			postcopy_connection_lost(in, "the main connection closed before every page "
						     "arrived");
			return NULL;
		}
		/* The source exits after DONE: the migration is over. */
		__atomic_store_n(&in->finished, true, __ATOMIC_RELEASE);
		return NULL;
	}
}

void postcopy_target_started(struct incoming *in)
{
	__atomic_store_n(&in->start_ns, now_ns(), __ATOMIC_SEQ_CST);
	chan_set_timeout(&in->main, 0);
	in->monitor_started = !pthread_create(&in->monitor_thread, NULL, monitor_main, in);
	/* Nothing was stale, or everything arrived before the vCPUs started. */
	maybe_complete(in);
}

static void *resume_main(void *arg);

void postcopy_connection_lost(struct incoming *in, const char *why)
{
	pthread_mutex_lock(&in->pc_lock);
	if (in->paused || in->complete || in->stopping) {
		pthread_mutex_unlock(&in->pc_lock);
		return;
	}
	in->paused = true;
	snprintf(in->pause_reason, sizeof(in->pause_reason), "%s", why);
	pthread_mutex_unlock(&in->pc_lock);
	/* Everything stays: missing pages keep their faulting vCPUs waiting. */
	chan_abort(&in->main);
	chan_abort(&in->urgent.chan);
	for (unsigned i = 0; i < in->nchans; i++)
		chan_abort(&in->chans[i].chan);
	/*
	 * The previous resume thread finished its work before it cleared
	 * `paused` and may still be returning (the aborts above end any send it
	 * is stuck in). Nothing it joins can call us while `paused` is set, so
	 * this join cannot deadlock.
	 */
	pthread_mutex_lock(&in->resume_lock);
	if (in->resume_started)
		pthread_join(in->resume_thread, NULL);
	in->resume_started = false;
	/* A stop that began meanwhile has its own join: start nothing more. */
	if (!__atomic_load_n(&in->stopping, __ATOMIC_ACQUIRE))
		in->resume_started = !pthread_create(&in->resume_thread, NULL, resume_main, in);
	pthread_mutex_unlock(&in->resume_lock);
}

/* Sends the bitmap of pages still missing, slot by slot. */
static int send_missing(struct incoming *in)
{
	struct mig_bitmap_end be = {0};
	int ret = 0;

	for (uint32_t i = 0; !ret && i < in->vm->mem.nslots; i++) {
		uint64_t words = slot_words(in, i), n = 0;
		size_t cap = ZSTD_compressBound(words * 8), z;
		uint64_t *copy = malloc(words * 8);
		void *buf = malloc(cap);

		if (!copy || !buf) {
			free(copy);
			free(buf);
			return -ENOMEM;
		}
		for (uint64_t w = 0; w < words; w++) {
			copy[w] = __atomic_load_n(&in->missing[i][w], __ATOMIC_ACQUIRE);
			n += bits_count(copy[w]);
		}
		if (n) {
			struct mig_bitmap_hdr bh = {.slot = i, .raw_len = (uint32_t)(words * 8)};

			z = ZSTD_compress(buf, cap, copy, words * 8, 1);
			if (ZSTD_isError(z)) {
				ret = -EIO;
			} else {
				bh.data_len = (uint32_t)z;
				pthread_mutex_lock(&in->main_wlock);
				ret = chan_send_record(&in->main, MIG_REC_BITMAP, &bh, sizeof(bh), buf,
						       bh.data_len);
				pthread_mutex_unlock(&in->main_wlock);
				be.nbitmaps++;
				be.pages += n;
			}
		}
		free(copy);
		free(buf);
	}
	if (!ret) {
		pthread_mutex_lock(&in->main_wlock);
		ret = chan_send_record(&in->main, MIG_REC_BITMAP_END, &be, sizeof(be), NULL, 0);
		pthread_mutex_unlock(&in->main_wlock);
	}
	return ret;
}

static void join_connections(struct incoming *in)
{
	for (unsigned i = 0; i < in->nchans; i++) {
		if (in->chans[i].started)
			pthread_join(in->chans[i].thread, NULL);
		in->chans[i].started = false;
		chan_close(&in->chans[i].chan);
		in->chans[i].error = 0;
		in->chans[i].records = 0;
		in->chans[i].ended = false;
		in->chans[i].synced = 0;
	}
	if (in->urgent.started)
		pthread_join(in->urgent.thread, NULL);
	in->urgent.started = false;
	chan_close(&in->urgent.chan);
	in->urgent.error = 0;
	if (in->monitor_started)
		pthread_join(in->monitor_thread, NULL);
	in->monitor_started = false;
	chan_close(&in->main);
}

/* Accepts one resumed session: main (MAIN_RESUME), its data and urgent connections. */
static int accept_resume(struct incoming *in)
{
	unsigned ndata = 0;
	bool urgent = false;
	char err[256];

	for (;;) {
		struct mig_chan c;
		struct mig_hello h;

		if (chan_accept(in->lfd, &c, 0, err, sizeof(err)))
			return -EIO;
		chan_set_timeout(&c, 10000);
		if (incoming_secure(in, &c, err, sizeof(err)) ||
		    chan_recv_hello(&c, &h, err, sizeof(err)) || h.session_id != in->session) {
			chan_close(&c);
			continue; /* not ours: keep waiting for the real source */
		}
		chan_set_timeout(&c, 0);
		if (h.role == MIG_ROLE_MAIN_RESUME && in->main.fd < 0) {
			in->main = c;
		} else if (h.role == MIG_ROLE_DATA && in->main.fd >= 0 && h.index < in->nchans &&
			   in->chans[h.index].chan.fd < 0) {
			in->chans[h.index].chan = c;
			ndata++;
		} else if (h.role == MIG_ROLE_URGENT && in->main.fd >= 0 && !urgent) {
			in->urgent.chan = c;
			urgent = true;
		} else {
			chan_close(&c);
			continue;
		}
		if (ndata == in->nchans && urgent)
			return 0;
	}
}

static void *resume_main(void *arg)
{
	struct incoming *in = arg;

	for (;;) {
		int ret;

		join_connections(in);
		ret = accept_resume(in);
		if (ret)
			return NULL; /* listening socket closed: the VM is going away */
		ret = send_missing(in);
		for (unsigned i = 0; !ret && i < in->nchans; i++) {
			ret = -pthread_create(&in->chans[i].thread, NULL, ram_recv_thread, &in->chans[i]);
			in->chans[i].started = !ret;
		}
		if (!ret) {
			ret = -pthread_create(&in->urgent.thread, NULL, ram_recv_thread, &in->urgent);
			in->urgent.started = !ret;
		}
		pthread_mutex_lock(&in->pc_lock);
		in->paused = ret != 0;
		in->resumes++;
		pthread_mutex_unlock(&in->pc_lock);
		if (ret) {
			join_connections(in);
			continue;
		}
		in->monitor_started = !pthread_create(&in->monitor_thread, NULL, monitor_main, in);
		/* Requests lost with the old connection: ask again for what vCPUs wait on. */
		for (uint32_t i = 0; i < in->vm->mem.nslots; i++)
			for (uint64_t w = 0; w < slot_words(in, i); w++) {
				uint64_t bits = __atomic_load_n(&in->requested[i][w], __ATOMIC_ACQUIRE) &
						__atomic_load_n(&in->missing[i][w], __ATOMIC_ACQUIRE);

				while (bits) {
					uint64_t p = w * 64 + (uint64_t)__builtin_ctzll(bits);

					bits &= bits - 1;
					send_request(in, i, p);
				}
			}
		maybe_complete(in);
		return NULL;
	}
}

void postcopy_target_stop(struct incoming *in)
{
	uint64_t one = 1;

	/* First: no connection loss from here on may start a resume. */
	pthread_mutex_lock(&in->pc_lock);
	__atomic_store_n(&in->stopping, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&in->pc_lock);
	stop_dropper(in);
	if (in->lfd >= 0)
		shutdown(in->lfd, SHUT_RDWR);
	pthread_mutex_lock(&in->resume_lock);
	if (in->resume_started)
		pthread_join(in->resume_thread, NULL);
	in->resume_started = false;
	pthread_mutex_unlock(&in->resume_lock);
	if (in->stop_fd >= 0 && write(in->stop_fd, &one, sizeof(one)) < 0) {
		/* nothing more to do */
	}
	if (in->fault_started)
		pthread_join(in->fault_thread, NULL);
	in->fault_started = false;
	chan_abort(&in->main);
	chan_abort(&in->urgent.chan);
	if (in->urgent.started)
		pthread_join(in->urgent.thread, NULL);
	in->urgent.started = false;
	if (in->monitor_started)
		pthread_join(in->monitor_thread, NULL);
	in->monitor_started = false;
}

void postcopy_target_progress(struct incoming *in, struct migration_progress *out)
{
	pthread_mutex_lock(&in->pc_lock);
	out->state = in->complete ? MIGRATION_COMPLETED
		     : in->paused ? MIGRATION_POSTCOPY_PAUSED
				  : MIGRATION_POSTCOPY_ACTIVE;
	if (in->paused)
		snprintf(out->error, sizeof(out->error), "%s", in->pause_reason);
	out->resumes = in->resumes;
	pthread_mutex_unlock(&in->pc_lock);
	snprintf(out->mode_used, sizeof(out->mode_used), "postcopy");
	out->postcopy_pages = in->missing_total;
	out->bytes_remaining = __atomic_load_n(&in->missing_left, __ATOMIC_RELAXED) * GUEST_PAGE_SIZE;
	out->faults = __atomic_load_n(&in->faults, __ATOMIC_RELAXED);
	out->pages_requested = __atomic_load_n(&in->nrequested, __ATOMIC_RELAXED);
}
