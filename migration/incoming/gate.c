/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target's door: from listening until the incoming migration is freed,
 * one gate thread accepts every connection and a short-lived handshake
 * worker per connection runs its TLS handshake, reads its hello and, for a
 * main connection, its VM description and config (gate_main.c). Workers
 * run side by side, so a peer that connects and says nothing holds only its own
 * worker, never the real source; the gate shuts a worker's socket down at
 * its deadline (HANDSHAKE_TIMEOUT_MS from the accept, however slowly the
 * bytes trickle), which bounds every read before the VM description in
 * time, as the record table bounds it in size.
 *
 * A full gate makes room for a new connection by evicting the oldest one
 * that has sent no valid hello yet (evict_oldest).
 *
 * The gate then judges each connection: the first main connection with a
 * valid description goes to the main thread (gate_wait_main), and with it
 * the session; that session's data and urgent connections follow
 * (gate_wait_data), even those whose hello came first (parked until their
 * main, at most PARK_MS). Anything else is refused on its own: an ERROR
 * record with the reason when the channel can carry one (plain, or TLS
 * after its handshake; a failed handshake already sent its alert), the
 * connection closed, the refusal reported through incoming_hook.refused,
 * and nothing of it kept. Once the VM is received the gate serves the
 * connections that settle or resume it instead (gate_late.c).
 *
 * Locking: gate->lock guards the hand-over fields (main, session, connections,
 * data, urgent, taken, stopping, watch_fd, main_gone); the slots are the
 * gate thread's, except a running slot's chan and result, which are its
 * worker's until `done` (atomic, release by the worker, acquire by the gate
 * thread).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "codec.h"
#include "config.h"
#include "gate.h"
#include "incoming.h"
#include "migration.h"

void gate_wake(struct gate *g)
{
	ssize_t n = write(g->wake[1], "x", 1);

	(void)n; /* a full pipe already wakes the gate */
}

static void *worker(void *arg)
{
	struct gate_conn *gc = arg;
	int ret;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_HANDSHAKE, gc->g->local->seccomp);
	chan_set_timeout(&gc->c, HANDSHAKE_TIMEOUT_MS);
	ret = gc->g->tls ? chan_start_tls(&gc->c, gc->g->tls, NULL, gc->err, sizeof(gc->err)) : 0;
	if (!ret)
		ret = chan_recv_hello(&gc->c, &gc->h, gc->err, sizeof(gc->err));
	if (!ret)
		__atomic_store_n(&gc->hello_ok, true, __ATOMIC_RELEASE);
	if (!ret && __atomic_load_n(&gc->g->late, __ATOMIC_ACQUIRE))
		ret = gate_late_work(gc);
	else if (!ret && gc->h.role == MIG_ROLE_MAIN)
		ret = gate_read_main(&gc->c, gc->g->local, &gc->m, gc->err, sizeof(gc->err));
	gc->ret = ret;
	__atomic_store_n(&gc->done, true, __ATOMIC_RELEASE);
	gate_wake(gc->g);
	return NULL;
}

/* Best effort, bounded: the ERROR record where the channel can carry one, then close. */
static void refuse(struct gate *g, struct mig_chan *c, const char *peer, const char *why)
{
	if (c->fd >= 0 && (!g->tls || c->tls)) {
		struct mig_chan copy = *c;

		copy.error = 0;
		chan_set_timeout(&copy, 1000);
		chan_send_record(&copy, MIG_REC_ERROR, why, mig_error_len(why), NULL, 0);
	}
	chan_close(c);
	if (g->hook.refused)
		g->hook.refused(g->hook.opaque, peer, why);
}

static void slot_clear(struct gate_conn *gc)
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

