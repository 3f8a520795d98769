/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_snapshot: vmm snapshot and vmm run --restore, per guest size and
 * workload (idle: memory never written; dirty: a quarter of RAM rewritten
 * without pause): 1, 4 and 16 GiB both ways and a 64 GiB idle guest
 * (--quick: 256 MiB and 1 GiB). For each case, in one run:
 *   - a stopped snapshot and a --live one: how long the VM was paused, the
 *     whole time, and the memory file's allocated size (it is sparse);
 *   - the stopped snapshot restored eagerly and --lazy: the time to the
 *     first guest instruction (vmm run --timing's first_run_ms, from the
 *     command's start) and to every page resident (eager: the same moment,
 *     the pages are read before the vCPUs start; lazy: "lazy restore done");
 *     and lazily into a waiting process (vmm run --restore-wait, PUT
 *     /api/v1/vm/restore): to the first instruction from the request;
 *   - the same running guest then migrated (precopy, to a vmm on this
 *     host over loopback TCP): its downtime, which a --live pause is
 *     judged against (both stop on the same convergence decision);
 *   - the file system's own limit for the stopped snapshot's data: the same
 *     bytes written sequentially from touched memory into the same
 *     directory (snapshot_io.h), its MB/s beside the pause's (the pages
 *     written over the pause) and the pause's share of it.
 * The header says what starting a vmm process costs (vmm --version, from
 * fork to exit, median of 20): the part of a restore's time from the
 * command's start that is the process's, not the restore's.
 * Then the same case under QEMU 7.2 microvm, interleaved (snapshot_qemu.h):
 * its live and stopped `migrate "exec:cat > FILE"` and a restore through
 * `-incoming "exec:cat FILE"` (QEMU 7.2 has no lazy restore: n/a).
 * Ratios within a run are what to read (lazy against eager, live against
 * stopped, vmm against QEMU); the machines are shared and noisy. Prints a
 * table, and CSV with --csv. Without qemu-system-x86_64 (or with
 * --no-qemu) only vmm's rows.
 *
 * usage: bench_snapshot [--quick] [--only SUBSTR] [--csv FILE] [--vmm PATH]
 *                       [--dir DIR] [--qemu PATH | --no-qemu] [--firmware PATH]
 * (--only: the cases whose "SIZE-WORKLOAD" contains SUBSTR, e.g. 1G-, dirty)
 */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "snapshot_io.h"
#include "snapshot_qemu.h"

struct result {
	const char *size, *workload;
	double pause_ms, total_ms, file_mib, live_pause_ms, live_total_ms, live_passes;
	double eager_first_ms, lazy_first_ms, lazy_resident_ms;
	double written_mib, write_mbs, fs_seq_mbs, share, wait_first_ms, mig_downtime_ms;
	int ok;
};

static const char *vmm = VMM_BINARY, *qemu = "qemu-system-x86_64", *firmware = VMM_FIRMWARE;
static char dir[512] = "/tmp/bench_snapshot";

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Starts vmm with argv (NULL-terminated), stdout and stderr to files. */
static pid_t spawn(char *const argv[], const char *out, const char *err)
{
	pid_t pid;

	fflush(NULL); /* the child's freopen would write our buffered output again */
	/* Emptied here, not only in the child: a wait_for() must not read the last case's lines. */
	if (truncate(out, 0) && errno != ENOENT)
		return -1;
	if (truncate(err, 0) && errno != ENOENT)
		return -1;
	pid = fork();

	if (pid == 0) {
		if (!freopen(out, "w", stdout) || !freopen(err, "w", stderr) ||
		    !freopen("/dev/null", "r", stdin))
			_exit(127);
		setenv("VMM_RUN_DIR", dir, 1);
		execv(vmm, argv);
		_exit(127);
	}
	return pid;
}

