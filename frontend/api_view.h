/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_view.h - the runtime as the control API shows it, for every handler
 * (api_routes.c, api_migrate_routes.c, api_events.c). Loop thread only, like
 * the handlers (api_routes.h); it calls no handler, so the handlers call down
 * to it and never back into one another.
 */
#ifndef VMM_API_VIEW_H
#define VMM_API_VIEW_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct api_routes;
struct evhttp_request;
struct incoming_status;
struct migration_progress;
struct runtime;

/*
 * A target with no VM here: "waiting" (no source), "receiving" (a source's
 * VM_DESC accepted, up to its decision), "failed" or "cancelled" (the
 * incoming migration ended without a VM: until the process exits), with
 * *st filled; NULL otherwise.
 */
const char *api_incoming_state(struct runtime *rt, struct incoming_status *st);
/* Where a waiting target listens and, receiving, from whom and how far. */
bool api_add_incoming(cJSON *j, const struct incoming_status *st);

/* The progress of the runtime's migration, source or target. */
void api_routes_progress(struct api_routes *s, struct migration_progress *p);

/* Its JSON, with a waiting or receiving target's members; NULL out of memory. */
cJSON *api_progress_json_rt(struct runtime *rt, const struct migration_progress *p);

/* The VM's state as GET /api/v1/vm names it ("running", "migrating", "migrated", ...). */
const char *api_vm_state(struct runtime *rt, const struct migration_progress *p);

/*
 * A reply was written (struct api_routes, `replying`): every completion
 * callback of a counted request calls it first, with its request; the
 * connection's close with none when its client left before the reply
 * was written (api_routes_dispatch() arms that close, this disarms it).
 */
void api_routes_replied(struct api_routes *s, struct evhttp_request *req);

/* 409 unless the runtime allows `what` now; true: refused and answered. */
bool api_refuse_busy(struct api_routes *s, struct evhttp_request *req, const char *what);

#endif /* VMM_API_VIEW_H */
