/* SPDX-License-Identifier: Apache-2.0 */
/*
 * settle_records.c - the source's decision records on the target, checked
 * and applied wherever they come from: main (settle.c), a recover
 * connection or a resumed session (the gate's workers, gate_late.c, through
 * the hooks settle_open_late() gives it). COMMIT, RELEASE, ABORT and a
 * resumed session's RESUME must each carry the proof of that decision
 * (proof.h), bound to the connection they came on; anything else is
 * refused and changes nothing. The states: docs/migration-protocol.md,
 * "Switchover".
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "codec.h"
#include "incoming.h"
#include "postcopy.h"
#include "settle.h"
#include "settle_state.h"
#include "vm.h"

struct settle *settle_get(struct incoming *in)
{
	if (!in->sw.settle) {
		in->sw.settle = calloc(1, sizeof(*in->sw.settle));
		if (in->sw.settle) {
			pthread_mutex_init(&in->sw.settle->lock, NULL);
			/* Precopy until prepare() knows (settle.c): nothing steps it before. */
			settle_fsm_init(&in->sw.settle->fsm, false);
			in->sw.settle->main_alive = true;
			in->sw.settle->leave_fd = -1;
		}
	}
	return in->sw.settle;
}

/*
 * COMMITTED on c. In time: the VM runs from now on (the caller resumes it
 * at once). Late (late = true): resume_mono_ns 0 says that this target
 * resumes only on the source's RELEASE, so a source that meanwhile resumed
 * its own copy on the operator's word (it never sends RELEASE then) is
 * never joined by this one.
 */
void settle_send_committed(struct incoming *in, struct mig_chan *c, bool on_main, bool late)
{
	uint8_t b[MIG_COMMITTED_LEN];
	struct mig_committed ack = {0};

	host_boot_id(ack.boot_id);
	ack.resume_mono_ns = late ? 0 : now_ns();
	ack.restore_us = in->sw.restore_us;
	mig_committed_encode(b, &ack);
	if (on_main) {
		incoming_send_main(in, MIG_REC_COMMITTED, b, sizeof(b), NULL, 0);
	} else {
		chan_set_timeout(c, 1000);
		chan_send_record(c, MIG_REC_COMMITTED, b, sizeof(b), NULL, 0);
	}
}

/* The proof a decision record must carry, and how the refusal names it. */
static unsigned decision_of(uint32_t type)
{
	return type == MIG_REC_COMMIT	 ? MIG_DECIDE_COMMIT
	       : type == MIG_REC_RELEASE ? MIG_DECIDE_RELEASE
	       : type == MIG_REC_RESUME	 ? MIG_DECIDE_RESUME
					 : MIG_DECIDE_ABORT;
}

int settle_refuse_proof(uint32_t type, uint32_t len, char *err, size_t errlen)
{
	if (len < MIG_SIG_LEN)
		snprintf(err, errlen, "%s of %u bytes carries no proof: refused",
			 mig_rec_name(type), len);
	else
		snprintf(err, errlen,
			 "%s whose proof does not verify (not this migration's source's %s key, "
			 "or made for another connection or attempt): refused",
			 mig_rec_name(type), mig_decision_name(decision_of(type)));
	return -EACCES;
}

/*
 * One record of the source's decision on c: COMMIT, ABORT (reason in
 * err) or RELEASE, each with its own proof (proof.h) bound to c, else
 * refused (-EACCES, err says what was wrong). Returns the record type, or
 * -errno.
 */
int settle_read_decision(struct incoming *in, struct mig_chan *c, char *err, size_t errlen)
{
	uint8_t buf[MIG_SIG_LEN + MIG_ERROR_MAX];
	char msg[MIG_ERROR_MAX + 1];
	struct mig_rec_hdr h;
	int ret = chan_recv_record(c, sizeof(buf), &h, buf, sizeof(buf), err, errlen);
	uint32_t plen;

	if (ret)
		return ret;
	if (h.type != MIG_REC_COMMIT && h.type != MIG_REC_RELEASE && h.type != MIG_REC_ABORT) {
		snprintf(err, errlen, "expected COMMIT, ABORT or RELEASE, got %s",
			 mig_rec_name(h.type));
		return -EPROTO;
	}
	/* An ABORT's message follows its proof; the others are the proof alone. */
	plen = h.type == MIG_REC_ABORT && h.len >= MIG_SIG_LEN ? MIG_SIG_LEN : h.len;
	if (!incoming_proof_ok(in, c, decision_of(h.type), 0, buf, plen))
		return settle_refuse_proof(h.type, h.len, err, errlen);
	if (h.type == MIG_REC_ABORT) {
		mig_error_decode(buf + MIG_SIG_LEN, h.len - MIG_SIG_LEN, msg, sizeof(msg), NULL, 0);
		snprintf(err, errlen, "the source aborted the switchover: %.200s", msg);
	}
	return (int)h.type;
}

