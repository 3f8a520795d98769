/* SPDX-License-Identifier: Apache-2.0 */
/* spin_wait.c - the blackout's waits for the peer, spinning first (see spin_wait.h). */
#include "spin_wait.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>

#include "clock.h"
#include "tls.h"

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

uint64_t spin_bound_ns(uint64_t want_us)
{
	cpu_set_t set;

	/* One CPU: the peer's thread (or ours, on a local handover) needs the one we would spin on.
	 */
	if (!want_us || sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) < 2)
		return 0;
	return want_us * 1000;
}

void chan_quickack(const struct mig_chan *c)
{
	int one = 1;

	/* Fails harmlessly (ENOPROTOOPT) on a UNIX socket. */
	if (c->fd >= 0)
		setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

/* Bytes, EOF or an error are waiting: a read returns without sleeping. */
static bool readable_now(const struct mig_chan *c)
{
	struct pollfd p = {c->fd, POLLIN, 0};

	if (c->error || c->fd < 0)
		return true; /* the read fails at once with the sticky error */
	if (c->tls && tls_pending(c->tls))
		return true;
	return poll(&p, 1, 0) > 0;
}

bool spin_readable(struct mig_chan *c, uint64_t spin_ns, struct spin_stats *st)
{
	struct spin_stats dummy;
	uint64_t t0, now;
	bool ok;

	if (!st)
		st = &dummy;
	st->waits++;
	chan_quickack(c);
	if (readable_now(c)) {
		st->ready++;
		return true;
	}
	t0 = now = now_ns();
	ok = false;
	while (spin_ns && now - t0 < spin_ns) {
		/*
		 * A few pauses between polls, then a yield: the blackout's threads
		 * are SCHED_FIFO (sched_boost.h), and a FIFO thread that spins
		 * without yielding would keep a runnable thread of the same
		 * priority (the peer's, on the same host) off this CPU.
		 */
		for (int i = 0; i < 16; i++)
			cpu_relax();
		sched_yield();
		if (readable_now(c)) {
			ok = true;
			break;
		}
		now = now_ns();
	}
	if (spin_ns)
		st->spin_ns += now_ns() - t0;
	if (ok)
		st->spun++;
	else
		st->slept++;
	return ok;
}
