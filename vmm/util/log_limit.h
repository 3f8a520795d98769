/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log_limit.h - a log line whose rate a peer decides (a refused connection)
 * is printed at most `burst` times per interval; the others are counted,
 * and the next line that passes says how many were left out. A flood of
 * connections then costs a few lines a second, not megabytes.
 *
 * Any thread: each call takes the limiter's own mutex, a leaf.
 */
#ifndef VMM_LOG_LIMIT_H
#define VMM_LOG_LIMIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct log_limit {
	pthread_mutex_t lock;
	uint64_t interval_ns;
	unsigned burst;
	uint64_t window_start_ns; /* the current interval's start */
	unsigned passed;	  /* lines passed in it */
	uint64_t left_out;	  /* lines left out since the last one passed */
};

void log_limit_init(struct log_limit *l, unsigned burst, uint64_t interval_ms);
void log_limit_destroy(struct log_limit *l);

/*
 * One line at now_ns (CLOCK_MONOTONIC): true when it is to be printed, with
 * *left_out the lines left out before it (0 mostly); false when it is left
 * out (and counted).
 */
bool log_limit_pass(struct log_limit *l, uint64_t now_ns, uint64_t *left_out);

#endif /* VMM_LOG_LIMIT_H */
