/* SPDX-License-Identifier: Apache-2.0 */
#include "soak_report.h"

#include <string.h>

static const char *mode_name(bool postcopy)
{
	return postcopy ? "postcopy" : "precopy";
}

void soak_report_start(struct soak_report *r, const struct soak_counts *boot)
{
	printf("boot: %ld fds, %ld threads, RSS %.1f MiB\n\n", boot->fds, boot->threads,
	       boot->rss_kb / 1024.0);
	printf("%4s  %-6s  %-8s  %9s  %11s  %4s  %7s  %8s  %7s  %6s  %s\n", "hop", "dir", "mode",
	       "total_ms", "downtime_ms", "fds", "threads", "rss_mib", "passes", "hop_s", "verify");
	if (r->csv)
		fprintf(r->csv, "hop,from,to,mode,total_ms,downtime_ms,fds,threads,rss_kb,"
				"counts_stable,passes,hop_ms,ok,why\n");
	fflush(stdout);
}

static void widen(struct soak_report *r, bool pc, const struct soak_counts *c)
{
	if (!r->have[pc]) {
		r->min[pc] = r->max[pc] = *c;
		r->have[pc] = true;
		return;
	}
#define W(f)                                                                                       \
	do {                                                                                       \
		if (c->f < r->min[pc].f)                                                           \
			r->min[pc].f = c->f;                                                       \
		if (c->f > r->max[pc].f)                                                           \
			r->max[pc].f = c->f;                                                       \
	} while (0)
	W(fds);
	W(threads);
	W(rss_kb);
#undef W
}

/* The why text for a CSV field: quotes doubled. */
static void csv_text(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void soak_report_row(struct soak_report *r, const struct soak_row *w)
{
	char dir[16];

	snprintf(dir, sizeof(dir), "%s->%s", w->from, w->to);
	r->hops++;
	r->hop_ms_total += w->hop_ms;
	if (!w->ok)
		r->failures++;
	if (w->have_counts)
		widen(r, w->postcopy, &w->c);
	printf("%4d  %-6s  %-8s  %9.0f  %11.2f  ", w->hop, dir, mode_name(w->postcopy), w->total_ms,
	       w->downtime_ms);
	if (w->have_counts)
		printf("%4ld  %7ld  %8.1f  ", w->c.fds, w->c.threads, w->c.rss_kb / 1024.0);
	else
		printf("%4s  %7s  %8s  ", "-", "-", "-");
	printf("%7ld  %6.1f  %s%s\n", w->passes, w->hop_ms / 1e3, w->ok ? "ok" : "FAIL",
	       w->have_counts && !w->counts_stable ? " (counts unsettled)" : "");
	if (!w->ok)
		printf("      hop %d FAILED: %s\n", w->hop, w->why);
	fflush(stdout);
	if (r->csv) {
		fprintf(r->csv, "%d,%s,%s,%s,%.0f,%.3f,%ld,%ld,%ld,%d,%ld,%.0f,%d,", w->hop,
			w->from, w->to, mode_name(w->postcopy), w->total_ms, w->downtime_ms,
			w->have_counts ? w->c.fds : -1, w->have_counts ? w->c.threads : -1,
			w->have_counts ? w->c.rss_kb : -1, w->counts_stable, w->passes, w->hop_ms,
			w->ok);
		csv_text(r->csv, w->ok ? "" : w->why);
		fputc('\n', r->csv);
		fflush(r->csv);
	}
}

/* Prints one mode's ranges; true when they are within the slack. */
static bool mode_flat(const struct soak_report *r, bool pc)
{
	const struct soak_counts *lo = &r->min[pc], *hi = &r->max[pc];
	bool fds = hi->fds - lo->fds <= r->slack.fds;
	bool thr = hi->threads - lo->threads <= r->slack.threads;
	bool rss = hi->rss_kb - lo->rss_kb <= r->slack.rss_kb;

	printf("  %-8s fds %ld..%ld%s, threads %ld..%ld%s, RSS %.1f..%.1f MiB%s\n", mode_name(pc),
	       lo->fds, hi->fds, fds ? "" : " (GROWING)", lo->threads, hi->threads,
	       thr ? "" : " (GROWING)", lo->rss_kb / 1024.0, hi->rss_kb / 1024.0,
	       rss ? "" : " (GROWING)");
	return fds && thr && rss;
}

bool soak_report_end(struct soak_report *r, int hops_asked)
{
	struct soak_counts lo = {0}, hi = {0};
	bool flat = true, any = false;

	printf("\n");
	for (int pc = 0; pc < 2; pc++) {
		if (!r->have[pc])
			continue;
		flat &= mode_flat(r, pc);
		if (!any) {
			lo = r->min[pc];
			hi = r->max[pc];
		}
#define M(f)                                                                                       \
	do {                                                                                       \
		if (r->min[pc].f < lo.f)                                                           \
			lo.f = r->min[pc].f;                                                       \
		if (r->max[pc].f > hi.f)                                                           \
			hi.f = r->max[pc].f;                                                       \
	} while (0)
		M(fds);
		M(threads);
		M(rss_kb);
#undef M
		any = true;
	}
	printf("soak: %d of %d hops, %d failures, fds %ld..%ld, threads %ld..%ld, "
	       "RSS %.1f..%.1f MiB, %.1f s per hop: %s, %s\n",
	       r->hops, hops_asked, r->failures, lo.fds, hi.fds, lo.threads, hi.threads,
	       lo.rss_kb / 1024.0, hi.rss_kb / 1024.0,
	       r->hops ? r->hop_ms_total / r->hops / 1e3 : 0.0,
	       !any   ? "no counts"
	       : flat ? "counts flat"
		      : "counts NOT flat",
	       !r->failures && r->hops == hops_asked ? "PASS" : "FAIL");
	fflush(stdout);
	return any && flat && !r->failures && r->hops == hops_asked;
}
