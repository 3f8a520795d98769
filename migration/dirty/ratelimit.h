/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ratelimit.h - a token bucket shared by the sender threads so the sum of
 * their traffic stays under --max-bandwidth. Thread safe.
 */
#ifndef VMM_MIGRATION_RATELIMIT_H
#define VMM_MIGRATION_RATELIMIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct ratelimit {
	pthread_mutex_t lock;
	uint64_t rate;      /* bytes per second, 0 = unlimited; atomic (ratelimit_set) */
	double tokens;      /* may go negative: debt paid by sleeping */
	uint64_t last_ns;
};

void ratelimit_init(struct ratelimit *r, uint64_t bytes_per_sec);
void ratelimit_destroy(struct ratelimit *r);
/* Changes the rate (0 = unlimited) and empties the bucket; any thread. */
void ratelimit_set(struct ratelimit *r, uint64_t bytes_per_sec);
/* Accounts `bytes` and sleeps while the bucket is in debt (cancel checked by caller). */
void ratelimit_take(struct ratelimit *r, uint64_t bytes, const bool *cancel);

#endif /* VMM_MIGRATION_RATELIMIT_H */
