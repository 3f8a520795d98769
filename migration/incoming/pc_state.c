/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target's postcopy shared state (see pc_state.h): placing pages,
 * recording requests and their latencies, and the pause / complete / stop
 * transitions, each decided once under pc_lock by pc_fsm.c. Nothing here waits for
 * another thread: a change another thread must act on writes wake_fd.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bitmap.h"
#include "clock.h"
#include "guest_mem.h"
#include "migration.h"
#include "pc_state.h"
#include "uffd.h"

#define REQTAB_SIZE   8192u /* power of two; outstanding requests beyond it lose their timing */
#define REQTAB_PROBES 16u
#define LAT_MAX	      (1u << 20)

void pc_state_init(struct pc_state *ps)
{
	pthread_mutex_init(&ps->lock, NULL);
	ps->uffd = -1;
	ps->wake_fd = -1;
}

uint64_t pc_slot_words(const struct pc_state *ps, uint32_t slot)
{
	return bitmap_words(ps->mem->slots[slot].npages);
}

int pc_state_alloc(struct pc_state *ps, const struct guest_mem *mem)
{
	uint64_t *words = calloc(mem->nslots ? mem->nslots : 1, sizeof(*words));

	if (!words)
		return -ENOMEM;
	ps->mem = mem;
	for (uint32_t i = 0; i < mem->nslots; i++)
		words[i] = pc_slot_words(ps, i);
	ps->missing = bitmap_array_new(mem->nslots, words);
	ps->stale = bitmap_array_new(mem->nslots, words);
	ps->requested = bitmap_array_new(mem->nslots, words);
	free(words);
	ps->reqtab = calloc(REQTAB_SIZE, sizeof(*ps->reqtab));
	ps->lat_cap = LAT_MAX;
	ps->lat_us = malloc(LAT_MAX * sizeof(uint32_t));
	ps->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!ps->missing || !ps->stale || !ps->requested || !ps->reqtab || !ps->lat_us ||
	    ps->wake_fd < 0)
		return -ENOMEM;
	return 0;
}

void pc_state_destroy(struct pc_state *ps)
{
	uint32_t n = ps->mem ? ps->mem->nslots : 0;

	bitmap_array_free(ps->missing, n);
	bitmap_array_free(ps->stale, n);
	bitmap_array_free(ps->requested, n);
	free(ps->reqtab);
	free(ps->lat_us);
	if (ps->uffd >= 0)
		close(ps->uffd);
	if (ps->wake_fd >= 0)
		close(ps->wake_fd);
	pthread_mutex_destroy(&ps->lock);
}

