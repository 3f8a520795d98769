/* SPDX-License-Identifier: Apache-2.0 */
#include "team.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

struct team_worker {
	struct team *team;
	unsigned index;
};

static void *worker_main(void *opaque)
{
	struct team_worker *w = opaque;
	struct team *t = w->team;
	unsigned index = w->index;
	uint64_t seen = 0;

	free(w);
	seccomp_thread_enter_or_stop(t->kind, t->seccomp);
	pthread_mutex_lock(&t->lock);
	for (;;) {
		while (t->round == seen && !t->quit)
			pthread_cond_wait(&t->cond, &t->lock);
		if (t->quit)
			break;
		seen = t->round;
		pthread_mutex_unlock(&t->lock);
		t->fn(t->arg, index);
		pthread_mutex_lock(&t->lock);
		/* Atomic: team_wait() polls it without the lock. */
		__atomic_add_fetch(&t->finished, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&t->cond);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int team_init(struct team *t, unsigned nthreads, team_fn fn, void *arg,
	      const struct seccomp_kind *kind, bool seccomp)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->fn = fn;
	t->arg = arg;
	t->kind = kind;
	t->seccomp = seccomp;
	t->threads = calloc(nthreads ? nthreads : 1, sizeof(*t->threads));
	if (!t->threads)
		return -ENOMEM;
	for (unsigned i = 0; i < nthreads; i++) {
		struct team_worker *w = malloc(sizeof(*w));
		int ret = ENOMEM;

		if (w) {
			w->team = t;
			w->index = i;
			ret = pthread_create(&t->threads[i], NULL, worker_main, w);
		}
		if (ret) {
			/*
			 * The workers already started point at *t: joined here, so
			 * that no caller can leave them behind (a thread limit hit
			 * half way, EAGAIN).
			 */
			free(w);
			team_destroy(t);
			return -ret;
		}
		t->nthreads++;
	}
	return 0;
}

void team_start(struct team *t)
{
	pthread_mutex_lock(&t->lock);
	__atomic_store_n(&t->finished, 0, __ATOMIC_RELAXED);
	t->round++;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

void team_wait(struct team *t)
{
	uint64_t t0 = t->spin_ns ? now_ns() : 0;

	/* The blackout's bounded poll: the round's end without a wake-up (see spin_ns). */
	while (t->spin_ns && __atomic_load_n(&t->finished, __ATOMIC_ACQUIRE) < t->nthreads &&
	       now_ns() - t0 < t->spin_ns)
		sched_yield();
	pthread_mutex_lock(&t->lock);
	while (t->finished < t->nthreads)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

void team_run(struct team *t, bool caller_joins)
{
	team_start(t);
	if (caller_joins)
		t->fn(t->arg, t->nthreads);
	team_wait(t);
}

void team_destroy(struct team *t)
{
	pthread_mutex_lock(&t->lock);
	t->quit = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	for (unsigned i = 0; i < t->nthreads; i++)
		pthread_join(t->threads[i], NULL);
	free(t->threads);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}
