/* SPDX-License-Identifier: Apache-2.0 */
#include "harness_run.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "harness_net.h"

#define END_TIMEOUT_MS 10000

static const char *stem(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

/* Spawns argv as `name`, files DIR/STEM.{out,err}, its console in *c. */
static int start(struct hx_run *r, const char *name, const char *st, struct hx_argv *argv,
		 char *const *env, struct hx_proc *p, struct hx_console *c, char *err_path,
		 char *err, size_t errlen)
{
	char out_path[PATH_MAX];
	struct hx_spawn s = {argv->v, env, NULL, err_path};
	int fd, ret;

	if (argv->overflow) {
		snprintf(err, errlen, "%s: too many arguments", name);
		return -E2BIG;
	}
	snprintf(err_path, PATH_MAX, "%s/%s.err", r->o.dir, st);
	snprintf(out_path, sizeof(out_path), "%s/%s.out", r->o.dir, st);
	if (!r->o.pipes)
		s.out_path = out_path;
	ret = hx_spawn(p, name, &s, &fd, err, errlen);
	if (ret)
		return ret;
	if (r->o.pipes)
		return hx_console_pipe(c, name, fd, err, errlen);
	return hx_console_file(c, name, out_path, p, err, errlen);
}

/* Whether a UNIX socket bound to path listens (/proc/net/unix: flag __SO_ACCEPTCON). */
static bool unix_listening(const char *path)
{
	char line[PATH_MAX + 128], flags[16], name[PATH_MAX];
	bool found = false;
	FILE *f = fopen("/proc/net/unix", "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %15s %*s %*s %*s %4095s", flags, name) == 2)
			found = !strcmp(name, path) && !strcmp(flags, "00010000");
	fclose(f);
	return found;
}

static int target_listens(void *arg)
{
	struct hx_run *r = arg;

	if (!hx_running(&r->dst))
		return -ESRCH;
	if (r->o.unix_path)
		return unix_listening(r->o.unix_path);
	return hx_listening(&r->dst, r->port);
}

/* hx_wait_listen(), pumping the consoles: the source's first lines are stamped as they come. */
static int wait_listen(struct hx_run *r, int timeout_ms, char *err, size_t errlen)
{
	int ret = hx_watch_until(&r->watch, target_listens, r, timeout_ms);

	if (ret == -ESRCH)
		snprintf(err, errlen, "the target exited before it listened on %s (see %s)", r->to,
			 r->dst_err);
	else if (ret)
		snprintf(err, errlen, "the target does not listen on %s after %g s (see %s)", r->to,
			 timeout_ms / 1e3, r->dst_err);
	return ret;
}

int hx_run_start(struct hx_run *r, const struct hx_run_opts *o, char *err, size_t errlen)
{
	struct hx_argv sa = {0}, ta = {0};
	int ret;

	memset(r, 0, sizeof(*r));
	r->o = *o;
	r->port = o->port ? o->port : hx_free_port();
	if (r->port < 0) {
		snprintf(err, errlen, "no free port: %s", strerror(-r->port));
		return r->port;
	}
	if (o->unix_path)
		snprintf(r->to, sizeof(r->to), "unix:%s", o->unix_path);
	else
		snprintf(r->to, sizeof(r->to), "%s:%d", o->host ? o->host : "127.0.0.1", r->port);

	hx_argv_split(&ta, o->target_wrap);
	hx_argv_add(&ta, o->target_vmm ? o->target_vmm : o->vmm);
	hx_argv_add(&ta, "run");
	hx_argv_add(&ta, "--incoming");
	hx_argv_add(&ta, r->to);
	hx_argv_addv(&ta, o->target_args);
	hx_argv_split(&sa, o->source_wrap);
	hx_argv_add(&sa, o->source_vmm ? o->source_vmm : o->vmm);
	hx_argv_add(&sa, "run");
	if (o->config)
		hx_argv_add(&sa, o->config);
	hx_argv_add(&sa, "--set");
	hx_argv_addf(&sa, "vm.name=%s", o->name);
	hx_argv_addv(&sa, o->source_args);

	ret = start(r, "the target", stem(o->dst_stem, "dst"), &ta, o->target_env, &r->dst,
		    &r->dst_out, r->dst_err, err, errlen);
	if (!ret)
		ret = start(r, "the source", stem(o->src_stem, "src"), &sa, o->source_env, &r->src,
			    &r->src_out, r->src_err, err, errlen);
	hx_argv_free(&ta);
	hx_argv_free(&sa);
	hx_watch_add(&r->watch, &r->src_out);
	hx_watch_add(&r->watch, &r->dst_out);
	if (!ret)
		ret = wait_listen(r, o->listen_timeout_ms ? o->listen_timeout_ms : 30000, err,
				  errlen);
	return ret;
}

struct cmd_wait {
	struct hx_cmd *c;
	bool pipe;
};

