// SPDX-License-Identifier: Apache-2.0
/*
 * latency.c - the dirty workload's write-latency histogram ([workload]
 * latency = true, vmm,latency in /chosen).
 *
 * Every vCPU times each page's verify+stamp with rdtsc into a private
 * histogram (lat_record, on its stack) and, at the end of its pass, adds it
 * into a ring of merged per-pass histograms (lat_publish). vCPU 0 prints a
 * pass once every vCPU has published it (lat_report):
 *   dirty lat pass N: p50_us=.. p99_us=.. max_us=.. pages=.. pass_ms=..
 * so a benchmark reads the guest's own view of a migration (a postcopy
 * fault or a stalled vCPU shows up as a long page). Buckets are log-scale,
 * LAT_SUB_BITS sub-buckets per power of two (<= 25% wide), integers only:
 * the guest has no SSE. Percentiles are the upper edge of their bucket
 * (at most the maximum);
 * the maximum is exact; pass_ms is the slowest vCPU's pass.
 */
#include "latency.h"

#define LAT_RING 8u /* passes a vCPU may run ahead of vCPU 0's report */

struct lat_slot {
	uint32_t hist[LAT_BUCKETS];
	uint64_t max_ticks, pass_ticks, pages;
};

static struct lat_slot ring[LAT_RING];
static uint64_t reported; /* last pass printed; slot (reported + 1) % LAT_RING is next */

static void atomic_max(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (v > cur &&
	       !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Upper edge, in ticks, of bucket k (the inverse of lat_bucket()). */
static uint64_t bucket_top(uint32_t k)
{
	uint32_t sub = 1u << LAT_SUB_BITS, msb;

	if (k < sub)
		return k;
	msb = (k >> LAT_SUB_BITS) + LAT_SUB_BITS - 1;
	return ((uint64_t)(sub + (k & (sub - 1)) + 1) << (msb - LAT_SUB_BITS)) - 1;
}

/* Ticks -> tenths of a microsecond. */
static uint64_t ticks_to_100ns(uint64_t t)
{
	uint64_t khz = fw_params.tsc_khz;

	if (t > UINT64_MAX / 10000u)
		return t / khz * 10000u;
	return t * 10000u / khz;
}

bool lat_slot_free(uint64_t pass)
{
	return __atomic_load_n(&reported, __ATOMIC_ACQUIRE) + LAT_RING >= pass;
}

void lat_publish(uint64_t pass, struct lat_pass *l, uint64_t pass_ticks)
{
	struct lat_slot *s = &ring[pass % LAT_RING];
	uint32_t k;

	for (k = 0; k < LAT_BUCKETS; k++)
		if (l->hist[k]) {
			__atomic_fetch_add(&s->hist[k], l->hist[k], __ATOMIC_RELAXED);
			l->hist[k] = 0;
		}
	atomic_max(&s->max_ticks, l->max_ticks);
	atomic_max(&s->pass_ticks, pass_ticks);
	__atomic_fetch_add(&s->pages, l->pages, __ATOMIC_RELAXED);
	l->max_ticks = 0;
	l->pages = 0;
	/* the caller's release store of its done pass orders these before the report */
}

static uint64_t percentile(const struct lat_slot *s, uint64_t total, uint64_t pct)
{
	uint64_t want = (total * pct + 99u) / 100u, cum = 0;
	uint32_t k;

	if (!want)
		want = 1;
	for (k = 0; k < LAT_BUCKETS; k++) {
		cum += s->hist[k];
		if (cum >= want) /* a bucket's top may lie above the largest sample */
			return bucket_top(k) < s->max_ticks ? bucket_top(k) : s->max_ticks;
	}
	return s->max_ticks;
}

static void print_us(char *buf, size_t len, uint64_t ticks)
{
	uint64_t d = ticks_to_100ns(ticks);

	fw_snprintf(buf, len, "%lu.%lu", d / 10u, d % 10u);
}

void lat_report(uint64_t done)
{
	while (reported < done) {
		uint64_t n = reported + 1;
		struct lat_slot *s = &ring[n % LAT_RING];
		char p50[24], p99[24], mx[24];

		print_us(p50, sizeof(p50), percentile(s, s->pages, 50));
		print_us(p99, sizeof(p99), percentile(s, s->pages, 99));
		print_us(mx, sizeof(mx), s->max_ticks);
		fw_log("dirty lat pass %lu: p50_us=%s p99_us=%s max_us=%s pages=%lu pass_ms=%lu", n,
		       p50, p99, mx, s->pages, s->pass_ticks / fw_params.tsc_khz);
		memset(s, 0, sizeof(*s));
		__atomic_store_n(&reported, n, __ATOMIC_RELEASE);
	}
}