void pc_wake(struct pc_state *ps)
{
	uint64_t one = 1;

	if (ps->wake_fd >= 0 && write(ps->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, the control thread wakes anyway */
	}
}

static struct pc_req *req_slot(struct pc_state *ps, uint64_t key, uint32_t probe)
{
	return &ps->reqtab[(key * 0x9e3779b97f4a7c15ull + probe) & (REQTAB_SIZE - 1)];
}

void pc_note_request(struct pc_state *ps, uint32_t slot, uint64_t page)
{
	uint64_t key = ((uint64_t)slot << 32 | page) + 1;

	pthread_mutex_lock(&ps->lock);
	for (uint32_t i = 0; i < REQTAB_PROBES; i++) {
		struct pc_req *r = req_slot(ps, key, i);

		if (!r->key) {
			r->key = key;
			r->t_ns = now_ns();
			break;
		}
	}
	pthread_mutex_unlock(&ps->lock);
}

static void note_arrival(struct pc_state *ps, uint32_t slot, uint64_t page, uint64_t now)
{
	uint64_t key = ((uint64_t)slot << 32 | page) + 1;

	pthread_mutex_lock(&ps->lock);
	for (uint32_t i = 0; i < REQTAB_PROBES; i++) {
		struct pc_req *r = req_slot(ps, key, i);

		if (r->key == key) {
			if (ps->nlat < ps->lat_cap)
				ps->lat_us[ps->nlat++] = (uint32_t)((now - r->t_ns) / 1000);
			r->key = 0;
			break;
		}
	}
	pthread_mutex_unlock(&ps->lock);
}

int pc_place(struct pc_state *ps, uint32_t slot, uint64_t page, const void *data)
{
	const struct memslot *s = &ps->mem->slots[slot];
	uint8_t *dst = s->hva + page * GUEST_PAGE_SIZE;
	int ret;

	/* Claim first: whoever clears the bit places the page, exactly once. */
	if (!bitmap_take_atomic(ps->missing[slot], page)) {
		__atomic_fetch_add(&ps->duplicates, 1, __ATOMIC_RELAXED);
		return 0;
	}
	ret = data ? uffd_copy(ps->uffd, dst, data, GUEST_PAGE_SIZE)
		   : uffd_zeropage(ps->uffd, dst, GUEST_PAGE_SIZE);
	/* EEXIST too: only this call may place a stale page. */
	if (ret)
		return ret;
	if (bitmap_test_atomic(ps->requested[slot], page))
		note_arrival(ps, slot, page, now_ns());
	if (__atomic_sub_fetch(&ps->missing_left, 1, __ATOMIC_SEQ_CST) == 0)
		pc_wake(ps);
	return 0;
}

/*
 * Steps the transitions (pc_fsm.c) and mirrors them into the atomics the
 * lock-free readers use: their one writer. pc_lock held.
 */
static enum pc_action pc_step(struct pc_state *ps, enum pc_event ev)
{
	enum pc_action a = pc_fsm_step(&ps->fsm, ev);

	__atomic_store_n(&ps->paused, ps->fsm.paused, __ATOMIC_RELEASE);
	__atomic_store_n(&ps->complete, ps->fsm.complete, __ATOMIC_RELEASE);
	__atomic_store_n(&ps->stopping, ps->fsm.stopping, __ATOMIC_RELEASE);
	return a;
}

void pc_mark_lost(struct pc_state *ps, const char *why)
{
	pthread_mutex_lock(&ps->lock);
	if (pc_step(ps, PC_EV_LOST) != PC_ACT_PAUSE) {
		pthread_mutex_unlock(&ps->lock);
		return;
	}
	snprintf(ps->pause_reason, sizeof(ps->pause_reason), "%s", why);
	pthread_mutex_unlock(&ps->lock);
	/* Everything stays: missing pages keep their faulting vCPUs waiting. */
	pc_wake(ps);
}

void pc_set_missing(struct pc_state *ps, uint64_t total)
{
	__atomic_store_n(&ps->missing_total, total, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->missing_left, total, __ATOMIC_RELEASE);
}

void pc_start(struct pc_state *ps)
{
	__atomic_store_n(&ps->start_ns, now_ns(), __ATOMIC_SEQ_CST);
	pc_wake(ps);
}

void pc_set_stopping(struct pc_state *ps)
{
	pthread_mutex_lock(&ps->lock);
	pc_step(ps, PC_EV_STOP);
	pthread_mutex_unlock(&ps->lock);
	pc_wake(ps);
}

void pc_resumed(struct pc_state *ps, bool ok)
{
	pthread_mutex_lock(&ps->lock);
	if (pc_step(ps, ok ? PC_EV_RESUMED : PC_EV_RESUME_FAILED) == PC_ACT_RESUMED)
		ps->resumes++;
	pthread_mutex_unlock(&ps->lock);
}

enum pc_action pc_after_done(struct pc_state *ps, enum pc_event ev)
{
	enum pc_action a;

	pthread_mutex_lock(&ps->lock);
	a = pc_step(ps, ev);
	pthread_mutex_unlock(&ps->lock);
	return a;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

bool pc_take_completion(struct pc_state *ps, struct mig_postcopy_done *d)
{
	uint64_t start;

	memset(d, 0, sizeof(*d));
	pthread_mutex_lock(&ps->lock);
	start = __atomic_load_n(&ps->start_ns, __ATOMIC_SEQ_CST);
	/* The vCPUs run and nothing is missing: DONE, once, unless a stop began. */
	if (!start || __atomic_load_n(&ps->missing_left, __ATOMIC_SEQ_CST) != 0 ||
	    pc_step(ps, PC_EV_ALL_IN) != PC_ACT_SEND_DONE) {
		pthread_mutex_unlock(&ps->lock);
		return false;
	}
	if (ps->nlat) {
		qsort(ps->lat_us, ps->nlat, sizeof(uint32_t), cmp_u32);
		d->fault_p50_us = ps->lat_us[ps->nlat / 2];
		d->fault_p99_us = ps->lat_us[(ps->nlat * 99) / 100];
		d->fault_max_us = ps->lat_us[ps->nlat - 1];
	}
	pthread_mutex_unlock(&ps->lock);
	d->faults = __atomic_load_n(&ps->faults, __ATOMIC_RELAXED);
	d->requested = __atomic_load_n(&ps->nrequested, __ATOMIC_RELAXED);
	d->duplicates = __atomic_load_n(&ps->duplicates, __ATOMIC_RELAXED);
	d->arrived_us = (now_ns() - start) / 1000;
	return true;
}

void pc_state_progress(struct pc_state *ps, struct migration_progress *out)
{
	pthread_mutex_lock(&ps->lock);
	out->state = ps->complete ? MIGRATION_COMPLETED
		     : ps->paused ? MIGRATION_POSTCOPY_PAUSED
				  : MIGRATION_POSTCOPY_ACTIVE;
	if (ps->paused)
		snprintf(out->error, sizeof(out->error), "%s", ps->pause_reason);
	out->resumes = ps->resumes;
	pthread_mutex_unlock(&ps->lock);
	out->postcopy_pages = __atomic_load_n(&ps->missing_total, __ATOMIC_RELAXED);
	out->remaining_bytes =
	    __atomic_load_n(&ps->missing_left, __ATOMIC_RELAXED) * GUEST_PAGE_SIZE;
	out->faults = __atomic_load_n(&ps->faults, __ATOMIC_RELAXED);
	out->pages_requested = __atomic_load_n(&ps->nrequested, __ATOMIC_RELAXED);
}