static int run(char *const argv[], const char *out, const char *err)
{
	int status;
	pid_t pid = spawn(argv, out, err);

	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The first line of path that contains needle, into line; waits up to ms. */
static int wait_for(const char *path, const char *needle, int ms, char *line, size_t len)
{
	for (int t = 0; t <= ms; t += 50) {
		FILE *f = fopen(path, "r");

		while (f && fgets(line, (int)len, f))
			if (strstr(line, needle)) {
				fclose(f);
				return 0;
			}
		if (f)
			fclose(f);
		sleep_ms(50);
	}
	return -1;
}

/* A number that follows key in path's first line holding it ("key=12.5", "\"key\":12"). */
static double field(const char *path, const char *key)
{
	char line[8192], *p;

	if (wait_for(path, key, 0, line, sizeof(line)))
		return -1;
	p = strstr(line, key) + strlen(key);
	while (*p == '"' || *p == ':' || *p == '=' || *p == ' ')
		p++;
	return strtod(p, NULL);
}

static void path(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, len, "%s/", dir);

	va_start(ap, fmt);
	vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
}

/* A restore (eager or lazy) until it has run and every page is in; fills the times. */
static int restore(const char *snap, int lazy, double *first_ms, double *resident_ms)
{
	char out[600], err[600], line[1024];
	char *argv[] = {"vmm",	 "run",		"--restore", (char *)snap,
			"--set", "vm.name=bsr", "--timing",  lazy ? "--lazy" : NULL,
			NULL};
	pid_t pid;
	int status;

	path(out, sizeof(out), "r.out");
	path(err, sizeof(err), "r.err");
	pid = spawn(argv, out, err);
	if (pid < 0)
		return -1;
	if (wait_for(err, lazy ? "lazy restore done" : "restored snapshot", 600000, line,
		     sizeof(line)))
		goto fail;
	sleep_ms(500); /* the guest runs a little: first_run_ms is set */
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	*first_ms = field(err, "first_run_ms");
	*resident_ms = lazy ? field(err, "setup_ms") + field(err, "pages in after") : *first_ms;
	return *first_ms < 0 ? -1 : 0;
fail:
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/*
 * The stopped snapshot restored lazily into a waiting vmm: --restore-wait,
 * then PUT /api/v1/vm/restore; its first instruction from the request.
 */
static int restore_wait(const char *snap, double *first_ms)
{
	char out[600], err[600], sock[600], body[800], reply[1024], line[1024];
	char *argv[] = {"vmm",	 "run",		"--restore-wait", sock, "--lazy",
			"--set", "vm.name=bsw", "--timing",	  NULL};
	pid_t pid;
	int status, code = 0;

	path(out, sizeof(out), "w.out");
	path(err, sizeof(err), "w.err");
	path(sock, sizeof(sock), "wait.sock");
	snprintf(body, sizeof(body), "{\"from\": \"%s\"}", snap);
	pid = spawn(argv, out, err);
	if (pid < 0)
		return -1;
	reply[0] = '\0';
	if (wait_for(err, "waiting for a restore on", 60000, line, sizeof(line)) ||
	    sio_unix_put(sock, "/api/v1/vm/restore", body, &code, reply, sizeof(reply)) ||
	    code != 200) {
		fprintf(stderr, "bench_snapshot: the restore into a waiting vmm: %d %s\n", code,
			reply);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	sleep_ms(500); /* the guest runs a little: first_run_ms is set */
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	*first_ms = field(err, "first_run_ms");
	return *first_ms < 0 ? -1 : 0;
}

static int snapshot(const char *to, int live, double *pause_ms, double *total_ms, double *passes,
		    double *written_mib)
{
	char out[600], err[600];
	char *argv[] = {"vmm",	"snapshot", "--vm",   "bs",
			"--to", (char *)to, "--json", live ? "--live" : NULL,
			NULL};

	path(out, sizeof(out), "s.out");
	path(err, sizeof(err), "s.err");
	if (run(argv, out, err))
		return -1;
	*pause_ms = field(out, "\"pause_us\"") / 1000;
	*total_ms = field(out, "\"total_ms\"");
	*passes = field(out, "\"passes\"");
	*written_mib = field(out, "\"pages_written\"") * 4096 / (1 << 20);
	return 0;
}

/*
 * The running VM (pid) migrated by precopy to a vmm started here: the
 * downtime from `vmm migrate --json`. The source ends (migrated), the
 * target is stopped.
 */
static int migrate_away(pid_t src, double *downtime_ms)
{
	char out[600], err[600], mout[600], merr[600], line[512], to[64];
	char listen[64];
	char *target[] = {"vmm", "run", "--incoming", listen, "--set", "vm.name=bst", NULL};
	char *mig[] = {"vmm", "migrate", "--to",    to,	      "--vm",
		       "bs",  "--mode",	 "precopy", "--json", NULL};
	int port = sio_free_port(), status, ret = -1;
	pid_t t;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(to, sizeof(to), "%s", listen);
	path(out, sizeof(out), "t.out");
	path(err, sizeof(err), "t.err");
	path(mout, sizeof(mout), "m.out");
	path(merr, sizeof(merr), "m.err");
	t = spawn(target, out, err);
	if (t < 0)
		return -1;
	if (port &&
	    !wait_for(err, "waiting for an incoming migration on", 60000, line, sizeof(line))) {
		if (!run(mig, mout, merr)) {
			*downtime_ms = field(mout, "\"downtime_us\"") / 1000;
			waitpid(src, &status, 0);
			ret = *downtime_ms >= 0 ? 0 : -1;
		}
	}
	kill(t, SIGKILL);
	waitpid(t, &status, 0);
	return ret;
}

/* The pause's write rate for the bytes it wrote, and the file system's for the same bytes. */
static void write_rates(struct result *r, double mib, double pause_ms)
{
	r->written_mib = mib;
	r->write_mbs = pause_ms > 0 && mib > 0 ? mib * 1048576 / 1e3 / pause_ms : -1;
	r->fs_seq_mbs = mib > 0 ? sio_fs_seq_mbs(dir, (uint64_t)(mib * 1048576)) : -1;
	r->share = r->write_mbs > 0 && r->fs_seq_mbs > 0 ? r->write_mbs / r->fs_seq_mbs : -1;
}

static void one_case(struct result *r)
{
	char mem[64], ws[64], out[600], err[600], s1[600], s2[600], cmd[1400], line[512];
	long long bytes = strtoll(r->size, NULL, 10) << (strchr(r->size, 'G') ? 30 : 20);
	int dirty = !strcmp(r->workload, "dirty");
	char *argv[] = {"vmm",
			"run",
			dirty ? EXAMPLES_DIR "/dirty.cfg" : EXAMPLES_DIR "/idle.cfg",
			"--set",
			mem,
			"--set",
			"vm.name=bs",
			"--set",
			ws,
			"--set",
			"workload.passes=0",
			"--set",
			"workload.heartbeat_ms=0",
			NULL};
	pid_t pid;
	int status;

	snprintf(mem, sizeof(mem), "vm.memory=%s", r->size);
	snprintf(ws, sizeof(ws), "workload.working_set=%lldM", bytes / 4 >> 20);
	if (!dirty)
		argv[7] = NULL; /* idle.cfg: no workload keys */
	path(out, sizeof(out), "vm.out");
	path(err, sizeof(err), "vm.err");
	path(s1, sizeof(s1), "s-%s-%s", r->size, r->workload);
	path(s2, sizeof(s2), "l-%s-%s", r->size, r->workload);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", s1, s2);
	if (system(cmd)) {
	}
	pid = spawn(argv, out, err);
	if (pid < 0 ||
	    wait_for(out, dirty ? "dirty pass 2 ok" : "idle", 600000, line, sizeof(line)))
		goto stop;
	if (snapshot(s2, 1, &r->live_pause_ms, &r->live_total_ms, &r->live_passes, &(double){0}) ||
	    snapshot(s1, 0, &r->pause_ms, &r->total_ms, &(double){0}, &r->written_mib))
		goto stop;
	snprintf(cmd, sizeof(cmd), "%s/memory", s1);
	r->file_mib = bench_alloc_mib(cmd);
	/* The same running guest, migrated: the downtime a --live pause is judged against. */
	if (migrate_away(pid, &r->mig_downtime_ms)) {
		r->mig_downtime_ms = -1;
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
	}
	pid = -1;
	/* The VM is gone: its memory no longer competes with the file system's baseline. */
	write_rates(r, r->written_mib, r->pause_ms);
	if (restore(s1, 0, &r->eager_first_ms, &(double){0}) ||
	    restore(s1, 1, &r->lazy_first_ms, &r->lazy_resident_ms) ||
	    restore_wait(s1, &r->wait_first_ms))
		goto stop;
	r->ok = 1;
stop:
	if (!r->ok) {
		/* Why, from the processes' own lines (an emulated machine's tmpfs is gone after).
		 */
		snprintf(cmd, sizeof(cmd),
			 "cd '%s' && for f in vm.err s.err s.out m.err t.err r.err w.err; do "
			 "[ -s $f ] && echo \"--- $f\" && tail -n 3 $f; done >&2",
			 dir);
		if (system(cmd)) {
		}
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", s1, s2);
	if (system(cmd)) {
	}
}

/* n/a for what a VMM does not do (negative). */
static void num(FILE *f, const char *fmt, double v, int width)
{
	if (v < 0)
		fprintf(f, "%*s", width, "n/a");
	else
		fprintf(f, fmt, width, v);
}

/* One row: the table (f = stdout, aligned) or the CSV (comma-separated). */
static void row(FILE *f, const char *who, const struct result *r)
{
	const double v[] = {r->pause_ms,       r->total_ms,	 r->file_mib,
			    r->live_pause_ms,  r->live_total_ms, r->live_passes,
			    r->eager_first_ms, r->lazy_first_ms, r->lazy_resident_ms,
			    r->wait_first_ms,  r->written_mib,	 r->write_mbs,
			    r->fs_seq_mbs,     r->share * 100,	 r->mig_downtime_ms};
	static const int w[] = {9, 9, 9, 10, 10, 6, 11, 10, 13, 10, 9, 8, 8, 6, 8};
	bool csv = f != stdout;

	if (csv)
		fprintf(f, "%s,%s,%s,%d", r->size, r->workload, who, r->ok);
	else
		fprintf(f, "%-5s %-6s %-4s %3s", r->size, r->workload, who, r->ok ? "yes" : "NO");
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		fputs(csv ? "," : " ", f);
		num(f,
		    i == 1 || i == 4 || (i >= 6 && i <= 8) || (i >= 11 && i <= 13) ? "%*.0f"
										   : "%*.1f",
		    i == 13 && r->share < 0 ? -1 : v[i], csv ? 0 : w[i]);
	}
	fputc('\n', f);
	fflush(f);
}

/* The case under QEMU, in its own directory; rows like vmm's, n/a where QEMU has none. */
static void qemu_case(const struct result *vr, struct result *q)
{
	char qdir[600], ws[64], err[512];
	long long bytes = strtoll(vr->size, NULL, 10) << (strchr(vr->size, 'G') ? 30 : 20);
	struct sq_result sr;
	struct sq_case c = {.qemu = qemu,
			    .firmware = firmware,
			    .dir = qdir,
			    .size = vr->size,
			    .working_set = ws,
			    .dirty = !strcmp(vr->workload, "dirty")};

	path(qdir, sizeof(qdir), "qemu");
	mkdir(qdir, 0700);
	snprintf(ws, sizeof(ws), "%lldM", bytes / 4 >> 20);
	*q = (struct result){.size = vr->size, .workload = vr->workload};
	if (sq_run_case(&c, &sr, err, sizeof(err)))
		fprintf(stderr, "bench_snapshot: QEMU %s %s: %s\n", vr->size, vr->workload, err);
	q->ok = sr.ok;
	q->pause_ms = sr.pause_ms;
	q->total_ms = sr.pause_ms; /* stopped: the whole save is the pause */
	q->file_mib = sr.file_mib;
	q->live_pause_ms = sr.live_downtime_ms;
	q->live_total_ms = sr.live_total_ms;
	q->live_passes = -1;
	q->eager_first_ms = sr.first_ms;
	q->lazy_first_ms = q->lazy_resident_ms = q->wait_first_ms = q->mig_downtime_ms = -1;
	/* QEMU writes its whole stream in the pause: the file's bytes. */
	if (sr.ok)
		write_rates(q, sr.file_mib, sr.pause_ms);
	else
		q->written_mib = q->write_mbs = q->fs_seq_mbs = q->share = -1;
}

int main(int argc, char **argv)
{
	/* 64G idle: a large sparse guest, whose snapshot should take under 1 s. */
	static const char *const full[][2] = {{"1G", "idle"},  {"1G", "dirty"}, {"4G", "idle"},
					      {"4G", "dirty"}, {"16G", "idle"}, {"16G", "dirty"},
					      {"64G", "idle"}};
	static const char *const quick[][2] = {
	    {"256M", "idle"}, {"256M", "dirty"}, {"1G", "idle"}, {"1G", "dirty"}};
	const char *const(*cases)[2] = full;
	size_t ncases = sizeof(full) / sizeof(full[0]);
	const char *csv = NULL, *only = NULL;
	bool with_qemu = true;
	FILE *c = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			cases = quick;
			ncases = sizeof(quick) / sizeof(quick[0]);
		} else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
			csv = argv[++i];
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--vmm") && i + 1 < argc) {
			vmm = argv[++i];
		} else if (!strcmp(argv[i], "--qemu") && i + 1 < argc) {
			qemu = argv[++i];
		} else if (!strcmp(argv[i], "--no-qemu")) {
			with_qemu = false;
		} else if (!strcmp(argv[i], "--firmware") && i + 1 < argc) {
			firmware = argv[++i];
		} else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
			snprintf(dir, sizeof(dir), "%s", argv[++i]);
		} else {
			fprintf(stderr,
				"usage: bench_snapshot [--quick] [--only SUBSTR] [--csv FILE] "
				"[--vmm PATH] [--dir DIR] [--qemu PATH | --no-qemu] "
				"[--firmware PATH]\n");
			return 2;
		}
	}
	if (with_qemu && !bench_on_path(qemu)) {
		printf("bench_snapshot: no %s here: vmm's rows only\n", qemu);
		with_qemu = false;
	}
	mkdir(dir, 0700);
	if (csv && !(c = fopen(csv, "w"))) {
		perror(csv);
		return 1;
	}
	if (c)
		fprintf(c, "size,workload,vmm,ok,pause_ms,total_ms,file_mib,live_pause_ms,"
			   "live_total_ms,live_passes,eager_first_run_ms,lazy_first_run_ms,"
			   "lazy_resident_ms,wait_first_run_ms,written_mib,write_mbs,fs_seq_mbs,"
			   "share_pct,mig_downtime_ms\n");
	printf("bench_snapshot: starting a vmm process (vmm --version, fork to exit, median of "
	       "20): %.2f ms\n",
	       sio_process_start_ms(vmm, 20));
	printf("%-5s %-6s %-4s %3s %9s %9s %9s %10s %10s %6s %11s %10s %13s %10s %9s %8s %8s "
	       "%6s %8s\n",
	       "size", "load", "vmm", "ok", "pause_ms", "total_ms", "file_MiB", "live_pause",
	       "live_total", "passes", "eager_first", "lazy_first", "lazy_resident", "wait_first",
	       "wrote_MiB", "MB/s", "fs_MB/s", "share%", "mig_down");
	for (size_t i = 0; i < ncases; i++) {
		struct result r = {.size = cases[i][0], .workload = cases[i][1]}, q;
		char name[64];

		snprintf(name, sizeof(name), "%s-%s", r.size, r.workload);
		if (only && !strstr(name, only))
			continue;
		one_case(&r);
		row(stdout, "vmm", &r);
		if (c)
			row(c, "vmm", &r);
		if (!with_qemu)
			continue;
		qemu_case(&r, &q);
		row(stdout, "QEMU", &q);
		if (c)
			row(c, "QEMU", &q);
	}
	if (c)
		fclose(c);
	return 0;
}
