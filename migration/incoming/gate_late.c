/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate_late.c - the gate once the migration is received (gate_late_open):
 * the listening socket stays behind the gate, so the connections that
 * settle or resume a switchover (recover, main-resume, and a resumed
 * session's data and urgent ones) get what the first connections got: a
 * handshake worker each, side by side, a deadline counted from the accept
 * however slowly bytes trickle in, and the same admission (gate_admit.c):
 * one that has proven nothing yet (no valid hello, or a hello and no
 * complete record after it) may be evicted for a newer one, while this
 * session's connections keep their slots against strangers. Trickling,
 * idle or valid-hello peers therefore never keep the source's recover or
 * resume out.
 *
 * A recover connection's whole exchange runs on its worker (lt.recover),
 * under the same deadline: the gate thread shuts its socket at the
 * deadline. A main-resume must open with its attempt's RESUME proof
 * (lt.resumed checks it, proof.h) before it is taken; resume connections
 * wait in a queue (PARK_MS at most) for the control thread's gate_take(),
 * a full queue dropping its oldest. Everything else is refused, counted
 * and reported like a refusal before the VM.
 *
 * Locking: gate.c's. `late` and `lt` are written once, before `late` is
 * set (release); workers read them after an acquire load of `late`.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "gate.h"

void gate_late_open(struct gate *g, const struct gate_late *lt)
{
	pthread_mutex_lock(&g->lock);
	g->lt = *lt;
	__atomic_store_n(&g->late, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g->lock);
}

int gate_late_work(struct gate_conn *gc)
{
	const struct gate_late *lt = &gc->g->lt;

	if (gc->h.session_id != lt->session)
		return 0; /* refused by the gate thread, which names why */
	if (gc->h.role == MIG_ROLE_RECOVER && lt->recover) {
		int ret =
		    lt->recover(lt->opaque, &gc->c, gc->deadline_ns, gc->err, sizeof(gc->err));

		gc->served = !ret;
		return ret;
	}
	if (gc->h.role == MIG_ROLE_MAIN_RESUME && lt->resume) {
		/* No hook (no settle state): nothing can prove a resume here. */
		if (!lt->resumed) {
			snprintf(gc->err, sizeof(gc->err), "no resume: out of memory");
			return -ENOMEM;
		}
		return lt->resumed(lt->opaque, &gc->c, MIG_HELLO_ATTEMPT(gc->h.index),
				   gc->deadline_ns, gc->err, sizeof(gc->err));
	}
	return 0;
}

const char *gate_late_refusal(struct gate *g, const struct gate_conn *gc, char *buf, size_t len)
{
	const struct mig_hello *h = &gc->h;

	if (h->session_id != g->lt.session)
		snprintf(buf, len, "not this migration's session: this target holds a VM already");
	else if (h->role == MIG_ROLE_MAIN)
		snprintf(buf, len, "busy: this target has received its VM already");
	else if (h->role == MIG_ROLE_RECOVER)
		snprintf(buf, len,
			 "the recover connection came while the target was still "
			 "receiving: try again");
	else if (!g->lt.resume)
		snprintf(buf, len, "no postcopy to resume here (role %u)", h->role);
	else
		return NULL;
	return buf;
}

/* Under g->lock: a queue slot free again (its connection moved on or closed). */
static void queue_free(struct gate_taken *t)
{
	memset(t, 0, sizeof(*t));
	t->c.fd = -1;
}

/* Under g->lock: closes a queued connection nobody will take. */
static void queue_drop(struct gate_taken *t)
{
	chan_close(&t->c);
	queue_free(t);
}

/*
 * What gate_take() hands over next. The newest main-resume
 * first: the source makes one attempt at a time, so every older one (and
 * every connection accepted before it) is a dead attempt's, as are
 * connections accepted before the caller's own main (after_ns). Then the
 * first accepted of the roles asked for, not the first queued: a main's
 * worker (the proof) is slower than its data connections'. Data and urgent
 * connections only of the caller's resume attempt (hello index); an older
 * attempt's are dropped.
 */
bool gate_late_pick(struct gate *g, uint32_t roles, uint64_t after_ns, uint32_t attempt,
		    struct gate_taken *out)
{
	struct gate_taken *newest_main = NULL, *first = NULL;

	for (unsigned i = 0; i < GATE_SLOTS; i++) {
		struct gate_taken *t = &g->queue[i];

		if (t->expires_ns && t->h.role == MIG_ROLE_MAIN_RESUME &&
		    (roles & MIG_CH(MIG_ROLE_MAIN_RESUME)) &&
		    (!newest_main || t->accepted_ns > newest_main->accepted_ns))
			newest_main = t;
	}
	if (newest_main && newest_main->accepted_ns < after_ns) {
		queue_drop(newest_main); /* older than the caller's main */
		newest_main = NULL;
	}
	if (newest_main)
		after_ns = newest_main->accepted_ns;
	for (unsigned i = 0; i < GATE_SLOTS; i++) {
		struct gate_taken *t = &g->queue[i];

		if (!t->expires_ns || t == newest_main)
			continue;
		if (t->accepted_ns < after_ns ||
		    (t->h.role != MIG_ROLE_MAIN_RESUME && MIG_HELLO_ATTEMPT(t->h.index) < attempt))
			queue_drop(t);
		else if ((roles & MIG_CH(t->h.role)) &&
			 (t->h.role == MIG_ROLE_MAIN_RESUME ||
			  MIG_HELLO_ATTEMPT(t->h.index) == attempt) &&
			 (!first || t->accepted_ns < first->accepted_ns))
			first = t; /* a later attempt's stay queued for their main */
	}
	if (newest_main)
		first = newest_main;
	if (!first)
		return false;
	*out = *first;
	queue_free(first);
	return true;
}

void gate_late_queue(struct gate *g, struct gate_conn *gc)
{
	struct gate_taken *t = NULL;

	for (unsigned i = 0; i < GATE_SLOTS && !t; i++)
		if (!g->queue[i].expires_ns)
			t = &g->queue[i];
	/*
	 * Full: the connection queued longest ago goes, as a full gate evicts
	 * its oldest stalled one. A resume's own connections are the newest,
	 * and the control thread takes them as they come.
	 */
	if (!t) {
		t = &g->queue[0];
		for (unsigned i = 1; i < GATE_SLOTS; i++)
			if (g->queue[i].accepted_ns < t->accepted_ns)
				t = &g->queue[i];
		queue_drop(t);
	}
	t->c = gc->c;
	t->h = gc->h;
	t->accepted_ns = gc->accepted_ns;
	t->expires_ns = now_ns() + PARK_MS * 1000000ull;
	gc->c.fd = -1;
	gc->c.tls = NULL;
	pthread_cond_broadcast(&g->cond);
}

uint64_t gate_late_expire(struct gate *g, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < GATE_SLOTS; i++) {
		struct gate_taken *t = &g->queue[i];

		if (!t->expires_ns)
			continue;
		if (t->expires_ns <= now)
			queue_drop(t); /* nobody took it: a resume that no longer waits, or none */
		else if (t->expires_ns < next) {
			next = t->expires_ns;
		}
	}
	return next;
}
