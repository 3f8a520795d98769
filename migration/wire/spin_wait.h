/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spin_wait.h - waiting for the peer's next record during the switchover
 * blackout without going to sleep.
 *
 * While the guest is stopped, every blocking wait for the peer (PREPARED,
 * COMMITTED on the source; the state, END and COMMIT on the target) puts
 * its thread to sleep, and the peer's bytes then pay a wake-up: on a host
 * whose wake-ups are slow (a nested hypervisor) that is most of the
 * commit. spin_readable() looks at the socket with non-blocking polls, a
 * pause instruction between them, for at most a bound; whatever is not
 * readable by then is left to the caller's usual blocking wait, which
 * keeps every timeout and error path it had. A bound of 0 (or a 1-CPU
 * host: spinning would only keep the peer's thread off the CPU) spins not
 * at all.
 *
 * The counts say what the blackout's waits cost: how many records were
 * awaited, how many had arrived already, how many arrived while spinning,
 * and how many needed a sleeping wait (a wake-up on the critical path).
 * They are this side's, kept by the one thread that owns the waits.
 */
#ifndef VMM_MIGRATION_SPIN_WAIT_H
#define VMM_MIGRATION_SPIN_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "channel.h"

struct spin_stats {
	uint32_t waits;	  /* records awaited from the peer (a round trip each) */
	uint32_t ready;	  /* of which readable on entry: no wait at all */
	uint32_t spun;	  /* of which readable while spinning */
	uint32_t slept;	  /* of which left to a blocking wait: a wake-up */
	uint64_t spin_ns; /* time spent spinning, all waits */
};

/*
 * The spin bound for `want_us` microseconds on this host: want_us in ns,
 * or 0 when this process may run on one CPU only. Any thread.
 */
uint64_t spin_bound_ns(uint64_t want_us);

/*
 * Waits up to spin_ns for c to be readable (bytes, EOF, an error or
 * bytes TLS holds already), without sleeping; counts the wait in *st
 * (may be NULL). True: the caller's read will not block for long; false:
 * the caller does its blocking wait, as without this. Re-arms TCP quick
 * ACKs on c (Linux clears them as it sees fit), so that what the peer
 * sends next is acknowledged at once. The thread that reads c.
 */
bool spin_readable(struct mig_chan *c, uint64_t spin_ns, struct spin_stats *st);

/* Quick ACKs on c again (TCP only; nothing on a UNIX socket). Any thread owning c's reads. */
void chan_quickack(const struct mig_chan *c);

#endif /* VMM_MIGRATION_SPIN_WAIT_H */
