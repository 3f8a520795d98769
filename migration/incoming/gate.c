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
 * Who holds a slot is gate_admit.c's: a connection that has proven
 * nothing yet (no valid hello, or a hello and no complete record after it,
 * or parked) may be evicted for a newer one, within a bound per peer
 * address and per session id, and the migration in progress keeps its
 * slots.
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
	if (!ret) {
		__atomic_store_n(&gc->hello_ok, true, __ATOMIC_RELEASE);
		gate_wake(gc->g); /* the bounds per session now count it */
	}
	if (!ret && __atomic_load_n(&gc->g->late, __ATOMIC_ACQUIRE))
		ret = gate_late_work(gc);
	else if (!ret && gc->h.role == MIG_ROLE_MAIN)
		ret = gate_read_main(&gc->c, gc->g->local, &gc->g->desc_host, &gc->m, gc->err,
				     sizeof(gc->err));
	gc->ret = ret;
	__atomic_store_n(&gc->done, true, __ATOMIC_RELEASE);
	gate_wake(gc->g);
	return NULL;
}

static void accept_one(struct gate *g)
{
	struct gate_conn *gc;
	struct gate_peer from;
	struct mig_chan c;
	char err[128], peer[64], why[160];

	int r = chan_accept(g->lfd, &c, 1, err, sizeof(err));

	if (r) {
		/* EMFILE and friends: do not spin on a listener that stays readable. */
		if (r != -EAGAIN && r != -EINTR && r != -ECONNABORTED && r != -ETIMEDOUT)
			usleep(100000);
		return;
	}
	gate_peer_of(c.fd, &from, peer, sizeof(peer));
	if (chan_is_unix(c.fd) && !chan_unix_peer_ok(c.fd, peer, sizeof(peer))) {
		/* On a UNIX socket only this uid (or root) may hand a VM over. */
		gate_refuse(g, &c, peer,
			    "not allowed: a UNIX peer must run as this vmm's uid or root", true);
		return;
	}
	gc = gate_admit(g, &from, why, sizeof(why));
	if (!gc) {
		gate_refuse(g, &c, peer, why, true);
		return;
	}
	gc->g = g;
	gc->used = true;
	gc->c = c;
	gc->from = from;
	snprintf(gc->c.name, sizeof(gc->c.name), "incoming");
	snprintf(gc->peer, sizeof(gc->peer), "%s", peer);
	gc->accepted_ns = now_ns();
	gc->deadline_ns = gc->accepted_ns + HANDSHAKE_TIMEOUT_MS * 1000000ull;
	if (pthread_create(&gc->thread, NULL, worker, gc)) {
		gate_refuse(g, &gc->c, peer, "busy: out of threads", true);
		gate_slot_clear(gc);
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
			gate_judge(g, gc);
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
				gate_refuse(g, &gc->c, gc->peer, why, false);
				gate_slot_clear(gc);
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
		gate_bound_sessions(g);
		timeout = expire(g);
	}
	for (unsigned i = 0; i < GATE_SLOTS; i++)
		if (g->slot[i].running)
			chan_abort(&g->slot[i].c);
	for (unsigned i = 0; i < GATE_SLOTS; i++) {
		if (g->slot[i].running)
			pthread_join(g->slot[i].thread, NULL);
		if (g->slot[i].used) {
			gate_refuse(g, &g->slot[i].c, g->slot[i].peer,
				    "the target stopped accepting connections", false);
			gate_slot_clear(&g->slot[i]);
		}
	}
	return NULL;
}
