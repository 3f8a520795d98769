/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_team.c - the worker team (migration/dirty/team.h): every worker runs
 * every round exactly once, the caller joins as the last worker when asked,
 * team_run() returns only once the round is over, team_start() returns while
 * it runs and team_wait() once it is over, and team_destroy() joins
 * every thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <pthread.h>

#include "team.h"

#define MAX_WORKERS 9

struct tally {
	uint64_t runs[MAX_WORKERS];	  /* rounds each worker index has run */
	pthread_t who[MAX_WORKERS];	  /* the thread that ran each index last */
	uint64_t round;			  /* set by the test before each team_run() */
	uint64_t seen_round[MAX_WORKERS]; /* the round each index ran in last */
	unsigned stragglers;		  /* calls that saw an older round: must stay 0 */
};

static void count_fn(void *arg, unsigned worker)
{
	struct tally *t = arg;
	uint64_t round = __atomic_load_n(&t->round, __ATOMIC_ACQUIRE);

	if (worker >= MAX_WORKERS)
		return;
	__atomic_fetch_add(&t->runs[worker], 1, __ATOMIC_RELAXED);
	if (t->seen_round[worker] + 1 != round)
		__atomic_fetch_add(&t->stragglers, 1, __ATOMIC_RELAXED);
	t->seen_round[worker] = round;
	t->who[worker] = pthread_self();
}

static void run_rounds(struct team *team, struct tally *t, uint64_t rounds, bool caller_joins)
{
	for (uint64_t r = 0; r < rounds; r++) {
		__atomic_add_fetch(&t->round, 1, __ATOMIC_RELEASE);
		team_run(team, caller_joins);
	}
}

static void test_every_worker_every_round(void **state)
{
	struct tally t;
	struct team team;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(team_init(&team, 4, count_fn, &t, SECCOMP_THREAD_HARVEST, false), 0);
	assert_int_equal(team.nthreads, 4);
	run_rounds(&team, &t, 10, false);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(t.runs[i], 10);
	assert_int_equal(t.runs[4], 0); /* no caller slot without caller_joins */
	assert_int_equal(t.stragglers, 0);
	/* workers are threads of their own */
	for (unsigned i = 0; i < 4; i++)
		assert_false(pthread_equal(t.who[i], pthread_self()));
	team_destroy(&team);
}

static void test_caller_joins(void **state)
{
	struct tally t;
	struct team team;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(team_init(&team, 3, count_fn, &t, SECCOMP_THREAD_HARVEST, false), 0);
	run_rounds(&team, &t, 5, true);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(t.runs[i], 5);
	/* the caller is worker nthreads, on its own thread */
	assert_int_equal(t.runs[3], 5);
	assert_true(pthread_equal(t.who[3], pthread_self()));
	/* mixing both kinds of round */
	run_rounds(&team, &t, 2, false);
	assert_int_equal(t.runs[0], 7);
	assert_int_equal(t.runs[3], 5);
	assert_int_equal(t.stragglers, 0);
	team_destroy(&team);
}

static void test_no_threads_caller_only(void **state)
{
	struct tally t;
	struct team team;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(team_init(&team, 0, count_fn, &t, SECCOMP_THREAD_HARVEST, false), 0);
	run_rounds(&team, &t, 3, true);
	assert_int_equal(t.runs[0], 3);
	assert_true(pthread_equal(t.who[0], pthread_self()));
	team_destroy(&team);
}

/* Each round's workers see the round the caller set: none runs late or twice. */
static void test_many_rounds(void **state)
{
	struct tally t;
	struct team team;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(team_init(&team, 8, count_fn, &t, SECCOMP_THREAD_HARVEST, false), 0);
	run_rounds(&team, &t, 5000, true);
	for (unsigned i = 0; i <= 8; i++)
		assert_int_equal(t.runs[i], 5000);
	assert_int_equal(t.stragglers, 0);
	team_destroy(&team);
}

/* team_run() returns only after every worker finished: their writes are visible. */
struct sum {
	uint64_t part[4];
	uint64_t round;
};

static void sum_fn(void *arg, unsigned worker)
{
	struct sum *s = arg;

	s->part[worker] = s->round * (worker + 1); /* plain store: team_run orders it */
}

static void test_run_waits_for_all(void **state)
{
	struct sum s;
	struct team team;

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(team_init(&team, 4, sum_fn, &s, SECCOMP_THREAD_HARVEST, false), 0);
	for (uint64_t r = 1; r <= 1000; r++) {
		s.round = r;
		team_run(&team, false);
		for (unsigned i = 0; i < 4; i++)
			if (s.part[i] != r * (i + 1))
				fail_msg("round %llu: worker %u's result missing after team_run",
					 (unsigned long long)r, i);
	}
	team_destroy(&team);
}

