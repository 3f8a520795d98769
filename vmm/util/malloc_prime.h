/* SPDX-License-Identifier: Apache-2.0 */
/*
 * malloc_prime.h - making glibc's malloc do, before any seccomp filter, the
 * file read it otherwise does lazily from whichever thread gets there first.
 */
#ifndef VMM_UTIL_MALLOC_PRIME_H
#define VMM_UTIL_MALLOC_PRIME_H

/*
 * The first time any thread's free() shrinks a thread arena's heap, glibc
 * opens /proc/sys/vm/overcommit_memory (and keeps the answer for the
 * process). This makes that happen now, from a short thread of its own.
 * Call from the front end's seccomp_filter_init(), before any thread enters
 * a filter (filtered threads allow no openat). Best effort, no error: if
 * the thread cannot start, the read stays lazy, as it was.
 */
void malloc_prime_lazy_reads(void);

#endif
