/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_filter.h - a seccomp-BPF allowlist per kind of thread.
 *
 * Defence in depth: a guest that takes over a vCPU thread, or a peer that
 * takes over a migration thread, finds only the system calls that thread
 * needs. This module is the mechanism and knows no kind of thread: each
 * layer describes its own kinds as data (struct seccomp_kind,
 * seccomp_policy.h) next to the code that runs them, and the front end
 * gathers them all into the process's struct seccomp_policy, which it
 * passes to seccomp_filter_init(). Each thread installs the filter of its
 * kind at its start (seccomp_thread_enter()); filters stack, so a thread runs under its own
 * list and under those of every thread above it (a kind's list therefore
 * includes those of the kinds its threads start; main's is the union).
 *
 * A call outside the list is trapped (SECCOMP_RET_TRAP): the SIGSYS
 * handler writes one line on stderr,
 *   vmm: seccomp: the vcpu thread made a forbidden system call: socket (41); stopping
 * and the process exits with SECCOMP_EXIT_STATUS. RET_TRAP rather than
 * RET_KILL_PROCESS because a kill leaves the operator with only an audit
 * record; a thread that cannot change signal handlers (the vCPU and engine
 * lists have no rt_sigaction, outside sanitizer builds) cannot take the
 * handler away.
 *
 * seccomp_filter_init() compiles every list once, at process start, into a
 * process-wide read-only table of BPF programs (and the syscall names the
 * handler prints, since it must be async-signal-safe), on a thread of its
 * own, so that the process goes on meanwhile (compiling costs milliseconds,
 * more than a lazy restore's own work); a thread that enters its filter
 * waits for its kind's program, which is built first when threads of that
 * kind start first (the vCPUs'). Installing is then two system calls and
 * cannot fail for lack of memory. Whether a thread
 * installs its filter travels in each caller's context (struct vm_config
 * seccomp): with it off, seccomp_thread_enter() does nothing.
 */
#ifndef VMM_UTIL_SECCOMP_FILTER_H
#define VMM_UTIL_SECCOMP_FILTER_H

#include <stdbool.h>
#include <stddef.h>

/* 128 + SIGSYS, what a shell reports for a process the kernel killed with SIGSYS. */
#define SECCOMP_EXIT_STATUS 159

struct seccomp_kind;   /* one kind of thread's list: seccomp_policy.h */
struct seccomp_policy; /* the process's kinds: seccomp_policy.h */

/* kind's name ("vcpu", "migration", ...); NULL for NULL. */
const char *seccomp_thread_name(const struct seccomp_kind *kind);

/*
 * Installs the SIGSYS handler and starts compiling the list of each kind
 * of `policy` on a thread of its own, in the policy's order. Call once
 * from the front end (which owns the process's policy: every layer's
 * kinds), before any other thread starts, when any VM of the process may
 * use filters; policy must live as long as the process. -errno with a
 * message. A fork() waits for the compiling to end. It first sets glibc's
 * malloc arena limit and makes glibc read what it reads lazily from a
 * thread's free() (a file no filter lets a thread open): malloc_prime.h.
 */
int seccomp_filter_init(const struct seccomp_policy *policy, char *err, size_t errlen);

/*
 * When `on`, installs kind's filter on the calling thread (for good), once
 * it is compiled. -errno with a message (also when it could not be
 * compiled, or kind is not one of the policy's); 0 when off. Needs
 * seccomp_filter_init().
 */
int seccomp_thread_enter(const struct seccomp_kind *kind, bool on, char *err, size_t errlen);

/*
 * The same for thread entry points that have nobody to report to: on
 * failure it writes "vmm: seccomp: cannot filter the KIND thread: WHY;
 * stopping" and exits with SECCOMP_EXIT_STATUS, as a forbidden call
 * would. A thread that must be filtered never runs without its filter.
 */
void seccomp_thread_enter_or_stop(const struct seccomp_kind *kind, bool on);

/*
 * fn runs in the SIGSYS handler before the exit (async-signal-safe code
 * only; the ioctl a policy lets every list make, its every_ioctl, is for
 * it). NULL removes it.
 */
void seccomp_set_exit_hook(void (*fn)(void));

/*
 * The number of system calls kind's list allows (docs, tests); waits for
 * its compiling. 0 for a kind not in the policy.
 */
unsigned seccomp_thread_allowed(const struct seccomp_kind *kind);

#endif /* VMM_UTIL_SECCOMP_FILTER_H */
