/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guest_work.c - the dirty guest's work rate across a migration; see
 * guest_work.h.
 */
#include "guest_work.h"

#include <stdio.h>
#include <string.h>

/* The lines of one console that say "dirty work N pages at T ms", appended to s. */
static int add(const struct hx_console *c, struct gw_sample *s, int n, int max)
{
	for (size_t i = 0; c && c->opened && i < c->nlines && n < max; i++) {
		const char *l = strstr(hx_console_line(c, i), "dirty work ");
		double pages;

		if (!l || sscanf(l, "dirty work %lf pages at", &pages) != 1)
			continue;
		if (n && pages < s[n - 1].pages)
			break; /* not this guest's count: it only grows */
		s[n].t_ms = c->lines[i].t_ms;
		s[n].pages = pages;
		n++;
	}
	return n;
}

int gw_collect(const struct hx_console *src, const struct hx_console *dst, struct gw_sample *s,
	       int max)
{
	return add(dst, s, add(src, s, 0, max), max);
}

void gw_measure(const struct gw_sample *s, int n, double start_ms, double end_ms, double before_ms,
		struct gw_result *r)
{
	int a = -1, b = -1, w = -1;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < n; i++) {
		if (s[i].t_ms <= start_ms)
			a = i; /* the last at or before the start */
		if (w < 0 && s[i].t_ms >= start_ms - before_ms)
			w = i; /* the first of the window before it */
		if (b < 0 && s[i].t_ms >= end_ms)
			b = i; /* the first at or after the end */
		if (i && s[i].t_ms >= start_ms - 1000 && s[i - 1].t_ms <= end_ms + 1000 &&
		    s[i].t_ms - s[i - 1].t_ms > r->stall_ms)
			r->stall_ms = s[i].t_ms - s[i - 1].t_ms;
	}
	if (a < 0 || b < 0 || w < 0 || w >= a || s[b].t_ms <= s[a].t_ms)
		return;
	r->rate_before = (s[a].pages - s[w].pages) * 1000.0 / (s[a].t_ms - s[w].t_ms);
	r->rate_during = (s[b].pages - s[a].pages) * 1000.0 / (s[b].t_ms - s[a].t_ms);
	r->cost_pct = r->rate_before > 0 ? 100.0 * (1.0 - r->rate_during / r->rate_before) : 0;
	r->ok = r->rate_before > 0;
}
