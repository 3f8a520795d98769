/* SPDX-License-Identifier: Apache-2.0 */
#include "soak_hop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "harness_json.h"

#define EXIT_TIMEOUT_MS 10000 /* for a node to end on SIGTERM */

/* The heartbeat lines of c from index `from`: their count, the last's pass (and the first's). */
static long scan_passes(const struct hx_console *c, size_t from, size_t *count, long *first)
{
	regmatch_t m[2];
	regex_t re;
	long last = -1;

	*count = 0;
	if (regcomp(&re, SOAK_BEAT, REG_EXTENDED))
		return -1;
	for (size_t i = from; i < c->nlines; i++) {
		const char *l = hx_console_line(c, i);

		if (regexec(&re, l, 2, m, 0))
			continue;
		last = strtol(l + m[1].rm_so, NULL, 10);
		if (first && !*count)
			*first = last;
		(*count)++;
	}
	regfree(&re);
	return last;
}

static int failf(struct soak_row *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int failf(struct soak_row *row, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(row->why, sizeof(row->why), fmt, ap);
	va_end(ap);
	row->ok = false;
	return -1;
}

long soak_last_pass(const struct hx_console *c, size_t from, size_t *count)
{
	return scan_passes(c, from, count, NULL);
}

/* The pass number of the first heartbeat line of c, or -1. */
static long first_beat(const struct hx_console *c)
{
	size_t n;
	long first = -1;

	scan_passes(c, 0, &n, &first);
	return first;
}

/* Reads /proc/PID/NAME (NUL-separated, as environ and cmdline are) into buf; its length or -1. */
static ssize_t proc_file(const char *pid, const char *name, char *buf, size_t len)
{
	char path[320];
	ssize_t n, got = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/%s", pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((size_t)got < len - 1 && (n = read(fd, buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

/* True when the NUL-separated list buf[0, len) has an entry starting with prefix. */
static bool has_entry(const char *buf, ssize_t len, const char *prefix, size_t plen)
{
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(buf + i) + 1)
		if (!strncmp(buf + i, prefix, plen))
			return true;
	return false;
}

int soak_count_vmms(const struct soak *s, pid_t *pid)
{
	static char buf[1 << 16];
	size_t plen = strlen(s->run_prefix);
	struct dirent *d;
	DIR *dir = opendir("/proc");
	int n = 0;

	*pid = 0;
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		ssize_t len;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		/* another user's process: not readable, and not ours */
		len = proc_file(d->d_name, "environ", buf, sizeof(buf));
		if (len <= 0 || !has_entry(buf, len, s->run_prefix, plen))
			continue;
		/* `vmm run ...`: argv[1] is "run" (vmm migrate also has our VMM_RUN_DIR) */
		len = proc_file(d->d_name, "cmdline", buf, sizeof(buf));
		if (len <= 0 || (size_t)len <= strlen(buf) + 1 ||
		    strcmp(buf + strlen(buf) + 1, "run"))
			continue;
		if (!n++)
			*pid = (pid_t)strtol(d->d_name, NULL, 10);
	}
	closedir(dir);
	return n;
}

/* Starts the target of the hop on host t: `vmm run --incoming 127.0.0.1:PORT`. */
static int start_target(struct soak *s, int hop, int t, bool next_postcopy, struct soak_row *row)
{
	struct soak_node *n = &s->nodes[t];
	char stem[32], addr[32], err[PATH_MAX + 256];
	char *args[] = {"--incoming", addr, NULL};

	snprintf(stem, sizeof(stem), "hop%03d-%s", hop, s->hosts[t].label);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", s->hosts[t].port);
	if (soak_node_start(n, &s->env, &s->hosts[t], stem, args, s->env.digest && !next_postcopy,
			    err, sizeof(err)) ||
	    soak_node_wait_listen(n, s->timeout_ms, err, sizeof(err)))
		return failf(row, "target: %s", err);
	return 0;
}

