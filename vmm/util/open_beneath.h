/* SPDX-License-Identifier: Apache-2.0 */
/*
 * open_beneath.h - opening a file that must lie below a directory: every
 * component below it is opened from the one before (openat), and none may
 * be a symbolic link, so neither a ".." nor a link planted below the
 * directory leads out of it, and no check-then-open race exists. For a
 * migration target's disk allowed by [migration] allow_disk_dirs
 * (docs/config.md). Any thread whose seccomp filter allows openat.
 */
#ifndef VMM_UTIL_OPEN_BENEATH_H
#define VMM_UTIL_OPEN_BENEATH_H

/*
 * Opens `path` with open(2)'s `flags` (O_NOFOLLOW and O_CLOEXEC are
 * added) when it lies strictly below directory `dir` ("/" or a path
 * without a trailing "/"): returns the descriptor, or -errno: -EXDEV when
 * `path` is not below `dir` or has a "." or ".." component, -ELOOP or
 * -ENOTDIR when a component below `dir` is a symbolic link (or not a
 * directory), -EINVAL for an empty component, else open's. `dir` itself
 * is the caller's trust: links in its own path are followed.
 */
int open_beneath(const char *dir, const char *path, int flags);

#endif /* VMM_UTIL_OPEN_BENEATH_H */
