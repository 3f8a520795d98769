/* SPDX-License-Identifier: Apache-2.0 */
/*
 * harness_console.h - a child's stdout read line by line as it comes: the
 * guest console of `vmm run`, the summary of `vmm migrate`.
 *
 * A console reads either a pipe (each line stamped with the host's
 * CLOCK_MONOTONIC the moment it is read, for benchmarks that time the
 * guest's passes) or a regular file its writer appends to (for tests,
 * whose files outlive the harness and are grepped afterwards). It keeps
 * every byte and every line, so a wait never misses a line that arrived
 * while the harness was waiting for something else, and it notes the first
 * line that reports CORRUPTION (the dirty guest's verification failing).
 *
 * A watch is the set of consoles one process reads together: every wait
 * pumps all of them, so no child blocks on a full pipe while the harness
 * waits on another.
 */
#ifndef VMM_HARNESS_CONSOLE_H
#define VMM_HARNESS_CONSOLE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "harness_proc.h"

#define HX_CONSOLE_MAX (64u << 20) /* bytes kept; beyond, the rest is dropped */

struct hx_line {
	size_t off;  /* of the line, NUL-terminated, in lines_text */
	double t_ms; /* CLOCK_MONOTONIC when read (ms) */
};

/* A zeroed console is a closed one: hx_console_pump() and _close() on it do nothing. */
struct hx_console {
	char name[32];
	bool opened;
	int fd;			/* -1 once at the end */
	bool file;		/* a regular file that `writer` appends to */
	struct hx_proc *writer; /* file: the end is EOF once the writer has exited */
	bool eof;
	bool full;  /* HX_CONSOLE_MAX reached */
	char *text; /* everything read, NUL-terminated */
	size_t len, cap;
	size_t scanned;	  /* text[0, scanned) is split into lines */
	char *lines_text; /* the lines, '\n' replaced by NUL */
	size_t lines_len, lines_cap;
	struct hx_line *lines;
	size_t nlines, lines_max;
	long corrupt; /* index of the first line containing CORRUPTION, or -1 */
};

/* Reads the pipe fd (made non-blocking; closed by hx_console_close). */
int hx_console_pipe(struct hx_console *c, const char *name, int fd, char *err, size_t errlen);

/* Reads the file at path from its start, as `writer` appends to it. */
int hx_console_file(struct hx_console *c, const char *name, const char *path,
		    struct hx_proc *writer, char *err, size_t errlen);

void hx_console_close(struct hx_console *c);

/* Reads what is there now, without blocking. */
void hx_console_pump(struct hx_console *c);

/* Line i (0 = the first), NUL-terminated, without its newline. */
static inline const char *hx_console_line(const struct hx_console *c, size_t i)
{
	return c->lines_text + c->lines[i].off;
}

/* Lines at index >= from that match re. */
size_t hx_console_count(const struct hx_console *c, const regex_t *re, size_t from);

/* "<text of the first CORRUPTION line>" or NULL. */
const char *hx_console_corruption(const struct hx_console *c);

#define HX_WATCH_MAX 4

struct hx_watch {
	struct hx_console *c[HX_WATCH_MAX];
	int n;
};

void hx_watch_add(struct hx_watch *w, struct hx_console *c);

/*
 * Pumps every console of w until until(arg) returns > 0 (then 0), < 0 (then
 * that), or timeout_ms passes (-ETIMEDOUT). until is called after each read
 * and at least every 100 ms; a NULL until just pumps for timeout_ms.
 */
int hx_watch_until(struct hx_watch *w, int (*until)(void *arg), void *arg, int timeout_ms);

/*
 * Waits until `want` lines of c at index >= from match the extended regex
 * (POSIX ERE, as grep -E), pumping w as well (NULL: only c). 0, -ETIMEDOUT, or
 * -ENODATA when c ended first; -EINVAL for a bad regex.
 */
int hx_wait_line(struct hx_watch *w, struct hx_console *c, const char *regex, size_t want,
		 size_t from, int timeout_ms, char *err, size_t errlen);

#endif /* VMM_HARNESS_CONSOLE_H */