static int cmd_done(void *arg)
{
	struct cmd_wait *w = arg;

	/*
	 * A pipe is read to its end, which comes as the process exits (nothing
	 * else holds it); a file is done once its writer has exited.
	 */
	return w->pipe ? w->c->out.eof : !hx_running(&w->c->proc);
}

int hx_run_vmm(struct hx_run *r, const char *st, char *const *args, char *const *env,
	       int timeout_ms, struct hx_cmd *c, char *err, size_t errlen)
{
	struct hx_argv a = {0};
	struct hx_watch w = r->watch;
	struct cmd_wait cw = {c, r->o.pipes};
	char name[32], dflt[16];
	uint64_t t0;
	int ret;

	memset(c, 0, sizeof(*c));
	c->code = -1;
	snprintf(dflt, sizeof(dflt), "cmd%d", ++r->cmds);
	st = stem(st, dflt);
	snprintf(name, sizeof(name), "vmm %s", args && args[0] ? args[0] : "");
	hx_argv_add(&a, r->o.source_vmm ? r->o.source_vmm : r->o.vmm);
	hx_argv_addv(&a, args);
	t0 = now_ns();
	ret = start(r, name, st, &a, env, &c->proc, &c->out, c->err_path, err, errlen);
	hx_argv_free(&a);
	if (ret)
		return ret;
	hx_watch_add(&w, &c->out);
	ret = hx_watch_until(&w, cmd_done, &cw, timeout_ms);
	if (!ret) /* a closed pipe means exiting: reaped within a few ms, not at the next poll */
		ret = hx_wait_exit(&c->proc, timeout_ms);
	if (ret) {
		snprintf(err, errlen, "%s did not finish within %g s (see %s)", name,
			 timeout_ms / 1e3, c->err_path);
		hx_reap(&c->proc, 0);
		c->code = hx_exit_code(c->proc.status);
		return -ETIMEDOUT;
	}
	c->ms = (double)(now_ns() - t0) / 1e6;
	hx_console_pump(&c->out); /* a file: whatever it wrote before exiting */
	c->code = hx_exit_code(c->proc.status);
	c->json = cJSON_Parse(c->out.text ? c->out.text : "");
	return 0;
}

int hx_run_migrate(struct hx_run *r, char *const *args, int timeout_ms, struct hx_cmd *c, char *err,
		   size_t errlen)
{
	struct hx_argv a = {0};
	int ret;

	hx_argv_add(&a, "migrate");
	hx_argv_add(&a, "--to");
	hx_argv_add(&a, r->to);
	hx_argv_add(&a, "--vm");
	hx_argv_add(&a, r->o.name);
	hx_argv_addv(&a, args);
	ret = hx_run_vmm(r, stem(r->o.mig_stem, "mig"), a.v, r->o.migrate_env, timeout_ms, c, err,
			 errlen);
	hx_argv_free(&a);
	return ret;
}

void hx_cmd_free(struct hx_cmd *c)
{
	if (c->proc.pid > 0)
		hx_reap(&c->proc, 0);
	hx_console_close(&c->out);
	cJSON_Delete(c->json);
	c->json = NULL;
}

static int exited(void *arg)
{
	return !hx_running(arg);
}

int hx_run_wait_exit(struct hx_run *r, struct hx_proc *p, int timeout_ms, char *err, size_t errlen)
{
	if (hx_watch_until(&r->watch, exited, p, timeout_ms)) {
		snprintf(err, errlen, "%s did not exit within %g s", p->name, timeout_ms / 1e3);
		return -ETIMEDOUT;
	}
	return 0;
}

/* The process exited with code `want`; else a message. */
static int expect_exit(struct hx_proc *p, int want, const char *err_path, char *err, size_t errlen)
{
	char how[64];

	if (hx_exit_code(p->status) == want)
		return 0;
	hx_describe(p->status, how, sizeof(how));
	snprintf(err, errlen, "%s ended with %s, not %d (see %s)", p->name, how, want, err_path);
	return -EIO;
}

/* True when the file's text contains s. */
static bool file_has(const char *path, const char *s)
{
	struct hx_console c;
	char e[64];
	bool found;

	if (hx_console_file(&c, "file", path, NULL, e, sizeof(e)))
		return false;
	hx_console_pump(&c);
	found = c.text && strstr(c.text, s);
	hx_console_close(&c);
	return found;
}

int hx_run_switched_over(struct hx_run *r, int timeout_ms, char *err, size_t errlen)
{
	char said[352];
	int ret = hx_run_wait_exit(r, &r->src, timeout_ms, err, errlen);

	if (!ret)
		ret = expect_exit(&r->src, 0, r->src_err, err, errlen);
	snprintf(said, sizeof(said), "migrated to %s", r->to);
	if (!ret && !file_has(r->src_err, said)) {
		snprintf(err, errlen, "the source's stderr does not say \"%s\" (see %s)", said,
			 r->src_err);
		ret = -EIO;
	}
	return ret;
}

