/* SPDX-License-Identifier: Apache-2.0 */
#include "open_beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

int open_beneath(const char *dir, const char *path, int flags)
{
	size_t n = strcmp(dir, "/") ? strlen(dir) : 0;
	const char *rel;
	int dfd;

	if (strncmp(path, dir, n) || path[n] != '/' || !path[n + 1])
		return -EXDEV;
	rel = path + n + 1;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	for (;;) {
		const char *slash = strchr(rel, '/');
		size_t len = slash ? (size_t)(slash - rel) : strlen(rel);
		char comp[NAME_MAX + 1];
		int fd;

		if (len == 0 || len > NAME_MAX) {
			close(dfd);
			return len ? -ENAMETOOLONG : -EINVAL;
		}
		memcpy(comp, rel, len);
		comp[len] = '\0';
		if (!strcmp(comp, ".") || !strcmp(comp, "..")) {
			close(dfd);
			return -EXDEV;
		}
		/* A link as the last component fails with ELOOP, as a directory with ENOTDIR. */
		fd = slash ? openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			   : openat(dfd, comp, flags | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
		close(dfd);
		if (fd < 0 || !slash)
			return fd;
		dfd = fd;
		rel = slash + 1;
	}
}
