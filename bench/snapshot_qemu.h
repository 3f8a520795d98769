/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot_qemu.h - bench_snapshot's QEMU side: the same firmware guest
 * under QEMU 7.2 microvm (PVH), saved with `migrate "exec:cat > FILE"` (the
 * file form QEMU 7.2 has: one sequential stream, no fixed page offsets, no
 * lazy load) and restored with `-incoming "exec:cat FILE"`.
 *
 * One case, in order, on one QEMU: a live save while the guest runs
 * (QEMU's precopy into the file: its downtime and total), then, after the
 * guest ran on for a heartbeat, a stopped save (stop, migrate, until
 * completed: the whole time is the pause), then a restore of the stopped
 * file in a new QEMU: from its spawn until the guest runs again (load
 * done, `cont` answered), checked by one more heartbeat of a dirty guest.
 * Called from bench_snapshot's main thread; bounded by its timeouts.
 */
#ifndef VMM_BENCH_SNAPSHOT_QEMU_H
#define VMM_BENCH_SNAPSHOT_QEMU_H

#include <stdbool.h>
#include <stddef.h>

struct sq_case {
	const char *qemu, *firmware, *dir; /* dir: files and sockets of this case */
	const char *size;		   /* "1G" */
	const char *working_set;	   /* "256M"; the dirty guest rewrites it */
	bool dirty;
};

struct sq_result {
	int ok;
	double live_downtime_ms, live_total_ms; /* query-migrate's downtime and total-time */
	double pause_ms;			/* the stopped save: from `stop` to "completed" */
	double file_mib;			/* the stopped save's file, allocated blocks */
	double first_ms;			/* restore: QEMU's spawn to the guest running */
};

/* 0 with *r filled, or -errno with a message; r->ok says whether it all ran. */
int sq_run_case(const struct sq_case *c, struct sq_result *r, char *err, size_t errlen);

#endif /* VMM_BENCH_SNAPSHOT_QEMU_H */