int hx_run_target_verified(struct hx_run *r, const char *done_regex, int timeout_ms, char *err,
			   size_t errlen)
{
	int ret = hx_run_wait_exit(r, &r->dst, timeout_ms, err, errlen);

	if (!ret)
		ret = expect_exit(&r->dst, 0, r->dst_err, err, errlen);
	hx_console_pump(&r->dst_out);
	if (!ret && hx_console_corruption(&r->dst_out)) {
		snprintf(err, errlen, "the target's guest reports: %s",
			 hx_console_corruption(&r->dst_out));
		ret = -EIO;
	}
	if (!ret && done_regex) /* the target has exited: what it printed is all there is */
		ret = hx_wait_line(NULL, &r->dst_out, done_regex, 1, 0, 0, err, errlen);
	return ret;
}

int hx_run_target_lines(struct hx_run *r, const char *regex, size_t want, int timeout_ms, char *err,
			size_t errlen)
{
	int ret = hx_wait_line(&r->watch, &r->dst_out, regex, want, 0, timeout_ms, err, errlen);

	hx_console_pump(&r->dst_out); /* a file: whatever it wrote after the last match too */
	/* A guest that found a corruption stops: that, not the missing lines, is the news. */
	if (hx_console_corruption(&r->dst_out)) {
		snprintf(err, errlen, "the target's guest reports: %s",
			 hx_console_corruption(&r->dst_out));
		return -EIO;
	}
	if (ret == -ENODATA)
		snprintf(err, errlen,
			 "the target ended before %zu lines of its console matched /%s/ (see %s)",
			 want, regex, r->dst_err);
	if (ret)
		return ret;
	/* A guest that runs on is still running: one that ended after its lines did not. */
	if (!hx_running(&r->dst)) {
		snprintf(err, errlen, "the target exited after %zu lines matching /%s/ (see %s)",
			 want, regex, r->dst_err);
		return -ESRCH;
	}
	hx_signal(&r->dst, SIGTERM);
	ret = hx_run_wait_exit(r, &r->dst, END_TIMEOUT_MS, err, errlen);
	return ret ? ret : expect_exit(&r->dst, 128 + SIGTERM, r->dst_err, err, errlen);
}

/* The VM's socket is the target's: "<name>.sock" is there, "<name>.sock.incoming" is gone. */
static int socket_taken_over(void *arg)
{
	struct hx_run *r = arg;
	const char *dir = getenv("VMM_RUN_DIR");
	char sock[PATH_MAX], incoming[PATH_MAX + 16];
	struct stat st;

	snprintf(sock, sizeof(sock), "%s/%s.sock", dir, r->o.name);
	snprintf(incoming, sizeof(incoming), "%s.incoming", sock);
	if (!hx_running(&r->dst))
		return -ESRCH;
	return !stat(sock, &st) && S_ISSOCK(st.st_mode) && lstat(incoming, &st);
}

int hx_run_target_serves(struct hx_run *r, int timeout_ms, char *err, size_t errlen)
{
	char *status_args[] = {"migrate", "--status", "--vm", (char *)r->o.name, "--json", NULL};
	struct hx_cmd c;
	int ret = 0;

	/* Without VMM_RUN_DIR the socket's place is vmm's to choose: the status call tells. */
	if (getenv("VMM_RUN_DIR") &&
	    hx_watch_until(&r->watch, socket_taken_over, r, timeout_ms) == -ESRCH)
		ret = -ESRCH;
	if (ret || !hx_running(&r->dst)) {
		snprintf(err, errlen, "the target exited after the migration (see %s)", r->dst_err);
		return -ESRCH;
	}
	ret = hx_run_vmm(r, "status", status_args, NULL, timeout_ms, &c, err, errlen);
	if (!ret && c.code) {
		snprintf(err, errlen, "vmm migrate --status on the target exited %d (see %s)",
			 c.code, c.err_path);
		ret = -EIO;
	}
	hx_cmd_free(&c);
	if (ret)
		return ret;
	if (!hx_running(&r->dst)) {
		snprintf(err, errlen, "the target exited while serving its API (see %s)",
			 r->dst_err);
		return -ESRCH;
	}
	hx_signal(&r->dst, SIGTERM);
	ret = hx_run_wait_exit(r, &r->dst, END_TIMEOUT_MS, err, errlen);
	return ret ? ret : expect_exit(&r->dst, 128 + SIGTERM, r->dst_err, err, errlen);
}

static int both_exited(void *arg)
{
	struct hx_run *r = arg;

	return !hx_running(&r->src) && !hx_running(&r->dst);
}

void hx_run_end(struct hx_run *r)
{
	hx_signal(&r->dst, SIGTERM);
	hx_signal(&r->src, SIGTERM);
	/* pumped meanwhile: a child blocked on a full console pipe could not exit */
	hx_watch_until(&r->watch, both_exited, r, END_TIMEOUT_MS);
	hx_reap(&r->dst, 0);
	hx_reap(&r->src, 0);
	hx_console_close(&r->src_out);
	hx_console_close(&r->dst_out);
}
