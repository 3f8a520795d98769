/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_server.c - the control API's socket (docs/api.md): a private
 * directory, a 0600 socket that replaces only a stale one, the HTTP server
 * on it, moving it and removing it only while it is still ours. What the
 * requests do is api_routes.c's.
 */
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
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
#include "clock.h"
#include "log.h"
#include "runtime.h"
#include "unix_addr.h"

struct api_server {
	struct api_routes routes; /* what the requests reach */
	struct evhttp *http;
	char path[PATH_MAX];
	dev_t dev; /* identity of the socket file we bound, see api_server_stop() */
	ino_t ino;
	/* accept() back-off, see on_accept_error() */
	struct evconnlistener *lev;
	struct event *backoff_ev;
	unsigned backoff_ms;	 /* the last interval, 0 before the first failure */
	uint64_t last_error_ns;	 /* now_ns() of the last failure */
	uint64_t last_log_ns;	 /* now_ns() of the last line printed, 0: none yet */
	unsigned unlogged;	 /* failures since that line */
	uint64_t accepted;	 /* connections accepted (on_accepted) */
	uint64_t accepted_seen;	 /* ... as api_server_busy() last saw them */
	struct api_server *next; /* in `servers` */
};

/*
 * The live servers. libevent hands the listener's error callback the
 * evhttp (it owns the callback argument), and evhttp has no user pointer:
 * this list leads from the evhttp back to its server. Process-wide on
 * purpose, it only indexes servers; the lock keeps a second event loop
 * that starts or stops a server safe.
 */
static pthread_mutex_t servers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct api_server *servers;

static void servers_add(struct api_server *s)
{
	pthread_mutex_lock(&servers_lock);
	s->next = servers;
	servers = s;
	pthread_mutex_unlock(&servers_lock);
}

