/* SPDX-License-Identifier: Apache-2.0 */
/*
 * netgap_ping.c - bench_netgap's part ping: one run (the firmware's ICMP
 * responder on a tap, `ping -D` from the namespace, the migration, the ping
 * log read back: replies, losses, the largest gap) and the part's table and
 * CSV section. Single-threaded (netgap.h).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>

#include "bench_util.h"
#include "harness_run.h"
#include "netgap.h"

/* ---- part ping ------------------------------------------------------------------------ */

struct reply {
	double t; /* CLOCK_MONOTONIC ms */
	long seq; /* unwrapped icmp_seq */
};

struct replies {
	struct reply *v;
	size_t n, cap;
};

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ms: ping -D stamps replies with the former. */
static double realtime_offset_ms(void)
{
	struct timespec r;

	clock_gettime(CLOCK_REALTIME, &r);
	return (double)r.tv_sec * 1e3 + (double)r.tv_nsec / 1e6 - bench_now_ms();
}

/* The replies of a `ping -D` log, in arrival order: "[UNIX] 64 bytes from ...: icmp_seq=N". */
static void replies_read(const char *path, double rt_off, struct replies *out)
{
	char *line = NULL;
	size_t len = 0;
	long last = -1, wraps = 0;
	FILE *f = fopen(path, "r");

	out->n = 0;
	if (!f)
		return;
	while (getline(&line, &len, f) > 0) {
		const char *q;
		char *e;
		double t;
		long seq;

		if (line[0] != '[' || !strstr(line, " bytes from ") ||
		    !(q = strstr(line, "icmp_seq=")))
			continue;
		t = strtod(line + 1, &e);
		if (*e != ']')
			continue;
		seq = strtol(q + 9, NULL, 10);
		if (last >= 0 && seq + wraps * 65536 < last - 32768)
			wraps++; /* icmp_seq is 16 bits */
		seq += wraps * 65536;
		last = seq;
		if (out->n == out->cap) {
			size_t cap = out->cap ? 2 * out->cap : 4096;
			struct reply *v = realloc(out->v, cap * sizeof(*v));

			if (!v)
				break;
			out->v = v;
			out->cap = cap;
		}
		out->v[out->n++] = (struct reply){t * 1e3 - rt_off, seq};
	}
	free(line);
	fclose(f);
}

struct ping_stats {
	int replies, requests, lost;
	int after;	    /* replies after the migration completed */
	double gap_ms;	    /* the largest gap between consecutive replies */
	double gap_at_ms;   /* where it began, from the migration's start */
	double base_gap_ms; /* the largest gap that ended before the migration started */
};

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static void ping_analyse(const struct replies *r, double t0, double t1, struct ping_stats *s)
{
	long *seqs = malloc((r->n ? r->n : 1) * sizeof(long)), lo = LONG_MAX, hi = LONG_MIN;
	int distinct = 0;

	memset(s, 0, sizeof(*s));
	s->gap_at_ms = NAN;
	for (size_t i = 0; i < r->n; i++) {
		const struct reply *p = &r->v[i];

		if (seqs)
			seqs[i] = p->seq;
		lo = p->seq < lo ? p->seq : lo;
		hi = p->seq > hi ? p->seq : hi;
		s->after += p->t > t1;
		if (i) {
			double g = p->t - r->v[i - 1].t;

			if (g > s->gap_ms) {
				s->gap_ms = g;
				s->gap_at_ms = r->v[i - 1].t - t0;
			}
			if (p->t <= t0 && g > s->base_gap_ms)
				s->base_gap_ms = g;
		}
	}
	if (seqs && r->n) {
		qsort(seqs, r->n, sizeof(long), cmp_long);
		for (size_t i = 0; i < r->n; i++)
			distinct += !i || seqs[i] != seqs[i - 1];
	}
	free(seqs);
	s->replies = (int)r->n;
	s->requests = r->n ? (int)(hi - lo + 1) : 0;
	s->lost = s->requests - distinct;
}

