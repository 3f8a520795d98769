/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_routes.h - the control API's routes and request handlers
 * (docs/api.md): the peer check, which method and path run which handler,
 * the handlers themselves and their JSON replies.
 *
 * Called by api_server.c only, which owns the socket and the HTTP server
 * and hands it every request through api_routes_dispatch(). Everything
 * runs on the thread that runs the runtime's event base (the main thread
 * of `vmm run`), where evhttp calls back; the handlers act on the runtime
 * (runtime.h), which only that thread touches, so no lock is needed.
 */
#ifndef VMM_API_ROUTES_H
#define VMM_API_ROUTES_H

struct evhttp_request;
struct event;
struct event_base;
struct runtime;

struct api_routes {
	struct runtime *rt;
	struct event_base *base;      /* rt->base */
	struct event *shutdown_timer; /* PUT /vm/shutdown's grace timer, created on first use */
};

/*
 * The evhttp general callback (arg: the struct api_routes): refuses peers
 * whose uid is neither ours nor root (403, connection closed), then runs
 * the handler of the request's path and method, or answers 404 / 405 with
 * an Allow header.
 */
void api_routes_dispatch(struct evhttp_request *req, void *arg);

/* Frees what the handlers created; after the HTTP server is freed. */
void api_routes_release(struct api_routes *r);

#endif /* VMM_API_ROUTES_H */
