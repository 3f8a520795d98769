/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The session: a migration's lifetime, its one failure record, progress
 * updates under the lock, the postcopy claim bitmap, and the start of the
 * blackout with the downtime it ends in. Contracts are in session.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "clock.h"
#include "session.h"
#include "tls.h"
#include "vm.h"

void session_init(struct migration *m, struct vm *vm, const struct migration_params *p,
		  const struct test_hooks *hooks)
{
	m->vm = vm;
	m->params = *p;
	if (hooks)
		m->hooks = *hooks;
	m->main.fd = -1;
	m->pc.urgent.fd = -1;
	state_form_current(&m->form); /* until CAPS says what the target reads */
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->pc.resume_cond, NULL);
	ratelimit_init(&m->rl, p->max_bandwidth);
	pthread_mutex_lock(&m->lock);
	m->progress.state = MIGRATION_SETUP;
	m->progress.target_postcopy = -1; /* until its CAPS */
	m->progress.converged = -1;	  /* until a precopy switchover */
	m->progress.params = *p;
	m->progress.ram_bytes = vm_mem(vm)->size;
	m->progress.page_size_bytes = GUEST_PAGE_SIZE;
	m->clock.t_start_ns = now_ns();
	snprintf(m->progress.mode_used, sizeof(m->progress.mode_used), "%s",
		 p->local ? MIGRATION_USED_LOCAL : MIGRATION_USED_PRECOPY);
	pthread_mutex_unlock(&m->lock);
	if (getrandom(&m->session, sizeof(m->session), 0) != sizeof(m->session))
		m->session = now_ns();
	if (m->hooks.session) /* a test that plays a party knowing it */
		m->session = m->hooks.session;
	/* A local handover has no data connection: RAM changes hands as a memfd. */
	m->connections = p->local ? 0 : p->connections;
}

void session_destroy(struct migration *m)
{
	free(m->senders);
	chan_close(&m->main);
	chan_close(&m->pc.urgent);
	bitmap_array_free(m->pc.sent, vm_mem(m->vm)->nslots);
	ratelimit_destroy(&m->rl);
	tls_ctx_free(m->tls);
	pthread_cond_destroy(&m->pc.resume_cond);
	pthread_mutex_destroy(&m->lock);
	mig_keys_wipe(&m->keys);
	free(m);
}

void set_state(struct migration *m, enum migration_state s)
{
	pthread_mutex_lock(&m->lock);
	m->progress.state = s;
	pthread_mutex_unlock(&m->lock);
}

bool migration_cancelled(struct migration *m)
{
	return __atomic_load_n(&m->cancel, __ATOMIC_RELAXED);
}

void session_abort_channels(struct migration *m)
{
	chan_abort(&m->main);
	chan_abort(&m->pc.urgent);
	for (unsigned i = 0; m->senders && i < m->connections; i++)
		chan_abort(&m->senders[i].chan);
}

/*
 * A target that gives up sends ERROR on the main connection before it
 * closes the others, so a reset data connection is often only the symptom.
 * Peeks (never consumes, never blocks) at the main connection for that record.
 */
static bool target_said(struct migration *m, char *msg, size_t len)
{
	uint8_t buf[MIG_REC_HDR_LEN + MIG_ERROR_MAX];
	struct mig_rec_hdr h;
	ssize_t n;

	if (m->main.fd < 0)
		return false;
	n = recv(m->main.fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n < (ssize_t)MIG_REC_HDR_LEN)
		return false;
	mig_rec_hdr_decode(buf, &h);
	if (h.type != MIG_REC_ERROR || mig_rec_check(&h, m->main.role, MIG_DIR_T2S, 0, NULL, 0) ||
	    (size_t)n < MIG_REC_HDR_LEN + h.len)
		return false;
	return !mig_error_decode(buf + MIG_REC_HDR_LEN, h.len, msg, len, NULL, 0);
}

void migration_fail(struct migration *m, int err, const char *fmt, ...)
{
	char said[MIG_ERROR_MAX + 1];
	va_list ap;

	pthread_mutex_lock(&m->lock);
	if (!m->error) {
		m->error = err < 0 ? err : -EIO;
		if (target_said(m, said, sizeof(said))) {
			snprintf(m->progress.error, sizeof(m->progress.error),
				 "the target failed: %.200s", said);
		} else {
			va_start(ap, fmt);
			vsnprintf(m->progress.error, sizeof(m->progress.error), fmt, ap);
			va_end(ap);
		}
	}
	pthread_mutex_unlock(&m->lock);
	/* Stops every engine thread at its next check and unblocks their I/O. */
	__atomic_store_n(&m->cancel, true, __ATOMIC_RELAXED);
	session_abort_channels(m);
}

int migration_error(struct migration *m)
{
	int err;

	pthread_mutex_lock(&m->lock);
	err = m->error;
	pthread_mutex_unlock(&m->lock);
	return err;
}

/*
 * The threads that work while the guest is stopped: this one (pause,
 * state, commit), the harvest team (final harvest) and the senders (last
 * pages). Each waits for a CPU no longer than a real-time thread does.
 */
