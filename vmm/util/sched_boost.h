/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sched_boost.h - real-time priority for the few milliseconds where a
 * thread's scheduling latency is the guest's downtime.
 *
 * In the switchover blackout the guest is stopped while vmm's threads
 * kick the vCPUs out, harvest, send and load the last state. On a busy
 * host (a CPU hog on every core, other VMs) each of those threads can wait
 * a scheduler slice or more for a CPU: single migrations were measured
 * with 62 ms between the kick and the last vCPU parking. A thread boosted
 * to SCHED_FIFO preempts normal (SCHED_OTHER) work at once; the blackout
 * is short and the boosted threads block on I/O rather than spin (but for
 * the bounded polls of migration/wire/spin_wait.h, which yield between
 * polls), and the kernel's RT throttling bounds the worst case anyway.
 *
 * Where the process may not use real-time priorities (no CAP_SYS_NICE and
 * RLIMIT_RTPRIO 0, as in a default container) the calls fail with -EPERM
 * and change nothing: the migration goes on unboosted, only slower to
 * stop and start under load.
 *
 * Any thread may boost any thread of the process; the caller keeps the
 * struct sched_prev and restores with it (boost and restore pair up).
 */
#ifndef VMM_SCHED_BOOST_H
#define VMM_SCHED_BOOST_H

#include <pthread.h>
#include <stdbool.h>

/* The lowest real-time priority: above every SCHED_OTHER thread, below any RT service. */
#define SCHED_BOOST_PRIO 1

struct sched_prev {
	int policy;
	int prio;
	bool boosted; /* the boost took: restore on unboost */
};

/* Thread t to SCHED_FIFO at SCHED_BOOST_PRIO; 0 or -errno (t unchanged, prev->boosted false). */
int sched_boost(pthread_t t, struct sched_prev *prev);
/* Back to what prev saved, if the boost took. */
void sched_unboost(pthread_t t, struct sched_prev *prev);

#endif /* VMM_SCHED_BOOST_H */
