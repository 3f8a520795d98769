/* SPDX-License-Identifier: Apache-2.0 */
/*
 * throttle.c - the throttle's level and its vCPUs (throttle.h): the rules
 * only, table-tested in tests/unit/test_throttle.c.
 */
#include "throttle.h"

unsigned throttle_level(const struct throttle_input *in)
{
	uint64_t target = in->send_rate / THROTTLE_TARGET_DIV, run, want;
	unsigned max = in->max_pct < 100 ? in->max_pct : 99;

	if (!in->dirty_known || !in->send_rate || in->dirty_rate <= target || in->pct >= max)
		return in->pct < max ? in->pct : max;
	/* The running share that brings the rate to the target, rounded down (128 bits: no
	 * overflow). */
	run = (uint64_t)((unsigned __int128)(100 - in->pct) * target / in->dirty_rate);
	want = 100 - run;
	if (want < in->pct + THROTTLE_STEP_MIN)
		want = in->pct + THROTTLE_STEP_MIN;
	return want < max ? (unsigned)want : max;
}

/* Busy, parts per million of the time it was let run (at most 1e6). */
static uint64_t busy_ppm(const struct throttle_vcpu *v)
{
	if (!v->run_ns)
		return 0;
	if (v->cpu_ns >= v->run_ns)
		return 1000000;
	return v->cpu_ns * 1000000 / v->run_ns;
}

unsigned throttle_split(unsigned level, const struct throttle_vcpu *v, unsigned n, unsigned *out)
{
	uint64_t most = 0;
	unsigned slowed = 0;

	for (unsigned i = 0; i < n; i++)
		if (busy_ppm(&v[i]) > most)
			most = busy_ppm(&v[i]);
	for (unsigned i = 0; i < n; i++) {
		uint64_t b = busy_ppm(&v[i]);
		bool busy =
		    most < THROTTLE_BUSY_MIN_PPM || (b >= THROTTLE_BUSY_MIN_PPM && b * 4 >= most);

		out[i] = level && busy ? level : 0;
		slowed += out[i] != 0;
	}
	return slowed;
}
