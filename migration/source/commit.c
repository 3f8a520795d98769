/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The switchover commit, source side (the coordinator), once END is out:
 * PREPARED (else ABORT, and the caller resumes the vCPUs here), then
 * `committed` is set and COMMIT goes out, after which the source never
 * resumes on its own; no COMMITTED in time leaves the outcome unknown
 * (precopy waits in commit_recover.c's commit_settle; postcopy pauses in
 * postcopy_serve, its resume being a COMMIT to the target). A failure before END needs no
 * ABORT: that target is still reading the stream, which then ends early.
 *
 * Every decision goes out with its own proof (proof.h), and a decision
 * this side will never take has its key forgotten: an aborting source
 * forgets COMMIT, RELEASE and RESUME; one that learns the VM runs on the
 * target forgets ABORT; one whose operator resumes the VM here forgets all
 * but ABORT, and tells the target so (commit_override).
 *
 * The state machines of both sides, with every timeout, are in
 * docs/migration-protocol.md ("Switchover"). This file does the I/O; what
 * each outcome leads to is commit_fsm.c's (m->commit.fsm): every read
 * below becomes an event, and only the action it returns is done.
 * Migration thread only, except where a function says otherwise.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "codec.h"
#include "deadline.h"
#include "phases.h"
#include "commit_io.h"
#include "vm.h"
#include "test_faults.h"

/* The source keeps (or takes back) the VM: what it will never prove again. */
void commit_forget_target_side(struct migration *m)
{
	mig_keys_forget(&m->keys, MIG_DECIDE_COMMIT);
	mig_keys_forget(&m->keys, MIG_DECIDE_RELEASE);
	mig_keys_forget(&m->keys, MIG_DECIDE_RESUME);
}

/*
 * ABORT on c with its proof, bound to c, best effort: 0 or -errno. The
 * ABORT key is forgotten only once the target runs, so this is never
 * refused before.
 */
int commit_abort_on(struct migration *m, struct mig_chan *c, const char *why)
{
	uint8_t bind[MIG_BIND_LEN], sig[MIG_SIG_LEN];
	char err[128];
	int ret;

	chan_binding(c, bind);
	ret =
	    mig_proof_sign(&m->keys, MIG_DECIDE_ABORT, m->session, 0, bind, sig, err, sizeof(err));
	if (!ret)
		ret = chan_send_record(c, MIG_REC_ABORT, sig, sizeof(sig), why, mig_error_len(why));
	return ret;
}

/* ABORT on main, best effort, before the failure shuts the connections down. */
static void send_abort(struct migration *m, const char *why)
{
	/* A copy without the sticky error: the timeout that led here set it. */
	struct mig_chan c = m->main;

	commit_forget_target_side(m); /* this source will never commit now */
	if (c.fd < 0)
		return;
	c.error = 0;
	chan_set_timeout(&c, 1000);
	commit_abort_on(m, &c, why);
}

/* The next record on main, which must be `type`; an ERROR is the target's message. */
int commit_read_reply(struct mig_chan *c, uint32_t type, uint8_t buf[REPLY_MAX], uint32_t *len,
		      char *err, size_t errlen)
{
	char msg[MIG_ERROR_MAX + 1];
	struct mig_rec_hdr h;
	int ret = chan_recv_record(c, REPLY_MAX, &h, buf, REPLY_MAX, err, errlen);

	if (ret)
		return ret;
	if (h.type == MIG_REC_ERROR) {
		mig_error_decode(buf, h.len, msg, sizeof(msg), NULL, 0);
		snprintf(err, errlen, "the target failed: %.200s", msg);
		return -EPROTO;
	}
	if (h.type != type) {
		snprintf(err, errlen, "expected %s from the target, got %s (%u bytes)",
			 mig_rec_name(type), mig_rec_name(h.type), h.len);
		return -EPROTO;
	}
	*len = h.len;
	return 0;
}

