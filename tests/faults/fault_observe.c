/* SPDX-License-Identifier: Apache-2.0 */
#include "fault_observe.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fault_inject.h"
#include "harness_json.h"

#define STATUS_TIMEOUT_MS 8000
#define WINDOW_PASSES	  2	/* the owner's guest verifies this many more passes */
#define WINDOW_WAIT_MS	  60000 /* bounded wait for them */
#define QUIET_MS	  3000	/* with no owner: nobody prints for this long */
#define BOTH_SLACK_MS	  1000 /* a source line read this late after the target's first is not lag */

void fx_note(struct fx_ctx *x, const char *fmt, ...)
{
	size_t n = strlen(x->log);
	va_list ap;

	if (n && n + 2 < sizeof(x->log)) {
		memcpy(x->log + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(x->log + n, sizeof(x->log) - n, fmt, ap);
	va_end(ap);
	if (x->env->verbose) {
		fprintf(stderr, "  [%s:%s] ", fx_fault_name(x->cell->fault),
			fx_phase_name(x->cell->phase));
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

void fx_target_socket(struct fx_ctx *x, char *path, size_t len)
{
	struct stat st;

	snprintf(path, len, "%s/%s.sock.incoming", x->run_dir, x->r.o.name);
	if (!stat(path, &st))
		return;
	snprintf(path, len, "%s/%s.sock", x->run_dir, x->r.o.name);
}

int fx_vmm(struct fx_ctx *x, const char *stem, char *const *args, int timeout_ms, char *out,
	   size_t outlen)
{
	struct hx_cmd c;
	char err[256];
	int ret = hx_run_vmm(&x->r, stem, args, NULL, timeout_ms, &c, err, sizeof(err)), code;

	if (out && outlen)
		snprintf(out, outlen, "%s", !ret && c.out.text ? c.out.text : "");
	code = ret ? -1 : c.code;
	hx_cmd_free(&c);
	return code;
}

int fx_state(struct fx_ctx *x, bool target, char *state, size_t len)
{
	struct hx_proc *p = target ? &x->r.dst : &x->r.src;
	char sock[PATH_MAX], out[8192];
	char *args[] = {"migrate", "--status", "--api-socket", sock, "--json", NULL};
	cJSON *j;
	int code;

	state[0] = '\0';
	if (!hx_running(p))
		return -ESRCH;
	if (fx_proc_state(p->pid) == 'T')
		return -EAGAIN;
	if (target)
		fx_target_socket(x, sock, sizeof(sock));
	else
		snprintf(sock, sizeof(sock), "%s", x->src_sock);
	code = fx_vmm(x, target ? "status-dst" : "status-src", args,
		      hx_scaled_ms(STATUS_TIMEOUT_MS), out, sizeof(out));
	if (code)
		return hx_running(p) ? -EIO : -ESRCH;
	j = cJSON_Parse(out);
	if (!j || !hx_json_text(j, "state", state, len)) {
		cJSON_Delete(j);
		return -EIO;
	}
	cJSON_Delete(j);
	return 0;
}

static int sleep_done(void *arg)
{
	(void)arg;
	return 0;
}

void fx_pump(struct fx_ctx *x, int ms)
{
	hx_watch_until(&x->r.watch, sleep_done, NULL, ms);
}

static size_t passes(struct fx_ctx *x, struct hx_console *c, size_t from)
{
	hx_console_pump(c);
	return hx_console_count(c, &x->pass_re, from);
}

/* Copies the first `max` bytes of path into f (a /proc file), or a note that it could not. */
static void copy_proc(FILE *f, const char *path, size_t max)
{
	char buf[4096];
	FILE *in = fopen(path, "r");
	size_t n;

	if (!in) {
		fprintf(f, "(%s: unreadable)\n", path);
		return;
	}
	n = fread(buf, 1, max < sizeof(buf) ? max : sizeof(buf), in);
	fwrite(buf, 1, n, f);
	if (n && buf[n - 1] != '\n')
		fputc('\n', f);
	fclose(in);
}

/*
 * A guest that prints nothing on the side that owns it: what each of that
 * process's threads is doing (state, wchan, kernel stack) into DIR/WHO.threads,
 * twice a second apart: spinning vCPUs (R) differ from ones parked on a lock
 * or blocked on a userfaultfd page (S, and the stack says where).
 */
static void dump_threads(struct fx_ctx *x, struct hx_proc *p, const char *who)
{
	char path[PATH_MAX + 64];
	FILE *f;

	if (!hx_running(p))
		return;
	snprintf(path, sizeof(path), "%s/%s.threads", x->dir, who);
	f = fopen(path, "w");
	if (!f)
		return;
	for (int round = 0; round < 2; round++) {
		char dir[64];
		DIR *d;
		struct dirent *e;

		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)p->pid);
		d = opendir(dir);
		fprintf(f, "== round %d\n", round);
		while (d && (e = readdir(d))) {
			char q[PATH_MAX + 128];

			if (e->d_name[0] == '.')
				continue;
			fprintf(f, "-- task %s\n", e->d_name);
			snprintf(q, sizeof(q), "%s/%s/stat", dir, e->d_name);
			copy_proc(f, q, 512);
			snprintf(q, sizeof(q), "%s/%s/wchan", dir, e->d_name);
			copy_proc(f, q, 128);
			snprintf(q, sizeof(q), "%s/%s/stack", dir, e->d_name);
			copy_proc(f, q, 2048);
		}
		if (d)
			closedir(d);
		fx_pump(x, 1000);
	}
	fclose(f);
}

int fx_window(struct fx_ctx *x, enum fx_owner owner, char *why, size_t len)
{
	struct hx_console *s = &x->r.src_out, *d = &x->r.dst_out;
	struct hx_console *own = owner == FX_OWNER_SOURCE ? s : owner == FX_OWNER_TARGET ? d : NULL;
	size_t s0, d0, sn, dn;
	char err[256];

	hx_console_pump(s);
	hx_console_pump(d);
	s0 = s->nlines;
	d0 = d->nlines;
	if (own) {
		if (hx_wait_line(&x->r.watch, own, "dirty pass [0-9]+ ok", WINDOW_PASSES,
				 own->nlines, WINDOW_WAIT_MS, err, sizeof(err))) {
			snprintf(why, len, "the %s's guest does not verify passes: %s",
				 owner == FX_OWNER_SOURCE ? "source" : "target", err);
			dump_threads(x, owner == FX_OWNER_SOURCE ? &x->r.src : &x->r.dst,
				     owner == FX_OWNER_SOURCE ? "src" : "dst");
			return -1;
		}
	} else {
		fx_pump(x, QUIET_MS);
	}
	sn = passes(x, s, s0);
	dn = passes(x, d, d0);
	if (owner == FX_OWNER_TARGET_PAUSED)
		dn = 0;
	if ((owner != FX_OWNER_SOURCE && sn) ||
	    (owner != FX_OWNER_TARGET && owner != FX_OWNER_TARGET_PAUSED && dn)) {
		snprintf(why, len,
			 "both running: in the window the source verified %zu passes, "
			 "the target %zu",
			 sn, dn);
		return -1;
	}
	return 0;
}

/* The pass number of a "dirty pass N ok" line. */
static unsigned long pass_no(const char *line)
{
	const char *p = strstr(line, "dirty pass ");

	return p ? strtoul(p + 11, NULL, 10) : 0;
}

int fx_never_both(struct fx_ctx *x, char *why, size_t len)
{
	struct hx_console *s = &x->r.src_out, *d = &x->r.dst_out;
	unsigned long first_d = 0;
	double t_d = 0;

	hx_console_pump(s);
	hx_console_pump(d);
	if (hx_console_corruption(s) || hx_console_corruption(d)) {
		snprintf(why, len, "CORRUPTION: %s",
			 hx_console_corruption(s) ? hx_console_corruption(s)
						  : hx_console_corruption(d));
		return -1;
	}
	for (size_t i = 0; i < d->nlines; i++)
		if (!regexec(&x->pass_re, hx_console_line(d, i), 0, NULL, 0)) {
			first_d = pass_no(hx_console_line(d, i));
			t_d = d->lines[i].t_ms;
			break;
		}
	if (!first_d)
		return 0; /* the guest never ran on the target */
	for (size_t i = 0; i < s->nlines; i++) {
		const char *l = hx_console_line(s, i);

		if (regexec(&x->pass_re, l, 0, NULL, 0))
			continue;
		if (pass_no(l) >= first_d || s->lines[i].t_ms > t_d + BOTH_SLACK_MS) {
			snprintf(why, len,
				 "both ran: the source verified pass %lu (%.0f ms after) once the "
				 "target had verified pass %lu",
				 pass_no(l), s->lines[i].t_ms - t_d, first_d);
			return -1;
		}
	}
	return 0;
}

bool fx_file_has(const char *path, const char *str)
{
	struct hx_console c;
	char e[64];
	bool found;

	if (hx_console_file(&c, "file", path, NULL, e, sizeof(e)))
		return false;
	hx_console_pump(&c);
	found = c.text && strstr(c.text, str);
	hx_console_close(&c);
	return found;
}

bool fx_src_err_has(struct fx_ctx *x, const char *str)
{
	return fx_file_has(x->r.src_err, str);
}

const char *fx_last_err_line(struct fx_ctx *x, const char *stem, char *buf, size_t len)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s.err", x->dir, stem);
	f = fopen(path, "r");
	if (!f)
		return buf;
	while (fgets(line, sizeof(line), f))
		if (line[0] != '\n') {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, len, "%s", line);
		}
	fclose(f);
	return buf;
}
