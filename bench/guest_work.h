/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guest_work.h - the dirty guest's own work across a migration, from its
 * "dirty work N pages at T ms" lines ([workload] work_ms: vCPU 0 prints
 * the pages all vCPUs wrote since boot). The source's console has the
 * lines up to the switchover, the target's the ones after; each is
 * stamped with the host's CLOCK_MONOTONIC as it was read (harness
 * consoles on pipes), and the count goes on across the migration with the
 * guest's memory. Pure arithmetic over the lines; bench_converge its user.
 */
#ifndef VMM_BENCH_GUEST_WORK_H
#define VMM_BENCH_GUEST_WORK_H

#include <stdbool.h>

#include "harness_console.h"

/* One line: pages written so far, at host time t_ms. */
struct gw_sample {
	double t_ms, pages;
};

/* What the guest did around a migration that ran from start_ms to end_ms (host time). */
struct gw_result {
	double rate_before; /* pages/s over the `before_ms` before start_ms */
	double rate_during; /* pages/s from the last line at or before start_ms to the first at or
			       after end_ms */
	double cost_pct;    /* 100 * (1 - rate_during / rate_before): the work the migration cost */
	double stall_ms; /* the longest gap between two lines, 1 s before start to 1 s after end */
	bool ok;	 /* enough lines on both sides to say */
};

/*
 * The work lines of src then dst, in time order, into s (at most max);
 * returns how many. A line that goes back in pages (another guest) ends it.
 */
int gw_collect(const struct hx_console *src, const struct hx_console *dst, struct gw_sample *s,
	       int max);

/* The measures of s[0..n) for a migration from start_ms to end_ms. */
void gw_measure(const struct gw_sample *s, int n, double start_ms, double end_ms, double before_ms,
		struct gw_result *r);

#endif /* VMM_BENCH_GUEST_WORK_H */
