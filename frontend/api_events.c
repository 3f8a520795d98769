/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_events.c - GET /api/v1/vm/events: chunked JSON lines for watchers
 * (api_events.h, docs/api.md "GET /api/v1/vm/events").
 *
 * The engine has no callbacks into the front end, and must not have (its
 * threads would then run API code): a timer samples the progress instead,
 * often enough (API_EVENTS_TICK_MS) that no state a migration stays in for
 * longer goes unseen, and only while someone watches.
 *
 * What each line says is api_event_lines.c's; this file decides who gets
 * which line, and when.
 *
 * Snapshots are sampled on the same tick (rt->snap, rt->snapshots): each
 * watcher remembers the last snapshot it was told of and in which state, so
 * that a snapshot's start, its progress while active and its final state
 * (completed or failed) each reach it; the final state exactly once, even
 * for a snapshot that started and ended between two ticks. rt->snap is the
 * last snapshot only: one that a next one replaced before a tick saw it end
 * goes without its final line. A snapshot's end never ends a stream: the VM
 * runs on here.
 *
 * A watcher's request stays ours from evhttp_send_reply_start() until
 * evhttp_send_reply_end(). libevent frees it itself only with its
 * connection while it is still attached (evhttp_free, or the connection
 * failing with the request queued); a client that goes away detaches it
 * (evhttp_request_get_connection() == NULL) and then we free it, with
 * evhttp_send_reply_end(). Both end in the connection's close callback.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api_event_lines.h"
#include "api_events.h"
#include "api_view.h"
#include "clock.h"
#include "migration.h"
#include "runtime.h"
#include "snapshot.h"

struct watcher {
	struct api_events *ev;
	struct evhttp_request *req; /* NULL once libevent or we freed it */
	struct evhttp_connection *conn;
	bool used;		   /* the slot holds a stream (open or finishing) */
	bool final_queued;	   /* the final line and the end of the reply are queued */
	enum migration_state mig;  /* the last state sent */
	char vm_state[24];	   /* ... and VM state */
	uint64_t last_progress_ns; /* when the last progress line was sent */
	unsigned dropped;	   /* progress lines skipped since the last one sent */
	unsigned throttle_of;	   /* the migration (rt->migrations) of... */
	unsigned throttle_seen;	   /* ...the last throttle change reported */
	unsigned snap_of;	   /* the snapshot (rt->snapshots) last reported... */
	enum snapshot_state snap;  /* ...and its state then */
	uint64_t snap_line_ns;	   /* when its last line was sent */
};

struct api_events {
	struct runtime *rt;
	struct event *tick; /* pending while a stream is open */
	struct watcher w[API_EVENTS_MAX_WATCHERS];
	unsigned open;	      /* slots in use */
	bool final_delivered; /* some watcher's final line reached its socket... */
	unsigned final_of;    /* ...for this outgoing migration (rt->migrations) */
};

struct api_events *api_events_new(struct runtime *rt)
{
	struct api_events *ev = calloc(1, sizeof(*ev));

	if (ev)
		ev->rt = rt;
	return ev;
}

