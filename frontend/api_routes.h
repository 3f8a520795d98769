/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_routes.h - the control API's routes and request handlers
 * (docs/api.md): the peer check, which method and path run which handler,
 * the handlers themselves and their JSON replies.
 *
 * The socket and the HTTP server are api_server.h's, which hands every
 * request to api_routes_dispatch(). Everything runs on the thread that runs
 * the runtime's event base (the main thread of `vmm run`), where evhttp
 * calls back; the handlers act on the runtime (runtime.h), which only that
 * thread touches, so no lock is needed.
 */
#ifndef VMM_API_ROUTES_H
#define VMM_API_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "migration.h"

struct api_events;
struct evhttp_request;
struct event;
struct event_base;
struct runtime;

struct api_routes {
	struct runtime *rt;
	struct event_base *base;	 /* rt->base */
	struct event *shutdown_timer;	 /* PUT /vm/shutdown's grace timer, created on first use */
	struct api_events *events;	 /* GET /vm/events' streams, created on first use */
	struct event *snap_ev;		 /* a snapshot's end, while its PUT waits */
	struct evhttp_request *snap_req; /* that PUT, answered at the end */
	struct event *snap_stop_timer;	 /* --stop's backstop, created on first use */
	/*
	 * Requests answered but whose reply is not written yet (event
	 * streams aside: api_events counts them): a process about to exit
	 * waits for them. Each request's completion callback counts it off
	 * (api_routes_replied()), or its connection's close when the client
	 * left before the reply was written (evhttp then frees the request
	 * uncompleted); whoever waits also bounds the wait.
	 */
	unsigned replying;
};

/* True once an event stream delivered a completed migration's final line and all closed. */
bool api_routes_events_settled(const struct api_routes *r, unsigned *open);

/*
 * The evhttp general callback (arg: the struct api_routes): refuses peers
 * whose uid is neither ours nor root (403, connection closed), then runs
 * the handler of the request's path and method, or answers 404 / 405 with
 * an Allow header.
 */
void api_routes_dispatch(struct evhttp_request *req, void *arg);

/*
 * The 403's message when the server runs as uid `owner`: who may use the
 * socket, naming root once ("only root (uid 0) may use this socket" when
 * owner is 0, "only uid 1000 and root may use this socket" otherwise).
 */
void api_forbidden_text(char *buf, size_t len, unsigned owner);

/* The migration handlers (api_migrate_routes.c), routed by api_routes_dispatch(). */
void api_put_migrate(struct api_routes *s, struct evhttp_request *req);
void api_get_migrate(struct api_routes *s, struct evhttp_request *req);
void api_put_cancel(struct api_routes *s, struct evhttp_request *req);
void api_put_migrate_resume(struct api_routes *s, struct evhttp_request *req);
void api_put_migrate_recover(struct api_routes *s, struct evhttp_request *req);

/* The snapshot handlers (api_snapshot_routes.c); the snapshot object for events too. */
struct snapshot_progress;
void api_put_snapshot(struct api_routes *s, struct evhttp_request *req);
/* PUT /api/v1/vm/restore: a --restore-wait process's restore (runtime_restore_fn). */
void api_put_restore(struct api_routes *s, struct evhttp_request *req);
void api_get_snapshot(struct api_routes *s, struct evhttp_request *req);
cJSON *api_snapshot_json(const struct snapshot_progress *p);

/* Frees what the handlers created; after the HTTP server is freed. */
void api_routes_release(struct api_routes *r);

#endif /* VMM_API_ROUTES_H */
