/* SPDX-License-Identifier: Apache-2.0 */
#include "uffd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int uffd_open(int *fd)
{
	struct uffdio_api api = {.api = UFFD_API, .features = 0};
	int f = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (f < 0)
		return -errno;
	if (ioctl(f, UFFDIO_API, &api) < 0) {
		int e = -errno;

		close(f);
		return e;
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
