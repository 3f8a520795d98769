/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_restore.c - `vmm run --restore DIR [--lazy]` (run_loop.h): the VM's
 * memory and state from an open snapshot instead of a boot, and, lazily,
 * the line that says when the last page came in. Main thread.
 */
#include <event2/event.h>
#include <stdio.h>

#include "log.h"
#include "run_loop.h"
#include "runtime.h"
#include "snapshot.h"
#include "vm.h"

/* The lazy restore's threads ended: all in, or a page that could not be read. */
static void on_lazy_done(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *ctx = arg;
	struct snapshot_lazy_progress p;

	(void)fd;
	(void)what;
	event_free(ctx->ev_lazy);
	ctx->ev_lazy = NULL;
	if (!ctx->rt.lazy)
		return;
	snapshot_lazy_get(ctx->rt.lazy, &p);
	if (p.done)
		log_vm(&ctx->rt.log, LOG_LEVEL_INFO,
		       "lazy restore done: %llu pages in after %llu ms, %llu of them on the "
		       "guest's first touch (slowest %llu us), %llu zero pages touched",
		       (unsigned long long)p.pages_in, (unsigned long long)p.done_ms,
		       (unsigned long long)p.faults, (unsigned long long)p.fault_max_us,
		       (unsigned long long)p.zero_faults);
}

int run_restore(struct run_ctx *ctx, struct vm *vm, struct snapshot_image *img, char *err,
		size_t errlen)
{
	struct snapshot_restore_stats st;
	int ret;

	if (!ctx->lazy) {
		ret = snapshot_image_restore(img, vm, 0, &st, err, errlen);
		snprintf(ctx->restored_id, sizeof(ctx->restored_id), "%s", st.id);
		if (!ret)
			log_vm(&ctx->rt.log, LOG_LEVEL_INFO,
			       "restored snapshot %s: %llu pages read in %.1f ms by %u threads, "
			       "state loaded in %.1f ms",
			       st.id, (unsigned long long)st.pages_read, st.read_us / 1e3,
			       st.threads, st.state_us / 1e3);
		return ret;
	}
	ret = snapshot_image_restore_lazy(img, vm, &ctx->rt.lazy, &st, err, errlen);
	if (ret)
		return ret;
	snprintf(ctx->restored_id, sizeof(ctx->restored_id), "%s", st.id);
	log_vm(&ctx->rt.log, LOG_LEVEL_INFO,
	       "restoring snapshot %s lazily: RAM registered in %.1f ms, state loaded in %.1f ms, "
	       "the guest starts now",
	       st.id, st.setup_us / 1e3, st.state_us / 1e3);
	ctx->ev_lazy = event_new(ctx->rt.base, snapshot_lazy_done_fd(ctx->rt.lazy), EV_READ,
				 on_lazy_done, ctx);
	if (ctx->ev_lazy && event_add(ctx->ev_lazy, NULL)) {
		event_free(ctx->ev_lazy);
		ctx->ev_lazy = NULL; /* no line at the end; the restore goes on */
	}
	return 0;
}

void run_restore_release(struct run_ctx *ctx)
{
	if (ctx->ev_lazy)
		event_free(ctx->ev_lazy);
	ctx->ev_lazy = NULL;
}
