/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_policy.h - what a kind of thread may call, as data: the type a
 * layer describes its thread kinds with, and the groups of calls that
 * any layer's threads share (locks and memory, socket I/O, threads...).
 *
 * Util knows no kind of thread. Each layer writes its kinds next to the
 * code that runs them (the machine's vcpu and device, the engine's,
 * the front end's main and console) from these groups and its own; the
 * front end gathers every kind into one struct seccomp_policy for
 * seccomp_filter_init() (seccomp_filter.h), which compiles them.
 */
#ifndef VMM_UTIL_SECCOMP_POLICY_H
#define VMM_UTIL_SECCOMP_POLICY_H

#include <stdbool.h>

#include "seccomp_filter.h"

#define SECCOMP_KIND_GROUPS 8
#define SECCOMP_KIND_IOCTLS 4
#define SECCOMP_KIND_WITH   4

/*
 * One kind of thread: its syscall groups (NULL-terminated lists of names),
 * its ioctls (0-terminated lists of requests: an ioctl is allowed by
 * request number only, as Firecracker does). Unused slots are NULL.
 */
struct seccomp_kind {
	const char *name;
	const char *const *groups[SECCOMP_KIND_GROUPS];
	const unsigned long *ioctls[SECCOMP_KIND_IOCTLS];
	bool read_files; /* seccomp_calls_read_files, and openat without write access or O_CREAT */
	/*
	 * More lists this kind's filter allows, merged into its program:
	 *  - the kinds of the threads its threads start: they begin under this
	 *    filter, and a stacked filter can only narrow;
	 *  - a lower layer's part (a struct seccomp_kind that is no kind of
	 *    thread and is in no policy): what that layer's code does on the
	 *    caller's thread, e.g. the machine creating a VM on main.
	 */
	const struct seccomp_kind *with[SECCOMP_KIND_WITH];
	/*
	 * Its threads start every other kind of the policy (main's: a source's
	 * engine, a target's gate and VM), as if each were in `with`.
	 */
	bool with_all;
};

/* The process's kinds, gathered by the front end. */
struct seccomp_policy {
	/*
	 * Every kind a thread may enter, in the order to compile them: those
	 * whose threads start first (the vCPUs') first.
	 */
	const struct seccomp_kind *const *kinds;
	unsigned count;
	/*
	 * One ioctl request every list allows, on the request alone (the
	 * SIGSYS exit hook's: the terminal put back in its mode); 0 for none.
	 */
	unsigned long every_ioctl;
};

/* The most kinds a policy may have. */
#define SECCOMP_POLICY_MAX_KINDS 32

/*
 * Groups of calls (NULL-terminated), shared by the layers' kinds; what
 * each is for is in seccomp_policy.c.
 */
extern const char *const seccomp_calls_base[];	     /* every thread */
extern const char *const seccomp_calls_sock_io[];    /* connected sockets, plain or TLS */
extern const char *const seccomp_calls_sock_open[];  /* making connections */
extern const char *const seccomp_calls_accept[];     /* taking connections */
extern const char *const seccomp_calls_threads[];    /* starting threads */
extern const char *const seccomp_calls_read_files[]; /* reading files (with read_files) */
extern const char *const seccomp_calls_sched[];	     /* SCHED_FIFO and back (sched_boost.h) */

#if defined(__SANITIZE_ADDRESS__)
#define VMM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VMM_SANITIZED 1
#endif
#endif

#ifdef VMM_SANITIZED
/* Added to every list in sanitizer builds (see seccomp_policy.c). */
extern const char *const seccomp_sanitizer_calls[];
#endif

#endif /* VMM_UTIL_SECCOMP_POLICY_H */