/*
 * team_start() returns while the round runs: the workers wait for a gate
 * the coordinator opens only after team_start() returned (a start that
 * waited for the round would leave them to time out), and team_wait()
 * returns only once every worker's result is in.
 */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;
	unsigned timed_out;
	uint64_t part[4];
	uint64_t round;
};

static void gate_fn(void *arg, unsigned worker)
{
	struct gate *g = arg;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&g->lock);
	while (!g->open)
		if (pthread_cond_timedwait(&g->cond, &g->lock, &until)) {
			g->timed_out++;
			break;
		}
	pthread_mutex_unlock(&g->lock);
	if (worker < 4) {
		usleep(1000 * worker);
		__atomic_store_n(&g->part[worker], g->round * (worker + 1), __ATOMIC_RELEASE);
	}
}

static void test_start_then_wait(void **state)
{
	struct gate g = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	struct team team;

	(void)state;
	assert_int_equal(team_init(&team, 4, gate_fn, &g, SECCOMP_THREAD_HARVEST, false), 0);
	for (uint64_t r = 1; r <= 20; r++) {
		g.round = r;
		g.open = false;
		team_start(&team);
		/* the coordinator's own work, while the round runs */
		pthread_mutex_lock(&g.lock);
		g.open = true;
		pthread_cond_broadcast(&g.cond);
		pthread_mutex_unlock(&g.lock);
		team_wait(&team);
		assert_int_equal(g.timed_out, 0);
		for (unsigned i = 0; i < 4; i++)
			if (__atomic_load_n(&g.part[i], __ATOMIC_ACQUIRE) != r * (i + 1))
				fail_msg("round %llu: worker %u's result missing after team_wait",
					 (unsigned long long)r, i);
	}
	team_destroy(&team);
}

/*
 * The blackout's polling wait (spin_ns): long enough to see every round
 * end while it polls, or so short that it always falls back to the
 * condition variable; either way every worker ran and its plain stores
 * are visible when team_run() returns.
 */
static void test_polling_wait(void **state)
{
	const uint64_t bounds[] = {60ull * 1000000000u, 1};
	struct sum s;
	struct team team;

	(void)state;
	for (unsigned b = 0; b < 2; b++) {
		memset(&s, 0, sizeof(s));
		assert_int_equal(team_init(&team, 4, sum_fn, &s, SECCOMP_THREAD_HARVEST, false), 0);
		team.spin_ns = bounds[b];
		for (uint64_t r = 1; r <= 2000; r++) {
			s.round = r;
			team_run(&team, false);
			for (unsigned i = 0; i < 4; i++)
				if (s.part[i] != r * (i + 1))
					fail_msg(
					    "bound %llu, round %llu: worker %u's result missing",
					    (unsigned long long)bounds[b], (unsigned long long)r,
					    i);
		}
		team_destroy(&team);
	}
}

/* Threads that exit run their thread-specific destructors before pthread_join returns. */
static pthread_key_t exit_key;
static unsigned exited;

static void on_thread_exit(void *v)
{
	(void)v;
	__atomic_fetch_add(&exited, 1, __ATOMIC_RELAXED);
}

static void mark_fn(void *arg, unsigned worker)
{
	(void)arg;
	(void)worker;
	pthread_setspecific(exit_key, &exit_key);
}

static void test_destroy_joins(void **state)
{
	struct team team;

	(void)state;
	assert_int_equal(pthread_key_create(&exit_key, on_thread_exit), 0);
	exited = 0;
	assert_int_equal(team_init(&team, 5, mark_fn, NULL, SECCOMP_THREAD_HARVEST, false), 0);
	team_run(&team, false);
	team_destroy(&team);
	/* all five workers have exited by the time team_destroy returned */
	assert_int_equal(__atomic_load_n(&exited, __ATOMIC_RELAXED), 5);
	assert_int_equal(team.nthreads, 0);
	assert_null(team.threads);
	pthread_key_delete(exit_key);
}

static void test_destroy_idle_team(void **state)
{
	struct team team;

	(void)state;
	assert_int_equal(team_init(&team, 3, mark_fn, NULL, SECCOMP_THREAD_HARVEST, false), 0);
	team_destroy(&team); /* never ran a round: the workers still quit */
	assert_int_equal(team.nthreads, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_worker_every_round),
	    cmocka_unit_test(test_caller_joins),
	    cmocka_unit_test(test_no_threads_caller_only),
	    cmocka_unit_test(test_many_rounds),
	    cmocka_unit_test(test_run_waits_for_all),
	    cmocka_unit_test(test_start_then_wait),
	    cmocka_unit_test(test_polling_wait),
	    cmocka_unit_test(test_destroy_joins),
	    cmocka_unit_test(test_destroy_idle_team),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
