/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The switchover commit, target side: the source decides, and this side
 * runs the VM only on COMMIT. migration_incoming_prepare() (the receive
 * thread) sends PREPARED and reads main for the decision; with none in time
 * the outcome is unknown and the settle thread keeps the VM paused, reads
 * main for a late decision and answers recover connections (postcopy: a
 * resumed session is the COMMIT). Precopy, after COMMIT, the settle thread
 * waits for RELEASE and the source's leaving: only then may the front end
 * take over the API socket path. The states and their timeouts:
 * docs/migration-protocol.md, "Switchover".
 *
 * The decision records themselves, checked and applied wherever they come
 * from (main here, recover and resumed connections on the gate's workers),
 * are settle_records.c's; the state both share is settle_state.h's.
 *
 * What each record, timeout, loss and operator's word leads to is
 * settle_fsm.c's, stepped under `lock` (settle_step); this file and
 * settle_records.c turn what they read into its events and do the action
 * it returns.
 *
 * Locking: `lock` guards struct settle's fields after it; the settle thread
 * owns main's reads; main's sends take main_wlock.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "codec.h"
#include "deadline.h"
#include "incoming.h"
#include "migration.h"
#include "postcopy.h"
#include "migration_seccomp.h"
#include "settle.h"
#include "settle_state.h"
#include "vm.h"
#include "test_faults.h"

/* Main is readable: a decision, RELEASE, or the end of the source's connection. */
static void read_main(struct incoming *in)
{
	struct settle *s = in->sw.settle;
	char err[256] = "";
	int type;

	/*
	 * The record has begun to arrive: it ends within T, whole, or main is
	 * lost (a trickling peer would otherwise hold this thread, and with
	 * it settle_stop(), without end).
	 */
	chan_set_deadline(&in->main, deadline_at(now_ns(), in->sw.commit_timeout_ms));
	type = settle_read_decision(in, &in->main, err, sizeof(err));
	chan_set_deadline(&in->main, 0);

	if (type > 0) {
		settle_apply(in, &in->main, true, type, err);
		return;
	}
	pthread_mutex_lock(&s->lock);
	settle_step(s, SETTLE_EV_MAIN_LOST); /* released: the source left (FINISH) */
	pthread_mutex_unlock(&s->lock);
}

/* Main is gone: the recover connection that brought RELEASE ends when the source exits. */
static void watch_leave(struct settle *s)
{
	struct pollfd p = {-1, POLLIN, 0};
	char b;

	pthread_mutex_lock(&s->lock);
	p.fd = s->leave_fd;
	pthread_mutex_unlock(&s->lock);
	if (p.fd < 0) {
		sleep_ms(SETTLE_TICK_MS);
		return;
	}
	if (poll(&p, 1, SETTLE_TICK_MS) > 0 &&
	    ((p.revents & (POLLHUP | POLLERR)) || recv(p.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) <= 0))
		p.fd = -2; /* ended (EOF, reset, or bytes we never expect: done with it) */
	pthread_mutex_lock(&s->lock);
	if (p.fd == -2 || ms_since(s->released_ns) >= LEAVE_WAIT_MS) {
		close(s->leave_fd);
		s->leave_fd = -1;
		settle_step(s, SETTLE_EV_SOURCE_LEFT);
	}
	pthread_mutex_unlock(&s->lock);
}

static void *settle_main(void *arg)
{
	struct incoming *in = arg;
	struct settle *s = in->sw.settle;

	/* Reads and sends on main, like the control thread; recover connections are the gate's. */
	seccomp_thread_enter_or_stop(SECCOMP_THREAD_CONTROL, vm_config(in->vm)->seccomp);
	while (!__atomic_load_n(&s->quit, __ATOMIC_ACQUIRE)) {
		struct pollfd p = {in->main.fd, POLLIN, 0};
		bool alive, done;

		pthread_mutex_lock(&s->lock);
		alive = s->main_alive && in->main.fd >= 0;
		/* Postcopy after the decision, precopy once the source left: nothing to do. */
		done = s->finished ||
		       (in->post.on &&
			(s->decision == INCOMING_COMMIT || s->decision == INCOMING_ABORT)) ||
		       s->decision == INCOMING_ABORT;
		pthread_mutex_unlock(&s->lock);
		if (done)
			break;
		if (!alive) {
			watch_leave(s);
			continue;
		}
		if (poll(&p, 1, SETTLE_TICK_MS) > 0 && p.revents)
			read_main(in);
	}
	return NULL;
}

static int settle_start(struct incoming *in)
{
	struct settle *s = in->sw.settle;
	int ret;

	if (s->started)
		return 0;
	ret = -pthread_create(&s->thread, NULL, settle_main, in);
	s->started = !ret;
	return ret;
}

int settle_keys_new(struct incoming *in, char *err, size_t errlen)
{
	struct settle *s = settle_get(in);
	int ret;

	if (!s) {
		snprintf(err, errlen, "the switchover's state: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	ret = mig_keys_new(&s->own, MIG_DECIDE_RUN, 2, err, errlen);
	/* And COMMIT's verification, in the blackout, finds libcrypto's method loaded. */
	return ret ? ret : mig_proof_warm(err, errlen);
}

static int prepare(struct incoming *in, enum incoming_decision *d, char *err, size_t errlen)
{
	struct settle *s = settle_get(in);
	struct mig_prepared p = {.restore_us = (now_ns() - in->sw.end_ns) / 1000};
	uint8_t b[MIG_PREPARED_LEN];
	struct pollfd pf = {in->main.fd, POLLIN, 0};
	uint64_t t_prepared, end;
	enum settle_action act;
	enum settle_event ev;
	char why[256];
	int ret, type;

	*d = INCOMING_ABORT;
	if (!s)
		return -ENOMEM;
	/* The commit starts (settle_fsm.c): PREPARED is about to go out; the mode is known. */
	pthread_mutex_lock(&s->lock);
	settle_fsm_init(&s->fsm, in->post.on);
	pthread_mutex_unlock(&s->lock);
	/* This side's own decisions (its operator's), drawn before VM_DESC (settle_keys_new). */
	if (!s->own.live[MIG_DECIDE_RUN] || !s->own.live[MIG_DECIDE_DISCARD]) {
		snprintf(err, errlen, "no decision keys of this target's own (none were drawn)");
		return -EINVAL;
	}
	memcpy(p.keys, s->own.pub[MIG_DECIDE_RUN], sizeof(p.keys));
	in->sw.restore_us = p.restore_us;
	pthread_mutex_lock(&in->status.status_lock);
	in->status.end_to_prepared_us = p.restore_us;
	pthread_mutex_unlock(&in->status.status_lock);
	/* Test hook: die like a target killed in the middle of the switchover. */
	if (test_fault_on(&in->hooks, TEST_FAULT_KILL_BEFORE_ACK))
		raise(SIGKILL);
	mig_prepared_encode(b, &p);
	ret = incoming_send_main(in, MIG_REC_PREPARED, b, sizeof(b), NULL, 0);
	if (ret) {
		/* The source cannot have committed without our PREPARED: it resumes. */
		snprintf(err, errlen,
			 "the source left before PREPARED reached it (%s): it cannot have "
			 "committed, it keeps the VM",
			 chan_strerror(ret));
		return ret;
	}
	t_prepared = now_ns();
	test_hook_step(&in->hooks, TEST_STEP_TARGET_PREPARED);
	err[0] = '\0';
	/*
	 * The decision within T of PREPARED, whole: one deadline for the wait
	 * and the record. A record still trickling in at the deadline leaves
	 * main broken (its sticky error): the outcome is unknown.
	 */
	end = deadline_at(t_prepared, in->sw.commit_timeout_ms);
	incoming_blackout_wait(in); /* COMMIT follows PREPARED by a round trip: poll for it first */
	ret = deadline_poll(&pf, 1, end);
	if (ret > 0) {
		chan_set_deadline(&in->main, end);
		type = settle_read_decision(in, &in->main, err, errlen);
		chan_set_deadline(&in->main, 0);
	} else {
		type = -ETIMEDOUT;
	}
	/*
	 * A COMMIT in time: the source cannot be unknown (and so resumed by an
	 * operator) before T after its COMMIT, which is after our PREPARED.
	 * Later than that (we stalled, the hook's stall included): COMMITTED,
	 * then wait for RELEASE.
	 */
	if (type == MIG_REC_COMMIT)
		test_hook_step(&in->hooks, TEST_STEP_TARGET_COMMIT); /* before the clock: a stall */
	if (type == MIG_REC_COMMIT)
		ev = ms_since(t_prepared) < in->sw.commit_timeout_ms ? SETTLE_EV_COMMIT
								     : SETTLE_EV_COMMIT_LATE;
	else if (type == MIG_REC_ABORT)
		ev = SETTLE_EV_ABORT;
	else if (type == MIG_REC_RELEASE)
		ev = SETTLE_EV_RELEASE; /* before a COMMIT: as if main were lost */
	else if (type == -ETIMEDOUT)
		ev = SETTLE_EV_TIMEOUT;
	else
		ev = type == -EACCES ? SETTLE_EV_FORGED : SETTLE_EV_MAIN_LOST;
	pthread_mutex_lock(&s->lock);
	act = settle_step(s, ev);
	/* From here recover and resume connections may settle it (and learn that it runs). */
	s->open = act != SETTLE_ACT_DISCARD;
	pthread_mutex_unlock(&s->lock);
	if (act == SETTLE_ACT_DISCARD)
		return -ECANCELED;
	if (act == SETTLE_ACT_RUN) {
		settle_send_committed(in, &in->main, true, false);
		*d = INCOMING_COMMIT;
		return 0;
	}
	if (act == SETTLE_ACT_COMMITTED_LATE) {
		settle_send_committed(in, &in->main, true, true);
		snprintf(why, sizeof(why),
			 "COMMIT came %llu ms after PREPARED: waiting for RELEASE",
			 (unsigned long long)ms_since(t_prepared));
	} else if (type == -ETIMEDOUT) {
		snprintf(why, sizeof(why), "no decision within %llu ms",
			 (unsigned long long)in->sw.commit_timeout_ms);
	} else {
		snprintf(why, sizeof(why), "%s", err[0] ? err : "main connection lost");
	}
	/* UNKNOWN (main lost or silent) or PENDING: the source may have committed. */
	snprintf(err, errlen,
		 "after PREPARED: %s: the VM stays paused until the source settles it "
		 "(`vmm migrate --recover` there)",
		 why);
	*d = INCOMING_UNKNOWN;
	incoming_unboost(in); /* the wait may be long: no real-time event loop */
	ret = settle_start(in);
	return ret;
}

int migration_incoming_prepare(struct incoming *in, enum incoming_decision *d, char *err,
			       size_t errlen)
{
	int ret = prepare(in, d, err, errlen);

	/* The VM is discarded (the source aborted or left): the status says why. */
	if (ret) {
		pthread_mutex_lock(&in->status.status_lock);
		in->status.phase = INCOMING_FAILED;
		snprintf(in->status.error, sizeof(in->status.error), "%s",
			 err[0] ? err : chan_strerror(ret));
		pthread_mutex_unlock(&in->status.status_lock);
	}
	return ret;
}

enum incoming_decision migration_incoming_decision(struct incoming *in, char *err, size_t errlen)
{
	struct settle *s = in ? in->sw.settle : NULL;
	enum incoming_decision d;

	if (!s)
		return INCOMING_UNDECIDED;
	pthread_mutex_lock(&s->lock);
	d = s->decision == INCOMING_UNKNOWN ? INCOMING_UNDECIDED : s->decision;
	snprintf(err, errlen, "%s", s->reason);
	pthread_mutex_unlock(&s->lock);
	return d;
}

bool incoming_outcome_unknown(struct incoming *in)
{
	struct settle *s = in ? in->sw.settle : NULL;
	bool r;

	if (!s)
		return false;
	pthread_mutex_lock(&s->lock);
	r = s->decision == INCOMING_UNKNOWN;
	pthread_mutex_unlock(&s->lock);
	return r;
}

/*
 * The operator's decision, told to the source on main while it is open
 * (best effort, 1 s), proven with this side's key for it; the key of the
 * other decision is forgotten first: this target can never prove it now.
 */
static void tell_source(struct incoming *in, bool run)
{
	struct settle *s = in->sw.settle;
	unsigned d = run ? MIG_DECIDE_RUN : MIG_DECIDE_DISCARD;
	struct mig_decided v = {.what = run ? MIG_DECIDED_RUNS : MIG_DECIDED_DISCARDED};
	uint8_t bind[MIG_BIND_LEN], b[MIG_DECIDED_LEN];
	struct mig_chan c;
	char err[128];
	bool alive;

	pthread_mutex_lock(&s->lock);
	mig_keys_forget(&s->own, run ? MIG_DECIDE_DISCARD : MIG_DECIDE_RUN);
	alive = s->main_alive;
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&in->main_wlock);
	c = in->main;
	if (alive && c.fd >= 0) {
		chan_binding(&c, bind);
		if (!mig_proof_sign(&s->own, d, in->session, 0, bind, v.proof, err, sizeof(err))) {
			/* A copy: no sticky error or timeout of ours on the reader's channel. */
			c.error = 0;
			chan_set_timeout(&c, 1000);
			mig_decided_encode(b, &v);
			chan_send_record(&c, MIG_REC_DECIDED, b, sizeof(b), NULL, 0);
		}
	}
	pthread_mutex_unlock(&in->main_wlock);
}

int migration_incoming_decide(struct incoming *in, bool run, char *err, size_t errlen)
{
	struct settle *s = in ? in->sw.settle : NULL;
	enum settle_action act = SETTLE_ACT_REFUSE_NOT_UNKNOWN;

	/*
	 * settle_fsm.c decides, whole under the lock (the source's decision
	 * may race it): an unknown outcome, or (precopy) running but never
	 * released (the source died after COMMITTED), where "run" releases.
	 */
	if (s) {
		pthread_mutex_lock(&s->lock);
		act = settle_step(s, run ? SETTLE_EV_OPERATOR_RUN : SETTLE_EV_OPERATOR_DISCARD);
		if (act == SETTLE_ACT_TELL_DISCARD)
			snprintf(s->reason, sizeof(s->reason),
				 "the operator discarded this copy (recover --decide discard): the "
				 "VM runs on the source");
		pthread_mutex_unlock(&s->lock);
	}
	switch (act) {
	case SETTLE_ACT_TELL_RUN:
	case SETTLE_ACT_TELL_DISCARD:
		/* The operator says the source is gone (run) or runs it (discard). */
		tell_source(in, run);
		return 0;
	case SETTLE_ACT_REFUSE_NOT_UNKNOWN:
		snprintf(err, errlen, "no switchover of unknown outcome on this target");
		return -ENOENT;
	case SETTLE_ACT_REFUSE_PENDING:
		snprintf(err, errlen,
			 "this target answered a COMMIT and the source may have let go: it "
			 "cannot discard its copy (decide run, or let the source recover)");
		return -EBUSY;
	case SETTLE_ACT_REFUSE_POSTCOPY_RUN:
		snprintf(err, errlen,
			 "a postcopy target lacks the pages only the source has: it cannot run "
			 "without it (resume from the source, or discard)");
		return -EBUSY;
	default:
		snprintf(err, errlen, "the source's decision came first");
		return -EALREADY;
	}
}

/* Ends and joins the settle thread; the state stays (the gate's workers use it). */
static void settle_join(struct settle *s)
{
	__atomic_store_n(&s->quit, true, __ATOMIC_RELEASE);
	if (s->started)
		pthread_join(s->thread, NULL);
	s->started = false;
}

void migration_incoming_started(struct incoming *in)
{
	incoming_unboost(in); /* the vCPUs run: the blackout is over */
	if (in->post.on) {
		/* The control thread owns main from now on; the state stays for recover
		 * connections. */
		if (in->sw.settle)
			settle_join(in->sw.settle);
		postcopy_incoming_started(in);
		return;
	}
	/* Precopy: wait for RELEASE and answer recover connections until then. */
	if (settle_get(in) && settle_start(in)) {
		/* No thread: the source's leaving is all we can still see. */
		pthread_mutex_lock(&in->sw.settle->lock);
		settle_step(in->sw.settle, SETTLE_EV_UNWATCHED);
		pthread_mutex_unlock(&in->sw.settle->lock);
	}
}

bool settle_awaiting_release(struct incoming *in, uint64_t *since_ns, const char **what)
{
	struct settle *s = in ? in->sw.settle : NULL;
	bool r;

	if (!s || in->post.on)
		return false;
	pthread_mutex_lock(&s->lock);
	r = s->running && !s->finished;
	*since_ns = s->running_ns;
	if (s->released)
		*what = "RELEASE came; now the source's exit";
	else if (s->main_alive)
		*what = "its RELEASE, then its exit";
	else
		*what = "its main connection closed without RELEASE: a recover connection from "
			"it, or the operator";
	pthread_mutex_unlock(&s->lock);
	return r;
}

bool settle_finished(struct incoming *in)
{
	struct settle *s = in->sw.settle;
	char c;
	ssize_t n;
	bool released, finished;

	if (!s)
		return false;
	pthread_mutex_lock(&s->lock);
	released = s->released;
	finished = s->finished;
	pthread_mutex_unlock(&s->lock);
	if (finished || !released || s->started)
		return finished;
	/* No settle thread (it could not start): the source's EOF. */
	n = recv(in->main.fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

void settle_stop(struct incoming *in)
{
	struct settle *s = in->sw.settle;

	if (!s)
		return;
	settle_join(s);
	if (s->leave_fd >= 0)
		close(s->leave_fd);
	mig_keys_wipe(&s->own);
	pthread_mutex_destroy(&s->lock);
	free(s);
	in->sw.settle = NULL;
}