int commit_wait_prepared(struct migration *m, struct mig_prepared *p)
{
	uint8_t buf[REPLY_MAX];
	char err[256] = "", why[MIG_ERROR_MAX + 1];
	uint32_t len;
	int ret;

	commit_fsm_init(&m->commit.fsm, m->pc.switching);
	test_hook_step(&m->hooks, TEST_STEP_SOURCE_END_SENT);
	/*
	 * Generous: a slow target (dropping stale pages of a huge guest,
	 * loading state on a loaded host) is still fine, and giving up costs
	 * only a resume here. A dead target resets the connection at once.
	 */
	chan_set_timeout(&m->main, 3 * m->params.timeout_ms);
	blackout_wait_main(m);
	ret = commit_read_reply(&m->main, MIG_REC_PREPARED, buf, &len, err, sizeof(err));
	if (!ret)
		ret = mig_prepared_decode(buf, len, p, err, sizeof(err));
	/* SEND_COMMIT (commit_decide() sends it) or ABORT. */
	if (commit_fsm_step(&m->commit.fsm, ret ? COMMIT_EV_NO_PREPARED : COMMIT_EV_PREPARED) ==
	    COMMIT_ACT_SEND_COMMIT) {
		/* The keys a DECIDED from the target's operator must be proven with. */
		memcpy(m->commit.target_keys, p->keys, sizeof(p->keys));
		return 0;
	}
	if (ret == -EAGAIN || ret == -ETIMEDOUT)
		snprintf(err, sizeof(err), "no PREPARED from the target within %llu ms",
			 (unsigned long long)(3 * m->params.timeout_ms));
	else if (!err[0])
		snprintf(err, sizeof(err), "%s", chan_strerror(ret));
	/* A stalled target that prepares later reads this first: it never runs. */
	snprintf(why, sizeof(why), "the source gave up waiting for PREPARED: %s", err);
	send_abort(m, why);
	migration_fail(m, ret, "waiting for the target to prepare: %s", err);
	return ret;
}

/*
 * A DECIDED from the target (its operator's word), checked against the
 * keys its PREPARED gave: COMMIT_RUNS or COMMIT_DISCARDED, else -EACCES.
 */
static int read_decided(struct migration *m, const struct mig_chan *c, const uint8_t *buf,
			uint32_t len, char *err, size_t errlen)
{
	uint8_t bind[MIG_BIND_LEN];
	struct mig_decided d;
	int ret = mig_decided_decode(buf, len, &d, err, errlen);
	unsigned which = d.what == MIG_DECIDED_RUNS ? MIG_DECIDE_RUN : MIG_DECIDE_DISCARD;

	if (ret)
		return ret;
	chan_binding(c, bind);
	if (!mig_proof_verify(m->commit.target_keys[which - MIG_DECIDE_RUN], which, m->session, 0,
			      bind, d.proof, sizeof(d.proof))) {
		snprintf(err, errlen, "DECIDED (%s) whose proof is not the target's: ignored",
			 mig_decision_name(which));
		return -EACCES;
	}
	return d.what == MIG_DECIDED_RUNS ? COMMIT_RUNS : COMMIT_DISCARDED;
}

/*
 * Reads COMMITTED on c without failing the migration: a missing COMMITTED
 * is an unknown outcome, not a failure. 0, COMMIT_RUNS or COMMIT_DISCARDED
 * (a proven DECIDED: the target's operator settled it), or -errno with err
 * set.
 */
int commit_read_committed(struct migration *m, struct mig_chan *c, struct mig_committed *out,
			  char *err, size_t errlen)
{
	uint8_t buf[REPLY_MAX];
	char msg[MIG_ERROR_MAX + 1];
	struct mig_rec_hdr h;
	int ret = chan_recv_record(c, REPLY_MAX, &h, buf, REPLY_MAX, err, errlen);

	if (ret)
		return ret;
	if (h.type == MIG_REC_DECIDED) {
		ret = read_decided(m, c, buf, h.len, err, errlen);
		if (ret == COMMIT_RUNS)
			memset(out, 0, sizeof(*out));
		return ret;
	}
	if (h.type == MIG_REC_ERROR) {
		mig_error_decode(buf, h.len, msg, sizeof(msg), NULL, 0);
		snprintf(err, errlen, "the target failed: %s", msg);
		return -EPROTO;
	}
	if (h.type != MIG_REC_COMMITTED) {
		snprintf(err, errlen, "expected COMMITTED from the target, got %s (%u bytes)",
			 mig_rec_name(h.type), h.len);
		return -EPROTO;
	}
	return mig_committed_decode(buf, h.len, out, err, errlen);
}

