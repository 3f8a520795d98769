/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.h - the one clock every layer measures with: CLOCK_MONOTONIC, which
 * never jumps with the wall clock and is comparable between processes on one
 * host (the migration ACK carries the target's reading for that reason).
 */
#ifndef VMM_UTIL_CLOCK_H
#define VMM_UTIL_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. Any thread. */
uint64_t now_ns(void);

/* Milliseconds since t0_ns (a now_ns() reading). */
static inline uint64_t ms_since(uint64_t t0_ns)
{
	return (now_ns() - t0_ns) / 1000000u;
}

/* Sleeps ms milliseconds, resuming after signals. */
void sleep_ms(unsigned ms);

#endif /* VMM_UTIL_CLOCK_H */
