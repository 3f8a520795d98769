/* SPDX-License-Identifier: Apache-2.0 */
/* sched_boost.c - SCHED_FIFO for the blackout's threads (see sched_boost.h). */
#include "sched_boost.h"

#include <errno.h>
#include <sched.h>

int sched_boost(pthread_t t, struct sched_prev *prev)
{
	struct sched_param p = {.sched_priority = SCHED_BOOST_PRIO};
	int policy, ret;

	prev->boosted = false;
	ret = pthread_getschedparam(t, &policy, &p);
	if (ret)
		return -ret;
	if (policy == SCHED_FIFO || policy == SCHED_RR)
		return 0; /* already real-time: leave the operator's choice alone */
	prev->policy = policy;
	prev->prio = p.sched_priority;
	p.sched_priority = SCHED_BOOST_PRIO;
	ret = pthread_setschedparam(t, SCHED_FIFO, &p);
	if (ret)
		return -ret;
	prev->boosted = true;
	return 0;
}

void sched_unboost(pthread_t t, struct sched_prev *prev)
{
	struct sched_param p = {.sched_priority = prev->prio};

	if (!prev->boosted)
		return;
	prev->boosted = false;
	/* Cannot fail for a thread we just boosted: lowering needs no privilege. */
	(void)pthread_setschedparam(t, prev->policy, &p);
}
