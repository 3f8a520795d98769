/* SPDX-License-Identifier: Apache-2.0 */
/*
 * throttle.h - how much `--converge throttle` slows the guest, and which
 * vCPUs: pure, from plain numbers, like converge.h. No I/O, no clock, no
 * state of its own; any thread may call it. throttle_apply.c is its caller
 * in the engine (it measures, then sets the machine's vm_throttle_set());
 * tests/unit/test_throttle.c the other.
 *
 * The level is the share of each 10 ms slice a slowed vCPU sleeps. A guest
 * that dirties D pages/s at level L dirties about D * (100 - L') / (100 - L)
 * at level L': its writes scale with the time it runs. The aim is a dirty
 * rate of half the link's page rate, so that each pass halves what is left
 * and precopy converges in a few passes; the level never goes down while
 * the migration runs (the rate would climb back and the passes with it).
 */
#ifndef VMM_MIGRATION_SOURCE_THROTTLE_H
#define VMM_MIGRATION_SOURCE_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

/* A raise is at least this many points: a dirty rate read from a saturated hot set is low. */
#define THROTTLE_STEP_MIN 10u
/* The dirty rate the level aims at: the link's page rate over this. */
#define THROTTLE_TARGET_DIV 2u

/* What the level after a pass that did not converge looks at. */
struct throttle_input {
	unsigned pct;	     /* the level now, 0: off */
	unsigned max_pct;    /* throttle_max_pct, 1..99 */
	uint64_t dirty_rate; /* pages/s dirtied since the previous harvest, at level pct */
	bool dirty_known;    /* the harvest measured it (false until a pass was sent) */
	uint64_t send_rate;  /* pages/s the last real pass went out at: the link; 0: not yet */
};

/*
 * The next level: pct while the dirty rate is unknown, there is no send
 * rate yet, or it is at most send_rate / THROTTLE_TARGET_DIV; otherwise
 * the level at which the rate would be that, and at least
 * pct + THROTTLE_STEP_MIN, never above max_pct nor below pct.
 */
unsigned throttle_level(const struct throttle_input *in);

/* One vCPU over the last pass. */
struct throttle_vcpu {
	uint64_t cpu_ns; /* its thread's CPU time */
	uint64_t run_ns; /* the time it was let run: wall time less its throttle's sleep */
};

/*
 * Which vCPUs the level slows. The bitmap dirty log says which pages were
 * written, never by which vCPU (KVM's per-vCPU dirty ring would, and it is
 * off on our hosts: it loses pages). What can be told is which vCPUs ran:
 * a vCPU halted in the guest uses no CPU and writes nothing. So a vCPU is
 * slowed when it was busy (CPU time over the time it was let run) at least
 * a quarter as much as the busiest and at least THROTTLE_BUSY_MIN_PPM;
 * vCPUs that all read as idle are all slowed (nothing tells them apart).
 * Sets out[i] to level or 0 for the n vCPUs; returns how many are slowed.
 */
#define THROTTLE_BUSY_MIN_PPM 50000u /* 5 % */
unsigned throttle_split(unsigned level, const struct throttle_vcpu *v, unsigned n, unsigned *out);

#endif /* VMM_MIGRATION_SOURCE_THROTTLE_H */
