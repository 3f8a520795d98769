/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_dir.c - a snapshot's directory and files, made by the front
 * end's thread before the snapshot thread starts (that thread opens
 * nothing: its seccomp filter has no open). A snapshot never replaces
 * another, whole or half written, nor mixes with other files: the
 * directory is created, or must be empty.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "persist.h"
#include "snap_format.h"

/* No entry but . and .. (a duplicate of fd is read: fd stays open and unmoved). */
static bool dir_empty(int fd)
{
	int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	struct dirent *e;
	bool empty = d != NULL;

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = false;
	if (d)
		closedir(d);
	else if (dup_fd >= 0)
		close(dup_fd);
	return empty;
}

/* The directory: created when absent, else it must be empty. Leaves *dir_fd open. */
static int open_dir(const char *dir, int *dir_fd, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", dir, strerror(errno));
		return -errno;
	}
	/* A snapshot never replaces another, whole or half written, nor mixes with other files. */
	if (fstatat(fd, SNAP_STATE_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
	    fstatat(fd, SNAP_MEMORY_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
	    fstatat(fd, SNAP_STATE_TMP, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		snprintf(err, errlen, "%s already holds a snapshot: choose another directory", dir);
		close(fd);
		return -EEXIST;
	}
	if (!dir_empty(fd)) {
		snprintf(err, errlen, "%s is not empty: a snapshot needs a directory of its own",
			 dir);
		close(fd);
		return -EEXIST;
	}
	*dir_fd = fd;
	return 0;
}

int persist_create_files(const char *dir, bool direct, int *dir_fd, int *mem_fd, int *state_fd,
			 char *err, size_t errlen)
{
	int ret = open_dir(dir, dir_fd, err, errlen);

	*mem_fd = *state_fd = -1;
	if (ret)
		return ret;
	*mem_fd = openat(
	    *dir_fd, SNAP_MEMORY_FILE,
	    O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | (direct ? O_DIRECT : 0), 0600);
	if (*mem_fd < 0 && direct && errno == EINVAL) {
		/* The file was made; only O_DIRECT was refused (tmpfs before Linux 6.6, ...). */
		unlinkat(*dir_fd, SNAP_MEMORY_FILE, 0);
		snprintf(err, errlen,
			 "[snapshot] direct_io: the file system of %s does not support O_DIRECT "
			 "(set direct_io = false)",
			 dir);
		return -EINVAL;
	}
	if (*mem_fd >= 0)
		*state_fd = openat(*dir_fd, SNAP_STATE_TMP,
				   O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (*state_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot create the files in %s: %s", dir, strerror(errno));
		if (*mem_fd >= 0) {
			close(*mem_fd);
			*mem_fd = -1;
			unlinkat(*dir_fd, SNAP_MEMORY_FILE, 0);
		}
	}
	return ret;
}

void persist_remove_files(int dir_fd)
{
	unlinkat(dir_fd, SNAP_STATE_TMP, 0);
	unlinkat(dir_fd, SNAP_MEMORY_FILE, 0);
}
