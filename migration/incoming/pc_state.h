/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pc_state.h - the target's postcopy shared state, the lowest postcopy
 * module: per slot, which pages are still missing, which were stale at the
 * switchover and which were requested; the counters and the fault latency
 * samples; the userfaultfd; the pause/complete/stop transitions.
 *
 * Threads below the control thread (receivers, fault thread, dropper)
 * only change this state and wake the control thread (pc_control.c)
 * through wake_fd: "a page is in place" (pc_place), "a connection was
 * lost" (pc_mark_lost). They never run completion or a resume themselves,
 * so nothing here calls up.
 *
 * Bitmap protocol (each bit decided by one atomic read-modify-write):
 *   stale      set by the dropper, release, before it drops the page; fixed
 *              after the switchover. The fault thread decides zero-fill on it.
 *   missing    set at the switchover (BITMAP records); cleared by whoever
 *              claims the page (pc_place), before the page is placed: the
 *              one that cleared it places it, exactly once.
 *   requested  set by the fault thread before it sends PAGE_REQ.
 */
#ifndef VMM_MIGRATION_PC_STATE_H
#define VMM_MIGRATION_PC_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "pc_fsm.h"
#include "protocol.h"

struct guest_mem;
struct migration_progress;

/* An outstanding page request and when it was sent (for the latency samples). */
struct pc_req {
	uint64_t key; /* slot << 32 | page, 0 = free (page keys are stored + 1) */
	uint64_t t_ns;
};

struct pc_state {
	const struct guest_mem *mem; /* set by pc_state_alloc(), immutable after */
	uint64_t **missing;	     /* per slot; atomic words */
	uint64_t **stale;	     /* per slot; atomic words, see above */
	uint64_t **requested;	     /* per slot; atomic words */
	uint64_t missing_left;	     /* atomic: stale pages not yet in place */
	uint64_t missing_total;	     /* atomic: stale pages, set when the dropper ends */
	int uffd;		     /* userfaultfd on guest RAM; -1 until armed */
	int wake_fd;		     /* eventfd: wakes the control thread */
	bool uffd_ready;	     /* atomic: stale pages dropped, pushed pages may go in */
	uint64_t start_ns;	     /* atomic: vCPUs resumed on this host (the ACK), 0 before */
	uint64_t faults, nrequested, duplicates; /* atomic counters */

	/*
	 * pc_lock: the transitions below (written under it, read atomically
	 * anywhere), the request table and the latency samples. A leaf lock:
	 * nothing else is taken while it is held.
	 */
	pthread_mutex_t lock;
	/* The transitions' state (pc_fsm.h); the three atomics after it mirror it. */
	struct pc_fsm fsm;
	bool paused;   /* a connection was lost: wait for the source to resume */
	bool complete; /* every stale page is in place; POSTCOPY_DONE decided */
	bool stopping; /* postcopy_incoming_stop() began: no more resumes */
	unsigned resumes;
	char pause_reason[256];
	struct pc_req *reqtab;
	uint32_t *lat_us; /* fault service latencies */
	uint64_t nlat, lat_cap;
};

/* Zeroed struct: lock initialised, fds -1. At migration_incoming_open(), before any thread. */
void pc_state_init(struct pc_state *ps);
/* At POSTCOPY, on the main thread: the bitmaps, tables and wake_fd. */
int pc_state_alloc(struct pc_state *ps, const struct guest_mem *mem);
/* After every thread that uses it was joined. */
void pc_state_destroy(struct pc_state *ps);

/* 64-bit words of slot i's bitmaps. */
uint64_t pc_slot_words(const struct pc_state *ps, uint32_t slot);

/*
 * Puts a received page in place (data NULL: a zero page), unless it was
 * placed already (counted as a duplicate). Receivers, any thread. Wakes the
 * control thread when it was the last missing page.
 */
int pc_place(struct pc_state *ps, uint32_t slot, uint64_t page, const void *data);

/*
 * A connection failed during postcopy: pauses (once; not after complete or
 * while stopping) and wakes the control thread, which aborts the other
 * connections and waits for the source to resume. Any thread.
 */
void pc_mark_lost(struct pc_state *ps, const char *why);

/* The fault thread sent a PAGE_REQ for this page now. */
void pc_note_request(struct pc_state *ps, uint32_t slot, uint64_t page);

/* The dropper is done: `total` pages are stale and must arrive. */
void pc_set_missing(struct pc_state *ps, uint64_t total);

/* At the ACK: the guest runs from now on; wakes the control thread. */
void pc_start(struct pc_state *ps);

/* Begins the stop: no connection loss from now on pauses; wakes the control thread. */
void pc_set_stopping(struct pc_state *ps);

/* The control thread's end of a resume: paused stays set when it failed. */
void pc_resumed(struct pc_state *ps, bool ok);

/*
 * After DONE, what main brought the control thread: PC_EV_RELEASE (a
 * proven RELEASE) or PC_EV_MAIN_ENDED; the action pc_fsm.c decides
 * (PC_ACT_RELEASED, _FINISH, _REDO_DONE or _IGNORE).
 */
enum pc_action pc_after_done(struct pc_state *ps, enum pc_event ev);

/*
 * Decides completion under pc_lock, exactly once: true (and *d filled, with
 * the latency percentiles and counters) when the vCPUs run, nothing is
 * missing, and no stop began. The control thread only.
 */
bool pc_take_completion(struct pc_state *ps, struct mig_postcopy_done *d);

/* Wakes the control thread (eventfd write); harmless before it exists. */
void pc_wake(struct pc_state *ps);

static inline bool pc_started(const struct pc_state *ps)
{
	return __atomic_load_n(&ps->start_ns, __ATOMIC_ACQUIRE) != 0;
}

static inline bool pc_paused(const struct pc_state *ps)
{
	return __atomic_load_n(&ps->paused, __ATOMIC_ACQUIRE);
}

static inline bool pc_complete(const struct pc_state *ps)
{
	return __atomic_load_n(&ps->complete, __ATOMIC_ACQUIRE);
}

static inline bool pc_stopping(const struct pc_state *ps)
{
	return __atomic_load_n(&ps->stopping, __ATOMIC_ACQUIRE);
}

/* State, pause reason, resumes, pages and faults; any thread. */
void pc_state_progress(struct pc_state *ps, struct migration_progress *out);

#endif /* VMM_MIGRATION_PC_STATE_H */
