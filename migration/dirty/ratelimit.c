/* SPDX-License-Identifier: Apache-2.0 */
#include "clock.h"
#include "ratelimit.h"

#include <time.h>

#include "vm.h"

/* A burst of at most 50 ms worth of traffic. */
#define BURST_NS 50000000ull

void ratelimit_init(struct ratelimit *r, uint64_t bytes_per_sec)
{
	pthread_mutex_init(&r->lock, NULL);
	r->rate = bytes_per_sec;
	r->tokens = 0;
	r->last_ns = now_ns();
}

void ratelimit_destroy(struct ratelimit *r)
{
	pthread_mutex_destroy(&r->lock);
}

void ratelimit_set(struct ratelimit *r, uint64_t bytes_per_sec)
{
	pthread_mutex_lock(&r->lock);
	r->tokens = 0;
	r->last_ns = now_ns();
	__atomic_store_n(&r->rate, bytes_per_sec, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&r->lock);
}

void ratelimit_take(struct ratelimit *r, uint64_t bytes, const bool *cancel)
{
	uint64_t rate;
	double debt;

	if (!__atomic_load_n(&r->rate, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&r->lock);
	rate = r->rate; /* ratelimit_set() may have turned it off meanwhile */
	{
		uint64_t now = now_ns();
		double cap = (double)rate * BURST_NS / 1e9;

		r->tokens += (double)(now - r->last_ns) * (double)rate / 1e9;
		if (r->tokens > cap)
			r->tokens = cap;
		r->last_ns = now;
		r->tokens -= (double)bytes;
		debt = rate && r->tokens < 0 ? -r->tokens : 0;
	}
	pthread_mutex_unlock(&r->lock);
	/* Sleep off the debt in slices so a cancel is noticed quickly. */
	while (debt > 0 && !__atomic_load_n(cancel, __ATOMIC_RELAXED)) {
		double ns = debt * 1e9 / (double)rate;
		struct timespec ts;

		if (ns > 10e6)
			ns = 10e6;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)ns;
		nanosleep(&ts, NULL);
		debt -= ns * (double)rate / 1e9;
	}
}
