/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "unix_addr.h"

int unix_addr_fill(struct unix_addr *ua, const char *path)
{
	size_t len = strlen(path);
	const char *slash;
	char dir[PATH_MAX];
	int n;

	memset(&ua->sa, 0, sizeof(ua->sa));
	ua->sa.sun_family = AF_UNIX;
	ua->dirfd = -1;
	if (!len)
		return -ENAMETOOLONG;
	if (len < sizeof(ua->sa.sun_path)) {
		memcpy(ua->sa.sun_path, path, len);
		return 0;
	}
	slash = strrchr(path, '/');
	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	ua->dirfd = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ua->dirfd < 0)
		return -errno;
	n = snprintf(ua->sa.sun_path, sizeof(ua->sa.sun_path), "/proc/self/fd/%d/%s", ua->dirfd,
		     slash + 1);
	if (n < 0 || (size_t)n >= sizeof(ua->sa.sun_path)) {
		unix_addr_release(ua);
		return -ENAMETOOLONG;
	}
	return 0;
}

void unix_addr_release(struct unix_addr *ua)
{
	if (ua->dirfd >= 0)
		close(ua->dirfd);
	ua->dirfd = -1;
}
