/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reader-resume fault (fault_reader.h): the operator's override with a
 * passive reader on the path, then the reader's replays.
 */
#include "fault_reader.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fault_inject.h"

#define MIGRATE_END_MS 90000 /* `vmm migrate` ends: T, then its report */
#define ACTION_MS      60000 /* an operator's command */
#define CONTINUE_MS    60000 /* the continued target reads the late COMMIT */
#define REFUSAL_MS     30000 /* the target names a replayed proof */
#define REPLAY_S       "60"  /* the replaying script's own bound (timeout(1)) */

static int mig_done(void *arg)
{
	return !hx_running(arg);
}

/* A line of path matching regex within ms (the file grows as writer writes). */
static int wait_in(struct fx_ctx *x, const char *path, struct hx_proc *writer, const char *regex,
		   int ms, char *err, size_t errlen)
{
	struct hx_console c;
	int ret = hx_console_file(&c, "file", path, writer, err, errlen);

	if (ret)
		return ret;
	ret = hx_wait_line(&x->r.watch, &c, regex, 1, 0, ms, err, errlen);
	hx_console_close(&c);
	return ret;
}

/* The operator's `vmm migrate --recover [--decide resume]` on the source: its exit code. */
static int recover(struct fx_ctx *x, bool decide)
{
	char *plain[] = {"migrate", "--recover", "--api-socket", x->src_sock, "--to", x->to, NULL};
	char *over[] = {"migrate", "--recover", "--api-socket", x->src_sock, "--decide",
			"resume",  NULL};
	uint64_t t0 = now_ns();
	int code = fx_vmm(x, decide ? "recover-src-decide" : "recover-src", decide ? over : plain,
			  hx_scaled_ms(ACTION_MS), NULL, 0);

	fx_note(x, "%s: exit %d in %.1f s", decide ? "--recover --decide resume" : "--recover",
		code, (double)(now_ns() - t0) / 1e9);
	return code;
}

/* What the proxy printed of the main connection: its session, version and COMMIT proof. */
struct captured {
	char session[32], version[16], commit[160];
};

static int read_capture(struct fx_ctx *x, const char *proxy_out, struct captured *cap, char *err,
			size_t errlen)
{
	char line[512];
	FILE *f = fopen(proxy_out, "r");

	memset(cap, 0, sizeof(*cap));
	if (!f) {
		snprintf(err, errlen, "%s: %s", proxy_out, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!cap->session[0])
			sscanf(line, "hello main %31[0-9a-f]", cap->session);
		if (!cap->version[0])
			sscanf(line, "version %15[0-9.]", cap->version);
		if (!cap->commit[0])
			sscanf(line, "record COMMIT on main %159[0-9a-f]", cap->commit);
	}
	fclose(f);
	if (!cap->session[0] || !cap->version[0] || !cap->commit[0]) {
		snprintf(err, errlen, "the proxy captured no %s",
			 !cap->commit[0] ? "COMMIT on main" : "main hello");
		return -ENODATA;
	}
	fx_note(x, "captured COMMIT's proof (%zu bytes)", strlen(cap->commit) / 2);
	return 0;
}

/*
 * The reader sends record `name` with COMMIT's proof straight to the target
 * (a recover connection, or with attempt > 0 a main-resume one), and the
 * target must refuse it for its proof.
 */
