/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_report.c - the SIGSYS handler's line for a forbidden system
 * call (seccomp_report.h). Everything the handler reads is written before any
 * thread can trap, or published with release/acquire (names_ready).
 */
#include "seccomp_filter.h"
#include "seccomp_policy.h"
#include "seccomp_report.h"

#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define NAME_LEN 24

static bool names_ready;		       /* atomic: names written */
static char names[SECCOMP_NR_SLOTS][NAME_LEN]; /* for the SIGSYS handler */

/* The kind of the calling thread's innermost filter, for the handler; NULL = none. */
static _Thread_local const struct seccomp_kind *thread_kind;

/* Async-signal-safe: no stdio, no allocation; the names were resolved at init. */
static void (*volatile exit_hook)(void);

void seccomp_set_exit_hook(void (*fn)(void))
{
	exit_hook = fn;
}

void seccomp_report_thread_kind(const struct seccomp_kind *kind)
{
	thread_kind = kind;
}

void seccomp_report_resolve_names(void)
{
	for (int nr = 0; nr < SECCOMP_NR_SLOTS; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

		if (name)
			snprintf(names[nr], NAME_LEN, "%s", name);
		free(name);
	}
	__atomic_store_n(&names_ready, true, __ATOMIC_RELEASE);
}

static size_t put(char *buf, size_t at, const char *s)
{
	while (*s && at < 255)
		buf[at++] = *s++;
	return at;
}

/* v in base 10 or 16 (with "0x"). */
static size_t put_uint(char *buf, size_t at, unsigned long v, unsigned base)
{
	char digits[24];
	int n = 0;

	if (base == 16)
		at = put(buf, at, "0x");
	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && n < (int)sizeof(digits));
	while (n && at < 255)
		buf[at++] = digits[--n];
	return at;
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	int nr = si->si_syscall;
	const struct seccomp_kind *kind = thread_kind;
	char line[256];
	size_t n = 0;

	(void)sig;
	/*
	 * The names come last in the build (seccomp_report_resolve_names()):
	 * a call trapped before they are in waits for them, spinning (no
	 * system call here is sure to be allowed), for at most about a second.
	 */
	for (unsigned long spin = 0;
	     !__atomic_load_n(&names_ready, __ATOMIC_ACQUIRE) && spin < (1ul << 30); spin++) {
#if defined(__x86_64__)
		__builtin_ia32_pause();
#endif
	}
	n = put(line, n, "vmm: seccomp: the ");
	n = put(line, n, kind ? kind->name : "unknown");
	n = put(line, n, " thread made a forbidden system call: ");
	n = put(line, n,
		nr >= 0 && nr < SECCOMP_NR_SLOTS &&
			__atomic_load_n(&names_ready, __ATOMIC_ACQUIRE) && names[nr][0]
		    ? names[nr]
		    : "unknown");
	n = put(line, n, " (");
	n = put_uint(line, n, (unsigned)nr, 10);
#if defined(__x86_64__)
	/* An ioctl is allowed by request: say which one was not. */
	if (nr == __NR_ioctl) {
		n = put(line, n, ", request ");
		n = put_uint(line, n, (unsigned long)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RSI],
			     16);
	}
#else
	(void)uc;
#endif
	n = put(line, n, "); stopping\n");
	if (write(STDERR_FILENO, line, n) < 0) {
		/* nothing left to try: the exit status still says it */
	}
	if (exit_hook)
		exit_hook(); /* e.g. the terminal's mode put back */
	_exit(SECCOMP_EXIT_STATUS);
}

int seccomp_report_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGSYS, &sa, NULL) < 0 ? -errno : 0;
}
