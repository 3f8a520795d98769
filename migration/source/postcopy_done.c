/* SPDX-License-Identifier: Apache-2.0 */
/*
 * postcopy_done.c - the end of a postcopy push, source side: the wait for
 * the target's POSTCOPY_DONE, each record of it (a HEARTBEAT or DONE)
 * bounded by a deadline of MIG_HEARTBEAT_DEAD_MS (protocol.h), then
 * RELEASE. Migration thread only.
 */
#include <errno.h>
#include <stdio.h>

#include "clock.h"
#include "codec.h"
#include "deadline.h"
#include "phases.h"

/*
 * The next record on main while waiting for POSTCOPY_DONE: the target's
 * HEARTBEAT comes every MIG_HEARTBEAT_MS, so a record that has not arrived
 * whole MIG_HEARTBEAT_DEAD_MS after the wait for it began means a dead,
 * blackholed or trickling link (the caller pauses: a resume goes on). A
 * deadline fixed when the wait starts, not a timeout per read: a peer that
 * lets one byte through just before each read would time out cannot keep
 * the source postcopy-active (issue 36, finding 4). 0 with *h and buf, or
 * -errno with err set.
 */
static int next_on_main(struct migration *m, struct mig_rec_hdr *h, uint8_t buf[REPLY_MAX],
			char *err, size_t errlen)
{
	char msg[MIG_ERROR_MAX + 1];
	int ret;

	chan_set_deadline(&m->main, deadline_at(now_ns(), MIG_HEARTBEAT_DEAD_MS));
	ret = chan_recv_record(&m->main, REPLY_MAX, h, buf, REPLY_MAX, err, errlen);
	chan_set_deadline(&m->main, 0);
	if (ret == -EAGAIN || ret == -ETIMEDOUT || ret == -EWOULDBLOCK)
		snprintf(err, errlen,
			 "no whole record from the target within %u ms (it sends a heartbeat "
			 "every %u ms): the link is dead, blackholed or trickling",
			 MIG_HEARTBEAT_DEAD_MS, MIG_HEARTBEAT_MS);
	if (ret)
		return ret;
	if (h->type == MIG_REC_ERROR) {
		mig_error_decode(buf, h->len, msg, sizeof(msg), NULL, 0);
		snprintf(err, errlen, "the target failed: %.200s", msg);
		return -EPROTO;
	}
	if (h->type != MIG_REC_POSTCOPY_DONE && h->type != MIG_REC_HEARTBEAT) {
		snprintf(err, errlen, "expected POSTCOPY_DONE or HEARTBEAT, got %s (%u bytes)",
			 mig_rec_name(h->type), h->len);
		return -EPROTO;
	}
	return 0;
}

int postcopy_wait_done(struct migration *m)
{
	static const char what[] = "waiting for POSTCOPY_DONE";
	struct mig_postcopy_done d = {0};
	struct mig_heartbeat hb;
	struct mig_rec_hdr h;
	uint8_t buf[REPLY_MAX];
	char err[256];
	int ret;

	/* However long the last pages take, the target's heartbeat bounds each wait. */
	chan_set_timeout(&m->main, MIG_HEARTBEAT_DEAD_MS);
	for (;;) {
		ret = next_on_main(m, &h, buf, err, sizeof(err));
		if (!ret && h.type == MIG_REC_POSTCOPY_DONE)
			ret = mig_postcopy_done_decode(buf, h.len, &d, err, sizeof(err));
		else if (!ret)
			ret = mig_heartbeat_decode(buf, h.len, &hb, err, sizeof(err));
		if (ret) {
			migration_fail(m, ret, "%s: %s", what, err);
			return ret;
		}
		if (h.type == MIG_REC_POSTCOPY_DONE)
			break;
		/* DONE went out but never came (lost on the way): every page is there. */
		if (hb.flags & MIG_HEARTBEAT_DONE)
			break;
	}
	pthread_mutex_lock(&m->lock);
	m->progress.faults = d.faults;
	m->progress.fault_p50_us = d.fault_p50_us;
	m->progress.fault_p99_us = d.fault_p99_us;
	m->progress.fault_max_us = d.fault_max_us;
	pthread_mutex_unlock(&m->lock);
	/* We have DONE: the target may stop waiting for a resume (unless taken back). */
	if (commit_fsm_step(&m->commit.fsm, COMMIT_EV_POSTCOPY_DONE) == COMMIT_ACT_RELEASE)
		commit_release(m, &m->main);
	return 0;
}
