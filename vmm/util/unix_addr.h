/* SPDX-License-Identifier: Apache-2.0 */
#ifndef VMM_UNIX_ADDR_H
#define VMM_UNIX_ADDR_H

#include <sys/socket.h>
#include <sys/un.h>

/*
 * Addresses of AF_UNIX sockets at any path length.
 *
 * sun_path holds 107 bytes, but build trees, CI workspaces and $VMM_RUN_DIR
 * easily make longer paths. A longer path is reached through an O_PATH
 * descriptor of its directory: "/proc/self/fd/N/<basename>" resolves in
 * the kernel to the same file for bind() and connect().
 */
struct unix_addr {
	struct sockaddr_un sa;
	int dirfd; /* -1, or the directory descriptor the address goes through */
};

/*
 * Fills ua for path. Returns 0, -ENAMETOOLONG (an empty path, or a base
 * name that does not fit even alone), or -errno from opening the
 * directory. Release with unix_addr_release() after bind()/connect().
 */
int unix_addr_fill(struct unix_addr *ua, const char *path);
void unix_addr_release(struct unix_addr *ua);

#endif /* VMM_UNIX_ADDR_H */