enum settle_action settle_step(struct settle *s, enum settle_event ev)
{
	bool was_running = s->running;
	enum settle_action a = settle_fsm_step(&s->fsm, ev);
	enum settle_state st = s->fsm.st;

	if (st == SETTLE_ST_PREPARED)
		s->decision = INCOMING_UNDECIDED;
	else if (st == SETTLE_ST_UNKNOWN || st == SETTLE_ST_PENDING)
		s->decision = INCOMING_UNKNOWN;
	else
		s->decision = st == SETTLE_ST_DISCARDED ? INCOMING_ABORT : INCOMING_COMMIT;
	s->running = settle_fsm_running(st);
	s->pending = st == SETTLE_ST_PENDING;
	s->released = st == SETTLE_ST_RELEASED || st == SETTLE_ST_DONE;
	s->finished = st == SETTLE_ST_DONE;
	s->main_alive = s->fsm.main_alive;
	if (s->running && !was_running)
		s->running_ns = now_ns();
	return a;
}

/*
 * A decision record read on c (main, or a recover connection on its gate
 * worker) once the outcome was open: a COMMIT is late by definition and
 * runs the VM only once RELEASE follows. Decided whole under the lock by
 * settle_fsm.c, as several connections may race (a forged ABORT against
 * the source's COMMIT: whichever comes first stands, and an ABORT never
 * undoes a COMMIT already answered); the reply goes out after.
 */
void settle_apply(struct incoming *in, struct mig_chan *c, bool on_main, int type, const char *err)
{
	struct settle *s = in->sw.settle;
	enum settle_action act;

	pthread_mutex_lock(&s->lock);
	act = settle_step(s, type == MIG_REC_COMMIT  ? SETTLE_EV_COMMIT_LATE
			     : type == MIG_REC_ABORT ? SETTLE_EV_ABORT
						     : SETTLE_EV_RELEASE);
	/*
	 * Proven: the source runs the VM (it aborted, or its operator took it
	 * back). Even a late COMMIT answered is void then: that source forgot
	 * its RELEASE key and will never send one.
	 */
	if (act == SETTLE_ACT_DISCARD)
		snprintf(s->reason, sizeof(s->reason), "%s", err ? err : "");
	if ((act == SETTLE_ACT_RELEASED || act == SETTLE_ACT_RUN_RELEASED) && !on_main &&
	    !s->main_alive && s->leave_fd < 0) {
		/*
		 * Main is gone: this connection's end is the source's exit (it
		 * holds it until then). Only then is its API socket path ours.
		 * fcntl, not dup: the handshake workers' seccomp list.
		 */
		s->leave_fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
		s->released_ns = now_ns();
		if (s->leave_fd < 0)
			settle_step(s, SETTLE_EV_SOURCE_LEFT); /* nothing to watch: done */
	}
	pthread_mutex_unlock(&s->lock);
	if (act == SETTLE_ACT_COMMITTED_LATE)
		settle_send_committed(in, c, on_main, true);
	if (act == SETTLE_ACT_STOP_VM)
		vm_request_stop(
		    in->vm, VM_END_ERROR, 1,
		    "the source proved that it runs the VM (ABORT after COMMIT: %s): this "
		    "copy stops, so that only one runs",
		    err ? err : "");
}

/*
 * Waits (bounded by deadline_ns) until the decision may come from
 * elsewhere than main. On c (NULL: none) a hang-up ends the wait too: the
 * peer left, or the gate evicted the connection (chan_abort), which must
 * not wait for the deadline to get its worker back.
 */