struct pinger {
	struct hx_proc proc;
	char log[PATH_MAX];
};

static int ping_start(struct pinger *p, const char *name, char *err, size_t errlen)
{
	char errlog[PATH_MAX + 8];
	struct hx_argv a = {0};
	int fd, r;

	snprintf(p->log, sizeof(p->log), "%s/%s.ping", ng_tmpdir, name);
	snprintf(errlog, sizeof(errlog), "%s.err", p->log);
	hx_argv_split(&a, ng_ns_wrap);
	hx_argv_split(&a, "ping -D -n -i 0.005 -W 1 " GUEST_IP);
	struct hx_spawn s = {.argv = a.v, .out_path = p->log, .err_path = errlog};
	r = hx_spawn(&p->proc, "ping", &s, &fd, err, errlen);
	hx_argv_free(&a);
	if (!r)
		ng_ping_pid = p->proc.pid;
	return r;
}

static void ping_stop(struct pinger *p)
{
	hx_signal(&p->proc, SIGINT);
	hx_reap(&p->proc, 3000);
	ng_ping_pid = -1;
}

/* A wait on the ping log: `want` replies after `since` (ms), the first `span` ms ago. */
struct ping_wait {
	struct pinger *p;
	struct hx_proc *guest; /* the source, while it must run */
	struct replies rs;
	double rt_off, since, span;
	size_t want;
};

static int ping_enough(void *arg)
{
	struct ping_wait *w = arg;
	double first = 0;
	size_t n = 0;

	replies_read(w->p->log, w->rt_off, &w->rs);
	for (size_t i = 0; i < w->rs.n; i++)
		if (w->rs.v[i].t > w->since && !n++)
			first = w->rs.v[i].t;
	if (n >= w->want && bench_now_ms() - first >= w->span)
		return 1;
	if (!hx_running(&w->p->proc))
		return -ESRCH;
	if (w->guest && !hx_running(w->guest))
		return -ECHILD;
	return 0;
}

struct ping_result {
	bool ok;
	bool analysed; /* the migration completed: st holds the ping log's numbers */
	struct ping_stats st;
	struct mig m;
};