/* Waits until `end` for c to be readable: 0, -ETIMEDOUT, or -errno. */
int commit_wait_readable(const struct mig_chan *c, uint64_t end)
{
	struct pollfd p = {c->fd, POLLIN, 0};
	int n = deadline_poll(&p, 1, end);

	return n > 0 ? 0 : n == 0 ? -ETIMEDOUT : n;
}

/*
 * What commit_read_committed() said, as the commit's event. Any failure of the
 * read (a record still trickling at the deadline too) is main lost; a
 * silent main (the poll's timeout) is the caller's COMMIT_EV_TIMEOUT.
 */
enum commit_event commit_committed_event(int ret, const struct mig_committed *c)
{
	if (ret == 0)
		return c->resume_mono_ns ? COMMIT_EV_COMMITTED : COMMIT_EV_COMMITTED_LATE;
	if (ret == COMMIT_RUNS)
		return COMMIT_EV_DECIDED_RUNS;
	if (ret == COMMIT_DISCARDED)
		return COMMIT_EV_DECIDED_DISCARD;
	if (ret == -EACCES)
		return COMMIT_EV_FORGED; /* read_decided(): its proof is not the target's */
	return COMMIT_EV_MAIN_LOST;
}

int commit_decide(struct migration *m, struct mig_committed *out, char *err, size_t errlen)
{
	enum commit_action act;
	uint64_t end;
	int ret;

	/* commit_wait_prepared() took PREPARED: the state says COMMIT, or nothing goes out. */
	if (m->commit.fsm.st != COMMIT_ST_COMMITTING) {
		snprintf(err, errlen, "no COMMIT from state %s",
			 commit_state_name(m->commit.fsm.st));
		return -EPERM;
	}
	test_hook_step(&m->hooks, TEST_STEP_SOURCE_PREPARED);
	/* The decision, before a byte of COMMIT leaves: no resume here from now on. */
	pthread_mutex_lock(&m->lock);
	m->commit.committed = true;
	pthread_mutex_unlock(&m->lock);
	/* Test hooks: the link dies just before or just after the decision goes out. */
	if (test_fault_on(&m->hooks, TEST_FAULT_CUT_BEFORE_COMMIT))
		chan_cut(&m->main);
	ret = commit_send(m, &m->main, err, errlen);
	if (test_fault_on(&m->hooks, TEST_FAULT_CUT_AFTER_COMMIT))
		chan_cut(&m->main); /* whatever the target answers is lost with the link */
	test_hook_step(&m->hooks, TEST_STEP_SOURCE_COMMIT_SENT);
	if (ret) {
		/* COMMIT may have gone out in part: the outcome is unknown. */
		commit_fsm_step(&m->commit.fsm, COMMIT_EV_MAIN_LOST);
		return ret;
	}
	/*
	 * COMMITTED within T of the COMMIT, whole: one deadline for the wait
	 * and the record. poll first: a silent target must not leave the
	 * channel's sticky error behind (a late COMMITTED still counts); one
	 * that trickles the record past the deadline does, and main is lost.
	 */
	end = deadline_at(now_ns(), m->params.timeout_ms);
	blackout_wait_main(m); /* within the deadline: the poll's bound is far below T */
	ret = commit_wait_readable(&m->main, end);
	if (ret == -ETIMEDOUT) {
		snprintf(err, errlen, "no COMMITTED from the target within %llu ms",
			 (unsigned long long)m->params.timeout_ms);
		commit_fsm_step(&m->commit.fsm, COMMIT_EV_TIMEOUT); /* UNKNOWN */
		return ret;
	}
	chan_set_timeout(&m->main, m->params.timeout_ms);
	if (!ret) {
		chan_set_deadline(&m->main, end);
		ret = commit_read_committed(m, &m->main, out, err, errlen);
		chan_set_deadline(&m->main, 0);
		if (ret == -ETIMEDOUT)
			snprintf(err, errlen, "COMMITTED did not arrive whole within %llu ms",
				 (unsigned long long)m->params.timeout_ms);
	} else {
		snprintf(err, errlen, "main connection: %s", strerror(-ret));
	}
	act = commit_fsm_step(&m->commit.fsm, commit_committed_event(ret, out));
	switch (act) {
	case COMMIT_ACT_RELEASE:
		/* Precopy, or a late COMMITTED (a DECIDED's is zeroed): it runs on RELEASE. */
		commit_release(m, &m->main);
		return 0;
	case COMMIT_ACT_RUNS_THERE:
		return 0; /* postcopy: RELEASE after POSTCOPY_DONE */
	case COMMIT_ACT_RESUME_HERE:
		snprintf(err, errlen, "the target's operator discarded its copy (proven)");
		return COMMIT_DISCARDED;
	default:
		/* UNKNOWN (postcopy: paused, even after a proven DISCARD; see commit_fsm.c). */
		if (ret == COMMIT_DISCARDED)
			snprintf(err, errlen, "the target's operator discarded its copy (proven)");
		return ret ? ret : -EPROTO;
	}
}