/* `vmm migrate ... --json` from host src to host dst: its exit code and summary. */
static int run_migrate(struct soak *s, int hop, int src, int dst, bool postcopy,
		       struct soak_row *row)
{
	char stem[32], to[32], run_dir[PATH_MAX + 16], out[PATH_MAX], errp[PATH_MAX],
	    err[PATH_MAX + 256], mode_used[32] = "", state[32] = "", why[256] = "";
	char *env[] = {run_dir, NULL};
	char *argv[] = {(char *)s->env.vmm,
			"migrate",
			"--to",
			to,
			"--vm",
			(char *)s->env.name,
			"--mode",
			postcopy ? "postcopy" : "precopy",
			"--json",
			NULL};
	struct hx_spawn sp = {argv, env, out, errp};
	struct hx_console c = {0};
	struct hx_proc p;
	cJSON *j = NULL;
	int fd, code, ret = -1;

	snprintf(stem, sizeof(stem), "hop%03d-migrate", hop);
	snprintf(to, sizeof(to), "127.0.0.1:%d", s->hosts[dst].port);
	snprintf(run_dir, sizeof(run_dir), "VMM_RUN_DIR=%s", s->hosts[src].run_dir);
	snprintf(out, sizeof(out), "%s/%s.out", s->env.dir, stem);
	snprintf(errp, sizeof(errp), "%s/%s.err", s->env.dir, stem);
	if (hx_spawn(&p, "vmm migrate", &sp, &fd, err, sizeof(err)))
		return failf(row, "%s", err);
	if (hx_wait_exit(&p, s->migrate_timeout_ms)) {
		hx_reap(&p, 0);
		return failf(row, "vmm migrate did not finish within %g s (see %s)",
			     s->migrate_timeout_ms / 1e3, errp);
	}
	code = hx_exit_code(p.status);
	if (!hx_console_file(&c, "vmm migrate", out, NULL, err, sizeof(err))) {
		hx_console_pump(&c);
		j = cJSON_Parse(c.text ? c.text : "");
	}
	hx_console_close(&c);
	row->total_ms = hx_json_num(j, "total_ms");
	/* the microseconds when there are: a postcopy downtime is well under 1 ms */
	row->downtime_ms = hx_json_num(j, "downtime_us") >= 0 ? hx_json_num(j, "downtime_us") / 1e3
							      : hx_json_num(j, "downtime_ms");
	hx_json_text(j, "state", state, sizeof(state));
	hx_json_text(j, "mode_used", mode_used, sizeof(mode_used));
	hx_json_text(j, "error", why, sizeof(why));
	if (code)
		failf(row, "vmm migrate exited %d, state '%s'%s%s (see %s)", code, state,
		      why[0] ? ": " : "", why, errp);
	else if (!j)
		failf(row, "vmm migrate printed no JSON summary (see %s)", out);
	else if (strcmp(state, "completed"))
		failf(row, "the summary says state '%s', not completed (see %s)", state, out);
	else if (strcmp(mode_used, argv[7]))
		failf(row, "the summary says mode_used '%s', not %s (see %s)", mode_used, argv[7],
		      out);
	else
		ret = 0;
	cJSON_Delete(j);
	return ret;
}

/* The source ended: exit 0 within the bound. */
static int source_exited(struct soak *s, struct soak_node *src, struct soak_row *row)
{
	char how[64];

	if (hx_wait_exit(&src->proc, s->timeout_ms))
		return failf(row, "the source still runs %g s after the migration (see %s)",
			     s->timeout_ms / 1e3, src->err_path);
	soak_node_pump(src);
	if (hx_exit_code(src->proc.status)) {
		hx_describe(src->proc.status, how, sizeof(how));
		return failf(row, "the source ended with %s, not 0 (see %s)", how, src->err_path);
	}
	return 0;
}

/* Step 5: the guest verifies its memory on the new side, and went on where it was. */
static int guest_verified(struct soak *s, struct soak_node *src, struct soak_node *dst,
			  bool postcopy, struct soak_row *row)
{
	char err[PATH_MAX + 256];
	long before, after;
	size_t n;

	int ret = hx_wait_line(NULL, &dst->out, SOAK_BEAT, (size_t)s->beats, 0, s->timeout_ms, err,
			       sizeof(err));

	/* checked first: a guest that found a stale page reports it and exits */
	hx_console_pump(&src->out);
	if (hx_console_corruption(&src->out))
		return failf(row, "the source's guest reports: %s",
			     hx_console_corruption(&src->out));
	if (hx_console_corruption(&dst->out))
		return failf(row, "the target's guest reports: %s",
			     hx_console_corruption(&dst->out));
	if (ret)
		return failf(row, "the guest on the target: %s (see %s)", err, dst->out_path);
	before = soak_last_pass(&src->out, 0, &n);
	after = soak_last_pass(&dst->out, 0, &n);
	row->passes = after;
	if (first_beat(&dst->out) <= before)
		return failf(row,
			     "the guest on the target reports pass %ld, not after the source's %ld "
			     "(did it restart?)",
			     first_beat(&dst->out), before);
	if (!postcopy && src->digest &&
	    hx_wait_line(NULL, &dst->err, "memory digest 0x[0-9a-f]{16} matches the source's", 1, 0,
			 s->timeout_ms, err, sizeof(err)))
		return failf(row, "no digest check on the target: %s (see %s)", err, dst->err_path);
	return 0;
}

