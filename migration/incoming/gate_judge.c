/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate_judge.c - what the gate does with a connection whose worker ended
 * (gate.h): hand it over (the first valid main connection, its session's
 * data and urgent ones), park it (data before its main), queue it (a late
 * resume's), or refuse it with its reason. The gate thread; gate.c's
 * locking.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "gate.h"

/*
 * Best effort, bounded: the ERROR record where the channel can carry one,
 * then close. A fresh connection on a TLS gate (refused at its accept,
 * nothing read or written yet) gets it in plain: the source's TLS client
 * reads it from the bytes its failed handshake got (tls_first.c), so it
 * learns "busy" rather than a bare hang-up.
 */
void gate_refuse(struct gate *g, struct mig_chan *c, const char *peer, const char *why, bool fresh)
{
	if (c->fd >= 0 && (!g->tls || c->tls || fresh)) {
		struct mig_chan copy = *c;

		copy.error = 0;
		chan_set_timeout(&copy, 1000);
		chan_send_record(&copy, MIG_REC_ERROR, why, mig_error_len(why), NULL, 0);
	}
	chan_close(c);
	if (g->hook.refused)
		g->hook.refused(g->hook.opaque, peer, why);
}

void gate_slot_clear(struct gate_conn *gc)
{
	gate_main_free(gc->m);
	chan_close(&gc->c);
	memset(gc, 0, sizeof(*gc));
	gc->c.fd = -1;
}

/* Under g->lock: this session's data or urgent connection moves to the hand-over. */
static bool deliver(struct gate *g, struct gate_conn *gc)
{
	const struct mig_hello *h = &gc->h;

	if (!g->has_session || h->session_id != g->session)
		return false;
	if (h->role == MIG_ROLE_DATA && h->index < g->connections &&
	    !(g->taken & (1ull << h->index))) {
		g->data[h->index] = gc->c;
		g->taken |= 1ull << h->index;
	} else if (h->role == MIG_ROLE_URGENT && !g->urgent_taken) {
		g->urgent = gc->c;
		g->urgent_taken = true;
	} else {
		return false;
	}
	gc->c.fd = -1;
	gc->c.tls = NULL;
	pthread_cond_broadcast(&g->cond);
	return true;
}

/* Why a worker that failed was refused: evicted, past its deadline, or its own error. */
static void failure(const struct gate_conn *gc, char *why, size_t len)
{
	bool hello = __atomic_load_n(&gc->hello_ok, __ATOMIC_ACQUIRE);
	const char *what = hello ? "a hello and no complete record after it" : "nothing valid yet";

	if (gc->evicted == GATE_EVICT_FULL)
		snprintf(why, len,
			 "evicted: %s when the gate was full (%u connections in their "
			 "handshake)",
			 what, GATE_SLOTS);
	else if (gc->evicted == GATE_EVICT_PEER)
		snprintf(why, len,
			 "evicted: %s when its address held %u connections (the most "
			 "one address may)",
			 what, GATE_PEER_SLOTS);
	else if (gc->evicted == GATE_EVICT_SESSION)
		snprintf(why, len,
			 "evicted: %s when %u connections of its session were waiting "
			 "(the most one session may)",
			 what, GATE_SESSION_SLOTS);
	else if (gc->expired && !hello)
		snprintf(why, len, "nothing valid within %u s of the connection (idle or too slow)",
			 HANDSHAKE_TIMEOUT_MS / 1000);
	else if (gc->expired && !__atomic_load_n(&gc->c.records_in, __ATOMIC_RELAXED))
		snprintf(why, len,
			 "a hello and no complete record after it within %u s of the "
			 "connection (idle or too slow)",
			 HANDSHAKE_TIMEOUT_MS / 1000);
	else if (gc->expired)
		snprintf(why, len, "not done within %u s of the connection (too slow)",
			 HANDSHAKE_TIMEOUT_MS / 1000);
	else
		snprintf(why, len, "%s", gc->err[0] ? gc->err : "handshake failed");
}

/* A finished worker: hand its connection over, park it, or refuse it. */
void gate_judge(struct gate *g, struct gate_conn *gc)
{
	const char *busy = "busy: a migration is being received";
	char why[320];
	bool keep = false;

	pthread_join(gc->thread, NULL);
	gc->running = false;
	if (gc->ret) {
		failure(gc, why, sizeof(why));
		gate_refuse(g, &gc->c, gc->peer, why, false);
		gate_slot_clear(gc);
		return;
	}
	gc->evicted = GATE_EVICT_NONE; /* its record won the race: judged as usual */
	if (gc->served) {
		gate_slot_clear(gc); /* a recover exchange, over */
		return;
	}
	if (__atomic_load_n(&g->late, __ATOMIC_ACQUIRE)) {
		const char *no = gate_late_refusal(g, gc, why, sizeof(why));

		pthread_mutex_lock(&g->lock);
		if (!no)
			gate_late_queue(g, gc);
		pthread_mutex_unlock(&g->lock);
		if (no)
			gate_refuse(g, &gc->c, gc->peer, no, false);
		gate_slot_clear(gc);
		return;
	}
	snprintf(why, sizeof(why), "%s", busy);
	pthread_mutex_lock(&g->lock);
	if (gc->h.role == MIG_ROLE_MAIN && !g->has_session) {
		struct gate_main *m = gc->m;

		m->chan = gc->c;
		m->hello = gc->h;
		gc->c.fd = -1;
		gc->c.tls = NULL;
		gc->m = NULL;
		g->main = m;
		g->has_session = true;
		g->session = m->hello.session_id;
		g->connections = m->v.d.connections;
		/* Data connections that came before their main. */
		for (unsigned i = 0; i < GATE_SLOTS; i++)
			if (g->slot[i].parked && deliver(g, &g->slot[i]))
				gate_slot_clear(&g->slot[i]);
		pthread_cond_broadcast(&g->cond);
		keep = true;
	} else if (gc->h.role == MIG_ROLE_DATA || gc->h.role == MIG_ROLE_URGENT) {
		if (deliver(g, gc))
			keep = true;
		else if (!g->has_session) {
			gc->parked = true;
			gc->deadline_ns = now_ns() + PARK_MS * 1000000ull;
			pthread_mutex_unlock(&g->lock);
			return;
		}
	} else if (gc->h.role == MIG_ROLE_MAIN_RESUME && !g->has_session) {
		snprintf(why, sizeof(why),
			 "no postcopy to resume here: the first connection "
			 "must be the main one (role %u)",
			 gc->h.role);
	} else if (gc->h.role == MIG_ROLE_RECOVER) {
		snprintf(why, sizeof(why),
			 "no switchover to recover here: this target has not prepared a VM yet");
	}
	pthread_mutex_unlock(&g->lock);
	if (!keep)
		gate_refuse(g, &gc->c, gc->peer, why, false);
	gate_slot_clear(gc);
}
