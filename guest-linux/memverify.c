// SPDX-License-Identifier: Apache-2.0
/*
 * memverify.c - the verifying memory workload of the Linux test guest.
 *
 *   memverify [SIZE_MIB [RATE [ORDER [PASSES [HEARTBEAT_MS]]]]]
 *
 * Fills SIZE_MIB MiB with incompressible pages (memverify_page.h), then
 * keeps rewriting them, RATE pages per second (0 = as fast as it can), in
 * ORDER "seq" (page 0, 1, ...) or "random" (uniformly random pages), for
 * PASSES passes of SIZE_MIB MiB each (0 = forever). Before a page is
 * rewritten at generation g+1 its full contents are checked against
 * generation g, so a page that a migration lost, copied stale or mixed up
 * is reported as CORRUPTION. Every HEARTBEAT_MS (at most once per
 * interval) it prints a heartbeat with the write latency percentiles and the
 * largest CLOCK_MONOTONIC step between two iterations (a VM pause or a
 * migration's downtime shows there). docs/linux-guest.md specifies the
 * output lines exactly: tests and benchmarks parse them.
 *
 * A static user program: user code runs ~40x faster than kernel code on the
 * emulating hosts, so the work belongs here, not in the kernel. The clock is
 * read through the vDSO (kvmclock), without a system call.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "memverify_page.h"

#define PACE_BACKLOG_NS 100000000ull /* after a stall, do not burst more than 100 ms of pages */
#define MAX_REPORTS	32u	     /* CORRUPTION lines printed; the count goes on */