/* Step 6: the target is the one vmm process of ours that runs a VM. */
static int one_runner(struct soak *s, struct soak_node *dst, struct soak_row *row)
{
	pid_t pid;
	int n = soak_count_vmms(s, &pid);

	if (n < 0)
		return failf(row, "cannot scan /proc: %s", strerror(-n));
	if (n != 1 || pid != dst->proc.pid)
		return failf(row,
			     "%d vmm processes of this soak run a VM after the hop (first: pid %d, "
			     "the target is %d)",
			     n, (int)pid, (int)dst->proc.pid);
	return 0;
}

int soak_hop(struct soak *s, int hop, bool postcopy, bool next_postcopy, struct soak_row *row)
{
	int from = s->cur, to = 1 - s->cur;
	struct soak_node *src = &s->nodes[from], *dst = &s->nodes[to];
	char err[PATH_MAX + 256];
	uint64_t t0 = now_ns();
	int ret;

	memset(row, 0, sizeof(*row));
	row->hop = hop;
	row->postcopy = postcopy;
	row->ok = true;
	row->total_ms = row->downtime_ms = -1;
	row->passes = -1;
	snprintf(row->from, sizeof(row->from), "%s", s->hosts[from].label);
	snprintf(row->to, sizeof(row->to), "%s", s->hosts[to].label);

	ret = start_target(s, hop, to, next_postcopy, row);
	if (!ret)
		ret = run_migrate(s, hop, from, to, postcopy, row);
	if (!ret)
		ret = source_exited(s, src, row);
	if (!ret && soak_node_wait_socket(dst, s->env.name, s->timeout_ms, err, sizeof(err)))
		ret = failf(row, "target: %s", err);
	if (!ret)
		ret = guest_verified(s, src, dst, postcopy, row);
	if (!ret)
		ret = one_runner(s, dst, row);
	if (!ret) {
		if (soak_node_counts(dst, 10000, &row->c, &row->counts_stable, err, sizeof(err)))
			ret = failf(row, "target: %s", err);
		else
			row->have_counts = true;
	}
	row->hop_ms = (double)(now_ns() - t0) / 1e6;
	if (ret)
		return ret;
	soak_node_stop(src, EXIT_TIMEOUT_MS); /* exited: reaped, its files closed */
	s->cur = to;
	return 0;
}

int soak_hop_recover(struct soak *s)
{
	bool run[2] = {soak_node_running(&s->nodes[0]), soak_node_running(&s->nodes[1])};
	struct soak_node *n;
	char err[PATH_MAX + 256] = "";
	size_t beats;
	int keep;

	if (run[0] == run[1])
		return -1; /* none left, or both: which one has the VM is not ours to guess */
	keep = run[0] ? 0 : 1;
	n = &s->nodes[keep];
	soak_node_stop(&s->nodes[1 - keep], EXIT_TIMEOUT_MS);
	soak_node_pump(n);
	soak_last_pass(&n->out, 0, &beats);
	if (soak_node_wait_socket(n, s->env.name, s->timeout_ms, err, sizeof(err)) ||
	    hx_wait_line(NULL, &n->out, SOAK_BEAT, beats + 1, 0, s->timeout_ms, err, sizeof(err)) ||
	    hx_console_corruption(&n->out)) {
		fprintf(stderr, "vmm-soak: cannot go on after the failure: %s\n",
			hx_console_corruption(&n->out) ? hx_console_corruption(&n->out) : err);
		return -1;
	}
	s->cur = keep;
	return 0;
}
