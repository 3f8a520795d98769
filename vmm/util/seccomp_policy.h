/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_policy.h - what each kind of thread may call, as data: written
 * in seccomp_policy.c, read only by seccomp_filter.c, which compiles it.
 * Internal to the seccomp module; everyone else uses seccomp_filter.h.
 */
#ifndef VMM_SECCOMP_POLICY_H
#define VMM_SECCOMP_POLICY_H

#include <stdbool.h>

#include "seccomp_filter.h"

#if defined(__SANITIZE_ADDRESS__)
#define VMM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VMM_SANITIZED 1
#endif
#endif

#define K(kind) (1u << (kind))

/* One kind of thread: its syscall groups (NULL-terminated names), its ioctls. */
struct kind_desc {
	const char *name;
	const char *const *groups[8];
	const unsigned long *ioctls[4];
	bool read_files; /* g_read_files, and openat without write access or O_CREAT */
	/*
	 * The kinds of the threads this kind's threads start: they begin
	 * under this filter, so it allows all they do (compile()).
	 */
	unsigned starts;
};

extern const struct kind_desc seccomp_kinds[SECCOMP_THREAD_COUNT];

#ifdef VMM_SANITIZED
/* Added to every list in sanitizer builds (see seccomp_policy.c). */
extern const char *const seccomp_sanitizer_calls[];
#endif

#endif
