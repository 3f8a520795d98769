/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target side of postcopy, top level: arms it at POSTCOPY, dispatches
 * the switchover's records, waits for the drop at the end of the
 * switchover, marks the start at the ACK, stops every thread in order and
 * reports progress. The work is done below (postcopy.h):
 *
 *   pc_drop.c     BITMAP / BITMAP_END, the dropper thread
 *   pc_fault.c    the fault thread (zero pages, PAGE_REQ)
 *   pc_control.c  the control thread (completion, monitor, resume)
 *   pc_state.c    the shared bitmaps, counters and transitions
 *   ram_recv.c    the receivers, which place pages through pc_state
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "codec.h"
#include "incoming.h"
#include "migration.h"
#include "postcopy.h"
#include "uffd.h"
#include "vm.h"

/*
 * At POSTCOPY, before the source has even paused: userfaultfd on guest RAM
 * and the threads of the switchover. The data connections are idle (the
 * last pass ended with SYNC) and no vCPU runs, so nothing faults yet.
 */
static int arm(struct incoming *in, char *err, size_t errlen)
{
	struct guest_mem *mem = vm_mem(in->vm);
	int ret;

	/* CAPS told the source; a source that switches over anyway breaks the protocol. */
	if (in->post.uffd_probe < 0) {
		snprintf(err, errlen, "POSTCOPY, but this target cannot do postcopy: %s",
			 in->post.uffd_reason);
		return -EPROTO;
	}
	in->pc.uffd = in->post.uffd_probe;
	in->post.uffd_probe = -1;
	ret = uffd_register(in->pc.uffd, mem->base, mem->size);
	if (ret) {
		snprintf(err, errlen, "userfaultfd on guest RAM: %s", strerror(-ret));
		return ret;
	}
	ret = pc_drop_start(in);
	if (!ret)
		ret = pc_fault_start(in);
	if (!ret)
		ret = recv_chan_start(&in->post.urgent);
	if (!ret)
		ret = pc_control_start(in);
	if (ret)
		snprintf(err, errlen, "starting the postcopy threads: %s", strerror(-ret));
	return ret;
}

int postcopy_incoming_record(struct incoming *in, uint32_t type, const void *p, uint32_t len,
			     char *err, size_t errlen)
{
	struct mig_bitmap_end be;
	int ret;

	if (type == MIG_REC_POSTCOPY) {
		struct mig_postcopy pc;

		ret = mig_postcopy_decode(p, len, &pc, err, errlen);
		if (ret)
			return ret;
		if (in->post.on) {
			snprintf(err, errlen, "POSTCOPY sent twice");
			return -EPROTO;
		}
		in->post.flags = pc.flags;
		ret = pc_state_alloc(&in->pc, vm_mem(in->vm));
		if (ret)
			return ret;
		__atomic_store_n(&in->post.on, true, __ATOMIC_RELEASE);
		return arm(in, err, errlen);
	}
	if (!in->post.on) {
		snprintf(err, errlen, "%s before POSTCOPY", mig_rec_name(type));
		return -EPROTO;
	}
	if (type == MIG_REC_BITMAP)
		return pc_drop_bitmap(in, p, len, err, errlen);
	ret = mig_bitmap_end_decode(p, len, &be, err, errlen);
	return ret ? ret : pc_drop_bitmap_end(in, &be, err, errlen);
}

int postcopy_incoming_ready(struct incoming *in, char *err, size_t errlen)
{
	int ret = pc_drop_finish(in, err, errlen);

	if (ret)
		return ret;
	__atomic_store_n(&in->pc.uffd_ready, true, __ATOMIC_RELEASE);
	return 0;
}

void postcopy_incoming_started(struct incoming *in)
{
	chan_set_timeout(&in->main, 0);
	/* The control thread starts watching main and completes if nothing is missing. */
	pc_start(&in->pc);
}

bool postcopy_incoming_finished(struct incoming *in)
{
	return pc_control_finished(in);
}

void postcopy_incoming_stop(struct incoming *in)
{
	/* First: no connection loss from here on may start a resume. */
	pc_set_stopping(&in->pc);
	pc_drop_stop(in);
	/* incoming_free() cancelled the gate: the control thread's gate_take() returns. */
	pc_control_join(in);
	pc_fault_quit(in);
	pc_fault_join(in);
	chan_abort(&in->main);
	chan_abort(&in->post.urgent.chan);
	recv_chan_join(&in->post.urgent);
}

void postcopy_incoming_free(struct incoming *in)
{
	pc_drop_free(in);
	pc_fault_free(in);
	pc_control_free(in);
	pc_state_destroy(&in->pc);
}

void postcopy_incoming_progress(struct incoming *in, struct migration_progress *out)
{
	pc_state_progress(&in->pc, out);
	snprintf(out->mode_used, sizeof(out->mode_used), "%s", MIGRATION_USED_POSTCOPY);
}
