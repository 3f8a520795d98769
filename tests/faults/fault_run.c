/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One cell: start, bring to the phase, apply the fault, lift it, settle,
 * act as the operator would, classify, verify. The classification looks
 * only at what an operator sees (exit codes, API states, the guest's lines),
 * never at the cell's expectation, so a wrong outcome shows as itself.
 */
#include "fault_run.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "fault_inject.h"
#include "fault_scripts.h"
#include "fault_classify.h"
#include "fault_observe.h"
#include "fault_reader.h"

#define READY_MS      60000 /* the guest's first verified pass */
#define TRIGGER_MS    90000 /* the migration reaches the phase */
#define SETTLE_MS     90000 /* after the fault: vmm migrate ends, the states stop moving */
#define HOLD_EXTRA_MS 2500  /* a stall or blackhole lasts 3T plus this */
/* vmm's line for a triple fault whose registers read as reset (vcpu.c). */
#define SHUTDOWN_RESET "its registers read as after a reset"

struct fault_state {
	struct hx_proc *stepped; /* stopped by the hook, or NULL */
	struct hx_proc *victim;	 /* the process the fault strikes */
	struct fx_limit lim[2];
	bool blackhole;
	int port;
};

static bool is_target_fault(enum fx_fault f)
{
	return f == FX_KILL_TARGET || f == FX_STOP_TARGET;
}

/* The source's API socket: its own name, so the target's takeover of "<name>.sock" is visible. */
static char src_sock[1100];

static int start(struct fx_ctx *x, int port, char *err, size_t errlen)
{
	const struct fx_cell *c = x->cell;
	/*
	 * The premises, set on both sides (docs/testing.md, "Premises"):
	 * precopy: a 32M set dirtied at 8192 pages/s (32 MiB/s, a pass a
	 * second), a quarter of the 128M/s link, so precopy converges after
	 * pass 0 wherever the vmm sends at least twice that; a guest that
	 * reaches less of the rate only converges sooner. Postcopy: 128M
	 * rewritten at 16384 pages/s, against 32M/s: pass 0 takes >= 4 s, in
	 * which a guest reaching 2048 pages/s (an eighth of the rate; a real
	 * PVM host's does ~8000 per vCPU) dirties all of it, so the push plus its
	 * page requests last over a second and the late step (2048 pushed
	 * pages) comes well before the end; the early phase is a step.
	 */
	static char working_set[32], dirty_rate[40];
	static char *src_args[] = {"--set",
				   "vm.memory=512M",
				   "--set",
				   working_set,
				   "--set",
				   dirty_rate,
				   "--set",
				   "workload.passes=0",
				   "--set",
				   "workload.heartbeat_ms=0",
				   "--api-socket",
				   src_sock,
				   NULL};
	static char env_stop[64];
	static char *step_env[] = {env_stop, NULL};
	/* The valid-hello fault's flood knows the session id, as one reading the wire does. */
	static char *src_env[] = {FX_SESSION_ENV, NULL, NULL};
	int ret;
	struct hx_run_opts o = {
	    .vmm = x->env->vmm,
	    .dir = x->dir,
	    .name = "fx",
	    .config = x->env->config,
	    .source_args = src_args,
	    .port = port,
	};

	snprintf(src_sock, sizeof(src_sock), "%s", x->src_sock);
	snprintf(working_set, sizeof(working_set), "workload.working_set=%s",
		 c->trig.postcopy ? "128M" : "32M");
	snprintf(dirty_rate, sizeof(dirty_rate), "workload.dirty_rate=%s",
		 c->trig.postcopy ? "16384" : "8192");
	if (c->trig.side != FX_NO_STEP) {
		snprintf(env_stop, sizeof(env_stop), "VMM_TEST_STOP_AT=%s", c->trig.step);
		if (c->trig.side == FX_ON_SOURCE)
			o.source_env = step_env;
		else
			o.target_env = step_env;
	}
	if (c->fault == FX_VALID_HELLO) {
		src_env[1] = o.source_env ? env_stop : NULL;
		o.source_env = src_env;
	}
	x->started = true;
	ret = hx_run_start(&x->r, &o, err, errlen);
	snprintf(x->to, sizeof(x->to), "%s", x->r.to);
	if (!ret && c->trig.drop)
		ret = fx_start_proxy(x, port, err, errlen);
	return ret;
}

static int start_migrate(struct fx_ctx *x, char *err, size_t errlen)
{
	char tmo[32];
	struct hx_argv a = {0};
	struct hx_spawn s;
	int fd, ret;

	snprintf(tmo, sizeof(tmo), "%d", x->env->timeout_ms);
	hx_argv_add(&a, x->env->vmm);
	hx_argv_add(&a, "migrate");
	hx_argv_add(&a, "--to");
	hx_argv_add(&a, x->to);
	hx_argv_add(&a, "--api-socket");
	hx_argv_add(&a, x->src_sock);
	hx_argv_add(&a, "--json");
	hx_argv_add(&a, "--timeout-ms");
	hx_argv_add(&a, tmo);
	hx_argv_add(&a, "--mode");
	hx_argv_add(&a, x->cell->trig.postcopy ? "postcopy" : "precopy");
	/* Dirty-guest pages compress to almost nothing: only raw pages make the limit bite. */
	hx_argv_add(&a, "--compress");
	hx_argv_add(&a, "none");
	hx_argv_add(&a, "--max-bandwidth");
	/* The cells' premises (start()): precopy converges, postcopy lasts. */
	hx_argv_add(&a, x->cell->trig.postcopy ? "32M" : "128M");
	snprintf(x->mig_out, sizeof(x->mig_out), "%s/mig.out", x->dir);
	snprintf(x->mig_err, sizeof(x->mig_err), "%s/mig.err", x->dir);
	s = (struct hx_spawn){a.v, NULL, x->mig_out, x->mig_err};
	ret = hx_spawn(&x->mig, "vmm migrate", &s, &fd, err, errlen);
	hx_argv_free(&a);
	return ret;
}

/* The stepped process printed the hook's line and is stopped. */
static int wait_step(struct fx_ctx *x, struct hx_proc *p, const char *err_path, char *err,
		     size_t errlen)
{
	struct hx_console c;
	char re[96];
	int ret = hx_console_file(&c, "stderr", err_path, p, err, errlen);

	if (ret)
		return ret;
	snprintf(re, sizeof(re), "test hook: stopped at %s", x->cell->trig.step);
	ret = hx_wait_line(&x->r.watch, &c, re, 1, 0, hx_scaled_ms(TRIGGER_MS), err, errlen);
	hx_console_close(&c);
	for (int i = 0; !ret && fx_proc_state(p->pid) != 'T'; i++) {
		if (i > 200) {
			snprintf(err, errlen, "%s printed the hook's line but is not stopped",
				 p->name);
			return -EIO;
		}
		fx_pump(x, 10);
	}
	return ret;
}

/* Brings the migration to the cell's phase; fs->stepped is then stopped (or NULL). */
static int reach_phase(struct fx_ctx *x, struct fault_state *fs, char *err, size_t errlen)
{
	const struct fx_trigger *t = &x->cell->trig;

	if (t->before_migrate)
		return 0;
	if (t->side == FX_ON_SOURCE) {
		fs->stepped = &x->r.src;
		return wait_step(x, &x->r.src, x->r.src_err, err, errlen);
	}
	if (t->side == FX_ON_TARGET) {
		fs->stepped = &x->r.dst;
		return wait_step(x, &x->r.dst, x->r.dst_err, err, errlen);
	}
	snprintf(err, errlen, "the cell has neither a step nor a fault before the migration");
	return -EINVAL;
}

static void cont(struct hx_proc *p)
{
	if (p && hx_running(p))
		kill(p->pid, SIGCONT);
}

/* Waits out a stall or blackhole, noting the source's states meanwhile. */
static void hold(struct fx_ctx *x)
{
	uint64_t t0 = now_ns();
	int ms = 3 * x->env->timeout_ms + HOLD_EXTRA_MS;
	char st[64], seen[256] = "";

	while ((now_ns() - t0) / 1000000 < (uint64_t)ms) {
		if (!fx_state(x, false, st, sizeof(st)) && !strstr(seen, st) &&
		    strlen(seen) + strlen(st) + 2 < sizeof(seen)) {
			strcat(seen, seen[0] ? "," : "");
			strcat(seen, st);
		}
		fx_pump(x, 250);
	}
	fx_note(x, "held %d ms, source states %s", ms, seen[0] ? seen : "-");
}

static int apply(struct fx_ctx *x, struct fault_state *fs, char *err, size_t errlen)
{
	enum fx_fault f = x->cell->fault;
	int killed, ret = 0;

	/* --flood N: every cell's fault meets the flood (the trickle's own comes below). */
	if (x->env->flood >= 0 && f != FX_TRICKLE && f != FX_VALID_HELLO) {
		ret = fx_trickle(x, fs->port, 0, 0, err, errlen);
		if (ret)
			return ret;
	}

	fs->victim = is_target_fault(f) ? &x->r.dst : &x->r.src;
	switch (f) {
	case FX_KILL_TARGET:
	case FX_KILL_SOURCE:
		hx_signal(fs->victim, SIGKILL);
		hx_wait_exit(fs->victim, 10000);
		fx_note(x, "killed the %s", f == FX_KILL_TARGET ? "target" : "source");
		if (fs->stepped != fs->victim)
			cont(fs->stepped);
		return 0;
	case FX_STOP_TARGET:
	case FX_STOP_SOURCE:
		if (fs->stepped != fs->victim) {
			kill(fs->victim->pid, SIGSTOP);
			cont(fs->stepped);
		}
		hold(x);
		cont(fs->victim);
		return 0;
	case FX_RESET:
		ret = fx_reset_port(fs->port, (int[]){x->r.src.pid, x->r.dst.pid}, 2, &killed, err,
				    errlen);
		if (!ret)
			fx_note(x, "reset %d connections", killed);
		cont(fs->stepped);
		return ret;
	case FX_BLACKHOLE:
		ret = fx_blackhole_on(fs->port, err, errlen);
		fs->blackhole = !ret;
		cont(fs->stepped);
		if (!ret)
			hold(x);
		fx_blackhole_off(fs->port);
		fs->blackhole = false;
		return ret;
	case FX_DROP_PREPARED:
	case FX_DROP_COMMIT:
	case FX_DROP_COMMITTED:
	case FX_DROP_RELEASE:
	case FX_DROP_DONE:
		/* The proxy drops the record whenever it comes: the migration just runs. */
		fx_note(x, "through recproxy.py, dropping %s with its link", x->cell->trig.drop);
		return start_migrate(x, err, errlen);
	case FX_TRICKLE:
		ret = fx_trickle(x, fs->port, 8, 64, err, errlen);
		if (ret)
			return ret;
		if (x->cell->trig.before_migrate) /* a fresh migration past them */
			return start_migrate(x, err, errlen);
		ret = fx_reset_port(fs->port, (int[]){x->r.src.pid, x->r.dst.pid}, 2, &killed, err,
				    errlen);
		if (!ret)
			fx_note(x, "reset %d connections", killed);
		cont(fs->stepped);
		return ret;
	case FX_VALID_HELLO:
		if (x->cell->trig.before_migrate) { /* a fresh migration past them */
			ret = fx_start_valid_hello(x, fs->port, err, errlen);
			return ret ? ret : start_migrate(x, err, errlen);
		}
		/*
		 * The reset first: the flood learns the protocol's version from the
		 * target, which must be running (a cell may have stopped it); it is
		 * on the port before the operator's --recover or --resume all the same.
		 */
		ret = fx_reset_port(fs->port, (int[]){x->r.src.pid, x->r.dst.pid}, 2, &killed, err,
				    errlen);
		if (!ret)
			fx_note(x, "reset %d connections", killed);
		cont(fs->stepped);
		return ret ? ret : fx_start_valid_hello(x, fs->port, err, errlen);
	case FX_READER_RESUME:
		/* The target stays stopped until the operator took the VM back. */
		return fx_reader_resume(x, fs->stepped, fs->port, err, errlen);
	case FX_FD_EXHAUSTION:
		if (!x->cell->trig.before_migrate)
			ret = fx_fd_limit(x->r.src.pid, &fs->lim[0], err, errlen);
		if (!ret)
			ret = fx_fd_limit(x->r.dst.pid, &fs->lim[1], err, errlen);
		if (!ret)
			fx_note(x, "RLIMIT_NOFILE source %d target %d", fs->lim[0].lowered_to,
				fs->lim[1].lowered_to);
		cont(fs->stepped);
		if (x->cell->trig.before_migrate && !ret) {
			ret = start_migrate(x, err, errlen);
			if (ret)
				return ret;
		}
		if (!ret)
			hold(x);
		fx_fd_restore(&fs->lim[0]);
		fx_fd_restore(&fs->lim[1]);
		return ret;
	default:
		snprintf(err, errlen, "unknown fault");
		return -EINVAL;
	}
}

static bool transient(const char *st)
{
	return !strcmp(st, "setup") || !strcmp(st, "precopy") || !strcmp(st, "switchover") ||
	       !strcmp(st, "postcopy-active") || !strcmp(st, "completed");
}

/* A target's states on its way to an end of its own: receiving, or failed and exiting. */
static bool target_transient(const char *st)
{
	return !strcmp(st, "receiving") || !strcmp(st, "failed") || !strcmp(st, "cancelled");
}

static int mig_done(void *arg)
{
	return !hx_running(arg);
}

/* After the fault: vmm migrate ends and the source's state stops moving (bounded). */
static void settle(struct fx_ctx *x)
{
	uint64_t t0 = now_ns(), t_lift = now_ns();
	/*
	 * switchover-unknown may settle by itself: a late COMMITTED after a stall,
	 * or TCP retransmitting one after a blackhole (its backoff can add ~6 s).
	 */
	uint64_t grace_ms = 3 * (uint64_t)x->env->timeout_ms + 8000;
	char st[64] = "";
	int ret;

	/* Its time from the fault's lift: a late COMMIT's or a fresh migration's settle time. */
	if (hx_watch_until(&x->r.watch, mig_done, &x->mig, hx_scaled_ms(SETTLE_MS))) {
		fx_note(x, "vmm migrate still running after %d s", hx_scaled_ms(SETTLE_MS) / 1000);
		hx_signal(&x->mig, SIGKILL);
	} else {
		fx_note(x, "vmm migrate exit %d in %.1f s", hx_exit_code(x->mig.status),
			(double)(now_ns() - t_lift) / 1e9);
	}
	hx_reap(&x->mig, 1000);
	while ((now_ns() - t0) / 1000000 < (uint64_t)hx_scaled_ms(SETTLE_MS)) {
		ret = fx_state(x, false, st, sizeof(st));
		if (!ret && !strcmp(st, "switchover-unknown") &&
		    (now_ns() - t_lift) / 1000000 < grace_ms) {
			fx_pump(x, 250);
			continue;
		}
		if (ret == -ESRCH || (!ret && !transient(st)))
			break;
		if (!ret && !strcmp(st, "completed")) {
			/* about to exit: let it */
			hx_run_wait_exit(&x->r, &x->r.src, 15000, (char[64]){0}, 64);
			break;
		}
		fx_pump(x, 250);
	}
	/*
	 * A lone target still receiving: it ends (no source) or keeps waiting;
	 * give it time. One that says its incoming migration failed exits
	 * next (with its watchers told): wait for that too.
	 */
	if (!hx_running(&x->r.src)) {
		t0 = now_ns();
		while ((now_ns() - t0) / 1000000 < 30000) {
			ret = fx_state(x, true, st, sizeof(st));
			if (!ret && !strcmp(st, "switchover-unknown") &&
			    (now_ns() - t_lift) / 1000000 < grace_ms) {
				fx_pump(x, 250);
				continue;
			}
			if (ret == -ESRCH || (!ret && !target_transient(st)))
				break;
			fx_pump(x, 250);
		}
	}
}

static void finish(struct fx_ctx *x, struct fault_state *fs)
{
	fx_blackhole_off(fs->port);
	fx_fd_restore(&fs->lim[0]);
	fx_fd_restore(&fs->lim[1]);
	fx_inject_cleanup();
	if (!x->started)
		return;
	cont(&x->r.src);
	cont(&x->r.dst);
	if (x->mig.pid > 0)
		hx_reap(&x->mig, 0);
	hx_reap(&x->proxy, 0);
	hx_reap(&x->flood[0], 0);
	hx_reap(&x->flood[1], 0);
	hx_run_end(&x->r);
}

void fx_cell_run(const struct fx_env *env, const struct fx_cell *cell, int port,
		 struct fx_result *res)
{
	struct fx_ctx *x = calloc(1, sizeof(*x));
	struct fault_state fs = {.port = port};
	enum fx_owner owner = FX_OWNER_NONE;
	char err[512] = "", why[400] = "";
	uint64_t t0 = now_ns();
	int ret;

	memset(res, 0, sizeof(*res));
	if (!x) {
		snprintf(res->detail, sizeof(res->detail), "out of memory");
		return;
	}
	x->env = env;
	x->cell = cell;
	regcomp(&x->pass_re, "dirty pass [0-9]+ ok", REG_EXTENDED | REG_NOSUB);
	snprintf(x->dir, sizeof(x->dir), "%s/%s_%s", env->work, fx_fault_name(cell->fault),
		 fx_phase_name(cell->phase));
	snprintf(x->run_dir, sizeof(x->run_dir), "%s/run", x->dir);
	snprintf(x->src_sock, sizeof(x->src_sock), "%s/src.sock", x->run_dir);
	mkdir(env->work, 0755);
	mkdir(x->dir, 0755);
	mkdir(x->run_dir, 0755);
	setenv("VMM_RUN_DIR", x->run_dir, 1); /* every vmm of this cell, and the harness */

	ret = start(x, port, err, sizeof(err));
	if (!ret)
		ret = hx_wait_line(&x->r.watch, &x->r.src_out, "dirty pass [0-9]+ ok", 1, 0,
				   hx_scaled_ms(READY_MS), err, sizeof(err));
	if (!ret && !cell->trig.before_migrate)
		ret = start_migrate(x, err, sizeof(err));
	if (!ret)
		ret = reach_phase(x, &fs, err, sizeof(err));
	if (!ret)
		ret = apply(x, &fs, err, sizeof(err));
	if (!ret) {
		settle(x);
		res->observed = fx_classify(x, &owner);
		if (cell->trig.drop && !fx_proxy_dropped(x))
			snprintf(err, sizeof(err), "the proxy never saw a %s", cell->trig.drop);
		if (fx_window(x, owner, why, sizeof(why)) || fx_never_both(x, why, sizeof(why)))
			snprintf(err, sizeof(err), "%s", why);
	}
	res->platform = x->started && (fx_file_has(x->r.src_err, SHUTDOWN_RESET) ||
				       fx_file_has(x->r.dst_err, SHUTDOWN_RESET));
	finish(x, &fs);
	res->pass = !err[0] && res->observed == cell->expect;
	snprintf(res->detail, sizeof(res->detail), "%s%s%s", err, err[0] && x->log[0] ? " | " : "",
		 x->log);
	res->secs = (double)(now_ns() - t0) / 1e9;
	regfree(&x->pass_re);
	free(x);
}
