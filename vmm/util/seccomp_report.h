/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_report.h - what a filtered thread says when it makes a forbidden
 * system call: the SIGSYS handler's line (seccomp_filter.h's public face
 * describes the line and the exit status).
 *
 * Apart from seccomp_filter.c, which compiles and installs the filters
 * (and calls down into this file, never the other way): this file owns what the handler needs at
 * the moment of the trap, which must all be ready beforehand because the handler is
 * async-signal-safe (no stdio, no allocation, and no system call it is sure to be allowed): the
 * system calls' names, resolved once by the filters' build thread, and the kind of filter each
 * thread entered.
 */
#ifndef VMM_UTIL_SECCOMP_REPORT_H
#define VMM_UTIL_SECCOMP_REPORT_H

#include <stdbool.h>

struct seccomp_kind;

/*
 * System call numbers below this have a name slot; a filter allows no
 * call at or above it (seccomp_filter.c's bound for its lists too).
 */
#define SECCOMP_NR_SLOTS 512

/* Installs the SIGSYS handler for the whole process. 0 or -errno. */
int seccomp_report_install(void);

/*
 * Resolves every call's name for the handler (libseccomp allocates: not
 * from a handler). Once, from the filters' build thread, after the last
 * program: a trap before the names are in waits for them, spinning, for
 * at most about a second.
 */
void seccomp_report_resolve_names(void);

/* The calling thread entered kind's filter: its innermost, which the handler names. */
void seccomp_report_thread_kind(const struct seccomp_kind *kind);

#endif /* VMM_UTIL_SECCOMP_REPORT_H */