/* Bytes queued to the watcher's socket, not yet written. */
static size_t queued(const struct watcher *w)
{
	struct bufferevent *bev = w->conn ? evhttp_connection_get_bufferevent(w->conn) : NULL;

	return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

/* Queues j (taken, may be NULL) as one line of the watcher's stream. */
static int send_json(struct watcher *w, cJSON *j)
{
	char *text = j ? cJSON_PrintUnformatted(j) : NULL;
	struct evbuffer *buf = evbuffer_new();
	int ret = -ENOMEM;

	if (text && buf && !evbuffer_add(buf, text, strlen(text)) && !evbuffer_add(buf, "\n", 1)) {
		evhttp_send_reply_chunk(w->req, buf);
		w->dropped = 0;
		ret = 0;
	}
	if (buf)
		evbuffer_free(buf);
	free(text);
	cJSON_Delete(j);
	return ret;
}

/* A state, progress or final line (api_event_progress_line()). */
static int send_line(struct watcher *w, const char *type, const struct migration_progress *p,
		     const char *vm_state)
{
	return send_json(w, api_event_progress_line(w->ev->rt, type, p, vm_state, w->dropped));
}

static int send_snapshot_line(struct watcher *w, const struct snapshot_progress *p,
			      const char *vm_state)
{
	return send_json(w, api_event_snapshot_line(p, vm_state, w->dropped));
}

static int send_throttle_line(struct watcher *w, const struct migration_throttle_change *c,
			      unsigned change, unsigned missed, const char *vm_state)
{
	return send_json(w, api_event_throttle_line(c, change, missed, vm_state, w->dropped));
}

/*
 * A line per change of the throttle since the watcher's last, oldest first,
 * from the progress's log: every change reaches a watcher that reads, even
 * several between two ticks. One that fell behind by more than the log
 * gets the oldest kept, saying how many it missed. Under the state lines'
 * slow-reader rule. Before update(): a change precedes the final line.
 */
static void update_throttle(struct watcher *w, const struct migration_progress *p, const char *vm)
{
	unsigned of = w->ev->rt->migrations;

	if (w->final_queued || !w->req)
		return;
	if (w->throttle_of != of) {
		w->throttle_of = of;
		w->throttle_seen = 0;
	}
	while (w->throttle_seen < p->throttle_changes) {
		unsigned c = w->throttle_seen + 1, missed = 0;

		if (p->throttle_changes - w->throttle_seen > MIGRATION_THROTTLE_LOG) {
			c = p->throttle_changes - MIGRATION_THROTTLE_LOG + 1;
			missed = c - w->throttle_seen - 1;
		}
		if (queued(w) > API_EVENTS_MAX_QUEUED_BYTES ||
		    send_throttle_line(w, &p->throttle_log[(c - 1) % MIGRATION_THROTTLE_LOG], c,
				       missed, vm))
			return;
		w->throttle_seen = c;
	}
}

static void on_final_written(struct evhttp_request *req, void *arg)
{
	struct watcher *w = arg;

	(void)req;
	w->req = NULL; /* libevent frees it when this returns */
	w->ev->final_delivered = true;
	w->ev->final_of = w->ev->rt->migrations;
}

static void release_slot(struct watcher *w)
{
	struct api_events *ev = w->ev;

	memset(w, 0, sizeof(*w));
	ev->open--;
	if (!ev->open && ev->tick)
		evtimer_del(ev->tick);
}

static void on_closed(struct evhttp_connection *conn, void *arg)
{
	struct watcher *w = arg;

	(void)conn;
	/* detached: the client went away mid-stream, the request is still ours */
	if (w->req && !evhttp_request_get_connection(w->req))
		evhttp_send_reply_end(w->req);
	release_slot(w);
}

/* The final line, then the end of the reply; after it the watcher only waits to close. */
static void send_final(struct watcher *w, const struct migration_progress *p, const char *vm)
{
	send_line(w, api_event_change_type(p->state), p, vm);
	w->final_queued = true;
	evhttp_request_set_on_complete_cb(w->req, on_final_written, w);
	evhttp_send_reply_end(w->req);
}

/*
 * Two ends end a stream, each followed by the process's exit: an outgoing
 * migration's completion, and a target's incoming migration failing (or
 * cancelled) with no VM here. A target's incoming migration completing is
 * a state change (its guest runs on here), as is an outgoing one failing.
 */
static bool is_final(const struct api_events *ev, const struct migration_progress *p)
{
	if (ev->rt->mig)
		return p->state == MIGRATION_COMPLETED;
	return !ev->rt->vm && (p->state == MIGRATION_FAILED || p->state == MIGRATION_CANCELLED);
}

static void update(struct watcher *w, const struct migration_progress *p, const char *vm,
		   uint64_t now)
{
	size_t q;

	/* the connection may be gone (w->conn then dangles): nothing to ask of it */
	if (w->final_queued || !w->req)
		return;
	q = queued(w);
	if (is_final(w->ev, p)) {
		send_final(w, p, vm);
		return;
	}
	if (p->state != w->mig || strcmp(vm, w->vm_state)) {
		if (q > API_EVENTS_MAX_QUEUED_BYTES)
			return; /* not read for long: it gets the state once it reads again */
		/* (a completed state here is a target's incoming one: not final) */
		if (!send_line(w,
			       p->state == MIGRATION_COMPLETED ? "state"
							       : api_event_change_type(p->state),
			       p, vm)) {
			w->mig = p->state;
			snprintf(w->vm_state, sizeof(w->vm_state), "%s", vm);
			w->last_progress_ns = now;
		}
		return;
	}
	if (!runtime_migration_active(p) ||
	    now - w->last_progress_ns < API_EVENTS_PROGRESS_MS * 1000000ull)
		return;
	if (q > API_EVENTS_SLOW_BYTES) {
		w->dropped++;
		return;
	}
	if (!send_line(w, "progress", p, vm))
		w->last_progress_ns = now;
}

/* What a tick knows of the snapshots: rt->snap, the rt->snapshots-th; `of` 0 before the first. */
struct snap_now {
	unsigned of;
	struct snapshot_progress p;
};

static void snap_sample(struct runtime *rt, struct snap_now *s)
{
	s->of = rt->snap ? rt->snapshots : 0;
	if (rt->snap)
		snapshot_get_progress(rt->snap, &s->p);
	else
		s->p.state = SNAPSHOT_NONE;
}

/*
 * A watcher's snapshot lines: the snapshot's state when the watcher first
 * sees it (active, or already final: one that started and ended between
 * two ticks), a progress line while it is active, and its final state,
 * once. Start and progress lines follow the slow-reader rules of state and
 * progress lines; a final one is always queued, as "completed" is (one
 * line per snapshot, and snapshots are taken one at a time).
 */
static void update_snapshot(struct watcher *w, const struct snap_now *s, const char *vm,
			    uint64_t now)
{
	bool active = s->p.state == SNAPSHOT_ACTIVE;

	if (w->final_queued || !w->req || !s->of)
		return;
	if (s->of == w->snap_of && s->p.state == w->snap) {
		if (!active || now - w->snap_line_ns < API_EVENTS_PROGRESS_MS * 1000000ull)
			return;
		if (queued(w) > API_EVENTS_SLOW_BYTES) {
			w->dropped++;
			return;
		}
	} else if (active && queued(w) > API_EVENTS_MAX_QUEUED_BYTES) {
		return; /* not read for long: it hears of the snapshot once it reads again */
	}
	if (!send_snapshot_line(w, &s->p, vm)) {
		w->snap_of = s->of;
		w->snap = s->p.state;
		w->snap_line_ns = now;
	}
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct api_events *ev = arg;
	struct migration_progress p;
	struct snap_now snap;
	const char *vm;
	uint64_t now = now_ns();

	(void)fd;
	(void)what;
	runtime_progress(ev->rt, &p);
	vm = api_vm_state(ev->rt, &p);
	snap_sample(ev->rt, &snap);
	for (unsigned i = 0; i < API_EVENTS_MAX_WATCHERS; i++) {
		if (!ev->w[i].used)
			continue;
		update_throttle(&ev->w[i], &p, vm);
		update(&ev->w[i], &p, vm, now);
		update_snapshot(&ev->w[i], &snap, vm, now);
	}
}

int api_events_watch(struct api_events *ev, struct evhttp_request *req)
{
	static const struct timeval tick = {0, API_EVENTS_TICK_MS * 1000};
	static const struct timeval wto = {API_EVENTS_WRITE_TIMEOUT_S, 0};
	struct bufferevent *bev;
	struct migration_progress p;
	struct snap_now snap;
	struct watcher *w = NULL;
	const char *vm;

	/*
	 * A stream's reply says "Connection: close", so a connection carries one
	 * stream; should a slot still name this connection (a request that came
	 * on it before the close), it is that stream's: end its bookkeeping.
	 */
	for (unsigned i = 0; i < API_EVENTS_MAX_WATCHERS; i++)
		if (ev->w[i].used && ev->w[i].conn == evhttp_request_get_connection(req) &&
		    !ev->w[i].req)
			release_slot(&ev->w[i]);
	for (unsigned i = 0; i < API_EVENTS_MAX_WATCHERS && !w; i++)
		if (!ev->w[i].used)
			w = &ev->w[i];
	if (!w)
		return -EBUSY;
	if (!ev->tick) {
		ev->tick = event_new(ev->rt->base, -1, EV_PERSIST, on_tick, ev);
		if (!ev->tick)
			return -ENOMEM;
	}
	if (!ev->open && evtimer_add(ev->tick, &tick))
		return -ENOMEM;
	memset(w, 0, sizeof(*w));
	w->ev = ev;
	w->req = req;
	w->conn = evhttp_request_get_connection(req);
	w->used = true;
	ev->open++;
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/x-ndjson");
	/* one stream per connection: libevent closes it after the reply's end */
	evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	evhttp_send_reply_start(req, 200, "OK");
	evhttp_connection_set_closecb(w->conn, on_closed, w);
	/*
	 * A stream is idle while nothing happens: no read timeout (the
	 * server's idle one would end it). A watcher that leaves lines unread
	 * for API_EVENTS_WRITE_TIMEOUT_S is dropped.
	 */
	bev = evhttp_connection_get_bufferevent(w->conn);
	if (bev) {
		bufferevent_set_timeouts(bev, NULL, &wto);
		/*
		 * A watcher has nothing to send: whatever it sends during the
		 * stream would pile up unread in the connection's input buffer.
		 * Stop reading at 4 KiB; the rest waits in its socket.
		 */
		bufferevent_setwatermark(bev, EV_READ, 0, API_EVENTS_MAX_INPUT_BYTES);
	}
	/* the first line: where things stand now */
	runtime_progress(ev->rt, &p);
	vm = api_vm_state(ev->rt, &p);
	if (is_final(ev, &p)) {
		send_final(w, &p, vm);
		return 0;
	}
	send_line(w, "state", &p, vm);
	/* the first line has the throttle's level: earlier changes are not news */
	w->throttle_of = ev->rt->migrations;
	w->throttle_seen = p.throttle_changes;
	w->mig = p.state;
	snprintf(w->vm_state, sizeof(w->vm_state), "%s", vm);
	w->last_progress_ns = now_ns();
	/* a snapshot being taken is the next line; an earlier one's end is not news */
	snap_sample(ev->rt, &snap);
	w->snap_of = snap.of;
	w->snap = snap.p.state == SNAPSHOT_ACTIVE ? SNAPSHOT_NONE : snap.p.state;
	update_snapshot(w, &snap, vm, w->last_progress_ns);
	return 0;
}

bool api_events_settled(const struct api_events *ev, unsigned *open)
{
	if (open)
		*open = ev ? ev->open : 0;
	/* an earlier outgoing migration's final line does not count */
	return ev && !ev->open && ev->final_delivered && (ev->rt->mig || ev->rt->in_ended) &&
	       ev->final_of == ev->rt->migrations;
}

void api_events_free(struct api_events *ev)
{
	if (!ev)
		return;
	if (ev->tick)
		event_free(ev->tick);
	free(ev);
}
