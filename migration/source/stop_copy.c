/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SWITCHOVER by stop-and-copy: pause the vCPUs, final concurrent harvest,
 * SWITCHOVER, the last pages on the data connections (no CLEAR: the vCPUs
 * are stopped) and meanwhile the device/VM/vCPU state on main, then
 * CHANNEL_END on each data connection and END, then the commit (commit.c): PREPARED, COMMIT,
 * COMMITTED, RELEASE. The downtime runs from the pause to the target's
 * resume, and its parts are reported (blackout_*_us). Before COMMIT any
 * failure resumes the vCPUs here with all of their memory; after it only
 * the target's answer, a recover or the operator settles the outcome.
 *
 * A local handover (params.local) is this without pages: pause,
 * SWITCHOVER, the state, END and the same commit. The target maps the
 * guest's memfd, so the source's memory is the target's: it is never
 * written here after the pause, and a source that resumes (no COMMIT)
 * finds it as it left it.
 */
#include <errno.h>

#include "clock.h"
#include "codec.h"
#include "phases.h"

/* After END: the commit. 0: the VM runs on the target. */
static int commit(struct migration *m, uint64_t *t_pause)
{
	struct mig_prepared prep;
	char err[256] = "";
	int ret = commit_wait_prepared(m, &prep);

	if (ret)
		return ret;
	pthread_mutex_lock(&m->lock);
	m->progress.target_restore_us = prep.restore_us;
	pthread_mutex_unlock(&m->lock);
	/* 0: it runs there, and RELEASE went out (commit_fsm.c decided so). */
	ret = commit_decide(m, &m->commit.ack, err, sizeof(err));
	if (!ret)
		return 0;
	if (ret != COMMIT_DISCARDED)
		ret = commit_settle(m, &m->commit.ack, err);
	if (ret == COMMIT_DISCARDED) {
		migration_fail(m, -ECANCELED,
			       "the target's operator discarded its copy (recover --decide "
			       "discard there, proven): the VM runs on the source");
		return -ECANCELED;
	}
	if (ret == 1) {
		migration_fail(m, -ECANCELED,
			       "the switchover's outcome was unknown and the operator resumed the "
			       "VM on the source (recover --decide resume)");
		return -ECANCELED;
	}
	if (ret) {
		*t_pause = 0; /* the VM is stopping: it must not run again here */
		migration_fail(m, ret, "the VM stopped while the switchover's outcome was unknown");
		return ret;
	}
	pthread_mutex_lock(&m->lock);
	m->progress.state = MIGRATION_SWITCHOVER;
	m->progress.error[0] = '\0';
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int stop_and_copy(struct migration *m, uint64_t t_start, uint64_t *t_pause)
{
	struct harvest_stats st;
	uint8_t so[MIG_SWITCHOVER_LEN];
	char err[256];
	uint64_t t1, t2, t3, t_state;
	int ret, state_ret;

	ret = blackout_begin(m, t_pause);
	if (ret)
		return ret;
	test_hook_step(&m->hooks, TEST_STEP_SOURCE_PAUSED);
	/* A local handover sends no page: the target maps the same memory. */
	if (!m->params.local) {
		ret = harvest_pass(m, m->pass, &st);
		if (ret)
			return ret;
		pthread_mutex_lock(&m->lock);
		m->progress.harvest_final_us = st.wall_ns / 1000;
		pthread_mutex_unlock(&m->lock);
	}
	mig_switchover_encode(so, &(struct mig_switchover){.pass = m->pass});
	ret = send_rec(&m->main, MIG_REC_SWITCHOVER, so, sizeof(so), NULL, 0, err, sizeof(err));
	if (ret) {
		migration_fail(m, ret, "sending SWITCHOVER: %s", err);
		return ret;
	}
	/*
	 * The state is saved and sent on `main` while the senders send the last
	 * pages: the two overlap instead of adding up in the downtime.
	 */
	t1 = now_ns();
	if (!m->params.local) {
		progress_phase_begin(m, st.pending);
		send_pass_start(m);
	}
	state_ret = send_state(m);
	t_state = now_ns() - t1;
	ret = 0;
	if (!m->params.local) {
		ret = send_pass_finish(m);
		progress_phase_end(m);
	}
	t2 = now_ns();
	if (!ret)
		ret = state_ret;
	if (!ret)
		ret = finish_channels(m);
	t3 = now_ns();
	if (!ret)
		ret = commit(m, t_pause);
	pthread_mutex_lock(&m->lock);
	m->progress.blackout_send_us = (t2 - t1) / 1000;
	/* Saving and sending the state (during the send), then CHANNEL_END and END. */
	m->progress.blackout_state_us = (t_state + t3 - t2) / 1000;
	m->progress.blackout_ack_us = (now_ns() - t3) / 1000;
	blackout_record_waits(m);
	if (!ret)
		record_downtime(m, *t_pause, &m->commit.ack);
	pthread_mutex_unlock(&m->lock);
	update_live(m, t_start);
	return ret;
}