static void servers_remove(struct api_server *s)
{
	pthread_mutex_lock(&servers_lock);
	for (struct api_server **p = &servers; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	pthread_mutex_unlock(&servers_lock);
}

static struct api_server *server_of(const struct evhttp *http)
{
	struct api_server *s;

	pthread_mutex_lock(&servers_lock);
	for (s = servers; s && s->http != http; s = s->next)
		;
	pthread_mutex_unlock(&servers_lock);
	return s;
}

/* ---- accept() failures: back off, say so once per interval ---- */

static void on_backoff_end(evutil_socket_t fd, short what, void *arg)
{
	struct api_server *s = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(s->lev);
}

/*
 * libevent calls this on the loop thread when accept() fails with an error
 * it does not retry itself (EMFILE, ENFILE, ENOBUFS, ENOMEM...). The
 * listening socket stays readable while a connection waits, so left
 * enabled the loop would spin on accept() (and, without this callback,
 * libevent would log a warning each turn). Instead the listener sleeps
 * API_ACCEPT_BACKOFF_MIN_MS, doubling up to API_ACCEPT_BACKOFF_MAX_MS while
 * failures follow each other, and one line per second at most says why.
 * Waiting connections stay in the backlog and are served once fds are back.
 */
static void on_accept_error(struct evconnlistener *lev, void *http)
{
	int e = EVUTIL_SOCKET_ERROR();
	struct api_server *s = server_of(http);
	uint64_t now = now_ns();
	struct timeval tv;

	if (!s)
		return;
	evconnlistener_disable(lev);
	if (s->backoff_ms && now - s->last_error_ns < 2ull * API_ACCEPT_BACKOFF_MAX_MS * 1000000u)
		s->backoff_ms = s->backoff_ms * 2 > API_ACCEPT_BACKOFF_MAX_MS
				    ? API_ACCEPT_BACKOFF_MAX_MS
				    : s->backoff_ms * 2;
	else
		s->backoff_ms = API_ACCEPT_BACKOFF_MIN_MS;
	s->last_error_ns = now;
	if (!s->last_log_ns || now - s->last_log_ns >= 1000000000u) {
		if (s->unlogged)
			log_msg(&s->routes.rt->log, LOG_LEVEL_WARN,
				"api socket '%s': accept: %s; not accepting connections for "
				"%u ms (%u more failures since the last message)",
				s->path, strerror(e), s->backoff_ms, s->unlogged);
		else
			log_msg(&s->routes.rt->log, LOG_LEVEL_WARN,
				"api socket '%s': accept: %s; not accepting connections for "
				"%u ms",
				s->path, strerror(e), s->backoff_ms);
		s->last_log_ns = now;
		s->unlogged = 0;
	} else {
		s->unlogged++;
	}
	tv.tv_sec = s->backoff_ms / 1000;
	tv.tv_usec = (s->backoff_ms % 1000) * 1000;
	evtimer_add(s->backoff_ev, &tv);
}

/*
 * Creates the parent directory of `path` (and its missing ancestors) 0700,
 * then checks the directory itself without following a symlink: someone
 * who can write it, or who planted it (a /tmp/vmm-<uid> symlink or
 * directory made by another user), could swap our socket for theirs. It
 * must be a real directory, owned by our euid (root's own when we run as
 * root), and not writable by group or others. Its ancestors are the
 * administrator's ($XDG_RUNTIME_DIR, /run, /tmp) and are not checked.
 */
static int prepare_parent(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	char *slash;
	struct stat st, fst;
	int fd, e;

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
	if (lstat(dir, &st)) {
		e = errno;
		snprintf(err, errlen, "api socket directory '%s': %s", dir, strerror(e));
		return -e;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(err, errlen,
			 "api socket directory '%s' is a symbolic link; refusing to serve there",
			 dir);
		return -ELOOP;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "api socket directory '%s' is not a directory", dir);
		return -ENOTDIR;
	}
	/* what we check is what we opened: a swap after lstat() is caught too */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &fst)) {
		e = errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "api socket directory '%s': %s", dir,
			 e == ELOOP ? "is a symbolic link" : strerror(e));
		return -e;
	}
	close(fd);
	if (fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
		snprintf(err, errlen, "api socket directory '%s' changed while it was checked",
			 dir);
		return -EAGAIN;
	}
	if (fst.st_uid != geteuid()) {
		snprintf(err, errlen,
			 "api socket directory '%s' is owned by uid %u, not by uid %u; "
			 "refusing to serve there",
			 dir, (unsigned)fst.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (fst.st_mode & 022) {
		snprintf(err, errlen,
			 "api socket directory '%s' is writable by group or others (mode %04o); "
			 "refusing to serve there",
			 dir, (unsigned)(fst.st_mode & 07777));
		return -EPERM;
	}
	return 0;
mkdir_failed:
	e = errno;
	snprintf(err, errlen, "cannot create api socket directory '%s': %s", dir, strerror(e));
	return -e;
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

static int bind_at(int fd, const struct unix_addr *ua, const char *path, char *err, size_t errlen)
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

/*
 * evhttp's hook at each accept: the connection's bufferevent, made as evhttp
 * makes it by default, and counted (api_server_busy()).
 */
static struct bufferevent *on_accepted(struct event_base *base, void *arg)
{
	struct api_server *s = arg;

	s->accepted++;
	return bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
}

int api_server_start(struct api_server **out, struct runtime *rt, const char *path, char *err,
		     size_t errlen)
{
	struct evhttp_bound_socket *bound;
	struct api_server *s;
	struct stat st;
	int fd, ret;

	*out = NULL;
	if (strlen(path) >= sizeof(s->path) || !*path) {
		snprintf(err, errlen, "api socket path '%s' is empty or longer than %zu bytes",
			 path, sizeof(s->path) - 1);
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
	evhttp_set_max_body_size(s->http, API_MAX_BODY_HARD); /* api_routes.c checks API_MAX_BODY */
	evhttp_set_max_headers_size(s->http, API_MAX_HEADERS);
	evhttp_set_timeout(s->http, API_IO_TIMEOUT_S);
	/* every method reaches the dispatcher, which answers 405 with an Allow header */
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
						EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
						EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
						EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
	evhttp_set_gencb(s->http, api_routes_dispatch, &s->routes);
	evhttp_set_bevcb(s->http, on_accepted, s);
	s->backoff_ev = evtimer_new(s->routes.base, on_backoff_end, s);
	bound = s->backoff_ev ? evhttp_accept_socket_with_handle(s->http, fd) : NULL;
	if (!bound) {
		ret = -ENOMEM;
		snprintf(err, errlen, "api socket '%s': cannot serve on it", path);
		goto fail_fd;
	}
	s->lev = evhttp_bound_socket_get_listener(bound);
	servers_add(s);
	evconnlistener_set_error_cb(s->lev, on_accept_error);
	*out = s;
	return 0;
fail_fd:
	close(fd);
	unlink(path);
fail:
	if (s->backoff_ev)
		event_free(s->backoff_ev);
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

bool api_server_events_settled(const struct api_server *s, unsigned *open)
{
	if (!s) {
		*open = 0;
		return false;
	}
	return api_routes_events_settled(&s->routes, open);
}

bool api_server_busy(struct api_server *s)
{
	struct pollfd p = {.fd = s ? evconnlistener_get_fd(s->lev) : -1, .events = POLLIN};
	bool fresh;

	if (!s)
		return false;
	fresh = s->accepted != s->accepted_seen;
	s->accepted_seen = s->accepted;
	/* A listening socket is readable while a connection waits to be accepted. */
	return fresh || s->routes.replying || (poll(&p, 1, 0) == 1 && (p.revents & POLLIN));
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
	servers_remove(s);
	event_free(s->backoff_ev); /* before the listener it would re-enable */
	if (s->http)
		evhttp_free(s->http); /* closes the listening socket and all connections */
	api_routes_release(&s->routes);
	if (!lstat(s->path, &st) && st.st_dev == s->dev && st.st_ino == s->ino)
		unlink(s->path);
	free(s);
}
