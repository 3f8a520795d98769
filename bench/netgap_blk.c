/* SPDX-License-Identifier: Apache-2.0 */
/*
 * netgap_blk.c - bench_netgap's part blk: one run (the firmware's disk
 * workload on a file both sides open, its pass lines stamped on the host,
 * the guest's throughput before, during and after the migration
 * interpolated between them) and the part's table and CSV section.
 * Single-threaded (netgap.h).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>

#include "bench_util.h"
#include "harness_run.h"
#include "netgap.h"

/* ---- part blk ----------------------------------------------------------------------- */

struct pt {
	double t, pass;
};

static int cmp_pt(const void *a, const void *b)
{
	double x = ((const struct pt *)a)->t, y = ((const struct pt *)b)->t;

	return (x > y) - (x < y);
}

/* Every "blk: pass P ok" line of c: (its host time, P), appended to v. */
static size_t pass_points(const struct hx_console *c, struct pt *v, size_t n)
{
	for (size_t i = 0; i < c->nlines; i++) {
		const char *l = strstr(hx_console_line(c, i), "blk: pass ");
		unsigned long p;

		if (l && sscanf(l, "blk: pass %lu ok", &p) == 1)
			v[n++] = (struct pt){c->lines[i].t_ms, (double)p};
	}
	return n;
}

/* The guest's progress (passes) at time t, linear between two lines; NaN outside them. */
static double progress_at(const struct pt *v, size_t n, double t)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (v[i].t <= t && t <= v[i + 1].t) {
			double d = v[i + 1].t - v[i].t;

			return d > 0 ? v[i].pass + (v[i + 1].pass - v[i].pass) * (t - v[i].t) / d
				     : v[i + 1].pass;
		}
	return NAN;
}

/* MiB/s moved by the guest between a and b (ms). */
static double blk_rate(const struct pt *v, size_t n, double a, double b)
{
	return (progress_at(v, n, b) - progress_at(v, n, a)) * BLK_PASS_MIB / ((b - a) / 1e3);
}

struct blk_result {
	bool ok;
	double before, during, after; /* MiB/s */
	double pass_ms;		      /* median interval between passes before the migration */
	double longest_ms;	      /* the longest interval between passes overlapping it */
	struct mig m;
};

/* A pass line on the target stamped at or after *(double *)arg; -ESRCH once it exited. */
struct blk_wait {
	struct side *s;
	double at;
};

static int blk_passed(void *arg)
{
	struct blk_wait *w = arg;
	const struct hx_console *c = w->s->dst_out;

	for (size_t i = c->nlines; i-- > 0;) {
		if (c->lines[i].t_ms < w->at)
			break;
		if (strstr(hx_console_line(c, i), "blk: pass "))
			return 1;
	}
	return hx_running(w->s->dst_proc) ? 0 : -ESRCH;
}

static void blk_analyse(struct side *s, struct blk_result *res)
{
	size_t cap = s->src_out->nlines + s->dst_out->nlines, n = 0, k = 0;
	struct pt *v = malloc((cap ? cap : 1) * sizeof(*v));
	double *iv = malloc((cap ? cap : 1) * sizeof(double));
	const struct mig *m = &res->m;

	res->before = res->during = res->after = res->pass_ms = res->longest_ms = NAN;
	if (!v || !iv) {
		free(v);
		free(iv);
		return;
	}
	n = pass_points(s->src_out, v, n);
	n = pass_points(s->dst_out, v, n);
	qsort(v, n, sizeof(*v), cmp_pt);
	res->before = blk_rate(v, n, m->t0 - WINDOW_MS, m->t0);
	res->during = blk_rate(v, n, m->t0, m->t1);
	res->after = blk_rate(v, n, m->t1, m->t1 + WINDOW_MS);
	res->longest_ms = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		double d = v[i + 1].t - v[i].t;

		if (v[i + 1].t <= m->t0)
			iv[k++] = d;
		else if (v[i].t < m->t1 && d > res->longest_ms)
			res->longest_ms = d;
	}
	res->pass_ms = k ? bench_median(iv, (int)k) : NAN;
	free(v);
	free(iv);
}