static int ping_once(bool qemu, bool postcopy, int rep, struct ping_result *res)
{
	char err[PATH_MAX + 256], tap_s[16], tap_d[16];
	struct side s;
	struct pinger p = {0};
	struct ping_wait w = {0};
	struct replies rs = {0};
	double t_first = 0;
	int ret, n = ++ng_run_seq;

	snprintf(tap_s, sizeof(tap_s), "ng%ds", n);
	snprintf(tap_d, sizeof(tap_d), "ng%dd", n);
	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s)); /* ng_side_end() of a side never started does nothing */
	s.qemu = qemu;
	s.src.qmp.fd = s.dst.qmp.fd = -1;
	ng_sh("ip -n %s neigh flush dev br0 2>/dev/null", ng_ns); /* the client ARPs afresh */
	ret = ng_tap_add(tap_s, err, sizeof(err));
	if (!ret)
		ret = ng_tap_add(tap_d, err, sizeof(err));
	if (!ret)
		ret = ng_side_start(&s, qemu, P_PING, postcopy, rep, tap_s, tap_d, NULL, err,
				    sizeof(err));
	if (!ret)
		ret = hx_wait_line(s.watch, s.src_out, NET_UP, 1, 0, BOOT_TIMEOUT_MS, err,
				   sizeof(err));
	if (!ret)
		ret = ping_start(&p, s.name, err, sizeof(err));
	if (!ret) {
		w.p = &p;
		w.guest = s.src_proc;
		w.rt_off = realtime_offset_ms();
		w.since = -1e300;
		w.want = PING_READY_REPLIES;
		w.span = WINDOW_MS;
		ret = hx_watch_until(s.watch, ping_enough, &w, PING_READY_TIMEOUT_MS);
		if (ret)
			snprintf(err, sizeof(err),
				 "%d of %d replies from the source's guest after %d s (%s; see %s)",
				 (int)w.rs.n, PING_READY_REPLIES, PING_READY_TIMEOUT_MS / 1000,
				 ret == -ESRCH	  ? "ping exited"
				 : ret == -ECHILD ? "the source exited"
						  : "timeout",
				 p.log);
	}
	if (!ret)
		ret = ng_side_migrate(&s, &res->m, err, sizeof(err));
	if (!ret) {
		/* The client goes on 2 s; longer (bounded) until the target's guest answers. */
		hx_watch_until(s.watch, ng_never, NULL, PING_AFTER_MS);
		w.guest = NULL;
		w.since = res->m.t1;
		w.want = 1;
		w.span = 0;
		if (hx_watch_until(s.watch, ping_enough, &w, ANSWER_TIMEOUT_MS - PING_AFTER_MS) ==
		    0) {
			for (size_t i = 0; i < w.rs.n && !t_first; i++)
				if (w.rs.v[i].t > res->m.t1)
					t_first = w.rs.v[i].t;
			if (t_first > res->m.t1 + PING_AFTER_MS) /* late: a little more after it */
				hx_watch_until(s.watch, ng_never, NULL, 1000);
		}
	}
	ping_stop(&p);
	if (!ret) {
		replies_read(p.log, w.rt_off, &rs);
		ping_analyse(&rs, res->m.t0, res->m.t1, &res->st);
		res->analysed = true;
		if (!res->st.after) {
			snprintf(err, sizeof(err),
				 "the target's guest did not answer within %d s of the migration "
				 "(see %s)",
				 ANSWER_TIMEOUT_MS / 1000, p.log);
			ret = -ETIMEDOUT;
		} else if (!ng_side_target_runs(&s)) {
			snprintf(err, sizeof(err), "the target does not run its guest any more");
			ret = -EIO;
		}
	}
	res->ok = !ret;
	ng_failed_runs += !res->ok;
	if (ret)
		fprintf(stderr, PROG ": %s: %s\n", s.name[0] ? s.name : tap_s, err);
	ng_side_end(&s);
	ng_tap_del(tap_s);
	ng_tap_del(tap_d);
	free(w.rs.v);
	free(rs.v);
	return ret;
}

enum { PV_GAP, PV_LOST, PV_DOWN, PV_BASE, PV_REPLIES };

/* One run of part ping (ng_run_fn). */
static void ping_run(FILE *csv, bool qemu, bool postcopy, int rep, struct series *s)
{
	struct ping_result r;
	const struct ping_stats *t = &r.st;
	char bt[160];

	ping_once(qemu, postcopy, rep, &r);
	ng_series_add(s, rep - 1, r.ok, r.m.postcopy_used,
		      (double[]){t->gap_ms, t->lost, r.m.downtime_ms, t->base_gap_ms, t->replies},
		      5, t->gap_ms);
	ng_run_label(qemu, postcopy, rep);
	if (r.analysed)
		fprintf(stderr,
			"%s: %d replies, %d lost, largest gap %.1f ms (%.0f "
			"ms after the start), before the migration %.1f ms; "
			"downtime %.1f ms%s, total %.0f ms%s\n",
			r.ok ? "ok" : "FAILED", t->replies, t->lost, t->gap_ms, t->gap_at_ms,
			t->base_gap_ms, r.m.downtime_ms, ng_blackout_text(bt, sizeof(bt), &r.m),
			r.m.total_ms, ng_precopy_note(postcopy, &r.m));
	else
		fprintf(stderr, "FAILED\n");
	if (!csv)
		return;
	ng_csv_row_begin(csv, "ping", qemu, postcopy, rep, r.ok, r.analysed, &r.m);
	if (r.analysed) {
		fprintf(csv, ",%d,%d,%d", t->replies, t->requests, t->lost);
		ng_csv_num(csv, t->gap_ms, "%.2f");
		ng_csv_num(csv, t->gap_at_ms, "%.1f");
		ng_csv_num(csv, t->base_gap_ms, "%.2f");
		fprintf(csv, ",%d", t->after);
		ng_csv_num(csv, r.m.downtime_ms, "%.3f");
		ng_csv_num(csv, r.m.total_ms, "%.1f");
		ng_csv_num(csv, r.m.t1 - r.m.t0, "%.1f");
	} else {
		fprintf(csv, ",,,,,,,,,,");
	}
	ng_csv_row_end(csv, &r.m, r.analysed);
}

