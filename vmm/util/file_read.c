/* SPDX-License-Identifier: Apache-2.0 */
/* file_read.c - a small local file read whole, bounded (file_read.h). */
#include "file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *file_fmt_limit(char *buf, size_t len, size_t bytes)
{
	if (bytes && bytes % (1u << 20) == 0)
		snprintf(buf, len, "%zu MiB", bytes >> 20);
	else if (bytes && bytes % (1u << 10) == 0)
		snprintf(buf, len, "%zu KiB", bytes >> 10);
	else
		snprintf(buf, len, "%zu bytes", bytes);
	return buf;
}

static int fail(char *why, size_t whylen, int ret, const char *text)
{
	if (why && whylen)
		snprintf(why, whylen, "%s", text);
	return ret;
}

static int too_big(char *why, size_t whylen, unsigned long long size, size_t max)
{
	char lim[32];

	file_fmt_limit(lim, sizeof(lim), max);
	if (why && whylen) {
		if (size)
			snprintf(why, whylen, "the file is %llu bytes, the limit is %s", size, lim);
		else
			snprintf(why, whylen,
				 "the file grew past the limit of %s while it was read", lim);
	}
	return -EFBIG;
}

int file_read_max(const char *path, size_t max, char **out, size_t *len, char *why, size_t whylen)
{
	struct stat st;
	size_t cap, got = 0;
	char *buf;
	int fd, ret;

	*out = NULL;
	*len = 0;
	if (why && whylen)
		why[0] = '\0';
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		return fail(why, whylen, ret, strerror(-ret));
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return fail(why, whylen, ret, strerror(-ret));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return fail(why, whylen, -EISDIR, strerror(EISDIR));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return fail(why, whylen, -EINVAL,
			    S_ISFIFO(st.st_mode) ? "not a regular file (a FIFO or pipe)"
			    : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
				? "not a regular file (a device)"
				: "not a regular file");
	}
	if (st.st_size < 0 || (unsigned long long)st.st_size > max) {
		close(fd);
		return too_big(why, whylen, (unsigned long long)st.st_size, max);
	}
	/* Room for what fstat saw plus one byte, to notice a file that grew. */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return fail(why, whylen, -ENOMEM, strerror(ENOMEM));
	}
	for (;;) {
		ssize_t n;

		if (got == cap) {
			size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
			char *p;

			if (got > max) {
				free(buf);
				close(fd);
				return too_big(why, whylen, 0, max);
			}
			p = realloc(buf, ncap + 1);
			if (!p) {
				free(buf);
				close(fd);
				return fail(why, whylen, -ENOMEM, strerror(ENOMEM));
			}
			buf = p;
			cap = ncap;
		}
		n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			free(buf);
			close(fd);
			return fail(why, whylen, ret, strerror(-ret));
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got > max) {
		free(buf);
		return too_big(why, whylen, 0, max);
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}
