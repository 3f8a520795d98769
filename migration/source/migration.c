/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The source side's public face (migration.h): parameters, starting,
 * cancelling, resuming and observing a migration, all on the front end's
 * event-loop thread; and the migration thread's top-level sequence:
 *
 *   SETUP -> PRECOPY -> SWITCHOVER (stop-and-copy) -> COMPLETED
 *                                  \-> SWITCHOVER_UNKNOWN -> COMPLETED (recover)
 *                                                         -> FAILED (resume here)
 *                    -> SWITCHOVER (postcopy) -> POSTCOPY_ACTIVE <-> PAUSED -> COMPLETED
 *   anything before the source's COMMIT -> FAILED / CANCELLED: the source
 *   VM resumes with all of its memory (guest RAM is only ever read here)
 *
 * The phases are in phases.h, the shared state in session.h (threads and
 * locks: docs/architecture.md), the parameters in params.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "hostport.h"
#include "phases.h"
#include "ram_send.h"
#include "tls.h"
#include "vm.h"
#include "test_faults.h"

/*
 * A failed or cancelled migration gives back what it took at once, not
 * when the next one starts: a failed attempt must not hold 6 sockets and 5
 * threads, and a retry loop must not add up. Two steps, because the event
 * loop may still call migration_cancel() (which aborts every channel) until
 * the final state is published under `lock`: release_engine() before it
 * (threads, buffers, dirty logging: nothing the event loop touches),
 * release_channels() after it (connections, senders, TLS context).
 * A COMPLETED migration keeps all of it until migration_free() (see
 * migration_thread()). Both are idempotent: migration_free() runs them again
 * on whatever is left (a start that failed half-way, a thread that never ran).
 */
static void release_engine(struct migration *m)
{
	/* The watcher aborts channels: stopped first, while they are open. */
	test_hook_watch_stop(&m->pc.cut_watch);
	test_hook_watch_stop(&m->commit.stop_watch);
	/* Between rounds: team_destroy() wakes each worker to quit and joins it. */
	if (m->send_team.threads)
		team_destroy(&m->send_team);
	harvest_destroy(&m->harvest);
	/* After the threads that clear and get the log: none is left to use it. */
	dirtylog_disable(&m->dl);
	bitmap_array_free(m->pc.sent, vm_mem(m->vm)->nslots);
	m->pc.sent = NULL;
	/* Senders past one that failed to initialise were never touched (s->m unset). */
	for (unsigned i = 0; m->senders && i < m->connections; i++)
		if (m->senders[i].m)
			ram_sender_free_buffers(&m->senders[i]);
}

/* No engine thread runs, and the state is final (or the thread never ran). */
static void release_channels(struct migration *m)
{
	for (unsigned i = 0; m->senders && i < m->connections; i++)
		if (m->senders[i].m)
			ram_sender_destroy(&m->senders[i]);
	free(m->senders);
	m->senders = NULL;
	chan_close(&m->main);
	chan_close(&m->pc.urgent);
	/* After the channels: their TLS connections were made from it. */
	tls_ctx_free(m->tls);
	m->tls = NULL;
}

/* Frees everything; called with no engine thread running. */
static void free_state(struct migration *m)
{
	release_engine(m);
	release_channels(m);
	session_destroy(m);
}

/* The migration thread: the phases in order, then the final state. */
static void *migration_thread(void *arg)
{
	struct migration *m = arg;
	struct vm *vm = m->vm;
	enum precopy_outcome next = PRECOPY_STOP_AND_COPY;
	uint64_t t_start = now_ns(), t_pause = 0;
	int ret, err;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_MIGRATION, vm_config(vm)->seccomp);
	test_hook_forbidden_syscall(&m->hooks,
				    test_fault_name(TEST_FAULT_FORBIDDEN_SYSCALL_MIGRATION),
				    TEST_HOOK_CALL_EXECVE);
	ret = source_setup(m, t_start);
	/* A local handover has no pages to copy: from setup to the switchover. */
	if (!ret && !m->params.local) {
		set_state(m, MIGRATION_PRECOPY);
		ret = precopy(m, t_start, &next);
	}
	if (!ret && next == PRECOPY_POSTCOPY) {
		ret = postcopy_switchover(m, &t_pause);
		blackout_end(m); /* the push and the faults run at the usual priority */
		/* After the ACK the VM runs on the target: this never fails, never resumes here. */
		if (!ret && postcopy_serve(m, t_pause)) {
			migration_fail(
			    m, -ECANCELED,
			    "the postcopy switchover's outcome was unknown and the operator "
			    "resumed the VM on the source (recover --decide resume)");
			ret = -ECANCELED;
		}
	} else if (!ret) {
		ret = stop_and_copy(m, t_start, &t_pause);
		blackout_end(m);
	}
	if (t_pause && ret) {
		/* Nothing was lost: guest RAM was only read. Run again at once. */
		m->blackout = false;
		vm_resume(vm);
	}
	update_live(m, t_start);
	/* Every engine thread but this one, the buffers, dirty logging: see release_engine(). */
	if (ret)
		release_engine(m);
	pthread_mutex_lock(&m->lock);
	/* The first failure is the migration's error; ret may be only its echo (-ECANCELED). */
	err = ret ? (m->error ? m->error : ret) : 0;
	m->progress.total_ms = ms_since(t_start);
	if (!err) {
		m->progress.state = MIGRATION_COMPLETED;
	} else if (m->user_cancelled) {
		m->progress.state = MIGRATION_CANCELLED;
	} else {
		m->progress.state = MIGRATION_FAILED;
		if (!m->error)
			m->error = err;
		if (!m->progress.error[0])
			snprintf(m->progress.error, sizeof(m->progress.error), "%s",
				 chan_strerror(err));
	}
	pthread_mutex_unlock(&m->lock);
	/*
	 * The state is final: migration_cancel() no longer touches the
	 * channels. A completed migration keeps everything until
	 * migration_free(), at the process's exit (nothing is worth freeing
	 * first, and nothing may delay "completed"); above all its connections:
	 * the target takes over the VM's API socket path when they close, and
	 * `vmm migrate` must read "completed" from the source before that
	 * (the front end's linger).
	 */
	if (err)
		release_channels(m);
	else
		vm_request_stop(vm, VM_END_MIGRATED, 0, "migrated to %s", m->params.to);
	return NULL;
}

