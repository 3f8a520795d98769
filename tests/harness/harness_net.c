/* SPDX-License-Identifier: Apache-2.0 */
#include "harness_net.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"

#define TCP_LISTEN 0x0a /* the st column of /proc/net/tcp (include/net/tcp_states.h) */

int hx_free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &al))
		ret = -errno;
	else
		ret = ntohs(a.sin_port);
	close(fd);
	return ret;
}

/*
 * Inodes of sockets listening on port in one /proc/.../net/tcp{,6} table
 * ("sl local_address rem_address st ... uid timeout inode"), up to max.
 */
static int listeners(const char *table, int port, unsigned long *inodes, int max)
{
	FILE *f = fopen(table, "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f)) { /* the header */
		fclose(f);
		return 0;
	}
	while (n < max && fgets(line, sizeof(line), f)) {
		char local[64];
		unsigned st, lport;
		unsigned long inode;

		if (sscanf(line, " %*s %63s %*s %x %*s %*s %*s %*s %*s %lu", local, &st, &inode) !=
		    3)
			continue;
		const char *colon = strrchr(local, ':');

		if (!colon || sscanf(colon + 1, "%x", &lport) != 1)
			continue;
		if (st == TCP_LISTEN && (int)lport == port)
			inodes[n++] = inode;
	}
	fclose(f);
	return n;
}

/* True when pid has an fd on socket:[inode] for one of the inodes. */
static bool owns_socket(pid_t pid, const unsigned long *inodes, int n)
{
	char dir[64], path[384], link[64];
	struct dirent *d;
	bool found = false;
	DIR *fds;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	fds = opendir(dir);
	if (!fds)
		return false;
	while (!found && (d = readdir(fds))) {
		ssize_t len;
		unsigned long ino;

		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%lu]", &ino) != 1)
			continue;
		for (int i = 0; i < n; i++)
			found |= inodes[i] == ino;
	}
	closedir(fds);
	return found;
}

bool hx_listening(struct hx_proc *p, int port)
{
	static const char *const tables[] = {"tcp", "tcp6"};
	unsigned long inodes[32];
	int n = 0;

	for (int i = 0; i < 2; i++) {
		char path[64];

		if (p)
			snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)p->pid, tables[i]);
		else
			snprintf(path, sizeof(path), "/proc/net/%s", tables[i]);
		n += listeners(path, port, inodes + n, 32 - n);
	}
	return n && (!p || owns_socket(p->pid, inodes, n));
}

int hx_wait_listen(struct hx_proc *p, int port, int timeout_ms, char *err, size_t errlen)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;

	for (;;) {
		if (p && !hx_running(p)) {
			snprintf(err, errlen, "%s exited before it listened on port %d", p->name,
				 port);
			return -ESRCH;
		}
		if (hx_listening(p, port))
			return 0;
		if (now_ns() >= end) {
			if (p)
				snprintf(err, errlen, "%s does not listen on port %d after %g s",
					 p->name, port, timeout_ms / 1e3);
			else
				snprintf(err, errlen, "nothing listens on port %d after %g s", port,
					 timeout_ms / 1e3);
			return -ETIMEDOUT;
		}
		sleep_ms(10);
	}
}
