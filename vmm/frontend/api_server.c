/* SPDX-License-Identifier: Apache-2.0 */
/* api_server.c - the control API on a Unix socket (docs/api.md). */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_json.h"
#include "api_server.h"
#include "migration.h"
#include "runtime.h"
#include "unix_addr.h"
#include "vm.h"

struct api_server {
	struct event_base *base;
	struct evhttp *http;
	struct runtime *rt;
	char path[PATH_MAX];
	dev_t dev; /* identity of the socket file we bound, see api_server_stop() */
	ino_t ino;
	struct event *shutdown_timer;
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

/* ---- responses ---- */

static const char *reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 202: return "Accepted";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	default: return "Internal Server Error";
	}
}

/* Sends `body` (consumed; NULL means out of memory) as the reply. */
static void send_json(struct evhttp_request *req, int code, cJSON *body)
{
	struct evbuffer *out = evhttp_request_get_output_buffer(req);
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;

	cJSON_Delete(body);
	if (!text) {
		code = 500;
		text = strdup("{\"error\":\"out of memory\"}");
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/json");
	if (text) {
		evbuffer_add(out, text, strlen(text));
		evbuffer_add(out, "\n", 1);
	}
	free(text);
	evhttp_send_reply(req, code, reason(code), NULL);
}

static void __attribute__((format(printf, 3, 4)))
send_error(struct evhttp_request *req, int code, const char *fmt, ...)
{
	char msg[512];
	cJSON *body = cJSON_CreateObject();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (body && !cJSON_AddStringToObject(body, "error", msg)) {
		cJSON_Delete(body);
		body = NULL;
	}
	send_json(req, code, body);
}

static cJSON *state_object(const char *state)
{
	cJSON *j = cJSON_CreateObject();

	if (j && !cJSON_AddStringToObject(j, "state", state)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/* ---- state ---- */

static void get_progress(struct api_server *s, struct migration_progress *p)
{
	runtime_progress(s->rt, p);
}

static cJSON *progress_json(const struct migration_progress *p)
{
	return api_progress_to_json(p, api_state_name(p->state));
}

static const char *vm_state(struct api_server *s, const struct migration_progress *p)
{
	if (p->state == MIGRATION_COMPLETED)
		return "migrated";
	if (__atomic_load_n(&s->rt->vm->stopping, __ATOMIC_ACQUIRE))
		return "stopping";
	/* the guest does not run here any more, whatever the user asked before */
	if (p->state == MIGRATION_POSTCOPY_ACTIVE)
		return "postcopy";
	if (p->state == MIGRATION_POSTCOPY_PAUSED)
		return "postcopy-paused";
	if (runtime_migration_active(p))
		return "migrating";
	if (s->rt->user_paused)
		return "paused";
	return "running";
}

/* 409 unless the VM is running (or user-paused); returns true when refused. */
static bool refuse_busy(struct api_server *s, struct evhttp_request *req, const char *what)
{
	char why[512];

	if (!runtime_refusal(s->rt, what, true, why, sizeof(why)))
		return false;
	send_error(req, 409, "%s", why);
	return true;
}

/* ---- handlers ---- */

static void get_vm(struct api_server *s, struct evhttp_request *req)
{
	struct migration_progress p;
	cJSON *j = cJSON_CreateObject(), *mig;

	get_progress(s, &p);
	mig = progress_json(&p);
	if (!j || !mig || !cJSON_AddStringToObject(j, "name", s->rt->vm->cfg.name) ||
	    !cJSON_AddStringToObject(j, "state", vm_state(s, &p)) ||
	    !cJSON_AddNumberToObject(j, "memory", (double)s->rt->vm->cfg.memory) ||
	    !cJSON_AddNumberToObject(j, "vcpus", s->rt->vm->cfg.vcpus) ||
	    !cJSON_AddNumberToObject(j, "pid", getpid()) ||
	    !cJSON_AddItemToObject(j, "migration", mig)) {
		cJSON_Delete(j);
		cJSON_Delete(mig); /* not owned by j when AddItem was not reached */
		send_json(req, 500, NULL);
		return;
	}
	send_json(req, 200, j);
}

static void put_pause(struct api_server *s, struct evhttp_request *req)
{
	if (refuse_busy(s, req, "pause"))
		return;
	if (!s->rt->user_paused) {
		vm_pause(s->rt->vm);
		s->rt->user_paused = true;
	}
	send_json(req, 200, state_object("paused"));
}

static void put_resume(struct api_server *s, struct evhttp_request *req)
{
	if (refuse_busy(s, req, "resume"))
		return;
	if (s->rt->user_paused) {
		vm_resume(s->rt->vm);
		s->rt->user_paused = false;
	}
	send_json(req, 200, state_object("running"));
}

/* Parses the request body as JSON; sends 400 and returns NULL on failure. */
static cJSON *read_body(struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	char *text;
	cJSON *j;

	if (len == 0) {
		send_error(req, 400, "a JSON request body is required");
		return NULL;
	}
	text = malloc(len + 1);
	if (!text) {
		send_json(req, 500, NULL);
		return NULL;
	}
	evbuffer_copyout(in, text, len);
	text[len] = '\0';
	j = cJSON_ParseWithLength(text, len);
	free(text);
	if (!j)
		send_error(req, 400, "the request body is not valid JSON");
	return j;
}

static void put_migrate(struct api_server *s, struct evhttp_request *req)
{
	struct migration_params params;
	struct migration_progress p;
	char err[512];
	cJSON *body;
	int ret;

	if (refuse_busy(s, req, "start a migration"))
		return;
	if (s->rt->user_paused) {
		send_error(req, 409, "cannot start a migration: the VM is paused; resume it first");
		return;
	}
	body = read_body(req);
	if (!body)
		return;
	migration_params_defaults(&params);
	ret = api_params_from_json(body, &params, err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		send_error(req, 400, "%s", err);
		return;
	}
	err[0] = '\0';
	ret = runtime_migrate(s->rt, &params, err, sizeof(err));
	if (ret) {
		int code = ret == -EINVAL || ret == -ENOTSUP || ret == -EOPNOTSUPP ? 400
			   : ret == -EBUSY || ret == -EALREADY			      ? 409
											      : 500;

		send_error(req, code, "cannot start the migration: %s",
			   err[0] ? err : strerror(-ret));
		return;
	}
	get_progress(s, &p);
	send_json(req, 202, progress_json(&p));
}

/* The final state has reached the client: a migrated source may now exit. */
static void on_final_progress_sent(struct evhttp_request *req, void *arg)
{
	struct api_server *s = arg;

	(void)req;
	s->rt->migration_reported = true;
}

static void get_migrate(struct api_server *s, struct evhttp_request *req)
{
	struct migration_progress p;

	get_progress(s, &p);
	if (p.state == MIGRATION_COMPLETED)
		evhttp_request_set_on_complete_cb(req, on_final_progress_sent, s);
	send_json(req, 200, progress_json(&p));
}

static void put_cancel(struct api_server *s, struct evhttp_request *req)
{
	struct migration_progress p;
	char err[512] = "";
	int ret;

	get_progress(s, &p);
	if (!runtime_migration_active(&p) || !s->rt->mig) {
		send_error(req, 409, "no migration is running (state %s)", api_state_name(p.state));
		return;
	}
	/*
	 * In switchover and postcopy the engine refuses (-EBUSY) and says why
	 * (postcopy: the VM already runs on the target, the source's copy is no
	 * longer complete, use resume): 409 with its message.
	 */
	ret = migration_cancel(s->rt->mig, err, sizeof(err));
	if (ret) {
		send_error(req, ret == -ESRCH || ret == -EALREADY || ret == -EBUSY ? 409 : 500,
			   "cannot cancel the migration: %s", err[0] ? err : strerror(-ret));
		return;
	}
	get_progress(s, &p);
	send_json(req, 202, progress_json(&p));
}

static void put_migrate_resume(struct api_server *s, struct evhttp_request *req)
{
	struct migration_progress p;
	char to[sizeof(((struct migration_params *)0)->to)];
	char err[512];
	cJSON *body;
	int ret;

	body = read_body(req);
	if (!body)
		return;
	ret = api_resume_from_json(body, to, sizeof(to), err, sizeof(err));
	cJSON_Delete(body);
	if (ret) {
		send_error(req, 400, "%s", err);
		return;
	}
	/* the engine knows whether a postcopy migration is paused: it answers */
	err[0] = '\0';
	if (!s->rt->mig) {
		send_error(req, 409, "cannot resume the migration: no migration to resume");
		return;
	}
	ret = migration_resume(s->rt->mig, to, err, sizeof(err));
	if (ret) {
		int code = ret == -EINVAL || ret == -ENOENT || ret == -ESRCH || ret == -EBUSY ||
				   ret == -EALREADY
			   ? 409
			   : 500;

		send_error(req, code, "cannot resume the migration: %s",
			   err[0] ? err : strerror(-ret));
		return;
	}
	get_progress(s, &p);
	send_json(req, 202, progress_json(&p));
}

static void stop_vm(struct api_server *s)
{
	vm_request_stop(s->rt->vm, VM_END_GUEST_EXIT, 0, "shut down through the API");
}

static void on_shutdown_replied(struct evhttp_request *req, void *arg)
{
	(void)req;
	stop_vm(arg);
}

static void on_shutdown_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	stop_vm(arg);
}

static void put_shutdown(struct api_server *s, struct evhttp_request *req)
{
	static const struct timeval grace = {0, 200 * 1000};

	if (refuse_busy(s, req, "shut down"))
		return;
	/*
	 * Stop once the reply is on the wire, so that the client sees it before
	 * the event loop ends; the timer covers a client that went away.
	 */
	evhttp_request_set_on_complete_cb(req, on_shutdown_replied, s);
	if (!s->shutdown_timer)
		s->shutdown_timer = evtimer_new(s->base, on_shutdown_timer, s);
	if (!s->shutdown_timer || evtimer_add(s->shutdown_timer, &grace))
		stop_vm(s);
	send_json(req, 202, state_object("stopping"));
}

/* ---- routing ---- */

typedef void (*api_handler)(struct api_server *, struct evhttp_request *);

static const struct route {
	const char *path;
	enum evhttp_cmd_type method;
	api_handler fn;
} routes[] = {
	{"/api/v1/vm", EVHTTP_REQ_GET, get_vm},
	{"/api/v1/vm/pause", EVHTTP_REQ_PUT, put_pause},
	{"/api/v1/vm/resume", EVHTTP_REQ_PUT, put_resume},
	{"/api/v1/vm/migrate", EVHTTP_REQ_PUT, put_migrate},
	{"/api/v1/vm/migrate", EVHTTP_REQ_GET, get_migrate},
	{"/api/v1/vm/migrate/cancel", EVHTTP_REQ_PUT, put_cancel},
	{"/api/v1/vm/migrate/resume", EVHTTP_REQ_PUT, put_migrate_resume},
	{"/api/v1/vm/shutdown", EVHTTP_REQ_PUT, put_shutdown},
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static bool peer_allowed(struct evhttp_request *req)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || len != sizeof(cred))
		return false;
	return cred.uid == geteuid() || cred.uid == 0;
}

static const char *method_name(enum evhttp_cmd_type m)
{
	return m == EVHTTP_REQ_GET ? "GET" : m == EVHTTP_REQ_PUT ? "PUT" : "?";
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct api_server *s = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	char allow[32] = "";
	bool known = false;

	if (!peer_allowed(req)) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		send_error(req, 403, "permission denied: only uid %u and root may use this socket",
			   (unsigned)geteuid());
		return;
	}
	if (!path || !*path)
		path = "/";
	for (size_t i = 0; i < NROUTES; i++) {
		if (strcmp(routes[i].path, path))
			continue;
		if (routes[i].method == method) {
			routes[i].fn(s, req);
			return;
		}
		known = true;
		snprintf(allow + strlen(allow), sizeof(allow) - strlen(allow), "%s%s",
			 allow[0] ? ", " : "", method_name(routes[i].method));
	}
	if (!known) {
		send_error(req, 404, "unknown path '%.128s'", path);
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", allow);
	send_error(req, 405, "method not allowed on %s; use %s", path, allow);
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
	s->base = rt->base;
	s->rt = rt;
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
	s->http = evhttp_new(s->base);
	if (!s->http) {
		ret = -ENOMEM;
		snprintf(err, errlen, "api socket '%s': cannot create the HTTP server", path);
		goto fail_fd;
	}
	evhttp_set_max_body_size(s->http, API_MAX_BODY);
	evhttp_set_max_headers_size(s->http, API_MAX_HEADERS);
	evhttp_set_timeout(s->http, API_IO_TIMEOUT_S);
	/* every method reaches on_request, which answers 405 with an Allow header */
	evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
						    EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
						    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
						    EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
	evhttp_set_gencb(s->http, on_request, s);
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
	if (s->shutdown_timer)
		event_free(s->shutdown_timer);
	if (!lstat(s->path, &st) && st.st_dev == s->dev && st.st_ino == s->ino)
		unlink(s->path);
	free(s);
}
