/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hooks.h - the only place test-only behaviour is switched on.
 *
 * The front end reads the environment once at process start
 * (test_hooks_read()) and hands the result down in the engine's context;
 * nothing else in the tree calls getenv() for a test. Hooks never sit on a
 * hot path: a fault that must strike in the middle of a data stream is
 * fired by a watcher thread that polls a counter (test_hook_watch_start()),
 * started only when that hook is on.
 *
 * Variables (all unset in production):
 *   VMM_TEST_DIGEST=1       source: put a digest of all guest RAM in END;
 *                           the target verifies it and says so on stderr
 *   VMM_TEST_FAULT=NAME     one injected fault; the faults are their
 *                           owners' (the engine's: migration/api/
 *                           test_faults.h; the machine's vCPU one: vcpu.c),
 *                           which ask test_hook_fault_is(): util names none
 *   VMM_TEST_STOP_AT=STEP   the process stops itself (SIGSTOP, as a debugger
 *                           or a frozen cgroup would) when it reaches STEP,
 *                           after printing "vmm: test hook: stopped at STEP"
 *                           on stderr; the steps are the caller's
 *                           (test_hooks_read()): util names none
 *   VMM_TEST_SESSION=HEX    source: the migration's session id (non-zero)
 *                           instead of a random one, so a test can play a
 *                           party that knows it where TLS hides it on the
 *                           wire (a certified peer flooding the gate)
 *
 * Built with -DVMM_TEST_HOOKS=OFF, test_hooks_read() always reports no hooks
 * and the digest is not compiled in.
 */
#ifndef VMM_UTIL_TEST_HOOKS_H
#define VMM_UTIL_TEST_HOOKS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* A fault's name is at most this long (with its NUL); a longer VMM_TEST_FAULT is no fault. */
#define TEST_HOOK_NAME_MAX 40

struct test_hooks {
	bool digest;
	char fault[TEST_HOOK_NAME_MAX]; /* VMM_TEST_FAULT's name as given; "": none */
	unsigned stop_at;	  /* the step VMM_TEST_STOP_AT names (an index of steps); 0: none */
	const char *const *steps; /* test_hooks_read()'s table, for test_hook_step()'s line */
	unsigned nsteps;
	uint64_t session; /* 0: a random one */
};

/*
 * Fills *h from the environment. Call once, from the front end. steps:
 * the names VMM_TEST_STOP_AT may give, indexed by step number, nsteps of
 * them, steps[0] unused (0 is "no step"); a table that lives as long as
 * the process (the engine's: migration/api/test_steps.h). A name not in
 * it is no stop.
 */
void test_hooks_read(struct test_hooks *h, const char *const *steps, unsigned nsteps);

/*
 * True when h's fault is the one named `name` (names are exact); false
 * for none. Its owner's check, at the one place the fault strikes.
 */
bool test_hook_fault_is(const struct test_hooks *h, const char *name);

/* True when this build has the hooks (VMM_TEST_HOOKS). */
bool test_hooks_built(void);

/*
 * Called by the engine at each step: when h->stop_at is s, prints the
 * line above and stops the whole process (raise(SIGSTOP)); it goes on
 * when someone sends SIGCONT. Not a hot path: a few calls per migration.
 */
void test_hook_step(const struct test_hooks *h, unsigned s);

/* The system calls test_hook_forbidden_syscall() can make: one no thread's list allows. */
enum test_hook_call {
	TEST_HOOK_CALL_SOCKET, /* socket(AF_INET, SOCK_STREAM): closed if it was made */
	TEST_HOOK_CALL_EXECVE, /* execve(NULL, ...): unfiltered, EFAULT and nothing runs */
};

/*
 * When h's fault is `fault` (test_hook_fault_is()), makes system call
 * `call`, which the caller's seccomp filter forbids; without a filter the
 * call fails or is undone (the socket closed) and the thread goes on.
 * Once, at a thread's start.
 */
void test_hook_forbidden_syscall(const struct test_hooks *h, const char *fault,
				 enum test_hook_call call);

/*
 * A thread that polls *counter every millisecond and calls fire(arg) once
 * when it reaches threshold (then `fired` is true). Stopped (and joined) by
 * test_hook_watch_stop(), which is a no-op for a watch that was never
 * started.
 */
struct test_hook_watch {
	pthread_t thread;
	bool started;
	bool stop;
	bool fired; /* read after test_hook_watch_stop() */
	const uint64_t *counter;
	uint64_t threshold;
	void (*fire)(void *arg);
	void *arg;
};

int test_hook_watch_start(struct test_hook_watch *w, const uint64_t *counter, uint64_t threshold,
			  void (*fire)(void *arg), void *arg);
void test_hook_watch_stop(struct test_hook_watch *w);

#endif /* VMM_UTIL_TEST_HOOKS_H */
