/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file_read.h - reading a small local file whole, bounded: a config, a
 * TLS certificate or key. Never allocates more than the caller's limit
 * plus one byte, whatever the path names (/dev/zero, a FIFO, a file that
 * keeps growing).
 */
#ifndef VMM_UTIL_FILE_READ_H
#define VMM_UTIL_FILE_READ_H

#include <stddef.h>

/*
 * Reads the regular file `path` of at most `max` bytes into a malloc'd
 * buffer, NUL-terminated (*len excludes the NUL; the file may hold NULs).
 * Opened with O_NONBLOCK, so a FIFO is refused at once instead of waited
 * on. Returns 0, or -errno with a one-line reason in `why` that does not
 * name the file (the caller does):
 *   -ENOENT, -EACCES, ...  open or read failed (strerror)
 *   -EISDIR                a directory
 *   -EINVAL                not a regular file (FIFO, device, socket)
 *   -EFBIG                 more than `max` bytes (also when it grew past
 *                          `max` while it was read)
 *   -ENOMEM
 * *out is NULL on error.
 */
int file_read_max(const char *path, size_t max, char **out, size_t *len, char *why, size_t whylen);

/* "1 MiB", "4 KiB" or "1000 bytes": a limit for a message. */
const char *file_fmt_limit(char *buf, size_t len, size_t bytes);

#endif /* VMM_UTIL_FILE_READ_H */
