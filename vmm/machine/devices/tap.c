/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tap.c - opening a tap device (Documentation/networking/tuntap.rst in the
 * kernel tree): TUNSETIFF on /dev/net/tun attaches to an existing tap or
 * creates one. A tap this process creates is not persistent and starts
 * down: it is brought up here, since nothing else would. One it attached
 * to belongs to whoever made it (a bridge port set up by the operator).
 *
 * Multi-queue. A tap is asked for with IFF_MULTI_QUEUE first, so that a
 * second vmm on this host can attach to the same tap while the first still
 * holds it: a local upgrade (`vmm migrate --local`) keeps the guest's port
 * on the bridge. The kernel spreads received frames over the attached
 * queues by flow, so in the moment both are attached the old process's
 * (parked) queue may swallow a few frames, as a blackout does; its queue
 * goes when it exits. A tap the operator made without `multi_queue`
 * refuses the flag (EINVAL): it is then attached single-queue, and a local
 * upgrade of its VM is refused at the new process's attach (EBUSY).
 */
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int set_up(const char *name)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int ret = 0;

	if (s < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		ret = -errno;
	ifr.ifr_flags |= IFF_UP;
	if (!ret && ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		ret = -errno;
	close(s);
	return ret;
}

static const char *hint(int e, bool existed)
{
	switch (e) {
	case EPERM:
		return existed ? " (the tap belongs to another user: run as its owner or root)"
			       : " (creating a tap needs CAP_NET_ADMIN; or create it first with "
				 "'ip tuntap add dev NAME mode tap user UID')";
	case EBUSY:
		return " (another process has it open and it is single-queue: "
		       "'ip tuntap add ... multi_queue' makes one two vmms can share)";
	case EINVAL:
		return " (an interface of that name exists and is not a tap)";
	default:
		return "";
	}
}

int tap_open(const char *name, bool *created, char *err, size_t errlen)
{
	struct ifreq ifr;
	bool existed = if_nametoindex(name) != 0;
	int fd, ret;

	*created = false;
	if (strlen(name) >= IFNAMSIZ) {
		snprintf(err, errlen, "[net] tap: '%s' is longer than %d characters", name,
			 IFNAMSIZ - 1);
		return -EINVAL;
	}
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "[net] tap '%s': cannot open /dev/net/tun: %s", name,
			 strerror(errno));
		return ret;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE;
	ret = ioctl(fd, TUNSETIFF, &ifr);
	if (ret < 0 && errno == EINVAL && existed) {
		/* A single-queue tap (or not a tap at all: then this fails too). */
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
		ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
		ret = ioctl(fd, TUNSETIFF, &ifr);
	}
	if (ret < 0) {
		ret = -errno;
		snprintf(err, errlen, "[net] tap '%s': cannot %s it: %s%s", name,
			 existed ? "attach to" : "create", strerror(errno), hint(errno, existed));
		close(fd);
		return ret;
	}
	if (!existed) {
		ret = set_up(name);
		if (ret) {
			snprintf(err, errlen, "[net] tap '%s': created it but cannot set it up: %s",
				 name, strerror(-ret));
			close(fd);
			return ret;
		}
		*created = true;
	}
	return fd;
}
