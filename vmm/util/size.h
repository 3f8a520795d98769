/* SPDX-License-Identifier: Apache-2.0 */
/*
 * size.h - parsing the numbers users type (config files, --set, CLI flags).
 * Pure functions; callers turn the -errno into their own message.
 */
#ifndef VMM_UTIL_SIZE_H
#define VMM_UTIL_SIZE_H

#include <stdint.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

/*
 * "4G", "512M", "64k", "4096", "1T", "2GiB", "0x1000": bytes. A suffix is
 * binary (K = 1024) and may be followed by "B" or "iB". Returns 0,
 * -EINVAL (not a size) or -ERANGE (over 2^64 - 1); *out is untouched on error.
 */
int parse_size(const char *s, uint64_t *out);

/* Plain unsigned decimal (or 0x hex) with overflow check; -EINVAL / -ERANGE. */
int parse_u64(const char *s, uint64_t *out);

#endif /* VMM_UTIL_SIZE_H */
