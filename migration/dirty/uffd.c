/* SPDX-License-Identifier: Apache-2.0 */
#include "uffd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux 6.1's /dev/userfaultfd ioctl, for build hosts with older headers. */
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

#define UFFD_DEVICE "/dev/userfaultfd"

/* The device hands out the same fd as the syscall, with the same flags. */
static int open_device(int *fd)
{
	int dev = open(UFFD_DEVICE, O_RDWR | O_CLOEXEC);
	int f;

	if (dev < 0)
		return -errno;
	f = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
	if (f < 0)
		f = -errno;
	close(dev);
	if (f < 0)
		return f;
	*fd = f;
	return 0;
}

/* UFFDIO_API, and the registration ioctls postcopy's MISSING mode needs. */
static int handshake(int f)
{
	struct uffdio_api api = {.api = UFFD_API, .features = 0};
	const uint64_t need = (1ull << _UFFDIO_REGISTER) | (1ull << _UFFDIO_UNREGISTER);

	if (ioctl(f, UFFDIO_API, &api) < 0)
		return -errno;
	return (api.ioctls & need) == need ? 0 : -EOPNOTSUPP;
}

int uffd_open(int *fd, unsigned block, char *err, size_t errlen)
{
	int f = -1, sys_ret, dev_ret = 0, ret;

	if (block & UFFD_BLOCK_SYSCALL) {
		sys_ret = -EPERM;
	} else {
		f = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		sys_ret = f < 0 ? -errno : 0;
	}
	/* A container's seccomp profile, or vm.unprivileged_userfaultfd=0 for non-root. */
	if (sys_ret == -EPERM || sys_ret == -ENOSYS) {
		dev_ret = (block & UFFD_BLOCK_DEVICE) ? -EPERM : open_device(&f);
		if (dev_ret) {
			snprintf(err, errlen, "userfaultfd: the syscall: %s; " UFFD_DEVICE ": %s",
				 strerror(-sys_ret), strerror(-dev_ret));
			return dev_ret;
		}
	} else if (sys_ret) {
		snprintf(err, errlen, "userfaultfd: %s", strerror(-sys_ret));
		return sys_ret;
	}
	ret = handshake(f);
	if (ret) {
		snprintf(err, errlen, "userfaultfd (%s): UFFDIO_API: %s",
			 sys_ret ? UFFD_DEVICE : "the syscall", strerror(-ret));
		close(f);
		return ret;
	}
	*fd = f;
	return 0;
}

int uffd_register(int fd, void *addr, uint64_t len)
{
	struct uffdio_register r = {
		.range = {.start = (uint64_t)(uintptr_t)addr, .len = len},
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	return ioctl(fd, UFFDIO_REGISTER, &r) < 0 ? -errno : 0;
}

int uffd_unregister(int fd, void *addr, uint64_t len)
{
	struct uffdio_range r = {.start = (uint64_t)(uintptr_t)addr, .len = len};

	return ioctl(fd, UFFDIO_UNREGISTER, &r) < 0 ? -errno : 0;
}

int uffd_copy(int fd, void *dst, const void *src, uint64_t len)
{
	struct uffdio_copy c = {
		.dst = (uint64_t)(uintptr_t)dst,
		.src = (uint64_t)(uintptr_t)src,
		.len = len,
		.mode = 0,
	};

	while (ioctl(fd, UFFDIO_COPY, &c) < 0) {
		if (errno != EAGAIN)
			return -errno;
		/* Interrupted by a concurrent mapping change: retry the rest. */
		if (c.copy > 0) {
			c.dst += (uint64_t)c.copy;
			c.src += (uint64_t)c.copy;
			c.len -= (uint64_t)c.copy;
		}
		c.copy = 0;
	}
	return 0;
}

int uffd_zeropage(int fd, void *dst, uint64_t len)
{
	struct uffdio_zeropage z = {
		.range = {.start = (uint64_t)(uintptr_t)dst, .len = len},
		.mode = 0,
	};

	while (ioctl(fd, UFFDIO_ZEROPAGE, &z) < 0) {
		if (errno != EAGAIN)
			return -errno;
		z.zeropage = 0;
	}
	return 0;
}

int uffd_wake(int fd, void *dst, uint64_t len)
{
	struct uffdio_range r = {.start = (uint64_t)(uintptr_t)dst, .len = len};

	return ioctl(fd, UFFDIO_WAKE, &r) < 0 ? -errno : 0;
}

int uffd_read_faults(int fd, uint64_t *addrs, int n)
{
	struct uffd_msg msgs[64];
	ssize_t r;
	int got = 0;

	if (n > 64)
		n = 64;
	r = read(fd, msgs, sizeof(msgs[0]) * (size_t)n);
	if (r < 0)
		return errno == EAGAIN ? 0 : -errno;
	for (ssize_t i = 0; i < r / (ssize_t)sizeof(msgs[0]); i++)
		if (msgs[i].event == UFFD_EVENT_PAGEFAULT)
			addrs[got++] = msgs[i].arg.pagefault.address;
	return got;
}
