/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SWITCHOVER by stop-and-copy: pause the vCPUs, final concurrent harvest,
 * SWITCHOVER, the last pages on the data connections (no CLEAR: the vCPUs
 * are stopped), the device/VM/vCPU state, CHANNEL_END on each data
 * connection and END, then wait for the target's ACK. The downtime runs
 * from the pause to the target's resume, and its parts are reported
 * (blackout_*_us). Only the ACK hands the VM over; on any failure before it
 * the caller resumes the vCPUs here with all of their memory.
 */
#include "clock.h"
#include "codec.h"
#include "phases.h"

int stop_and_copy(struct migration *m, uint64_t t_start, uint64_t *t_pause)
{
	struct harvest_stats st;
	uint8_t so[MIG_SWITCHOVER_LEN];
	char err[256];
	struct mig_ack *ack = &m->ack;
	uint64_t t1, t2, t3;
	int ret;

	ret = blackout_begin(m, t_pause);
	if (ret)
		return ret;
	ret = harvest_pass(m, &st);
	if (ret)
		return ret;
	pthread_mutex_lock(&m->lock);
	m->progress.harvest_us_final = st.wall_ns / 1000;
	pthread_mutex_unlock(&m->lock);
	mig_switchover_encode(so, &(struct mig_switchover){.pass = m->pass});
	ret = send_rec(&m->main, MIG_REC_SWITCHOVER, so, sizeof(so), NULL, 0, err, sizeof(err));
	if (ret) {
		migration_fail(m, ret, "sending SWITCHOVER: %s", err);
		return ret;
	}
	t1 = now_ns();
	ret = send_pass(m);
	t2 = now_ns();
	if (!ret)
		ret = send_state(m);
	if (!ret)
		ret = finish_channels(m);
	t3 = now_ns();
	if (!ret)
		ret = wait_ack(m, ack);
	pthread_mutex_lock(&m->lock);
	m->progress.blackout_send_us = (t2 - t1) / 1000;
	m->progress.blackout_state_us = (t3 - t2) / 1000;
	m->progress.blackout_ack_us = (now_ns() - t3) / 1000;
	m->progress.target_restore_us = ack->restore_us;
	if (!ret)
		record_downtime(m, *t_pause, ack);
	pthread_mutex_unlock(&m->lock);
	update_live(m, t_start);
	return ret;
}
