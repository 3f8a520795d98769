/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_policy.c - the groups of calls that threads of every layer
 * share, as data. A layer's kinds (struct seccomp_kind) are built from
 * these and from groups of their own, so that each kind reads as the jobs
 * its thread does; the kinds themselves live with their layers (the
 * machine's, the engine's, the front end's), and seccomp_filter.c compiles
 * them.
 */
#include "seccomp_policy.h"

#include <stddef.h>

/* clang-format off */
/*
 * Every thread: locks, memory (malloc and the sanitizers' allocators map
 * and unmap), clocks, signals to its own threads (kicks, SIGSTOP of the
 * stop-at test hook), a line on stderr, glibc's qsort (sysinfo, for the
 * size of RAM), thread exit (glibc and ASan unmap the stack and the
 * alternate signal stack) and mincore (is a page there, before an error
 * report reads it).
 */
const char *const seccomp_calls_base[] = {
	"futex", "exit", "exit_group", "rt_sigreturn", "rt_sigprocmask", "restart_syscall",
	"sched_yield", "nanosleep", "clock_nanosleep", "clock_gettime", "gettimeofday",
	"gettid", "getpid", "tgkill", "write", "mmap", "munmap", "madvise", "mprotect",
	"mremap", "brk", "sigaltstack", "sched_getaffinity", "sysinfo", "mincore", NULL,
};

/* Reading and writing connected sockets, plain or TLS (OpenSSL wants getrandom). */
const char *const seccomp_calls_sock_io[] = {
	"read", "readv", "writev", "sendto", "sendmsg", "recvfrom", "recvmsg", "poll", "ppoll",
	"close", "shutdown", "getrandom", "fcntl", "getsockopt", "setsockopt", "getsockname",
	"getpeername", NULL,
};

/* Making connections. */
const char *const seccomp_calls_sock_open[] = {
	"socket", "connect", "bind", "listen", "accept", "accept4", "socketpair", NULL,
};

/* Taking connections on a listening socket. */
const char *const seccomp_calls_accept[] = {"accept", "accept4", NULL};

/* Starting threads (pthread_create: clone3, or clone on older kernels). */
const char *const seccomp_calls_threads[] = {"clone", "clone3", "set_robust_list", "rseq", NULL};

/*
 * Reading files (/proc, a boot id, OpenSSL's CA directory while it
 * verifies a peer); openat itself only read-only (read_files in struct
 * seccomp_kind).
 */
const char *const seccomp_calls_read_files[] = {"fstat", "newfstatat", "lseek", "read", "close",
						NULL};

/*
 * Raising a thread to SCHED_FIFO and back (sched_boost.h), for itself and
 * for the threads it raises. Not for a thread a guest could take over: it
 * must not get a real-time CPU hog.
 */
const char *const seccomp_calls_sched[] = {"sched_getscheduler", "sched_getparam",
					   "sched_setscheduler", NULL};

#ifdef VMM_SANITIZED
/*
 * ASan/UBSan builds (test builds), every list: LeakSanitizer's check at
 * exit stops the world with a cloned tracer that ptraces every thread and
 * lists /proc/self/task with the old getdents; an error report, from any
 * thread, reads /proc/self/maps and the binary to symbolize its stack.
 */
const char *const seccomp_sanitizer_calls[] = {
	"ptrace", "prctl", "wait4", "waitid", "getppid", "openat", "open", "close", "getdents",
	"getdents64", "read", "readlink", "stat", "lstat", "fstat", "newfstatat", "kill",
	"rt_sigaction", NULL,
};
#endif
/* clang-format on */