void ng_part_ping(FILE *csv, int reps, bool have_qemu)
{
	static struct series s[2][2]; /* [postcopy][qemu] */
	static const int keys[] = {PV_GAP, PV_LOST, PV_DOWN, PV_BASE};
	static const char *const fmts[] = {"%.1f", "%.0f", "%.1f", "%.1f"};

	printf(
	    "\n== ping: the firmware's ICMP responder on virtio-net (tap, bridge), ping -i 0.005 "
	    "from the host; %d interleaved run(s) per mode and VMM\n",
	    reps);
	ng_runs(csv,
		"part,mode,vmm,run,ok,mode_used,replies,requests,lost,largest_gap_ms,"
		"gap_at_ms,baseline_gap_ms,replies_after,downtime_ms,total_ms,migration_ms",
		reps, have_qemu, s, ping_run);
	ng_table(
	    "| mode | VMM | runs ok | largest gap ms | replies lost | downtime ms | largest gap "
	    "before the migration ms | postcopy used |\n|---|---|---|---|---|---|---|---|\n",
	    s, have_qemu, 4, keys, fmts);
	printf("(medians, range in brackets; the gap is the longest time between two replies the "
	       "client saw)\n");
	if (!have_qemu) {
		printf("no QEMU: no ratios\n");
		for (int pc = 0; pc < 2; pc++)
			printf("%s: vmm's largest gap (median) %s the goal of %.0f ms\n",
			       pc ? "postcopy" : "precopy",
			       ng_med(&s[pc][0], PV_GAP) < GOAL_GAP_MS ? "meets" : "misses",
			       GOAL_GAP_MS);
		return;
	}
	printf("\n| mode | largest gap vmm/QEMU (medians) | per rep | vmm below QEMU | vmm under "
	       "%.0f ms |\n|---|---|---|---|---|\n",
	       GOAL_GAP_MS);
	for (int pc = 0; pc < 2; pc++) {
		const struct series *v = &s[pc][0], *q = &s[pc][1];
		double mv = ng_med(v, PV_GAP), mq = ng_med(q, PV_GAP);
		int below = 0, both = 0, under = 0;
		char per[256] = "";
		size_t off = 0;

		for (int r = 0; r < reps && r < MAXREPS; r++) {
			if (isnan(v->by_rep[r]))
				continue;
			under += v->by_rep[r] < GOAL_GAP_MS;
			if (isnan(q->by_rep[r]) || q->by_rep[r] <= 0)
				continue;
			both++;
			below += v->by_rep[r] < q->by_rep[r];
			off += (size_t)snprintf(per + off,
						off < sizeof(per) ? sizeof(per) - off : 0, "%s%.2f",
						off ? ", " : "", v->by_rep[r] / q->by_rep[r]);
			if (off >= sizeof(per))
				off = sizeof(per) - 1;
		}
		if (!isnan(mv) && !isnan(mq) && mq > 0)
			printf("| %s | %.2f | %s | %d/%d | %d/%d |\n", pc ? "postcopy" : "precopy",
			       mv / mq, per[0] ? per : "-", below, both, under, v->ok);
		else
			printf("| %s | - | %s | %d/%d | %d/%d |\n", pc ? "postcopy" : "precopy",
			       per[0] ? per : "-", below, both, under, v->ok);
	}
}
