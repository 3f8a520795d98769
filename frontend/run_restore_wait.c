/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_restore_wait.c - `vmm run --restore-wait SOCKET` (run_loop.h): a
 * process that has done all that a restore does not need the snapshot for
 * (its libraries loaded, its seccomp filters built, its event loop, log and
 * API up) and restores the snapshot that PUT /api/v1/vm/restore names, as
 * Firecracker loads and resumes one: the time that counts is the
 * request's. Main thread: the API's handler calls restore_now() through
 * rt->restore while the PUT waits.
 */
#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "api_server.h"
#include "clock.h"
#include "config.h"
#include "frontend_config.h"
#include "log.h"
#include "run_loop.h"
#include "runtime.h"
#include "snapshot.h"
#include "vm.h"

/*
 * The config a request's snapshot runs with: its own CONFIG, the command's
 * --set on top; [sandbox] is this process's (its filters are built). fe
 * gets the snapshot's [console] output and [api] socket and the --set's
 * front-end keys, which the VM's later snapshots and migrations carry.
 */
static int wait_config(struct run_ctx *ctx, const char *dir, struct snapshot_image *img,
		       struct vm_config *cfg, struct frontend_config *fe, char *err, size_t errlen)
{
	const char *text = snapshot_image_config(img);
	char origin[PATH_MAX + 16];

	config_defaults(cfg);
	frontend_config_defaults(fe);
	snprintf(origin, sizeof(origin), "%s/state", dir);
	if (frontend_config_load_text(cfg, fe, text, strlen(text), origin, err, errlen))
		return -EINVAL;
	for (int i = 0; i < ctx->wait_nsets; i++)
		if (frontend_config_set(cfg, fe, ctx->wait_sets[i], err, errlen))
			return -EINVAL;
	if (frontend_config_validate(fe, err, errlen) || config_validate(cfg, err, errlen))
		return -EINVAL;
	cfg->seccomp = ctx->seccomp;
	if (ctx->lazy && cfg->prealloc) {
		snprintf(err, errlen,
			 "--lazy: [vm] prealloc is on, which fills RAM before the pages can come "
			 "in (start the waiting process with --set vm.prealloc=false)");
		return -EINVAL;
	}
	return 0;
}

/* runtime_restore_fn: PUT /api/v1/vm/restore, on the loop thread, while the PUT waits. */
static int restore_now(struct runtime *rt, const char *dir, int lazy, struct runtime_restore *out,
		       char *err, size_t errlen)
{
	struct run_ctx *ctx = rt->restore_arg;
	uint64_t t0 = now_ns();
	struct snapshot_image *img = NULL;
	struct vm_config cfg;
	struct frontend_config fe;
	char e[CONFIG_ERR_MAX + 512] = "";
	int ret = snapshot_image_open(dir, &img, e, sizeof(e));

	ctx->lazy = lazy < 0 ? ctx->wait_lazy : lazy != 0;
	if (!ret)
		ret = wait_config(ctx, dir, img, &cfg, &fe, e, sizeof(e));
	if (ret) {
		/* No VM exists: the process waits on for the next request. */
		snprintf(err, errlen, "%s", e);
		snapshot_image_close(img);
		return ret;
	}
	log_set_vm(&rt->log, cfg.name);
	/*
	 * The VM's from now on, as its struct vm_config once held them: what its
	 * snapshots and migrations describe (the log and the console were set
	 * up at the start, from the command's own).
	 */
	rt->fe = fe;
	ctx->start_ns = t0; /* the timings count from the request */
	ret = run_boot(ctx, &cfg, img, ctx->console_fd, e, sizeof(e));
	snapshot_image_close(img); /* the VM holds what it needs */
	if (rt->vm) {
		ctx->ev_end = event_new(rt->base, vm_end_fd(rt->vm), EV_READ, run_on_vm_end, ctx);
		if (!ctx->ev_end || event_add(ctx->ev_end, NULL))
			event_base_loopbreak(rt->base);
	}
	if (ret) {
		/* The VM was made, perhaps half restored: it ends, and the process with it. */
		snprintf(err, errlen, "%s", e[0] ? e : strerror(-ret));
		if (rt->vm)
			vm_request_stop(rt->vm, VM_END_ERROR, 1, "%s", err);
		return ret;
	}
	snprintf(out->id, sizeof(out->id), "%s", ctx->restored_id);
	snprintf(out->name, sizeof(out->name), "%s", cfg.name);
	out->lazy = ctx->lazy;
	out->restore_us = (now_ns() - t0) / 1000;
	log_vm(&rt->log, LOG_LEVEL_INFO,
	       "restored snapshot %s from %s into this waiting process%s: its vCPUs started %.3f "
	       "ms after the request",
	       out->id, dir, ctx->lazy ? " (lazily)" : "", out->restore_us / 1e3);
	return 0;
}

int run_restore_wait(struct run_ctx *ctx, const char *socket, char *err, size_t errlen)
{
	int ret;

	if (strlen(socket) >= sizeof(ctx->api_path)) {
		snprintf(err, errlen, "--restore-wait: the socket path is too long");
		return -ENAMETOOLONG;
	}
	snprintf(ctx->api_path, sizeof(ctx->api_path), "%s", socket);
	ctx->rt.restore = restore_now;
	ctx->rt.restore_arg = ctx;
	ret = api_server_start(&ctx->rt.api, &ctx->rt, ctx->api_path, err, errlen);
	if (!ret)
		log_msg(&ctx->rt.log, LOG_LEVEL_INFO,
			"waiting for a restore on %s (PUT /api/v1/vm/restore {\"from\": DIR})",
			ctx->api_path);
	return ret;
}
