/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_server.c - the control API's socket (docs/api.md): a private
 * directory, a 0600 socket that replaces only a stale one, the HTTP server
 * on it, moving it and removing it only while it is still ours. What the
 * requests do is api_routes.c's.
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api_routes.h"
#include "api_server.h"
#include "runtime.h"
#include "unix_addr.h"

struct api_server {
	struct api_routes routes; /* what the requests reach */
	struct evhttp *http;
	char path[PATH_MAX];
	dev_t dev; /* identity of the socket file we bound, see api_server_stop() */
	ino_t ino;
};

/*
 * Creates the parent directory of `path` (and its missing ancestors) 0700,
 * then refuses a parent that someone else could swap our socket in: it must
 * be owned by us or root, and not writable by others unless sticky (/tmp).
 */
static int prepare_parent(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	char *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0; /* relative to the current directory */
	if (slash == dir)
		return 0; /* "/x.sock" */
	*slash = '\0';
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) && errno != EEXIST)
			goto mkdir_failed;
		*p = '/';
	}
	if (mkdir(dir, 0700) && errno != EEXIST)
		goto mkdir_failed;
	if (stat(dir, &st)) {
		snprintf(err, errlen, "api socket directory '%s': %s", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "api socket directory '%s' is not a directory", dir);
		return -ENOTDIR;
	}
	if ((st.st_uid != geteuid() && st.st_uid != 0) ||
	    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
		snprintf(err, errlen,
			 "api socket directory '%s' is owned by uid %u or writable by others; "
			 "refusing to serve there",
			 dir, (unsigned)st.st_uid);
		return -EPERM;
	}
	return 0;
mkdir_failed: {
	int e = errno;

	snprintf(err, errlen, "cannot create api socket directory '%s': %s", dir, strerror(e));
	return -e;
}
}

/* True when a process accepts connections on the socket at ua. */
static bool socket_is_live(const struct unix_addr *ua)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return true; /* be conservative: do not unlink */
	live = connect(fd, (const struct sockaddr *)&ua->sa, sizeof(ua->sa)) == 0 ||
	       errno != ECONNREFUSED;
	close(fd);
	return live;
}

static int bind_at(int fd, const struct unix_addr *ua, const char *path, char *err,
		   size_t errlen)
{
	struct stat st;

	if (!bind(fd, (const struct sockaddr *)&ua->sa, sizeof(ua->sa)))
		return 0;
	if (errno != EADDRINUSE)
		return -errno;
	if (lstat(path, &st) || !S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "api socket '%s': exists and is not a socket", path);
		return -EEXIST;
	}
	if (socket_is_live(ua)) {
		snprintf(err, errlen, "api socket '%s': another process serves on it", path);
		return -EADDRINUSE;
	}
	/* stale socket of a process that died */
	if (unlink(path) || bind(fd, (const struct sockaddr *)&ua->sa, sizeof(ua->sa)))
		return -errno;
	return 0;
}

static int bind_socket(const char *path, char *err, size_t errlen)
{
	struct unix_addr ua;
	int fd, ret;

	err[0] = '\0';
	ret = unix_addr_fill(&ua, path);
	if (ret) {
		snprintf(err, errlen, "api socket path '%s': %s", path,
			 ret == -ENAMETOOLONG ? "empty, or its file name is too long"
					      : strerror(-ret));
		return ret;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	/* Linux creates the file with the socket inode's mode: 0600 from the start. */
	ret = fchmod(fd, 0600) ? -errno : bind_at(fd, &ua, path, err, errlen);
	if (ret)
		goto out;
	if (chmod(path, 0600) || listen(fd, 16)) {
		ret = -errno;
		unlink(path);
	}
out:
	unix_addr_release(&ua);
	if (ret) {
		if (fd >= 0)
			close(fd);
		if (!err[0])
			snprintf(err, errlen, "api socket '%s': %s", path, strerror(-ret));
		return ret;
	}
	return fd;
}

/* ---- lifecycle ---- */

int api_server_start(struct api_server **out, struct runtime *rt, const char *path, char *err,
		     size_t errlen)
{
	struct api_server *s;
	struct stat st;
	int fd, ret;

	*out = NULL;
	if (strlen(path) >= sizeof(s->path) || !*path) {
		snprintf(err, errlen, "api socket path '%s' is empty or longer than %zu bytes", path,
			 sizeof(s->path) - 1);
		return -ENAMETOOLONG;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->routes.base = rt->base;
	s->routes.rt = rt;
	snprintf(s->path, sizeof(s->path), "%s", path);
	ret = prepare_parent(path, err, errlen);
	if (ret)
		goto fail;
	fd = bind_socket(path, err, errlen);
	if (fd < 0) {
		ret = fd;
		goto fail;
	}
	if (stat(path, &st)) {
		ret = -errno;
		snprintf(err, errlen, "api socket '%s': %s", path, strerror(errno));
		goto fail_fd;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->http = evhttp_new(s->routes.base);
	if (!s->http) {
		ret = -ENOMEM;
		snprintf(err, errlen, "api socket '%s': cannot create the HTTP server", path);
		goto fail_fd;
	}
	evhttp_set_max_body_size(s->http, API_MAX_BODY);
	evhttp_set_max_headers_size(s->http, API_MAX_HEADERS);
	evhttp_set_timeout(s->http, API_IO_TIMEOUT_S);
	/* every method reaches the dispatcher, which answers 405 with an Allow header */
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
						    EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
						    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
						    EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
	evhttp_set_gencb(s->http, api_routes_dispatch, &s->routes);
	if (!evhttp_accept_socket_with_handle(s->http, fd)) {
		ret = -ENOMEM;
		snprintf(err, errlen, "api socket '%s': cannot serve on it", path);
		goto fail_fd;
	}
	*out = s;
	return 0;
fail_fd:
	close(fd);
	unlink(path);
fail:
	if (s->http)
		evhttp_free(s->http);
	free(s);
	return ret;
}

int api_server_rename(struct api_server *s, const char *new_path, char *err, size_t errlen)
{
	int ret;

	if (strlen(new_path) >= sizeof(s->path) || !*new_path) {
		snprintf(err, errlen, "api socket path '%s' is empty or longer than %zu bytes",
			 new_path, sizeof(s->path) - 1);
		return -ENAMETOOLONG;
	}
	ret = prepare_parent(new_path, err, errlen);
	if (ret)
		return ret;
	if (rename(s->path, new_path)) {
		ret = -errno;
		snprintf(err, errlen, "cannot move api socket '%s' to '%s': %s", s->path, new_path,
			 strerror(errno));
		return ret;
	}
	snprintf(s->path, sizeof(s->path), "%s", new_path);
	return 0;
}

const char *api_server_path(const struct api_server *s)
{
	return s->path;
}

void api_server_stop(struct api_server *s)
{
	struct stat st;

	if (!s)
		return;
	if (s->http)
		evhttp_free(s->http); /* closes the listening socket and all connections */
	api_routes_release(&s->routes);
	if (!lstat(s->path, &st) && st.st_dev == s->dev && st.st_ino == s->ino)
		unlink(s->path);
	free(s);
}