int commit_send(struct migration *m, struct mig_chan *c, char *err, size_t errlen)
{
	uint8_t bind[MIG_BIND_LEN], sig[MIG_SIG_LEN];
	int ret;

	/* Refused (forgotten) once this source aborted or its operator took the VM back. */
	chan_binding(c, bind);
	ret = mig_proof_sign(&m->keys, MIG_DECIDE_COMMIT, m->session, 0, bind, sig, err, errlen);
	return ret ? ret : send_rec(c, MIG_REC_COMMIT, sig, sizeof(sig), NULL, 0, err, errlen);
}

int commit_resume_send(struct migration *m, struct mig_chan *c, uint32_t attempt, char *err,
		       size_t errlen)
{
	uint8_t bind[MIG_BIND_LEN], sig[MIG_SIG_LEN];
	int ret;

	/* Only a committed source resumes, and never once its operator took the VM back. */
	if (commit_fsm_step(&m->commit.fsm, COMMIT_EV_RESUME) != COMMIT_ACT_SEND_RESUME) {
		snprintf(err, errlen, "no RESUME from the switchover's state %s",
			 commit_state_name(m->commit.fsm.st));
		return -EPERM;
	}
	chan_binding(c, bind);
	ret = mig_proof_sign(&m->keys, MIG_DECIDE_RESUME, m->session, attempt, bind, sig, err,
			     errlen);
	if (ret)
		return ret;
	/* From here the target may run on it: the operator can no longer take the VM back. */
	pthread_mutex_lock(&m->lock);
	m->commit.resumed_once = true;
	pthread_mutex_unlock(&m->lock);
	return send_rec(c, MIG_REC_RESUME, sig, sizeof(sig), NULL, 0, err, errlen);
}

void commit_release(struct migration *m, struct mig_chan *c)
{
	uint8_t bind[MIG_BIND_LEN], sig[MIG_SIG_LEN];
	char err[128];

	/* The VM runs on the target: this source can never claim it back. */
	mig_keys_forget(&m->keys, MIG_DECIDE_ABORT);
	chan_binding(c, bind);
	/* A source whose operator took the VM back has no RELEASE key left: nothing goes out. */
	if (mig_proof_sign(&m->keys, MIG_DECIDE_RELEASE, m->session, 0, bind, sig, err,
			   sizeof(err)))
		return;
	/* Best effort: a target that misses it keeps answering recover connections. */
	chan_set_timeout(c, 1000);
	send_rec(c, MIG_REC_RELEASE, sig, sizeof(sig), NULL, 0, err, sizeof(err));
}
