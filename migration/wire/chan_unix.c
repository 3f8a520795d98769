/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chan_unix.c - the UNIX sockets under migration channels ("unix:PATH"),
 * for a source and a target on one host: connect, listen, the peer's
 * credentials. channel.c builds its channels on these; the record that
 * passes file descriptors is chan_fds.c's.
 *
 * Trust: a UNIX socket carries no TLS. Who may connect is decided by the
 * socket file (mode 0600, in a directory the operator chose) and by the
 * peer's credentials, which the gate checks (chan_unix_peer_ok).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "channel.h"
#include "unix_addr.h"

static int unix_socket(void)
{
	return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

/* fd becomes the caller's on success; closed on failure. */
static int hand_out(int ret, int fd, int *out)
{
	if (ret) {
		if (fd >= 0)
			close(fd);
		return ret;
	}
	*out = fd;
	return 0;
}

int chan_unix_connect(const char *path, uint64_t timeout_ms, int *out)
{
	struct timeval tv = {.tv_sec = (time_t)(timeout_ms / 1000),
			     .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};
	struct unix_addr ua;
	int fd = -1, ret = unix_addr_fill(&ua, path);

	if (!ret) {
		fd = unix_socket();
		/*
		 * A UNIX connect() needs no handshake, but waits while the
		 * listener's backlog is full (a hung or stopped peer): for
		 * SO_SNDTIMEO, one wait, so the timeout is its deadline.
		 */
		ret = fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
			      connect(fd, (struct sockaddr *)&ua.sa, sizeof(ua.sa))
			  ? -errno
			  : 0;
		if (ret == -EAGAIN || ret == -EINPROGRESS)
			ret = -ETIMEDOUT;
		unix_addr_release(&ua);
	}
	return hand_out(ret, fd, out);
}

/*
 * A socket file left by a vmm that died is in the way of bind(): removed
 * when nothing answers on it. A live one, or a file that is not a socket,
 * is the operator's to sort out.
 */
static int clear_stale(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, live;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = unix_socket();
	if (fd < 0)
		return -errno;
	live = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 || errno != ECONNREFUSED;
	close(fd);
	if (live)
		return -EADDRINUSE;
	return unlink(path) && errno != ENOENT ? -errno : 0;
}

int chan_unix_listen(const char *path, int *lfd)
{
	struct unix_addr ua;
	int fd = -1, ret = unix_addr_fill(&ua, path);

	if (!ret)
		ret = clear_stale(path, &ua.sa);
	if (!ret) {
		fd = unix_socket();
		if (fd < 0 || bind(fd, (struct sockaddr *)&ua.sa, sizeof(ua.sa)) < 0)
			ret = -errno;
	}
	/* Only this uid may hand a VM over (the gate checks the peer's credentials too). */
	if (!ret && (chmod(path, 0600) < 0 || listen(fd, 16) < 0)) {
		ret = -errno;
		unlink(path);
	}
	unix_addr_release(&ua);
	return hand_out(ret, fd, lfd);
}

bool chan_is_unix(int fd)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);

	return fd >= 0 && !getsockname(fd, (struct sockaddr *)&sa, &sl) && sa.ss_family == AF_UNIX;
}

bool chan_unix_peer_ok(int fd, char *name, size_t namelen)
{
	struct ucred cr;
	socklen_t sl = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl)) {
		snprintf(name, namelen, "unix:?");
		return false;
	}
	snprintf(name, namelen, "unix:pid %d uid %u", (int)cr.pid, (unsigned)cr.uid);
	return cr.uid == geteuid() || cr.uid == 0;
}
