/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bounded_child.h - for unit tests of readers that must neither hang nor
 * grow without bound: the function runs in a child process under an alarm
 * (and, outside AddressSanitizer, an address-space limit), and its result
 * comes back through a pipe. A reader that hangs or balloons then fails its
 * test, naming what it did, instead of stopping the suite.
 */
#ifndef VMM_TEST_BOUNDED_CHILD_H
#define VMM_TEST_BOUNDED_CHILD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define BOUNDED_CHILD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BOUNDED_CHILD_ASAN 1
#endif
#endif

/*
 * Runs fn(arg, result) in a child, at most timeout_s seconds and, when
 * as_limit is not 0 and ASan is off, as_limit bytes of address space; copies
 * the child's result (len bytes) into result. Fails the test, naming what,
 * when the child is killed (the alarm: it did not return in time) or
 * exits without a whole result.
 */
static inline void bounded_child_run(const char *what, unsigned timeout_s, uint64_t as_limit,
				     void (*fn)(void *arg, void *result), void *arg, void *result,
				     size_t len)
{
	size_t got = 0;
	int p[2], ws;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		alarm(timeout_s);
#ifndef BOUNDED_CHILD_ASAN
		if (as_limit) {
			struct rlimit rl = {.rlim_cur = as_limit, .rlim_max = as_limit};

			setrlimit(RLIMIT_AS, &rl);
		}
#else
		(void)as_limit;
#endif
		fn(arg, result);
		_exit(write(p[1], result, len) == (ssize_t)len ? 0 : 4);
	}
	close(p[1]);
	while (got < len) {
		ssize_t n = read(p[0], (char *)result + got, len - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(p[0]);
	assert_int_equal(waitpid(pid, &ws, 0), pid);
	if (WIFSIGNALED(ws))
		fail_msg("%s was killed by signal %d (SIGALRM %d: it did not return within %u s)",
			 what, WTERMSIG(ws), SIGALRM, timeout_s);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	assert_int_equal(got, len);
}

#endif /* VMM_TEST_BOUNDED_CHILD_H */