bool migration_state_needs_source(enum migration_state s)
{
	return s == MIGRATION_POSTCOPY_ACTIVE || s == MIGRATION_POSTCOPY_PAUSED ||
	       s == MIGRATION_SWITCHOVER_UNKNOWN;
}

static bool state_final(enum migration_state s)
{
	return s == MIGRATION_COMPLETED || s == MIGRATION_FAILED || s == MIGRATION_CANCELLED;
}

bool migration_finished(struct migration *m)
{
	enum migration_state s;

	pthread_mutex_lock(&m->lock);
	s = m->progress.state;
	pthread_mutex_unlock(&m->lock);
	return state_final(s);
}

void migration_free(struct migration *m)
{
	if (!m)
		return;
	if (m->thread_started)
		pthread_join(m->thread, NULL);
	free_state(m);
}

int migration_start(struct vm *vm, const struct migration_params *p,
		    const struct migration_host *host, const struct test_hooks *hooks,
		    struct migration **out, char *err, size_t errlen)
{
	struct migration *m;
	int ret = migration_params_check(p, err, errlen);

	*out = NULL;
	if (ret)
		return ret;
	if (vm_stopping(vm)) {
		snprintf(err, errlen, "the VM is stopping");
		return -ESRCH;
	}
	if (p->local && !hostport_unix_path(p->to)) {
		snprintf(
		    err, errlen,
		    "local: the destination must be a vmm on this host, unix:PATH (got '%.200s')",
		    p->to);
		return -EINVAL;
	}
	if (p->local && vm_mem(vm)->memfd < 0) {
		snprintf(err, errlen,
			 "local: guest RAM must be a memfd to be handed over, and this VM's is %s "
			 "memory (start it with [vm] memory_backend = memfd)",
			 mem_backend_name(vm_mem(vm)->backend));
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	session_init(m, vm, p, hooks);
	/* Bad key files fail the request itself, before anything connects. */
	{
		struct tls_files files = {host->tls_cert ? host->tls_cert : "",
					  host->tls_key ? host->tls_key : "",
					  host->tls_ca ? host->tls_ca : ""};

		if (host->desc)
			m->desc_host = *host->desc;
		ret = tls_ctx_new(&m->tls, false, &files, err, errlen);
	}
	if (ret) {
		session_destroy(m);
		return ret;
	}
	m->senders = calloc(m->connections ? m->connections : 1, sizeof(*m->senders));
	ret = m->senders ? 0 : -ENOMEM;
	for (unsigned i = 0; i < m->connections && !ret; i++)
		ret = ram_sender_init(&m->senders[i], m, i);
	if (!ret)
		ret = -pthread_create(&m->thread, NULL, migration_thread, m);
	if (ret) {
		snprintf(err, errlen, "starting the migration: %s", strerror(-ret));
		free_state(m);
		return ret;
	}
	m->thread_started = true;
	*out = m;
	return 0;
}

int migration_cancel(struct migration *m, char *err, size_t errlen)
{
	if (!m) {
		snprintf(err, errlen, "no migration is running");
		return -ENOENT;
	}
	/*
	 * One hold of the lock from the state's test to the last abort: the
	 * migration thread publishes the final state under it before it closes
	 * the channels (release_channels), so a cancel either aborts open
	 * channels or finds the migration over and touches nothing.
	 */
	pthread_mutex_lock(&m->lock);
	if (state_final(m->progress.state)) {
		pthread_mutex_unlock(&m->lock);
		snprintf(err, errlen, "no migration is running");
		return -ENOENT;
	}
	if (m->progress.state == MIGRATION_SWITCHOVER_UNKNOWN) {
		pthread_mutex_unlock(&m->lock);
		snprintf(err, errlen,
			 "the switchover's outcome is unknown (the VM may run on the target): "
			 "use recover to settle it");
		return -EBUSY;
	}
	if (m->progress.state == MIGRATION_SWITCHOVER) {
		/* Past the point where the target may already run the VM. */
		pthread_mutex_unlock(&m->lock);
		snprintf(err, errlen, "the migration is in switchover and cannot be cancelled");
		return -EBUSY;
	}
	if (migration_state_needs_source(m->progress.state)) {
		pthread_mutex_unlock(&m->lock);
		snprintf(err, errlen,
			 "the VM already runs on the target and the source's copy of its memory "
			 "is no longer complete: a postcopy migration cannot be cancelled "
			 "(use resume to finish it)");
		return -EBUSY;
	}
	/* Already failing (the thread is unwinding): keep the real cause. */
	if (m->error && !m->user_cancelled) {
		snprintf(err, errlen, "the migration is failing: %s", m->progress.error);
		pthread_mutex_unlock(&m->lock);
		return -EALREADY;
	}
	/*
	 * Under the lock that orders it before any switchover (blackout_begin).
	 * The state will say cancelled, so the cancel's code and message replace
	 * any symptom recorded first.
	 */
	m->user_cancelled = true;
	__atomic_store_n(&m->cancel, true, __ATOMIC_RELEASE);
	m->error = -ECANCELED;
	snprintf(m->progress.error, sizeof(m->progress.error), "cancelled by the user");
	/* shutdown(2) only: it never blocks (session.h). */
	session_abort_channels(m);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int migration_resume(struct migration *m, const char *to, char *err, size_t errlen)
{
	if (!to || hostport_check(to)) {
		snprintf(err, errlen, "bad address '%s' (expected host:port or unix:PATH)",
			 to ? to : "");
		return -EINVAL;
	}
	if (!m) {
		snprintf(err, errlen, "no migration to resume");
		return -ENOENT;
	}
	pthread_mutex_lock(&m->lock);
	if (m->progress.state != MIGRATION_POSTCOPY_PAUSED) {
		pthread_mutex_unlock(&m->lock);
		snprintf(err, errlen, "no postcopy migration is paused (state %s)",
			 migration_state_name(m->progress.state));
		return -ENOENT;
	}
	snprintf(m->pc.resume_to, sizeof(m->pc.resume_to), "%s", to);
	m->pc.resume_requested = true;
	pthread_cond_broadcast(&m->pc.resume_cond);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int migration_recover(struct migration *m, const char *to, bool resume_here, char *err,
		      size_t errlen)
{
	enum migration_state s;

	if (to && to[0] && hostport_check(to)) {
		snprintf(err, errlen, "bad address '%s' (expected host:port or unix:PATH)", to);
		return -EINVAL;
	}
	if (!m) {
		snprintf(err, errlen, "no migration to recover");
		return -ENOENT;
	}
	pthread_mutex_lock(&m->lock);
	s = m->progress.state;
	if (s == MIGRATION_POSTCOPY_PAUSED && !resume_here) {
		pthread_mutex_unlock(&m->lock);
		return migration_resume(m, to && to[0] ? to : m->params.to, err, errlen);
	}
	/* Postcopy without COMMITTED and never resumed: the target may never have run. */
	if (s == MIGRATION_POSTCOPY_PAUSED && m->commit.unconfirmed && !m->commit.resumed_once) {
		/* Where the target is told (commit_override), if it can be reached. */
		snprintf(m->commit.recover_to, sizeof(m->commit.recover_to), "%s",
			 to && to[0] ? to : m->params.to);
		m->commit.recover_resume_here = true;
		m->pc.resume_requested = true;
		pthread_cond_broadcast(&m->pc.resume_cond);
		pthread_mutex_unlock(&m->lock);
		return 0;
	}
	if (s != MIGRATION_SWITCHOVER_UNKNOWN) {
		pthread_mutex_unlock(&m->lock);
		if (s == MIGRATION_POSTCOPY_PAUSED)
			snprintf(err, errlen,
				 "the VM ran on the target in postcopy (its COMMITTED came, or a "
				 "resume reached it): it cannot resume here (use recover without a "
				 "decision, or resume)");
		else
			snprintf(err, errlen, "no switchover of unknown outcome (state %s)",
				 migration_state_name(s));
		return s == MIGRATION_POSTCOPY_PAUSED ? -EBUSY : -ENOENT;
	}
	snprintf(m->commit.recover_to, sizeof(m->commit.recover_to), "%s",
		 to && to[0] ? to : m->params.to);
	m->commit.recover_resume_here = resume_here;
	m->commit.recover_requested = true;
	pthread_mutex_unlock(&m->lock);
	return 0;
}