static void boost_team(struct team *t, struct sched_prev *prev, unsigned max, bool on)
{
	for (unsigned i = 0; t->threads && i < t->nthreads && i < max; i++) {
		if (on)
			sched_boost(t->threads[i], &prev[i]);
		else
			sched_unboost(t->threads[i], &prev[i]);
	}
}

static void blackout_boost(struct migration *m, bool on)
{
	if (on == m->boost.on)
		return;
	m->boost.on = on;
	if (on)
		sched_boost(pthread_self(), &m->boost.self);
	else
		sched_unboost(pthread_self(), &m->boost.self);
	boost_team(&m->send_team, m->boost.send, MIGRATION_MAX_CONNECTIONS, on);
	boost_team(&m->harvest.team, m->boost.harvest, MIGRATION_MAX_HARVEST_THREADS, on);
}

void blackout_end(struct migration *m)
{
	m->send_team.spin_ns = 0;
	m->harvest.team.spin_ns = 0;
	blackout_boost(m, false);
}

int blackout_begin(struct migration *m, uint64_t *t_pause)
{
	uint8_t bind[MIG_BIND_LEN];
	struct vm *vm = m->vm;
	uint64_t pause_us;
	char err[128];
	int ret;

	/*
	 * COMMIT's proof covers only what is known before the pause (session,
	 * main's binding): made now, the blackout does not pay for signing.
	 * An abort forgets it with COMMIT's key (commit.c).
	 */
	chan_binding(&m->main, bind);
	ret = mig_proof_presign(&m->keys, MIG_DECIDE_COMMIT, m->session, 0, bind, err, sizeof(err));
	if (ret) {
		migration_fail(m, ret, "before the pause: %s", err);
		return ret;
	}
	/* A cancel is decided under the same lock: it lands before this or not at all. */
	pthread_mutex_lock(&m->lock);
	if (__atomic_load_n(&m->cancel, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&m->lock);
		return -ECANCELED;
	}
	m->progress.state = MIGRATION_SWITCHOVER;
	pthread_mutex_unlock(&m->lock);
	blackout_boost(m, true);
	m->boost.waits = (struct spin_stats){0};
	m->boost.spin_ns = spin_bound_ns(m->params.blackout_poll_us < m->params.downtime_ms * 1000
					     ? m->params.blackout_poll_us
					     : m->params.downtime_ms * 1000);
	/* The final harvest's and the last pages' ends, likewise. */
	m->send_team.spin_ns = m->boost.spin_ns;
	m->harvest.team.spin_ns = m->boost.spin_ns;
	*t_pause = now_ns();
	vm_pause(vm);
	pause_us = (now_ns() - *t_pause) / 1000;
	pthread_mutex_lock(&m->lock);
	m->progress.blackout_pause_us = pause_us;
	pthread_mutex_unlock(&m->lock);
	if (vm_stopping(vm)) {
		struct vm_end end;

		vm_end_state(vm, &end);
		migration_fail(m, -ESRCH, "the VM stopped during migration: %s", end.message);
		return -ESRCH;
	}
	m->blackout = true;
	m->first_pass = false;
	return 0;
}

void blackout_wait_main(struct migration *m)
{
	spin_readable(&m->main, m->boost.spin_ns, &m->boost.waits);
}

void blackout_record_waits(struct migration *m)
{
	const struct spin_stats *w = &m->boost.waits;

	m->progress.blackout_round_trips = w->waits;
	m->progress.blackout_ready = w->ready;
	m->progress.blackout_polled = w->spun;
	m->progress.blackout_sleeps = w->slept;
	m->progress.blackout_polling_us = w->spin_ns / 1000;
}

void record_downtime(struct migration *m, uint64_t t_pause, const struct mig_committed *ack)
{
	uint8_t id[16];
	uint64_t now = now_ns();

	m->progress.downtime_ack_us = (now - t_pause) / 1000;
	m->progress.downtime_us = m->progress.downtime_ack_us;
	/* Same host: the target's clock says when the guest ran again. */
	if (!host_boot_id(id) && !memcmp(id, ack->boot_id, sizeof(id)) &&
	    ack->resume_mono_ns > t_pause && ack->resume_mono_ns <= now)
		m->progress.downtime_us = (ack->resume_mono_ns - t_pause) / 1000;
	m->progress.downtime_ms = m->progress.downtime_us / 1000;
}

int claim_init(struct migration *m)
{
	const struct guest_mem *mem = vm_mem(m->vm);
	uint64_t *words = calloc(mem->nslots ? mem->nslots : 1, sizeof(*words));

	if (!words)
		return -ENOMEM;
	for (uint32_t i = 0; i < mem->nslots; i++)
		words[i] = bitmap_words(mem->slots[i].npages);
	m->pc.sent = bitmap_array_new(mem->nslots, words);
	free(words);
	return m->pc.sent ? 0 : -ENOMEM;
}

bool claim_page(struct migration *m, uint32_t slot, uint64_t p)
{
	return bitmap_claim_atomic(m->pc.sent[slot], p);
}

void claim_forget(struct migration *m, uint32_t slot, uint64_t w, uint64_t mask)
{
	__atomic_fetch_and(&m->pc.sent[slot][w], ~mask, __ATOMIC_RELAXED);
}
