/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_seccomp.c - the seccomp filters (vmm/util/seccomp_filter.h), each
 * case in a forked child since a filter is for good: a call on the list
 * works, one off it stops the child with status 159 and the line naming
 * the thread kind, the call and its number; ioctl is allowed by request
 * only; a filter that is off changes nothing; a team worker installs its
 * kind's filter on top of its creator's; a filtered thread's first malloc
 * after many other threads' does not need a file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "frontend_seccomp.h"
#include "machine_seccomp.h"
#include "seccomp_filter.h"
#include "team.h"

struct child {
	int status;    /* exit status, or 128 + signal */
	char err[512]; /* what it wrote on stderr */
};

/* Runs fn in a child whose stderr is captured; fn's return is the exit status. */
static void run_child(int (*fn)(void), struct child *c)
{
	int p[2], ws;
	pid_t pid;
	ssize_t n, got = 0;

	memset(c, 0, sizeof(*c));
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		_exit(fn());
	}
	close(p[1]);
	while ((n = read(p[0], c->err + got, sizeof(c->err) - 1 - (size_t)got)) > 0)
		got += n;
	close(p[0]);
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	c->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static int enter(const struct seccomp_kind *kind)
{
	char err[160];

	if (vmm_seccomp_init(err, sizeof(err)) ||
	    seccomp_thread_enter(kind, true, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 100;
	}
	return 0;
}

static int vcpu_allowed_calls(void)
{
	int ret = enter(SECCOMP_THREAD_VCPU);

	if (ret)
		return ret;
	/* On the list: write, getpid, an ioctl by an allowed request (not a KVM fd here). */
	if (write(STDERR_FILENO, "ok\n", 3) != 3 || syscall(SYS_getpid) <= 0)
		return 101;
	if (ioctl(STDERR_FILENO, KVM_RUN, 0) != -1 || (errno != ENOTTY && errno != EINVAL))
		return 102;
	return 0;
}

static int vcpu_socket(void)
{
	int ret = enter(SECCOMP_THREAD_VCPU);

	if (ret)
		return ret;
	syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
	return 0; /* not reached */
}

static int vcpu_other_ioctl(void)
{
	struct termios t;
	int ret = enter(SECCOMP_THREAD_VCPU);

	if (ret)
		return ret;
	ioctl(STDERR_FILENO, TCGETS, &t);
	return 0; /* not reached */
}

static int off_changes_nothing(void)
{
	char err[160];
	long fd;

	if (vmm_seccomp_init(err, sizeof(err)) ||
	    seccomp_thread_enter(SECCOMP_THREAD_VCPU, false, err, sizeof(err)))
		return 100;
	fd = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return 101;
	close((int)fd);
	return 0;
}

/*
 * glibc's free() reads /proc/sys/vm/overcommit_memory the first time a
 * thread arena's heap shrinks; seccomp_filter_init() makes that happen
 * before any filter. A fault thread (no openat) frees more than the trim
 * threshold of its own heap; without the priming it stopped the process
 * (the target's fault thread in a TLS postcopy).
 */
static void *shrink_own_heap(void *arg)
{
	char err[160];
	void *volatile b[6];

	if (seccomp_thread_enter(SECCOMP_THREAD_FAULT, true, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		exit(100);
	}
	for (int i = 0; i < 6; i++)
		b[i] = malloc(100 << 10); /* under the mmap threshold: from the heap */
	for (int i = 5; i >= 0; i--)
		free(b[i]);
	return arg;
}

static int filtered_free_shrinks_heap(void)
{
	char err[160];
	pthread_t th;

	if (vmm_seccomp_init(err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 100;
	}
	if (pthread_create(&th, NULL, shrink_own_heap, NULL) || pthread_join(th, NULL))
		return 103;
	return 0;
}

static void socket_fn(void *arg, unsigned worker)
{
	(void)arg;
	(void)worker;
	syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
}

static void *nothing(void *arg)
{
	return arg;
}

/* The migration thread may open sockets; its harvest workers may not. */
static int worker_narrows(void)
{
	struct team t;
	pthread_t th;
	long fd;
	int ret;

	/*
	 * As in vmm, where main starts vCPU or gate threads before any filter:
	 * glibc's first pthread_create installs its own signal handlers.
	 */
	if (pthread_create(&th, NULL, nothing, NULL) || pthread_join(th, NULL))
		return 103;
	ret = enter(SECCOMP_THREAD_MIGRATION);
	if (ret)
		return ret;
	fd = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return 101;
	close((int)fd);
	if (team_init(&t, 1, socket_fn, NULL, SECCOMP_THREAD_HARVEST, true))
		return 102;
	team_run(&t, false);
	return 0; /* not reached: the worker's call stops the process */
}

/*
 * glibc gives each thread its own malloc arena while it can; the first time
 * a thread needs a new one once there are more than 8 (its arena_test on
 * 64-bit), it sizes the limit by reading /sys/devices/system/cpu/online. A
 * thread under a filter without openat, such as the postcopy fault thread
 * whose first malloc comes with its first TLS page request, was stopped
 * there. In a fresh child (the main arena only), 8 holders make 9 arenas:
 * the filtered thread's malloc is the one that would size the limit.
 */
#define ARENA_HOLDERS 8

static pthread_barrier_t arenas_held;

static void *hold_arena(void *arg)
{
	char *volatile p = malloc(64); /* this thread's own arena, one more in the process */

	if (p)
		p[0] = 1;
	pthread_barrier_wait(&arenas_held); /* every holder has one */
	pthread_barrier_wait(&arenas_held); /* the filtered thread is done */
	free(p);
	return arg;
}

/* The thread's result: NULL when its malloc worked. */
static const char filtered_failed[] = "failed";

static void *filtered_first_malloc(void *arg)
{
	char err[160];
	char *volatile p;

	(void)arg;
	if (seccomp_thread_enter(SECCOMP_THREAD_FAULT, true, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return (void *)filtered_failed;
	}
	p = malloc(64);
	if (!p)
		return (void *)filtered_failed;
	p[0] = 1;
	free(p);
	return NULL;
}

static int late_first_malloc(void)
{
	pthread_t holders[ARENA_HOLDERS], f;
	char err[160];
	void *r = NULL;
	int i;

	if (vmm_seccomp_init(err, sizeof(err)))
		return 100;
	pthread_barrier_init(&arenas_held, NULL, ARENA_HOLDERS + 1);
	for (i = 0; i < ARENA_HOLDERS; i++)
		if (pthread_create(&holders[i], NULL, hold_arena, NULL))
			return 101;
	pthread_barrier_wait(&arenas_held);
	if (pthread_create(&f, NULL, filtered_first_malloc, NULL) || pthread_join(f, &r))
		return 102;
	pthread_barrier_wait(&arenas_held);
	for (i = 0; i < ARENA_HOLDERS; i++)
		pthread_join(holders[i], NULL);
	return r ? 103 : 0;
}

static void test_allowed_calls_work(void **state)
{
	struct child c;

	(void)state;
	run_child(vcpu_allowed_calls, &c);
	assert_int_equal(c.status, 0);
	assert_string_equal(c.err, "ok\n");
}

static void test_forbidden_call_stops(void **state)
{
	struct child c;

	(void)state;
	run_child(vcpu_socket, &c);
	assert_int_equal(c.status, SECCOMP_EXIT_STATUS);
	assert_string_equal(c.err, "vmm: seccomp: the vcpu thread made a forbidden system call: "
				   "socket (41); stopping\n");
}

static void test_ioctl_by_request(void **state)
{
	struct child c;

	(void)state;
	run_child(vcpu_other_ioctl, &c);
	assert_int_equal(c.status, SECCOMP_EXIT_STATUS);
	assert_non_null(strstr(
	    c.err,
	    "the vcpu thread made a forbidden system call: ioctl (16, request 0x5401); stopping"));
}

static void test_off_changes_nothing(void **state)
{
	struct child c;

	(void)state;
	run_child(off_changes_nothing, &c);
	assert_int_equal(c.status, 0);
	assert_string_equal(c.err, "");
}

static void test_filtered_free_survives(void **state)
{
	struct child c;

	(void)state;
	run_child(filtered_free_shrinks_heap, &c);
	if (c.status != 0)
		fail_msg("status %d, stderr: %s", c.status, c.err);
}

static void test_worker_filter_stacks(void **state)
{
	struct child c;

	(void)state;
	run_child(worker_narrows, &c);
	assert_int_equal(c.status, SECCOMP_EXIT_STATUS);
	if (!strstr(c.err, "the harvest thread made a forbidden system call: socket (41)"))
		fail_msg("status %d, stderr: %s", c.status, c.err);
}

static void test_late_first_malloc(void **state)
{
	struct child c;

	(void)state;
	run_child(late_first_malloc, &c);
	if (c.status)
		fail_msg("status %d, stderr: %s", c.status, c.err);
}

static void test_lists(void **state)
{
	char err[160];

	(void)state;
	assert_int_equal(vmm_seccomp_init(err, sizeof(err)), 0);
	assert_int_equal(vmm_seccomp_policy.count, 15);
	for (unsigned k = 0; k < vmm_seccomp_policy.count; k++) {
		const struct seccomp_kind *kind = vmm_seccomp_policy.kinds[k];

		assert_non_null(seccomp_thread_name(kind));
		assert_true(seccomp_thread_allowed(kind) > 0);
		/* main's list is the union: every other kind's threads start under it. */
		assert_true(seccomp_thread_allowed(kind) <=
			    seccomp_thread_allowed(SECCOMP_THREAD_MAIN));
	}
	assert_true(seccomp_thread_allowed(SECCOMP_THREAD_VCPU) <
		    seccomp_thread_allowed(SECCOMP_THREAD_MIGRATION));
	assert_null(seccomp_thread_name(NULL));
	/* A part of a kind's list is no kind: no filter of its own. */
	assert_int_equal(seccomp_thread_allowed(&seccomp_part_vm_setup), 0);
}

/*
 * How many calls each kind allows, pinned (x86-64, no sanitizer: those add
 * to every list): the lists are data spread over the layers that own the
 * threads (machine_seccomp.c, migration_seccomp.c, frontend_seccomp.c), so
 * a group moved or dropped on the way shows here. The counts of
 * docs/architecture.md's table; change both together.
 */
static void test_list_counts(void **state)
{
#if defined(__x86_64__) && !defined(VMM_SANITIZED)
	static const struct {
		const char *name;
		unsigned allowed;
	} want[] = {
	    {"vcpu", 32},      {"snapshot", 55}, {"device", 38},  {"console", 31}, {"main", 117},
	    {"migration", 64}, {"urgent", 45},	 {"harvest", 28}, {"send", 45},	   {"gate", 56},
	    {"handshake", 49}, {"receive", 45},	 {"fault", 45},	  {"drop", 45},	   {"control", 55},
	};
	char err[160];

	(void)state;
	assert_int_equal(vmm_seccomp_init(err, sizeof(err)), 0);
	assert_int_equal(vmm_seccomp_policy.count, sizeof(want) / sizeof(want[0]));
	for (unsigned k = 0; k < vmm_seccomp_policy.count; k++) {
		const struct seccomp_kind *kind = vmm_seccomp_policy.kinds[k];

		assert_string_equal(seccomp_thread_name(kind), want[k].name);
		if (seccomp_thread_allowed(kind) != want[k].allowed)
			fail_msg("%s allows %u calls, not %u", want[k].name,
				 seccomp_thread_allowed(kind), want[k].allowed);
	}
#else
	(void)state;
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allowed_calls_work),
	    cmocka_unit_test(test_forbidden_call_stops),
	    cmocka_unit_test(test_ioctl_by_request),
	    cmocka_unit_test(test_off_changes_nothing),
	    /* before test_lists: its seccomp_filter_init() primes this process */
	    cmocka_unit_test(test_filtered_free_survives),
	    cmocka_unit_test(test_worker_filter_stacks),
	    cmocka_unit_test(test_late_first_malloc),
	    cmocka_unit_test(test_lists),
	    cmocka_unit_test(test_list_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
