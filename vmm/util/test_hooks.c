/* SPDX-License-Identifier: Apache-2.0 */
#include "test_hooks.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"

#ifndef VMM_TEST_HOOKS
#define VMM_TEST_HOOKS 1
#endif

bool test_hooks_built(void)
{
	return VMM_TEST_HOOKS;
}

void test_hook_step(const struct test_hooks *h, unsigned s)
{
	char line[96];
	int n;

	if (!VMM_TEST_HOOKS || h->stop_at == 0 || h->stop_at != s || s >= h->nsteps)
		return;
	n = snprintf(line, sizeof(line), "vmm: test hook: stopped at %s\n", h->steps[s]);
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nothing to do: the stop below is what the test waits for */
	}
	raise(SIGSTOP);
}

void test_hooks_read(struct test_hooks *h, const char *const *steps, unsigned nsteps)
{
	const char *fault;

	memset(h, 0, sizeof(*h));
	if (!VMM_TEST_HOOKS)
		return;
	h->digest = getenv("VMM_TEST_DIGEST") != NULL;
	fault = getenv("VMM_TEST_FAULT");
	if (fault && strlen(fault) < sizeof(h->fault))
		memcpy(h->fault, fault, strlen(fault) + 1);
	fault = getenv("VMM_TEST_STOP_AT");
	h->steps = steps;
	h->nsteps = nsteps;
	for (unsigned s = 1; fault && s < nsteps; s++)
		if (steps[s] && !strcmp(fault, steps[s]))
			h->stop_at = s;
	fault = getenv("VMM_TEST_SESSION");
	if (fault)
		h->session = strtoull(fault, NULL, 16);
}

bool test_hook_fault_is(const struct test_hooks *h, const char *name)
{
	return VMM_TEST_HOOKS && h->fault[0] && !strcmp(h->fault, name);
}

void test_hook_forbidden_syscall(const struct test_hooks *h, const char *fault,
				 enum test_hook_call call)
{
	long fd;

	if (!test_hook_fault_is(h, fault))
		return;
	if (call == TEST_HOOK_CALL_SOCKET) {
		fd = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
		if (fd >= 0)
			close((int)fd);
	} else {
		/* A NULL path: unfiltered, the kernel answers EFAULT and nothing runs. */
		syscall(SYS_execve, NULL, NULL, NULL);
	}
}

static void *watch_main(void *arg)
{
	struct test_hook_watch *w = arg;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(w->counter, __ATOMIC_RELAXED) >= w->threshold) {
			w->fired = true;
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
	w->fired = false;
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