static int blk_once(bool qemu, bool postcopy, int rep, struct blk_result *res)
{
	char err[PATH_MAX + 256], disk[PATH_MAX];
	struct side s;
	struct blk_wait bw = {&s, 0};
	double wait;
	int ret, fd;

	memset(res, 0, sizeof(*res));
	snprintf(disk, sizeof(disk), "%s/disk%d.img", ng_tmpdir, ++ng_run_seq);
	fd = open(disk, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, DISK_BYTES)) {
		fprintf(stderr, PROG ": %s: %s\n", disk, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	ret = ng_side_start(&s, qemu, P_BLK, postcopy, rep, NULL, NULL, disk, err, sizeof(err));
	if (!ret)
		ret = hx_wait_line(s.watch, s.src_out, BLK_PASS, BLK_WARMUP + 2, 0, BOOT_TIMEOUT_MS,
				   err, sizeof(err));
	if (!ret) {
		/* A full window of passes after the warm-up ones, before the migration. */
		regex_t re;
		double warm = 0;
		int k = 0;

		regcomp(&re, BLK_PASS, REG_EXTENDED | REG_NOSUB);
		for (size_t i = 0; i < s.src_out->nlines && !warm; i++)
			if (!regexec(&re, hx_console_line(s.src_out, i), 0, NULL, 0) &&
			    ++k == BLK_WARMUP)
				warm = s.src_out->lines[i].t_ms;
		regfree(&re);
		wait = warm + WINDOW_MS + 200 - bench_now_ms();
		if (wait > 0)
			hx_watch_until(s.watch, ng_never, NULL, (int)wait);
		if (!hx_running(s.src_proc)) {
			snprintf(err, sizeof(err), "the source exited before the migration");
			ret = -ESRCH;
		}
	}
	if (!ret)
		ret = ng_side_migrate(&s, &res->m, err, sizeof(err));
	if (!ret) {
		bw.at = res->m.t1 + WINDOW_MS;
		ret = hx_watch_until(s.watch, blk_passed, &bw, BLK_AFTER_TIMEOUT_MS);
		if (ret)
			snprintf(err, sizeof(err),
				 "no pass on the target %g s after the migration (%s)",
				 WINDOW_MS / 1e3, ret == -ESRCH ? "it exited" : "timeout");
	}
	if (!ret)
		ret = ng_no_corruption(&s, err, sizeof(err));
	if (!ret && !ng_side_target_runs(&s)) {
		snprintf(err, sizeof(err), "the target does not run its guest any more");
		ret = -EIO;
	}
	if (!ret)
		blk_analyse(&s, res);
	res->ok = !ret;
	ng_failed_runs += !res->ok;
	if (ret)
		fprintf(stderr, PROG ": %s: %s\n", s.name, err);
	ng_side_end(&s);
	unlink(disk);
	return ret;
}

enum { BV_BEFORE, BV_DURING, BV_AFTER, BV_LONGEST, BV_MIG, BV_PASS };

/* One run of part blk (ng_run_fn). */
static void blk_run(FILE *csv, bool qemu, bool postcopy, int rep, struct series *s)
{
	struct blk_result r;
	double mig_ms;
	char bt[160];

	blk_once(qemu, postcopy, rep, &r);
	mig_ms = r.m.t1 - r.m.t0;
	ng_series_add(s, rep - 1, r.ok, r.m.postcopy_used,
		      (double[]){r.before, r.during, r.after, r.longest_ms, mig_ms, r.pass_ms}, 6,
		      r.during);
	ng_run_label(qemu, postcopy, rep);
	if (r.ok)
		fprintf(stderr,
			"ok: %.2f / %.2f / %.2f MiB/s before / during / "
			"after, migration %.0f ms, longest interval %.0f ms "
			"(%.0f ms a pass before), downtime %.1f ms%s%s\n",
			r.before, r.during, r.after, mig_ms, r.longest_ms, r.pass_ms,
			r.m.downtime_ms, ng_blackout_text(bt, sizeof(bt), &r.m),
			ng_precopy_note(postcopy, &r.m));
	else
		fprintf(stderr, "FAILED\n");
	if (!csv)
		return;
	ng_csv_row_begin(csv, "blk", qemu, postcopy, rep, r.ok, r.ok, &r.m);
	ng_csv_num(csv, r.ok ? r.pass_ms : NAN, "%.1f");
	ng_csv_num(csv, r.ok ? r.before : NAN, "%.3f");
	ng_csv_num(csv, r.ok ? r.during : NAN, "%.3f");
	ng_csv_num(csv, r.ok ? r.after : NAN, "%.3f");
	ng_csv_num(csv, r.ok ? r.longest_ms : NAN, "%.1f");
	ng_csv_num(csv, r.ok ? mig_ms : NAN, "%.1f");
	ng_csv_num(csv, r.ok ? r.m.downtime_ms : NAN, "%.3f");
	ng_csv_num(csv, r.ok ? r.m.total_ms : NAN, "%.1f");
	ng_csv_row_end(csv, &r.m, r.ok);
}

void ng_part_blk(FILE *csv, int reps, bool have_qemu)
{
	static struct series s[2][2];
	static const int keys[] = {BV_BEFORE, BV_DURING, BV_AFTER, BV_MIG, BV_LONGEST, BV_PASS};
	static const char *const fmts[] = {"%.2f", "%.2f", "%.2f", "%.0f", "%.0f", "%.0f"};

	printf("\n== blk: the firmware writing, flushing, reading back and verifying 256 blocks of "
	       "4 KiB a pass on a virtio-blk disk file; guest throughput (written + read) %g s "
	       "before, during and %g s after the migration; %d interleaved run(s) per mode and "
	       "VMM\n",
	       WINDOW_MS / 1e3, WINDOW_MS / 1e3, reps);
	ng_runs(csv,
		"part,mode,vmm,run,ok,mode_used,pass_ms_before,before_mibs,during_mibs,"
		"after_mibs,longest_interval_ms,migration_ms,downtime_ms,total_ms",
		reps, have_qemu, s, blk_run);
	ng_table(
	    "| mode | VMM | runs ok | before MiB/s | during MiB/s | after MiB/s | migration ms "
	    "| longest interval between passes ms | a pass before ms | postcopy used |\n"
	    "|---|---|---|---|---|---|---|---|---|---|\n",
	    s, have_qemu, 6, keys, fmts);
	printf("(medians, range in brackets)\n");
	for (int pc = 0; pc < 2; pc++) {
		const struct series *v = &s[pc][0], *q = &s[pc][1];
		double vb = ng_med(v, BV_BEFORE), vd = ng_med(v, BV_DURING);

		printf("%s:", pc ? "postcopy" : "precopy");
		if (v->n && vb > 0)
			printf(" vmm during/before %.2f;", vd / vb);
		if (have_qemu && q->n) {
			double qb = ng_med(q, BV_BEFORE), qd = ng_med(q, BV_DURING);

			if (qb > 0)
				printf(" QEMU during/before %.2f;", qd / qb);
			if (v->n && qd > 0)
				printf(" vmm/QEMU during %.2f, migration time %.2f;", vd / qd,
				       ng_med(v, BV_MIG) / ng_med(q, BV_MIG));
		}
		printf("\n");
	}
}
