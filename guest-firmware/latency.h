/* SPDX-License-Identifier: Apache-2.0 */
/*
 * latency.h - per-pass write-latency histograms of the dirty workload
 * (latency.c). Only used when fw_params.latency is set.
 *
 * Per vCPU, in its pass loop: a wait for lat_slot_free() before a pass,
 * lat_record() per page, lat_publish() after the pass and before it stores
 * its done pass (release). vCPU 0 alone calls lat_report(). The workload
 * calls this file, never the other way round.
 */
#ifndef FW_LATENCY_H
#define FW_LATENCY_H

#include "fw.h"

#define LAT_SUB_BITS 2u			   /* 4 sub-buckets per power of two */
#define LAT_BUCKETS  (64u << LAT_SUB_BITS) /* covers every u64 tick count */

/* One vCPU's histogram of the pass under way (lives on its stack). */
struct lat_pass {
	uint32_t hist[LAT_BUCKETS];
	uint64_t max_ticks, pages;
};

/* Bucket of a duration in TSC ticks: exact below 4, then 4 per octave. */
static inline uint32_t lat_bucket(uint64_t t)
{
	uint32_t msb;

	if (t < (1u << LAT_SUB_BITS))
		return (uint32_t)t;
	msb = 63u - (uint32_t)__builtin_clzll(t);
	return ((msb - LAT_SUB_BITS + 1u) << LAT_SUB_BITS) |
	       (uint32_t)((t >> (msb - LAT_SUB_BITS)) & ((1u << LAT_SUB_BITS) - 1u));
}

/* The hot-loop part: a few integer instructions. */
static inline void lat_record(struct lat_pass *l, uint64_t ticks)
{
	l->hist[lat_bucket(ticks)]++;
	if (ticks > l->max_ticks)
		l->max_ticks = ticks;
	l->pages++;
}

/*
 * Is the ring slot of `pass` free (its pass less than the ring ahead of the
 * last report)? The caller waits for it; vCPU 0 reports meanwhile, since
 * only it frees slots. The caller knows which passes are done, so the wait
 * lives with it and this file calls nothing of the workload's.
 */
bool lat_slot_free(uint64_t pass);

/* Adds this vCPU's pass into the merged ring slot and clears `l`. */
void lat_publish(uint64_t pass, struct lat_pass *l, uint64_t pass_ticks);

/* vCPU 0: prints every pass up to `done` (all vCPUs published it) not yet printed. */
void lat_report(uint64_t done);

#endif /* FW_LATENCY_H */
