/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate_handover.c - the gate's life and its hand-over to the receiving
 * thread (incoming.h): start, wait for the main connection and then its
 * session's data and urgent ones, cancel, stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gate.h"

int gate_start(struct gate **out, int lfd, struct tls_ctx *tls, const struct vm_config *local,
	       const struct config_layer *desc_host, const struct incoming_hook *hook, char *err,
	       size_t errlen)
{
	struct gate *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	g->lfd = lfd;
	g->tls = tls;
	g->local = local;
	if (desc_host)
		g->desc_host = *desc_host;
	/* The front end's struct is not the gate's to write: values are checked, then dropped. */
	g->desc_host.base = NULL;
	if (hook)
		g->hook = *hook;
	g->urgent.fd = -1;
	g->watch_fd = -1;
	for (unsigned i = 0; i < MIG_CONNECTIONS_MAX; i++)
		g->data[i].fd = -1;
	for (unsigned i = 0; i < GATE_SLOTS; i++) {
		g->slot[i].c.fd = -1;
		g->queue[i].c.fd = -1;
	}
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pipe2(g->wake, O_CLOEXEC | O_NONBLOCK)) {
		int e = errno;

		snprintf(err, errlen, "pipe: %s", strerror(e));
		g->wake[0] = g->wake[1] = -1;
		gate_stop(g);
		return -e;
	}
	if (pthread_create(&g->thread, NULL, gate_thread, g)) {
		snprintf(err, errlen, "cannot start the gate thread");
		close(g->wake[0]);
		close(g->wake[1]);
		g->wake[0] = g->wake[1] = -1;
		gate_stop(g);
		return -EAGAIN;
	}
	*out = g;
	return 0;
}

int gate_wait_main(struct gate *g, struct gate_main **out)
{
	pthread_mutex_lock(&g->lock);
	while (!g->main && !g->stopping)
		pthread_cond_wait(&g->cond, &g->lock);
	*out = g->main;
	g->main = NULL;
	pthread_mutex_unlock(&g->lock);
	return *out ? 0 : -ECANCELED;
}

/* timeout_ms from now on g->cond's clock (CLOCK_MONOTONIC). */
static struct timespec mono_after(uint64_t timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(timeout_ms / 1000);
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

int gate_wait_data(struct gate *g, unsigned connections, uint64_t timeout_ms, int main_fd,
		   struct mig_chan *data, struct mig_chan *urgent, char *err, size_t errlen)
{
	uint64_t all = connections >= 64 ? ~0ull : (1ull << connections) - 1;
	struct timespec ts = mono_after(timeout_ms);
	bool gone;
	int r = 0;

	pthread_mutex_lock(&g->lock);
	g->watch_fd = main_fd;
	g->main_gone = false;
	gate_wake(g); /* the gate thread polls main from now on */
	while (((g->taken & all) != all || !g->urgent_taken) && !g->stopping && !g->main_gone &&
	       r != ETIMEDOUT)
		r = pthread_cond_timedwait(&g->cond, &g->lock, &ts);
	gone = g->main_gone;
	g->watch_fd = -1;
	/* What arrived is the caller's either way (it closes it on failure). */
	for (unsigned i = 0; i < connections; i++) {
		data[i] = g->data[i];
		g->data[i].fd = -1;
		g->data[i].tls = NULL;
	}
	*urgent = g->urgent;
	g->urgent.fd = -1;
	g->urgent.tls = NULL;
	r = (g->taken & all) == all && g->urgent_taken ? 0 : gone ? -EPIPE : -ETIMEDOUT;
	pthread_mutex_unlock(&g->lock);
	gate_wake(g); /* and no more */
	/* E.g. a source that read CAPS and refused a postcopy this target cannot do. */
	if (r == -EPIPE)
		snprintf(err, errlen,
			 "the source closed its main connection instead of opening its data "
			 "connections (it gave up; its error says why)");
	else if (r)
		snprintf(err, errlen,
			 "the source's data connections did not all arrive within %llu ms",
			 (unsigned long long)timeout_ms);
	return r;
}

int gate_take(struct gate *g, uint64_t timeout_ms, uint32_t roles, uint64_t after_ns,
	      uint32_t attempt, struct gate_taken *out)
{
	struct timespec ts = mono_after(timeout_ms);
	int r = 0;

	pthread_mutex_lock(&g->lock);
	for (;;) {
		if (gate_late_pick(g, roles, after_ns, attempt, out))
			break;
		if (g->stopping || r == ETIMEDOUT) {
			r = g->stopping ? ECANCELED : ETIMEDOUT;
			break;
		}
		r = timeout_ms ? pthread_cond_timedwait(&g->cond, &g->lock, &ts)
			       : pthread_cond_wait(&g->cond, &g->lock);
		r = r == ETIMEDOUT ? r : 0;
	}
	pthread_mutex_unlock(&g->lock);
	return r ? -r : 0;
}

void gate_cancel(struct gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

void gate_stop(struct gate *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	if (g->wake[1] >= 0) {
		gate_wake(g);
		pthread_join(g->thread, NULL);
		close(g->wake[0]);
		close(g->wake[1]);
	}
	gate_main_free(g->main);
	for (unsigned i = 0; i < GATE_SLOTS; i++)
		chan_close(&g->queue[i].c);
	for (unsigned i = 0; i < MIG_CONNECTIONS_MAX; i++)
		chan_close(&g->data[i]);
	chan_close(&g->urgent);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}
