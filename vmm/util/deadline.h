/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deadline.h - waits bounded by a deadline: the CLOCK_MONOTONIC time
 * (now_ns(), clock.h) fixed when a wait starts, by which it ends however
 * slowly a peer trickles its bytes. A per-read timeout is no bound: a peer
 * that sends one byte just before each read would time out extends it
 * without end (issue 36, finding 4). docs/architecture.md's "bounded by"
 * columns name the deadline of every wait. 0 is "no deadline" everywhere.
 * The helpers are pure but deadline_poll(); any thread.
 */
#ifndef VMM_UTIL_DEADLINE_H
#define VMM_UTIL_DEADLINE_H

#include <poll.h>
#include <stdint.h>

/* The deadline `ms` milliseconds after `now` (ns); 0 for ms = 0 (none). */
static inline uint64_t deadline_at(uint64_t now, uint64_t ms)
{
	return ms ? now + ms * 1000000u : 0;
}

/* The nearer of two deadlines, either of which may be 0 (none). */
static inline uint64_t deadline_min(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/*
 * poll(2)'s timeout for a wait until `deadline` from `now`: -1 without a
 * deadline, 0 once it passed, else the milliseconds left rounded up (a
 * wait never ends before its deadline), at most INT_MAX.
 */
int deadline_poll_ms(uint64_t deadline, uint64_t now);

/*
 * poll(2) on fds until `deadline` (0: none), resumed after a signal with
 * the time left. Returns poll's count (> 0), 0 when the deadline passed
 * with nothing ready, or -errno.
 */
int deadline_poll(struct pollfd *fds, nfds_t n, uint64_t deadline);

#endif /* VMM_UTIL_DEADLINE_H */
