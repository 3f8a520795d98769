/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_events.h - GET /api/v1/vm/events (docs/api.md): a chunked stream of
 * JSON lines, one per event, for watchers that would otherwise poll: the
 * VM's and the migration's state changes, the migration's progress while
 * it runs (every API_EVENTS_PROGRESS_MS at most), and its end; and each
 * snapshot's start, progress (as often) and outcome ("snapshot" lines,
 * the snapshot object of GET /api/v1/vm/snapshot).
 *
 * Everything runs on the event-loop thread of `vmm run` (api_routes.c
 * hands over the request, run_loop.c asks whether a migrated-away source
 * may exit). A timer samples runtime_progress() and the last snapshot
 * (rt->snap) every API_EVENTS_TICK_MS while someone watches: the engine's
 * threads are never called back.
 *
 * Bounds: at most API_EVENTS_MAX_WATCHERS streams (api_events_watch()
 * refuses more, the route answers 503). A watcher that reads slowly never
 * blocks the loop: lines queue in its connection's output buffer, progress
 * lines are skipped while more than API_EVENTS_SLOW_BYTES wait there, and
 * state lines too past API_EVENTS_MAX_QUEUED_BYTES (a snapshot's progress
 * and start lines alike); the final line (an outgoing migration's
 * "completed", or a target's "failed" or "cancelled" when its incoming
 * migration ended without a VM: the stream ends after it) and a
 * snapshot's final one are always queued. A stream
 * has no idle timeout, but one whose queued lines stay unwritten for
 * API_EVENTS_WRITE_TIMEOUT_S is closed.
 */
#ifndef VMM_API_EVENTS_H
#define VMM_API_EVENTS_H

#include <stdbool.h>

struct api_events;
struct evhttp_request;
struct runtime;

#define API_EVENTS_MAX_WATCHERS	    8
#define API_EVENTS_TICK_MS	    50		 /* how often the state is sampled */
#define API_EVENTS_PROGRESS_MS	    200		 /* progress lines at most this often */
#define API_EVENTS_SLOW_BYTES	    (16 * 1024)	 /* queued: progress lines are dropped */
#define API_EVENTS_MAX_QUEUED_BYTES (256 * 1024) /* queued: state lines are dropped too */
#define API_EVENTS_WRITE_TIMEOUT_S  30		 /* lines unread this long: the stream is dropped */
#define API_EVENTS_MAX_INPUT_BYTES  4096 /* read from a watcher at most; it has nothing to say */

/* NULL when out of memory. rt->base is the loop the timer runs on. */
struct api_events *api_events_new(struct runtime *rt);

/*
 * Takes over `req` (GET /api/v1/vm/events): starts the chunked reply and
 * sends the current state as the first line. Returns 0, or -EBUSY when
 * API_EVENTS_MAX_WATCHERS streams are open (req untouched: the caller
 * answers 503), -ENOMEM.
 */
int api_events_watch(struct api_events *ev, struct evhttp_request *req);

/*
 * A source whose migration completed, or a target whose incoming one
 * failed, asks before exiting: true once no stream is open and at least
 * one watcher got the final line (written to its socket, and the watcher
 * closed its end). *open: how many are open.
 */
bool api_events_settled(const struct api_events *ev, unsigned *open);

/* Frees it all; after the HTTP server (evhttp_free) has closed the connections. */
void api_events_free(struct api_events *ev);

#endif /* VMM_API_EVENTS_H */