struct args {
	uint64_t size_mib, rate, passes, heartbeat_ms;
	int random;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The working set, 2 MiB aligned and madvise(MADV_HUGEPAGE)d: the test
 * kernel has transparent huge pages for madvised memory, and one fault per
 * 2 MiB instead of 512 makes the fill take seconds instead of minutes on
 * the emulating hosts. Without THP (another kernel) the advice fails and
 * the pages are 4 KiB: slower, the same results. MAP_FAILED on error.
 */
static uint64_t *alloc_pages(uint64_t pages)
{
	const uintptr_t huge = 2u << 20;
	size_t len = pages * MV_PAGE_SIZE;
	char *raw =
	    mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *mem;

	if (raw == MAP_FAILED)
		return MAP_FAILED;
	mem = (char *)(((uintptr_t)raw + huge - 1) & ~(huge - 1));
	/* Give back the slack on both sides so the advice covers whole huge pages only. */
	if (mem > raw)
		munmap(raw, (size_t)(mem - raw));
	if (mem + len < raw + len + huge)
		munmap(mem + len, (size_t)(raw + len + huge - (mem + len)));
	(void)madvise(mem, len, MADV_HUGEPAGE);
	return (uint64_t *)mem;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || end == s || *end || *s == '-' ? -1 : 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	a->size_mib = 64;
	a->rate = 0;
	a->random = 1;
	a->passes = 0;
	a->heartbeat_ms = 1000;
	if (argc > 6)
		return -1;
	if (argc > 1 &&
	    (parse_u64(argv[1], &a->size_mib) || !a->size_mib || a->size_mib > (1ull << 20)))
		return -1;
	if (argc > 2 && parse_u64(argv[2], &a->rate))
		return -1;
	if (argc > 3) {
		if (!strcmp(argv[3], "seq") || !strcmp(argv[3], "sequential"))
			a->random = 0;
		else if (strcmp(argv[3], "rand") && strcmp(argv[3], "random"))
			return -1;
	}
	if (argc > 4 && parse_u64(argv[4], &a->passes))
		return -1;
	if (argc > 5 && (parse_u64(argv[5], &a->heartbeat_ms) || !a->heartbeat_ms))
		return -1;
	return 0;
}

struct stats {
	uint64_t hist[MV_HIST_BUCKETS];
	uint64_t samples, max_lat_ns, max_step_ns, interval_start_ns, interval_pages;
};

static void heartbeat(struct stats *st, uint64_t now, uint64_t start, uint64_t pass,
		      uint64_t verified, uint64_t corruptions)
{
	uint64_t dt = now - st->interval_start_ns;

	printf("memverify: pass=%llu verified=%llu t_ms=%llu rate=%llu p50_us=%llu p99_us=%llu "
	       "max_us=%llu max_step_us=%llu corruptions=%llu\n",
	       (unsigned long long)pass, (unsigned long long)verified,
	       (unsigned long long)((now - start) / 1000000),
	       (unsigned long long)(dt ? st->interval_pages * 1000000000ull / dt : 0),
	       (unsigned long long)(mv_hist_percentile(st->hist, st->samples, 500) / 1000),
	       (unsigned long long)(mv_hist_percentile(st->hist, st->samples, 990) / 1000),
	       (unsigned long long)(st->max_lat_ns / 1000),
	       (unsigned long long)(st->max_step_ns / 1000), (unsigned long long)corruptions);
	memset(st, 0, sizeof(*st));
	st->interval_start_ns = now;
}

/* Sleep until the monotonic time due, if it is ahead. */
static void sleep_until(uint64_t due)
{
	struct timespec ts = {.tv_sec = (time_t)(due / 1000000000ull),
			      .tv_nsec = (long)(due % 1000000000ull)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int main(int argc, char **argv)
{
	struct args a;
	static struct stats st;
	uint64_t *mem, pages, i, op = 0, pass = 0, verified = 0, corruptions = 0;
	uint64_t rng = 0x2545F4914F6CDD1Dull, start, prev, last_hb, pace_start, pace_done = 0;
	uint32_t *gen;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_args(argc, argv, &a)) {
		fprintf(
		    stderr,
		    "usage: memverify [SIZE_MIB [RATE [seq|random [PASSES [HEARTBEAT_MS]]]]]\n");
		return 2;
	}
	pages = a.size_mib * (1024 * 1024 / MV_PAGE_SIZE);
	mem = alloc_pages(pages);
	gen = calloc(pages, sizeof(*gen));
	if (mem == MAP_FAILED || !gen) {
		printf("memverify: ERROR cannot allocate %llu MiB: %s\n",
		       (unsigned long long)a.size_mib, strerror(errno));
		return 1;
	}
	printf("memverify: start size_mib=%llu pages=%llu rate=%llu order=%s passes=%llu "
	       "heartbeat_ms=%llu\n",
	       (unsigned long long)a.size_mib, (unsigned long long)pages,
	       (unsigned long long)a.rate, a.random ? "random" : "seq",
	       (unsigned long long)a.passes, (unsigned long long)a.heartbeat_ms);

	start = now_ns();
	for (i = 0; i < pages; i++)
		mv_page_fill(mem + i * MV_PAGE_WORDS, i, 0);
	prev = last_hb = pace_start = now_ns();
	printf("memverify: filled pages=%llu fill_ms=%llu\n", (unsigned long long)pages,
	       (unsigned long long)((prev - start) / 1000000));
	st.interval_start_ns = prev;

	while (!a.passes || pass < a.passes) {
		uint64_t page = a.random ? mv_xorshift(&rng) % pages : op % pages;
		uint64_t *p = mem + page * MV_PAGE_WORDS, expected, t0, t1;
		int w;

		t0 = now_ns();
		if (t0 < prev)
			printf("memverify: CLOCK_BACKWARDS by_ns=%llu from_ns=%llu to_ns=%llu\n",
			       (unsigned long long)(prev - t0), (unsigned long long)prev,
			       (unsigned long long)t0);
		else if (t0 - prev > st.max_step_ns)
			st.max_step_ns = t0 - prev;

		w = mv_page_check(p, page, gen[page], &expected);
		if (w >= 0) {
			if (++corruptions <= MAX_REPORTS)
				printf("memverify: CORRUPTION page=%llu gen=%u word=%d "
				       "expected=0x%016llx "
				       "got=0x%016llx holds_page=%llu holds_gen=%llu\n",
				       (unsigned long long)page, gen[page], w,
				       (unsigned long long)expected, (unsigned long long)p[w],
				       (unsigned long long)p[0], (unsigned long long)p[1]);
		}
		mv_page_fill(p, page, ++gen[page]);
		verified++;
		t1 = now_ns();
		if (t1 - t0 > st.max_lat_ns)
			st.max_lat_ns = t1 - t0;
		st.hist[mv_hist_bucket(t1 - t0)]++;
		st.samples++;
		st.interval_pages++;
		prev = t1;

		if (++op % pages == 0)
			pass++;
		if (t1 - last_hb >= a.heartbeat_ms * 1000000ull) {
			heartbeat(&st, t1, start, pass, verified, corruptions);
			last_hb = t1;
			prev = now_ns(); /* our own console write is no clock step */
		}
		if (a.rate) {
			uint64_t due = pace_start + ++pace_done * 1000000000ull / a.rate;

			if (due > t1) {
				sleep_until(due);
				prev = due; /* oversleeping (a VM pause) is a clock step */
			} else if (t1 - due > PACE_BACKLOG_NS) {
				pace_start = t1; /* a stall: restart the schedule */
				pace_done = 0;
			}
		}
	}
	printf("memverify: done passes=%llu verified=%llu corruptions=%llu\n",
	       (unsigned long long)pass, (unsigned long long)verified,
	       (unsigned long long)corruptions);
	return corruptions ? 1 : 0;
}