static int replay(struct fx_ctx *x, int port, const struct captured *cap, const char *name,
		  unsigned attempt, char *err, size_t errlen)
{
	char script[PATH_MAX], addr[32], log[PATH_MAX + 64], att[16], re[96];
	char *argv[16] = {"timeout",
			  "--signal=KILL",
			  REPLAY_S,
			  "python3",
			  script,
			  "--replay",
			  addr,
			  (char *)cap->version,
			  (char *)cap->session,
			  (char *)name,
			  (char *)cap->commit};
	int ret;

	snprintf(script, sizeof(script), "%s/recproxy.py", x->env->scripts);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/replay-%s.out", x->dir, name);
	snprintf(att, sizeof(att), "%u", attempt);
	if (attempt) {
		argv[11] = "main-resume";
		argv[12] = att;
	}
	ret = fx_run_cmd(argv, log);
	if (ret) {
		snprintf(err, errlen, "the reader's replay of %s: exit %d (%s)", name, ret, log);
		return -EIO;
	}
	/* A recover connection got as far as the proof: the refusal is the proof's. */
	if (!attempt && !fx_file_has(log, "replay: got RECOVER_STATE")) {
		snprintf(err, errlen, "the reader's recover connection got no RECOVER_STATE (%s)",
			 log);
		return -EIO;
	}
	snprintf(re, sizeof(re), "refused .*%s whose proof does not verify", name);
	ret = wait_in(x, x->r.dst_err, &x->r.dst, re, hx_scaled_ms(REFUSAL_MS), err, errlen);
	if (ret) {
		snprintf(err, errlen, "the target did not refuse the replayed %s as unproven",
			 name);
		return ret;
	}
	fx_note(x, "replayed COMMIT's proof as %s%s: refused", name,
		attempt ? " (main-resume)" : "");
	return 0;
}

int fx_reader_resume(struct fx_ctx *x, struct hx_proc *stepped, int port, char *err, size_t errlen)
{
	bool postcopy = x->cell->trig.postcopy;
	char proxy_out[PATH_MAX + 64], st[64];
	struct captured cap;
	int ret, code, want = postcopy ? 3 : 4;

	snprintf(proxy_out, sizeof(proxy_out), "%s/proxy.out", x->dir);
	/* 1. The source cannot learn the outcome: switchover-unknown (postcopy: paused). */
	if (hx_watch_until(&x->r.watch, mig_done, &x->mig, hx_scaled_ms(MIGRATE_END_MS))) {
		snprintf(err, errlen, "vmm migrate still running %d s after the stall",
			 hx_scaled_ms(MIGRATE_END_MS) / 1000);
		return -ETIMEDOUT;
	}
	code = hx_reap(&x->mig, 1000);
	fx_note(x, "target stopped; vmm migrate exit %d", code);
	if (code != want) {
		snprintf(err, errlen, "vmm migrate exited %d, expected %d (%s)", code, want,
			 postcopy ? "postcopy-paused" : "switchover-unknown");
		return -EPROTO;
	}
	ret = read_capture(x, proxy_out, &cap, err, errlen);
	if (ret)
		return ret;
	/* 2. The operator: the target does not answer, so it takes the VM back. */
	if (!postcopy && !recover(x, false)) {
		snprintf(err, errlen, "--recover settled with the target stopped");
		return -EPROTO;
	}
	if (recover(x, true)) {
		snprintf(err, errlen, "--recover --decide resume failed");
		return -EPROTO;
	}
	ret = wait_in(x, proxy_out, &x->proxy, "^dropped ABORT on main", 10000, err, errlen);
	if (ret) {
		snprintf(err, errlen, "the source's proven ABORT never reached the proxy");
		return ret;
	}
	/* 3. The target continues, reads the late COMMIT and waits for a RELEASE. */
	kill(stepped->pid, SIGCONT);
	ret = wait_in(x, x->r.dst_err, &x->r.dst, "COMMIT came [0-9]+ ms after PREPARED",
		      hx_scaled_ms(CONTINUE_MS), err, errlen);
	if (ret) {
		snprintf(err, errlen, "the continued target did not take the late COMMIT");
		return ret;
	}
	fx_note(x, "target continued: late COMMIT, waits for RELEASE");
	/* 4. The reader's replays. */
	ret = replay(x, port, &cap, "RELEASE", 0, err, errlen);
	if (!ret && postcopy)
		ret = replay(x, port, &cap, "RESUME", 1, err, errlen);
	if (ret)
		return ret;
	ret = fx_state(x, true, st, sizeof(st));
	fx_note(x, "target %s", ret ? "no status" : st);
	if (ret || strcmp(st, "switchover-unknown")) {
		snprintf(err, errlen, "after the replays the target is %s, not switchover-unknown",
			 ret ? "unreadable" : st);
		return -EPROTO;
	}
	return 0;
}
