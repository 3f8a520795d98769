/* SPDX-License-Identifier: Apache-2.0 */
/*
 * malloc_prime.c - glibc's lazy read of /proc/sys/vm/overcommit_memory,
 * made before any seccomp filter (see malloc_prime.h).
 *
 * A filtered thread (fault, receive, vcpu, ...) allows no openat, so the
 * filtered thread whose free() first shrank its arena's heap stopped the
 * VMM with status 159: seen as the target's fault thread in a TLS postcopy,
 * whose guest was lost with it. A thread started here, before any filter,
 * frees more of its own arena's heap than the trim threshold (128 KiB
 * unless the environment tunes malloc), which makes glibc read the file
 * now. Without glibc's thread arenas (ASan's allocator, MALLOC_ARENA_MAX=1)
 * nothing is read and nothing needs to be.
 */
#include "malloc_prime.h"

#include <pthread.h>
#include <stdlib.h>

#define PRIME_BLOCKS 8
#define PRIME_BLOCK  (96u << 10) /* under the mmap threshold: from the arena's heap */

static void *shrink_own_heap(void *arg)
{
	void *volatile b[PRIME_BLOCKS]; /* volatile: the compiler must not drop the pairs */

	for (int i = 0; i < PRIME_BLOCKS; i++)
		b[i] = malloc(PRIME_BLOCK);
	for (int i = PRIME_BLOCKS - 1; i >= 0; i--)
		free(b[i]);
	return arg;
}

void malloc_prime_lazy_reads(void)
{
	pthread_t t;

	if (!pthread_create(&t, NULL, shrink_own_heap, NULL))
		pthread_join(t, NULL);
}