static void peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	char host[NI_MAXHOST], port[NI_MAXSERV];

	snprintf(buf, len, "?");
	if (getpeername(fd, (struct sockaddr *)&sa, &sl) ||
	    getnameinfo((struct sockaddr *)&sa, sl, host, sizeof(host), port, sizeof(port),
			NI_NUMERICHOST | NI_NUMERICSERV))
		return;
	snprintf(buf, len, sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

/* A finished worker: hand its connection over, park it, or refuse it. */
static void judge(struct gate *g, struct gate_conn *gc)
{
	const char *busy = "busy: a migration is being received";
	char why[320];
	bool keep = false;

	pthread_join(gc->thread, NULL);
	gc->running = false;
	if (gc->ret) {
		if (gc->evicted)
			snprintf(why, sizeof(why),
				 "evicted: nothing valid yet when the gate was full "
				 "(%u connections in their handshake)",
				 GATE_SLOTS);
		else if (gc->expired)
			snprintf(why, sizeof(why),
				 "nothing valid within %u s of the connection (idle or too slow)",
				 HANDSHAKE_TIMEOUT_MS / 1000);
		else
			snprintf(why, sizeof(why), "%s", gc->err[0] ? gc->err : "handshake failed");
		refuse(g, &gc->c, gc->peer, why);
		slot_clear(gc);
		return;
	}
	if (gc->served) {
		slot_clear(gc); /* a recover exchange, over */
		return;
	}
	if (__atomic_load_n(&g->late, __ATOMIC_ACQUIRE)) {
		const char *no = gate_late_refusal(g, gc, why, sizeof(why));

		pthread_mutex_lock(&g->lock);
		if (!no && !gate_late_queue(g, gc))
			no = "busy: too many resume connections waiting";
		pthread_mutex_unlock(&g->lock);
		if (no)
			refuse(g, &gc->c, gc->peer, no);
		slot_clear(gc);
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
				slot_clear(&g->slot[i]);
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
		refuse(g, &gc->c, gc->peer, why);
	slot_clear(gc);
}

/*
 * The gate is full: the connection accepted longest ago that has not sent a
 * valid hello makes room, as sshd's MaxStartups drops unauthenticated
 * peers, so that idle or trickling connections cannot keep the real source
 * out. Its worker is stopped and joined and the connection refused. NULL
 * when every slot holds a peer past its hello (parked, or reading its
 * description).
 */
static struct gate_conn *evict_oldest(struct gate *g)
{
	struct gate_conn *old = NULL;

	for (unsigned i = 0; i < GATE_SLOTS; i++) {
		struct gate_conn *gc = &g->slot[i];

		if (!gc->running || gc->parked ||
		    __atomic_load_n(&gc->hello_ok, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&gc->done, __ATOMIC_ACQUIRE))
			continue;
		if (!old || gc->deadline_ns < old->deadline_ns)
			old = gc;
	}
	if (!old)
		return NULL;
	old->evicted = true;
	chan_abort(&old->c);
	judge(g, old); /* joins the worker; a hello that won the race is judged as usual */
	return old->used ? NULL : old;
}

static void accept_one(struct gate *g)
{
	struct gate_conn *gc = NULL;
	struct mig_chan c;
	char err[128], peer[64];

	int r = chan_accept(g->lfd, &c, 1, err, sizeof(err));

	if (r) {
		/* EMFILE and friends: do not spin on a listener that stays readable. */
		if (r != -EAGAIN && r != -EINTR && r != -ECONNABORTED && r != -ETIMEDOUT)
			usleep(100000);
		return;
	}
	if (!chan_is_unix(c.fd)) {
		peer_name(c.fd, peer, sizeof(peer));
	} else if (!chan_unix_peer_ok(c.fd, peer, sizeof(peer))) {
		/* On a UNIX socket only this uid (or root) may hand a VM over. */
		refuse(g, &c, peer, "not allowed: a UNIX peer must run as this vmm's uid or root");
		return;
	}
	for (unsigned i = 0; i < GATE_SLOTS && !gc; i++)
		if (!g->slot[i].used)
			gc = &g->slot[i];
	if (!gc)
		gc = evict_oldest(g);
	if (!gc) {
		refuse(g, &c, peer, "busy: too many connections in their handshake");
		return;
	}
	gc->g = g;
	gc->used = true;
	gc->c = c;
	snprintf(gc->c.name, sizeof(gc->c.name), "incoming");
	snprintf(gc->peer, sizeof(gc->peer), "%s", peer);
	gc->deadline_ns = now_ns() + HANDSHAKE_TIMEOUT_MS * 1000000ull;
	if (pthread_create(&gc->thread, NULL, worker, gc)) {
		refuse(g, &gc->c, peer, "busy: out of threads");
		slot_clear(gc);
		return;
	}
	gc->running = true;
}

/* Past its deadline: a worker's socket is shut down (it then fails), a parked one refused. */
static int expire(struct gate *g)
{
	uint64_t now = now_ns(), next = UINT64_MAX, queued;

	for (unsigned i = 0; i < GATE_SLOTS; i++) {
		struct gate_conn *gc = &g->slot[i];

		if (!gc->used)
			continue;
		if (gc->running && __atomic_load_n(&gc->done, __ATOMIC_ACQUIRE)) {
			judge(g, gc);
			now = now_ns();
			if (!gc->used)
				continue;
		}
		if (gc->deadline_ns <= now) {
			if (gc->parked) {
				char why[128];

				snprintf(why, sizeof(why),
					 "the first connection must be the main one (role %u)",
					 gc->h.role);
				refuse(g, &gc->c, gc->peer, why);
				slot_clear(gc);
				continue;
			}
			if (!gc->expired) {
				gc->expired = true;
				chan_abort(&gc->c);
			}
			continue; /* its worker ends at once now */
		}
		if (gc->deadline_ns < next)
			next = gc->deadline_ns;
	}
	pthread_mutex_lock(&g->lock);
	now = now_ns();
	queued = gate_late_expire(g, now);
	pthread_mutex_unlock(&g->lock);
	if (queued < next)
		next = queued;
	return next == UINT64_MAX ? -1 : (int)((next - now) / 1000000u + 1);
}

void *gate_thread(void *arg)
{
	struct gate *g = arg;
	int timeout = -1;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_GATE, g->local->seccomp);
	for (;;) {
		struct pollfd p[3] = {{.fd = g->lfd, .events = POLLIN},
				      {.fd = g->wake[0], .events = POLLIN},
				      {.fd = -1, .events = POLLRDHUP}};
		char b[64];
		bool stop;

		/* gate_wait_data's main connection, if it waits (a negative fd is not polled). */
		pthread_mutex_lock(&g->lock);
		p[2].fd = g->watch_fd;
		pthread_mutex_unlock(&g->lock);
		if (poll(p, 3, timeout) < 0 && errno != EINTR)
			usleep(100000);
		pthread_mutex_lock(&g->lock);
		stop = g->stopping;
		if (p[2].fd >= 0 && p[2].fd == g->watch_fd &&
		    (p[2].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
			g->main_gone = true;
			g->watch_fd = -1; /* level-triggered: polled no more */
			pthread_cond_broadcast(&g->cond);
		}
		pthread_mutex_unlock(&g->lock);
		if (stop)
			break;
		if (p[1].revents & POLLIN)
			while (read(g->wake[0], b, sizeof(b)) > 0)
				;
		if (p[0].revents & POLLIN)
			accept_one(g);
		timeout = expire(g);
	}
	for (unsigned i = 0; i < GATE_SLOTS; i++)
		if (g->slot[i].running)
			chan_abort(&g->slot[i].c);
	for (unsigned i = 0; i < GATE_SLOTS; i++) {
		if (g->slot[i].running)
			pthread_join(g->slot[i].thread, NULL);
		if (g->slot[i].used) {
			refuse(g, &g->slot[i].c, g->slot[i].peer,
			       "the target stopped accepting connections");
			slot_clear(&g->slot[i]);
		}
	}
	return NULL;
}
