/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Classifying a settled cell, acting where an operator would: what the
 * operator sees (exit codes, each side's migration state, the source's
 * "migrated to") decides, never the cell's expectation, so a wrong outcome
 * shows as itself.
 */
#include "fault_classify.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fault_inject.h"

#define ACTION_MS 60000 /* an operator's --resume / --recover */

/* `vmm ARGS` as fx_vmm, noting "WHAT: exit N in S s" (the settle times bench_trickle reads). */
static int timed_vmm(struct fx_ctx *x, const char *what, const char *stem, char *const *args)
{
	uint64_t t0 = now_ns();
	int code = fx_vmm(x, stem, args, hx_scaled_ms(ACTION_MS), NULL, 0);

	fx_note(x, "%s: exit %d in %.1f s", what, code, (double)(now_ns() - t0) / 1e9);
	return code;
}

static int vmm_recover(struct fx_ctx *x, bool target, const char *decide)
{
	char sock[PATH_MAX];
	char *args[12] = {"migrate", "--recover", "--api-socket", sock};
	int n = 4;

	if (target)
		fx_target_socket(x, sock, sizeof(sock));
	else
		snprintf(sock, sizeof(sock), "%s", x->src_sock);
	if (!target && !decide) {
		args[n++] = "--to";
		args[n++] = x->to;
	}
	if (decide) {
		args[n++] = "--decide";
		args[n++] = (char *)decide;
	}
	args[n] = NULL;
	return timed_vmm(x,
			 target	  ? "target --recover --decide run"
			 : decide ? "--recover --decide resume"
				  : "--recover",
			 target	  ? "recover-dst"
			 : decide ? "recover-src-decide"
				  : "recover-src",
			 args);
}

static int vmm_resume(struct fx_ctx *x)
{
	char sock[PATH_MAX], tmo[32];
	char *args[] = {"migrate", "--resume", "--to",	       x->to, "--api-socket",
			sock,	   "--json",   "--timeout-ms", tmo,   NULL};

	snprintf(sock, sizeof(sock), "%s", x->src_sock);
	snprintf(tmo, sizeof(tmo), "%d", x->env->timeout_ms);
	return timed_vmm(x, "--resume", "resume", args);
}

/* The source exited 0 saying it migrated, and the target lives on. */
static bool handed_over(struct fx_ctx *x)
{
	char said[352];

	hx_run_wait_exit(&x->r, &x->r.src, 15000, (char[64]){0}, 64);
	snprintf(said, sizeof(said), "migrated to %s", x->to);
	return !hx_running(&x->r.src) && hx_exit_code(x->r.src.status) == 0 &&
	       fx_src_err_has(x, said) && hx_running(&x->r.dst);
}

/* "exited" with how ("exited 1", "exited killed by signal 9 (Killed)") once reaped. */
static const char *exited(struct hx_proc *p, char *buf, size_t len)
{
	char how[64];

	if (!p->exited)
		return "exited";
	hx_describe(p->status, how, sizeof(how));
	snprintf(buf, len, "exited (%s)", how);
	return buf;
}

/* Classifies what the operator sees, acting where an operator would. */
enum fx_outcome fx_classify(struct fx_ctx *x, enum fx_owner *owner)
{
	char s[64] = "", d[64] = "", why[200], ex[2][96];
	int rs = fx_state(x, false, s, sizeof(s)), rd = fx_state(x, true, d, sizeof(d)), code;

	*owner = FX_OWNER_NONE;
	fx_note(x, "source %s, target %s",
		rs == -ESRCH ? exited(&x->r.src, ex[0], sizeof(ex[0]))
		: rs	     ? "no status"
			     : s,
		rd == -ESRCH ? exited(&x->r.dst, ex[1], sizeof(ex[1]))
		: rd	     ? "no status"
			     : d);
	if (rs == -ESRCH) {
		if (handed_over(x)) {
			*owner = FX_OWNER_TARGET;
			return FX_O_COMPLETED;
		}
		if (rd == -ESRCH) {
			/* A target that had no VM to run exits non-zero (the protocol's
			 * "discards"). */
			if (x->r.dst.exited && hx_exit_code(x->r.dst.status) == 0) {
				fx_note(x, "the target exited 0");
				return FX_O_NONE;
			}
			return FX_O_CLEAR_ERROR;
		}
		/* Its incoming migration failed, yet it lives on (settle waited for its exit). */
		if (!strcmp(d, "failed") || !strcmp(d, "cancelled") || !strcmp(d, "receiving")) {
			fx_note(x, "the target says %s and does not exit", d);
			return FX_O_NONE;
		}
		/* No VM came there (the source died before its description was whole). */
		if (!strcmp(d, "waiting"))
			return FX_O_CLEAR_ERROR;
		if (!strcmp(d, "switchover-unknown")) {
			code = vmm_recover(x, true, "run");
			if (code || !hx_running(&x->r.dst))
				return FX_O_NONE;
			*owner = FX_OWNER_TARGET;
			return FX_O_DECIDE_TARGET;
		}
		if (!strcmp(d, "postcopy-paused")) {
			*owner = FX_OWNER_TARGET_PAUSED;
			return FX_O_CLEAR_ERROR;
		}
		/* The target runs the VM, though the source died (after COMMIT). */
		*owner = FX_OWNER_TARGET;
		return FX_O_COMPLETED;
	}
	if (rs)
		return FX_O_NONE;
	if (!strcmp(s, "failed") || !strcmp(s, "cancelled")) {
		*owner = FX_OWNER_SOURCE;
		return FX_O_SOURCE_KEEPS;
	}
	if (!strcmp(s, "postcopy-paused")) {
		code = vmm_resume(x);
		if (!code && handed_over(x)) {
			*owner = FX_OWNER_TARGET;
			return FX_O_RESUME_COMPLETES;
		}
		if (hx_running(&x->r.dst)) {
			*owner = FX_OWNER_TARGET_PAUSED;
			return FX_O_NONE;
		}
		return FX_O_CLEAR_ERROR;
	}
	if (!strcmp(s, "switchover-unknown")) {
		code = vmm_recover(x, false, NULL);
		if (!code && handed_over(x)) {
			*owner = FX_OWNER_TARGET;
			return FX_O_RECOVER_COMPLETES;
		}
		if (!code || hx_running(&x->r.dst))
			return FX_O_NONE;
		fx_note(x, "it said: %s", fx_last_err_line(x, "recover-src", why, sizeof(why)));
		if (fx_state(x, false, s, sizeof(s)) || strcmp(s, "switchover-unknown")) {
			fx_note(x, "after a failed --recover the source is %s", s[0] ? s : "gone");
			return FX_O_NONE;
		}
		code = vmm_recover(x, false, "resume");
		if (code)
			return FX_O_NONE;
		*owner = FX_OWNER_SOURCE;
		return FX_O_RECOVER_SOURCE;
	}
	fx_note(x, "unclassified source state %s", s);
	return FX_O_NONE;
}