static bool wait_open(struct settle *s, struct mig_chan *c, uint64_t deadline_ns)
{
	for (;;) {
		struct pollfd p = {.fd = c ? c->fd : -1, .events = POLLRDHUP};
		bool open;

		pthread_mutex_lock(&s->lock);
		open = s->open;
		pthread_mutex_unlock(&s->lock);
		if (open)
			return true;
		if (now_ns() >= deadline_ns)
			return false;
		if (poll(&p, 1, 20) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return false;
	}
}

/*
 * gate_late.recover: a recover connection of this session, on its gate
 * worker, all of it bounded by the gate's deadline for the connection.
 * RECOVER_STATE, then the decision (a prepared target) and RELEASE.
 */
static int serve_recover(void *opaque, struct mig_chan *c, uint64_t deadline_ns, char *err,
			 size_t errlen)
{
	struct incoming *in = opaque;
	struct settle *s = in->sw.settle;
	struct mig_recover_state rs = {0};
	uint8_t b[MIG_RECOVER_STATE_LEN];
	enum settle_action act = SETTLE_ACT_REFUSE;
	int ret;

	if (wait_open(s, c, deadline_ns)) {
		pthread_mutex_lock(&s->lock);
		act = settle_step(s, SETTLE_EV_RECOVER);
		pthread_mutex_unlock(&s->lock);
	}
	if (act != SETTLE_ACT_ANSWER_RUNNING && act != SETTLE_ACT_ANSWER_PREPARED) {
		snprintf(err, errlen,
			 "recover: the decision is still being read on main: try again");
		return -EBUSY;
	}
	rs.state = act == SETTLE_ACT_ANSWER_RUNNING ? MIG_RECOVER_RUNNING : MIG_RECOVER_PREPARED;
	mig_recover_state_encode(b, &rs);
	chan_set_timeout(c, HANDSHAKE_TIMEOUT_MS);
	ret = chan_send_record(c, MIG_REC_RECOVER_STATE, b, sizeof(b), NULL, 0);
	if (ret)
		snprintf(err, errlen, "recover: sending RECOVER_STATE: %s", chan_strerror(ret));
	while (!ret) {
		int type = settle_read_decision(in, c, err, errlen);

		/* A refused proof, garbage, a hang-up before RELEASE: reported by the gate. */
		if (type < 0) {
			if (type == -EACCES) { /* refused: nothing changes (settle_fsm.c) */
				pthread_mutex_lock(&s->lock);
				settle_step(s, SETTLE_EV_FORGED);
				pthread_mutex_unlock(&s->lock);
			}
			return type;
		}
		settle_apply(in, c, false, type, err);
		if (type != MIG_REC_COMMIT)
			break;
	}
	return ret;
}

/*
 * gate_late.resumed: a main-resume of this session on its gate worker, its
 * hello read. Its first record must be RESUME with the proof of its own
 * attempt (the hello's), bound to this connection, and newer than any
 * attempt taken before: a proof read off an earlier attempt opens
 * nothing. Only a committed source resumes: to a target still waiting for
 * the decision it is the COMMIT; either way the old session is over and
 * the control thread takes the new one from the gate. 0, or -errno with
 * err set (-EACCES: the proof; -EBUSY: decided otherwise, or still being
 * read on main).
 */
static int resumed(void *opaque, struct mig_chan *c, uint32_t attempt, uint64_t deadline_ns,
		   char *err, size_t errlen)
{
	struct incoming *in = opaque;
	struct settle *s = in->sw.settle;
	uint8_t hb[MIG_REC_HDR_LEN], b[MIG_SIG_LEN];
	enum settle_action act = SETTLE_ACT_REFUSE;
	struct mig_rec_hdr h;
	bool fresh;
	/*
	 * The header by hand, not through the table: a record that is not
	 * RESUME is refused for what it is (a COMMIT, protocol 5's opening),
	 * unread; RESUME's length is checked before its payload is.
	 */
	int ret = chan_read(c, hb, sizeof(hb));

	if (ret) {
		snprintf(err, errlen, "a resumed session's first record: %s", chan_strerror(ret));
		return ret;
	}
	mig_rec_hdr_decode(hb, &h);
	if (h.type != MIG_REC_RESUME) {
		snprintf(err, errlen,
			 "a resumed session must open with RESUME (its attempt's proof), not %s: "
			 "refused",
			 mig_rec_name(h.type));
		return -EACCES;
	}
	if (h.len != MIG_SIG_LEN)
		return settle_refuse_proof(h.type, h.len, err, errlen);
	ret = chan_read(c, b, sizeof(b));
	if (ret) {
		snprintf(err, errlen, "RESUME: %s", chan_strerror(ret));
		return ret;
	}
	chan_note_record(c); /* whole: the gate no longer counts this connection stalled */
	if (!incoming_proof_ok(in, c, MIG_DECIDE_RESUME, attempt, b, h.len))
		return settle_refuse_proof(h.type, h.len, err, errlen);
	pthread_mutex_lock(&s->lock);
	fresh = attempt > s->resume_attempt;
	if (fresh)
		s->resume_attempt = attempt;
	else
		settle_step(s, SETTLE_EV_RESUME_REPLAY); /* refused: nothing changes */
	pthread_mutex_unlock(&s->lock);
	if (!fresh) {
		snprintf(err, errlen,
			 "RESUME of attempt %u, which was taken before (a replay): refused",
			 attempt);
		return -EACCES;
	}
	if (wait_open(s, c, deadline_ns)) {
		/* To a target still waiting for the decision it is the COMMIT. */
		pthread_mutex_lock(&s->lock);
		act = settle_step(s, SETTLE_EV_RESUME);
		pthread_mutex_unlock(&s->lock);
	}
	if (act != SETTLE_ACT_RESUME_SESSION) {
		snprintf(err, errlen,
			 "no resume: this target's switchover was decided otherwise, or is still "
			 "being decided");
		return -EBUSY; /* discarded here (an ABORT or the operator) */
	}
	pc_mark_lost(&in->pc, "the source resumed the session");
	return 0;
}

void settle_open_late(struct incoming *in)
{
	struct gate_late lt = {.session = in->session,
			       .resume = __atomic_load_n(&in->post.on, __ATOMIC_ACQUIRE),
			       .opaque = in};

	/* The hooks use the settle state from their first connection on: none, no hooks. */
	if (settle_get(in)) {
		lt.recover = serve_recover;
		lt.resumed = resumed;
	}
	gate_late_open(in->gate, &lt);
}
