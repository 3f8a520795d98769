/* SPDX-License-Identifier: Apache-2.0 */
#include "harness_console.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

static void console_init(struct hx_console *c, const char *name, int fd)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->opened = true;
	c->fd = fd;
	c->corrupt = -1;
}

int hx_console_pipe(struct hx_console *c, const char *name, int fd, char *err, size_t errlen)
{
	console_init(c, name, fd);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		return -errno;
	}
	return 0;
}

int hx_console_file(struct hx_console *c, const char *name, const char *path,
		    struct hx_proc *writer, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	console_init(c, name, fd);
	c->file = true;
	c->writer = writer;
	return 0;
}

void hx_console_close(struct hx_console *c)
{
	if (!c->opened)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->text);
	free(c->lines_text);
	free(c->lines);
	memset(c, 0, sizeof(*c));
}

static bool grow(char **buf, size_t *cap, size_t need)
{
	size_t n = *cap ? *cap : 4096;
	char *p;

	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	p = realloc(*buf, n);
	if (!p)
		return false;
	*buf = p;
	*cap = n;
	return true;
}

/* Splits the complete lines of text[scanned, len) off, stamped with now. */
static void scan(struct hx_console *c, double now)
{
	char *nl;

	while ((nl = memchr(c->text + c->scanned, '\n', c->len - c->scanned))) {
		size_t n = (size_t)(nl - (c->text + c->scanned));

		if (c->nlines == c->lines_max) {
			size_t m = c->lines_max ? c->lines_max * 2 : 256;
			struct hx_line *l = realloc(c->lines, m * sizeof(*l));

			if (!l)
				return;
			c->lines = l;
			c->lines_max = m;
		}
		if (!grow(&c->lines_text, &c->lines_cap, c->lines_len + n + 1))
			return;
		memcpy(c->lines_text + c->lines_len, c->text + c->scanned, n);
		c->lines_text[c->lines_len + n] = '\0';
		c->lines[c->nlines] = (struct hx_line){c->lines_len, now};
		if (c->corrupt < 0 && strstr(c->lines_text + c->lines_len, "CORRUPTION"))
			c->corrupt = (long)c->nlines;
		c->lines_len += n + 1;
		c->nlines++;
		c->scanned += n + 1;
	}
}

void hx_console_pump(struct hx_console *c)
{
	bool gone;

	if (!c->opened)
		return;
	/* a file's writer is checked before reading: what it wrote before exiting is read */
	gone = c->file && c->writer && !hx_running(c->writer);
	while (c->fd >= 0) {
		ssize_t n;

		if (c->len + 65536 + 1 > HX_CONSOLE_MAX)
			c->full = true;
		if (c->full || !grow(&c->text, &c->cap, c->len + 65536 + 1)) {
			char sink[4096]; /* still drain the pipe so the child never blocks */

			n = read(c->fd, sink, sizeof(sink));
		} else {
			n = read(c->fd, c->text + c->len, 65536);
			if (n > 0) {
				c->len += (size_t)n;
				c->text[c->len] = '\0';
			}
		}
		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		/* EOF (or an error): final for a pipe, for a file once its writer is gone */
		if (!c->file || gone) {
			close(c->fd);
			c->fd = -1;
			c->eof = true;
		}
		break;
	}
	scan(c, (double)now_ns() / 1e6);
	if (c->eof && c->scanned < c->len && grow(&c->text, &c->cap, c->len + 2)) {
		/* the last line had no newline: give it one, so it counts as a line */
		c->text[c->len++] = '\n';
		c->text[c->len] = '\0';
		scan(c, (double)now_ns() / 1e6);
	}
}

size_t hx_console_count(const struct hx_console *c, const regex_t *re, size_t from)
{
	size_t n = 0;

	for (size_t i = from; i < c->nlines; i++)
		n += !regexec(re, hx_console_line(c, i), 0, NULL, 0);
	return n;
}

const char *hx_console_corruption(const struct hx_console *c)
{
	return c->corrupt < 0 ? NULL : hx_console_line(c, (size_t)c->corrupt);
}

void hx_watch_add(struct hx_watch *w, struct hx_console *c)
{
	if (w->n < HX_WATCH_MAX)
		w->c[w->n++] = c;
}

int hx_watch_until(struct hx_watch *w, int (*until)(void *arg), void *arg, int timeout_ms)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;

	for (;;) {
		struct pollfd p[HX_WATCH_MAX];
		int np = 0, r, nap = 100;
		uint64_t now;

		for (int i = 0; i < w->n; i++) {
			hx_console_pump(w->c[i]);
			if (w->c[i]->fd < 0)
				continue;
			/* a file cannot be polled for new data: look again soon */
			if (w->c[i]->file)
				nap = 10;
			else
				p[np++] = (struct pollfd){w->c[i]->fd, POLLIN, 0};
		}
		r = until ? until(arg) : 0;
		if (r)
			return r > 0 ? 0 : r;
		now = now_ns();
		if (now >= end)
			return -ETIMEDOUT;
		if ((end - now) / 1000000u < (uint64_t)nap)
			nap = (int)((end - now) / 1000000u) + 1;
		if (np)
			poll(p, (nfds_t)np, nap);
		else
			sleep_ms((unsigned)nap);
	}
}

struct line_wait {
	struct hx_console *c;
	const regex_t *re;
	size_t want, from, have; /* lines [from, c->nlines) looked at so far: have matched */
};

static int enough_lines(void *arg)
{
	struct line_wait *lw = arg;

	lw->have += hx_console_count(lw->c, lw->re, lw->from);
	if (lw->c->nlines > lw->from)
		lw->from = lw->c->nlines;
	if (lw->have >= lw->want)
		return 1;
	return lw->c->eof ? -ENODATA : 0;
}

int hx_wait_line(struct hx_watch *w, struct hx_console *c, const char *regex, size_t want,
		 size_t from, int timeout_ms, char *err, size_t errlen)
{
	struct hx_watch all = {{c}, 1};
	struct line_wait lw = {c, NULL, want, from, 0};
	regex_t re;
	int ret;

	if (w) { /* w's consoles, and c if it is not one of them */
		bool member = false;

		all = *w;
		for (int i = 0; i < w->n; i++)
			member |= w->c[i] == c;
		if (!member)
			hx_watch_add(&all, c);
	}
	if (regcomp(&re, regex, REG_EXTENDED | REG_NOSUB)) {
		snprintf(err, errlen, "bad regular expression /%s/", regex);
		return -EINVAL;
	}
	lw.re = &re;
	ret = hx_watch_until(&all, enough_lines, &lw, timeout_ms);
	regfree(&re);
	if (ret == -ETIMEDOUT)
		snprintf(err, errlen, "%zu of %zu lines of %s matched /%s/ within %g s", lw.have,
			 want, c->name, regex, timeout_ms / 1e3);
	else if (ret == -ENODATA)
		snprintf(err, errlen, "%s ended with %zu of %zu lines matching /%s/", c->name,
			 lw.have, want, regex);
	return ret;
}
