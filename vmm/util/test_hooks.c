/* SPDX-License-Identifier: Apache-2.0 */
#include "test_hooks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

#ifndef VMM_TEST_HOOKS
#define VMM_TEST_HOOKS 1
#endif

bool test_hooks_built(void)
{
	return VMM_TEST_HOOKS;
}

void test_hooks_read(struct test_hooks *h)
{
	static const struct {
		const char *name;
		enum test_fault fault;
	} faults[] = {
		{"kill-during-precopy", TEST_FAULT_KILL_DURING_PRECOPY},
		{"kill-before-ack", TEST_FAULT_KILL_BEFORE_ACK},
		{"cut-postcopy", TEST_FAULT_CUT_POSTCOPY},
	};
	const char *fault;

	memset(h, 0, sizeof(*h));
	if (!VMM_TEST_HOOKS)
		return;
	h->digest = getenv("VMM_TEST_DIGEST") != NULL;
	fault = getenv("VMM_TEST_FAULT");
	for (size_t i = 0; fault && i < sizeof(faults) / sizeof(faults[0]); i++)
		if (!strcmp(fault, faults[i].name))
			h->fault = faults[i].fault;
}

static void *watch_main(void *arg)
{
	struct test_hook_watch *w = arg;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(w->counter, __ATOMIC_RELAXED) >= w->threshold) {
			w->fire(w->arg);
			break;
		}
		sleep_ms(1);
	}
	return NULL;
}

int test_hook_watch_start(struct test_hook_watch *w, const uint64_t *counter, uint64_t threshold,
			  void (*fire)(void *arg), void *arg)
{
	int ret;

	w->counter = counter;
	w->threshold = threshold;
	w->fire = fire;
	w->arg = arg;
	w->stop = false;
	ret = -pthread_create(&w->thread, NULL, watch_main, w);
	w->started = !ret;
	return ret;
}

void test_hook_watch_stop(struct test_hook_watch *w)
{
	if (!w->started)
		return;
	__atomic_store_n(&w->stop, true, __ATOMIC_RELEASE);
	pthread_join(w->thread, NULL);
	w->started = false;
}
