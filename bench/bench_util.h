/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_util.h - small helpers common to the benchmark programs (timing,
 * medians, the CSV and temp dir at start, temp dir removal). Header-only
 * so each benchmark stays one translation unit; the end-to-end ones
 * drive vmm through the migration harness (tests/harness/).
 */
#ifndef VMM_BENCH_UTIL_H
#define VMM_BENCH_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of v[0..n); sorts v in place. */
static inline double bench_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline double bench_min(const double *v, int n)
{
	double m = n > 0 ? v[0] : 0;

	for (int i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static inline double bench_max(const double *v, int n)
{
	double m = n > 0 ? v[0] : 0;

	for (int i = 1; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

/* Removes the benchmark's temp dir; best effort: a leftover one is harmless. */
static inline void bench_rm_tree(const char *dir)
{
	char cmd[128];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd)) {
			/* nothing to do about it */
		}
	}
}

/*
 * The start every benchmark shares: *csv opened for writing when csv_path
 * is set (else left NULL), and a fresh temp dir /tmp/<name>.XXXXXX in
 * tmpdir (len bytes), made the harness's run dir (VMM_RUN_DIR). Returns
 * 0, or 1 (the exit status) with the reason on stderr. The caller removes
 * tmpdir at exit (bench_rm_tree).
 */
static inline int bench_open_outputs(const char *name, const char *csv_path, FILE **csv,
				     char *tmpdir, size_t len)
{
	if (csv_path && !(*csv = fopen(csv_path, "w"))) {
		perror(csv_path);
		return 1;
	}
	snprintf(tmpdir, len, "/tmp/%s.XXXXXX", name);
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("VMM_RUN_DIR", tmpdir, 1);
	return 0;
}

/* MiB a file holds on disk (allocated blocks: a sparse file counts its data); -1 if absent. */
static inline double bench_alloc_mib(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (double)st.st_blocks * 512.0 / (1 << 20);
}

/* Is `prog` a command the shell finds on $PATH? */
static inline int bench_on_path(const char *prog)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "command -v '%s' >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* "PROG: message" on stderr, the benchmark's temp dir removed, exit 1. */
static inline void bench_die(const char *prog, const char *tmpdir, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
static inline void bench_die(const char *prog, const char *tmpdir, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	bench_rm_tree(tmpdir);
	exit(1);
}

#endif /* VMM_BENCH_UTIL_H */
