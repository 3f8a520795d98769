/* SPDX-License-Identifier: Apache-2.0 */
/*
 * team.h - a fixed set of worker threads that run one function together,
 * round after round, and report back when all have finished the round.
 * Used for the harvest pool and the sender threads: both run once per
 * precopy pass, and starting threads inside the blackout would cost more
 * than the work.
 *
 * team_run(), or team_start() and then team_wait(), is called by one
 * coordinating thread at a time, and a started round is always waited for
 * before the next starts or the team is destroyed.
 */
#ifndef VMM_MIGRATION_TEAM_H
#define VMM_MIGRATION_TEAM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "migration_seccomp.h"

typedef void (*team_fn)(void *arg, unsigned worker);

struct team {
	pthread_t *threads;
	unsigned nthreads;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t round;
	unsigned finished;
	bool quit;
	team_fn fn;
	void *arg;
	/*
	 * team_wait() polls for the round's end this long (ns) before it
	 * sleeps on `cond`: the switchover blackout's, where a wake-up is
	 * downtime (0: it sleeps at once). The coordinator's, between rounds.
	 */
	uint64_t spin_ns;
	const struct seccomp_kind *kind; /* each worker's filter, when seccomp */
	bool seccomp;
};

/* Workers install kind's seccomp filter at their start when `seccomp`. */
int team_init(struct team *t, unsigned nthreads, team_fn fn, void *arg,
	      const struct seccomp_kind *kind, bool seccomp);
/*
 * Runs fn(arg, i) on worker threads i = 0..nthreads-1 and, when
 * caller_joins, on the caller as worker nthreads; returns when all are done.
 */
void team_run(struct team *t, bool caller_joins);
/*
 * team_run() in two halves, for a coordinator that works on something else
 * while the round runs: team_start() wakes the workers and returns at once;
 * team_wait() returns when all of them have finished the round.
 */
void team_start(struct team *t);
void team_wait(struct team *t);
void team_destroy(struct team *t);

#endif /* VMM_MIGRATION_TEAM_H */
