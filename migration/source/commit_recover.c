/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commit_recover.c - the source's switchover commit once its outcome is
 * unknown (commit_fsm.h's UNKNOWN): the precopy wait for a late COMMITTED
 * or DECIDED on main (commit_settle), the operator's recover connection to
 * the target (RECOVER_STATE, then COMMIT again or RELEASE), and the
 * operator's resume here (commit_override, postcopy's too). commit.c has
 * the records and the commit up to COMMITTED; each outcome here is an
 * event of m->commit.fsm, and only its action is done. Migration thread.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "clock.h"
#include "codec.h"
#include "commit_io.h"
#include "deadline.h"
#include "vm.h"

/* How often the UNKNOWN wait looks at main and at a recover request. */
#define SETTLE_TICK_MS 100

/*
 * The operator took the VM back (`--decide resume`): forgets COMMIT,
 * RELEASE and RESUME, then tells the target, proven with ABORT, on main
 * while it is open (then reset when it closes) and on a recover
 * connection to `to` (at most timeout_ms; the target may be gone, which is
 * what the operator said). A target told so discards its copy; one that
 * already ran stops. Precopy's UNKNOWN and postcopy's unconfirmed pause.
 */
void commit_override(struct migration *m, const char *to)
{
	static const char why[] =
	    "the source's operator resumed the VM there (recover --decide resume)";
	struct mig_chan c = m->main;
	struct mig_recover_state rs;
	uint8_t buf[REPLY_MAX];
	uint32_t len;
	char err[256];
	int ret;

	commit_forget_target_side(m);
	if (c.fd >= 0) {
		/* Closed with a reset: a COMMIT still unsent is dropped, never delivered alone. */
		struct linger lg = {1, 0};

		c.error = 0;
		chan_set_timeout(&c, 1000);
		commit_abort_on(m, &c, why);
		setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	c = (struct mig_chan){.fd = -1};
	ret = session_connect(m, &c, to, err, sizeof(err));
	if (!ret) {
		/* The exchange within T of the connection, as recover_once()'s. */
		chan_set_timeout(&c, m->params.timeout_ms);
		chan_set_deadline(&c, deadline_at(now_ns(), m->params.timeout_ms));
		ret = chan_send_hello(&c, m->session, MIG_ROLE_RECOVER, 0);
	}
	if (!ret)
		ret = commit_read_reply(&c, MIG_REC_RECOVER_STATE, buf, &len, err, sizeof(err));
	if (!ret)
		ret = mig_recover_state_decode(buf, len, &rs, err, sizeof(err));
	if (!ret)
		ret = commit_abort_on(m, &c, why);
	chan_close(&c);
}

/*
 * One recover connection to `to`: RECOVER_STATE, then COMMIT (a prepared
 * target) and COMMITTED, then RELEASE. 0: the VM runs on the target.
 */
static int recover_once(struct migration *m, const char *to, struct mig_committed *out, char *err,
			size_t errlen)
{
	struct mig_chan c = {.fd = -1};
	struct mig_recover_state rs;
	uint8_t buf[REPLY_MAX];
	enum commit_action act;
	uint32_t len;
	int ret = session_connect(m, &c, to, err, errlen);

	/* The whole exchange within T of the connection: one deadline for every reply. */
	if (!ret) {
		chan_set_timeout(&c, m->params.timeout_ms);
		chan_set_deadline(&c, deadline_at(now_ns(), m->params.timeout_ms));
		ret = chan_send_hello(&c, m->session, MIG_ROLE_RECOVER, 0);
	}
	if (!ret)
		ret = commit_read_reply(&c, MIG_REC_RECOVER_STATE, buf, &len, err, errlen);
	if (!ret)
		ret = mig_recover_state_decode(buf, len, &rs, err, errlen);
	act = ret ? COMMIT_ACT_WAIT
		  : commit_fsm_step(&m->commit.fsm, rs.state == MIG_RECOVER_PREPARED
							? COMMIT_EV_RECOVER_PREPARED
							: COMMIT_EV_RECOVER_RUNNING);
	if (act == COMMIT_ACT_SEND_COMMIT) {
		/* We committed before the outcome got lost: the decision stands. */
		ret = commit_send(m, &c, err, errlen);
		if (!ret)
			ret = commit_read_committed(m, &c, out, err, errlen);
		/* Only COMMITTED (or a DECIDED that it runs) settles it here. */
		act = ret == 0 || ret == COMMIT_RUNS
			  ? commit_fsm_step(&m->commit.fsm, commit_committed_event(ret, out))
			  : COMMIT_ACT_WAIT;
		ret = act == COMMIT_ACT_RELEASE ? 0 : ret ? ret : -EPROTO;
	}
	if (act == COMMIT_ACT_RELEASE) {
		commit_release(m, &c);
		chan_set_deadline(&c, 0);
		/*
		 * Held, in main's place, until we exit (migration_free): with main
		 * gone, its end tells the target that we left and that our API
		 * socket path is free for it to take.
		 */
		pthread_mutex_lock(&m->lock);
		chan_close(&m->main);
		m->main = c;
		pthread_mutex_unlock(&m->lock);
		return 0;
	}
	if (!err[0])
		snprintf(err, errlen, "%s", chan_strerror(ret));
	chan_close(&c);
	commit_fsm_step(&m->commit.fsm, COMMIT_EV_RECOVER_FAILED); /* stays UNKNOWN */
	return ret ? ret : -EPROTO;
}

/* The recover request migration_recover() left, under `lock`; false if none. */
static bool take_recover(struct migration *m, char *to, size_t tolen, bool *resume_here)
{
	bool any;

	pthread_mutex_lock(&m->lock);
	any = m->commit.recover_requested;
	m->commit.recover_requested = false;
	snprintf(to, tolen, "%s", m->commit.recover_to);
	*resume_here = m->commit.recover_resume_here;
	pthread_mutex_unlock(&m->lock);
	return any;
}

static void recover_failed(struct migration *m, const char *to, const char *why)
{
	pthread_mutex_lock(&m->lock);
	m->progress.recover_attempts++;
	snprintf(m->progress.error, sizeof(m->progress.error),
		 "switchover outcome unknown; recovering through %.60s failed: %.120s", to, why);
	pthread_mutex_unlock(&m->lock);
}

int commit_settle(struct migration *m, struct mig_committed *out, const char *why)
{
	struct commit_fsm *f = &m->commit.fsm;
	char to[256], err[256];

	pthread_mutex_lock(&m->lock);
	m->progress.state = MIGRATION_SWITCHOVER_UNKNOWN;
	snprintf(m->progress.error, sizeof(m->progress.error),
		 "switchover outcome unknown (%.150s): the VM stays paused; "
		 "`vmm migrate --recover` settles it",
		 why);
	pthread_mutex_unlock(&m->lock);
	if (m->main.fd < 0)
		commit_fsm_step(f, COMMIT_EV_MAIN_LOST);
	for (;;) {
		enum commit_action act = COMMIT_ACT_WAIT;
		bool resume_here;
		int ret;

		/* The process is going away (a fatal VM error): nothing may run here again. */
		if (vm_stopping(m->vm) &&
		    commit_fsm_step(f, COMMIT_EV_VM_STOPPING) == COMMIT_ACT_STOP)
			return -ESRCH;
		if (f->main_alive) {
			ret = commit_wait_readable(&m->main, deadline_at(now_ns(), SETTLE_TICK_MS));
			if (!ret) {
				err[0] = '\0';
				/* A late COMMITTED (the target did run on our COMMIT), or a
				 * DECIDED. */
				ret = commit_read_committed(m, &m->main, out, err, sizeof(err));
				act = commit_fsm_step(f, commit_committed_event(ret, out));
			} else {
				act = commit_fsm_step(f, ret == -ETIMEDOUT ? COMMIT_EV_TIMEOUT
									   : COMMIT_EV_MAIN_LOST);
			}
		} else {
			sleep_ms(SETTLE_TICK_MS);
		}
		if (act == COMMIT_ACT_RELEASE) {
			commit_release(m, &m->main);
			return 0;
		}
		/* Its operator discarded it: the VM is ours alone again. */
		if (act == COMMIT_ACT_RESUME_HERE)
			return COMMIT_DISCARDED;
		if (!take_recover(m, to, sizeof(to), &resume_here))
			continue;
		if (resume_here) {
			if (commit_fsm_step(f, COMMIT_EV_OPERATOR_RESUME) != COMMIT_ACT_OVERRIDE)
				continue;
			commit_override(m, to);
			return 1;
		}
		err[0] = '\0';
		if (!recover_once(m, to, out, err, sizeof(err)))
			return 0;
		recover_failed(m, to, err);
	}
}
