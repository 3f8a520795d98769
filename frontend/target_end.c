/* SPDX-License-Identifier: Apache-2.0 */
/*
 * target_end.c - the decisions of target_end.h. Pure: the front end's
 * I/O code performs what they return.
 */
#include <errno.h>

#include "target_end.h"

void target_end_received(const struct target_end_in *in, struct target_end_out *out)
{
	*out = (struct target_end_out){0};
	if (in->failed) {
		out->report = TARGET_END_FAILED;
		/* A stop's reply reached its client with the stop's status: keep it. */
		out->exit_status = in->stop_asked ? in->stop_status : 1;
		/* A signal while the source decided: no waiting for a poller then. */
		out->leave_now = in->pending_signal != 0;
		/*
		 * Its watchers learn of the failure before the process goes (an
		 * event stream gets the "failed" line, a poller a moment to ask),
		 * and a cancel's or a stop's reply reaches its client.
		 */
		out->linger = true;
		return;
	}
	out->report = in->unknown ? TARGET_END_UNKNOWN : TARGET_END_RUNNING;
	/* A signal while the source decided: handled now, as if it came now. */
	out->stop_signal = in->pending_signal;
}

void linger_tick(const struct linger_in *in, struct linger_out *out)
{
	uint64_t poller_ms = in->has_vm ? MIGRATED_LINGER_MS : FAILED_LINGER_MS;

	out->watched = in->watched || in->open;
	out->leave = false;
	if (in->busy && in->ms < poller_ms + WATCHED_LINGER_MS)
		return;
	out->leave = in->settled || (!in->open && (in->reported || in->in_leave)) ||
		     (out->watched && in->ms >= WATCHED_LINGER_MS) || in->ms >= poller_ms;
}

enum target_stop_action target_stop_no_vm(int ret)
{
	if (ret == -EBUSY)
		return TARGET_STOP_PEND;
	if (ret == -EALREADY)
		return TARGET_STOP_LEAVE;
	return TARGET_STOP_DONE;
}
