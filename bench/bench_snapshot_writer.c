/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_snapshot_writer: the snapshot writer (migration/persist,
 * page_io_run()) on a guest-memory region without KVM, against the file
 * system's own sequential write rate for the same bytes, in the same run.
 *
 * Guest RAM (--ram, default 1 GiB, in 512 MiB memslots as vmm's default)
 * holds data in one of three patterns: a contiguous quarter of each slot
 * (the `dirty` workload's working set), every fourth page, or random runs
 * of 1 to 64 pages covering a quarter; the other pages are never touched
 * (not resident). Each pattern is written to a fresh memory file:
 *   full   a stopped snapshot's pass: every page looked at, those with data
 *          written (absent ones skipped, zero ones left as holes);
 *   pass   a dirty pass (--live's later passes, --diff): exactly the pages
 *          a dirty bitmap marks;
 * by 1 and 4 writer threads, with buffered writes and with direct I/O
 * (`[snapshot] direct_io`). Each case is timed as the snapshot's pause
 * counts it (the writes; write_ms) and with the fdatasync that follows the
 * resume (sync_ms). Interleaved with each repetition, the baseline: the
 * same number of bytes written from memory already touched, sequentially
 * into a fresh file in 16 MiB pwrites (seq), and its fdatasync. The table
 * gives MB/s (1e6 bytes) for both and the case's rate as a share of the
 * baseline's (share: writes only, share_sync: with the sync); medians of
 * --reps runs.
 *
 * usage: bench_snapshot_writer [--ram SIZE] [--dir DIR] [--reps N] [--quick]
 *                              [--only SUBSTR] [--csv FILE]
 * (--quick: 256 MiB, 1 rep; DIR is where the files go, default
 * /var/tmp/bench_snapshot_writer: the file system to measure; --only: the
 * cases whose "PATTERN-KIND-THREADS-IO" name holds SUBSTR, e.g. quarter-,
 * -buffered)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"
#include "bitmap.h"
#include "guest_mem.h"
#include "host_swap.h"
#include "persist.h"
#include "size.h"

#define SEQ_CHUNK (16u << 20)
#define MAX_REPS  15

enum pattern { QUARTER, SCATTERED, RUNS };
static const char *const pattern_name[] = {"quarter", "every4th", "runs1-64"};

struct env {
	struct guest_mem mem;
	uint64_t *slot_off;
	uint64_t **data; /* the pattern: per slot, the pages that hold data */
	uint64_t npages_data;
	uint8_t *seq_src; /* the baseline's source: touched, as many bytes as the pattern */
	const char *dir;
	bool skip_absent;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Fresh RAM holding data (a page's own number, never zero) where the pattern says. */
static int make_ram(struct env *e, uint64_t ram, enum pattern pat)
{
	if (guest_mem_init(&e->mem, ram, 512ull << 20, MEM_BACKEND_ANON))
		return -1;
	e->data = page_bitmaps_new(&e->mem);
	if (!e->data)
		return -1;
	e->npages_data = 0;
	for (uint32_t s = 0; s < e->mem.nslots; s++) {
		const struct memslot *m = &e->mem.slots[s];

		for (uint64_t p = 0; p < m->npages;) {
			uint64_t run = 1;
			bool on;

			if (pat == QUARTER) {
				on = p < m->npages / 4;
			} else if (pat == SCATTERED) {
				on = p % 4 == 0;
			} else {
				/* a run of 1..64 pages, on with probability 1/4 */
				run = 1 + next_rand() % 64;
				on = next_rand() % 4 == 0;
			}
			for (uint64_t q = p; q < p + run && q < m->npages; q++) {
				if (!on)
					continue;
				bitmap_set(e->data[s], q);
				memset(m->hva + q * GUEST_PAGE_SIZE, (int)(1 + q % 251),
				       GUEST_PAGE_SIZE);
				e->npages_data++;
			}
			p += run;
		}
	}
	return 0;
}

static void free_ram(struct env *e)
{
	page_bitmaps_free(e->data, &e->mem);
	guest_mem_destroy(&e->mem);
}

static int fresh_file(const struct env *e, const char *name, bool direct)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", e->dir, name);
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | (direct ? O_DIRECT : 0), 0600);
	unlink(path); /* gone when closed: nothing left behind */
	return fd;
}

/* The baseline: bytes written sequentially from touched memory; write and sync ms. */
static int seq_write(const struct env *e, uint64_t bytes, double *write_ms, double *sync_ms)
{
	int fd = fresh_file(e, "seq", false);
	double t0, t1;

	if (fd < 0)
		return -1;
	t0 = bench_now_ms();
	for (uint64_t off = 0; off < bytes; off += SEQ_CHUNK) {
		uint64_t n = bytes - off < SEQ_CHUNK ? bytes - off : SEQ_CHUNK;

		if (persist_io_full(fd, true, e->seq_src + off, n, off)) {
			close(fd);
			return -1;
		}
	}
	t1 = bench_now_ms();
	if (fdatasync(fd)) {
		close(fd);
		return -1;
	}
	*write_ms = t1 - t0;
	*sync_ms = bench_now_ms() - t1;
	close(fd);
	return 0;
}

/* One case through the real writer: write and sync ms, pages written. */
static int writer(const struct env *e, bool pass, unsigned threads, bool direct, double *write_ms,
		  double *sync_ms, uint64_t *moved)
{
	uint64_t **present = page_bitmaps_new(&e->mem), **only = NULL, file_len;
	struct page_io io = {.mem = &e->mem,
			     .slot_off = e->slot_off,
			     .present = present,
			     .writing = true,
			     .skip_absent = e->skip_absent,
			     .direct = direct,
			     .moved = moved};
	char err[256] = "";
	double t0, t1;
	int ret = -1;

	*moved = 0;
	io.fd = fresh_file(e, "memory", direct);
	if (io.fd < 0 || !present) {
		fprintf(stderr, "bench_snapshot_writer: %s/memory: %s\n", e->dir,
			io.fd < 0 ? strerror(errno) : "out of memory");
		goto out;
	}
	if (pass) {
		only = page_bitmaps_new(&e->mem);
		if (!only)
			goto out;
		for (uint32_t s = 0; s < e->mem.nslots; s++)
			memcpy(only[s], e->data[s], bitmap_words(e->mem.slots[s].npages) * 8);
		io.only = only;
	}
	{
		const struct memslot *last = &e->mem.slots[e->mem.nslots - 1];

		file_len = e->slot_off[e->mem.nslots - 1] + last->size;
	}
	/* As persist_take.c: the file at its length before the pass, one fdatasync after. */
	if (ftruncate(io.fd, (off_t)file_len))
		goto out;
	t0 = bench_now_ms();
	ret = page_io_run(&io, threads, err, sizeof(err));
	t1 = bench_now_ms();
	if (!ret)
		ret = fdatasync(io.fd) ? -errno : 0;
	*write_ms = t1 - t0;
	*sync_ms = bench_now_ms() - t1;
	if (ret)
		fprintf(stderr, "bench_snapshot_writer: %s\n", err[0] ? err : strerror(-ret));
out:
	if (io.fd >= 0)
		close(io.fd);
	page_bitmaps_free(present, &e->mem);
	page_bitmaps_free(only, &e->mem);
	return ret;
}

static double mbs(uint64_t bytes, double ms)
{
	return ms > 0 ? bytes / 1e3 / ms : 0;
}

int main(int argc, char **argv)
{
	static const unsigned thread_counts[] = {1, 4};
	uint64_t ram = 1ull << 30;
	int reps = 3;
	const char *csv = NULL, *only = NULL;
	char dir[256] = "/var/tmp/bench_snapshot_writer";
	struct env e = {.dir = dir, .skip_absent = !host_has_swap()};
	FILE *c = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			ram = 256ull << 20;
			reps = 1;
		} else if (!strcmp(argv[i], "--ram") && i + 1 < argc) {
			if (parse_size(argv[++i], &ram) || ram < (4ull << 20) || ram % (2u << 20)) {
				fprintf(stderr, "bench_snapshot_writer: --ram: bad size\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			reps = atoi(argv[++i]);
			if (reps < 1 || reps > MAX_REPS)
				reps = 3;
		} else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
			snprintf(dir, sizeof(dir), "%s", argv[++i]);
		} else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
			csv = argv[++i];
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else {
			fprintf(stderr, "usage: bench_snapshot_writer [--ram SIZE] [--dir DIR] "
					"[--reps N] [--quick] [--only SUBSTR] [--csv FILE]\n");
			return 2;
		}
	}
	mkdir(dir, 0700);
	if (csv && !(c = fopen(csv, "w"))) {
		perror(csv);
		return 1;
	}
	if (c)
		fprintf(c, "ram_mib,pattern,kind,threads,io,mib,write_ms,sync_ms,mbs,mbs_sync,"
			   "seq_write_ms,seq_sync_ms,seq_mbs,seq_mbs_sync,share,share_sync\n");
	printf("bench_snapshot_writer: %llu MiB of RAM, files in %s, median of %d\n",
	       (unsigned long long)(ram >> 20), dir, reps);
	printf("%-9s %-5s %3s %-8s %6s %8s %8s %8s %8s %8s %6s %10s\n", "pattern", "kind", "thr",
	       "io", "MiB", "write_ms", "sync_ms", "MB/s", "seq_MB/s", "+sync", "share",
	       "share_sync");
	for (int pat = QUARTER; pat <= RUNS; pat++) {
		if (make_ram(&e, ram, (enum pattern)pat)) {
			fprintf(stderr, "bench_snapshot_writer: cannot map %llu MiB\n",
				(unsigned long long)(ram >> 20));
			return 1;
		}
		e.slot_off = calloc(e.mem.nslots, sizeof(*e.slot_off));
		{
			struct mig_slot_desc *d = calloc(e.mem.nslots, sizeof(*d));
			uint8_t *layout = calloc(e.mem.nslots, SNAP_SLOT_LEN);

			persist_slots(&e.mem, d);
			snap_layout_encode(layout, d, e.mem.nslots);
			for (uint32_t s = 0; s < e.mem.nslots; s++)
				memcpy(&e.slot_off[s], layout + s * SNAP_SLOT_LEN + 16, 8);
			free(d);
			free(layout);
		}
		e.seq_src = aligned_alloc(4096, e.npages_data * GUEST_PAGE_SIZE);
		memset(e.seq_src, 0x5a, e.npages_data * GUEST_PAGE_SIZE);
		for (int kind = 0; kind < 2; kind++)
			for (size_t t = 0; t < sizeof(thread_counts) / sizeof(thread_counts[0]);
			     t++)
				for (int direct = 0; direct < 2; direct++) {
					double w[MAX_REPS], s[MAX_REPS], sw[MAX_REPS], ss[MAX_REPS];
					double wm, sm, swm, ssm, r, rs, q, qs;
					uint64_t moved = 0, bytes;
					int ok = 0;
					char name[64];

					snprintf(name, sizeof(name), "%s-%s-%u-%s",
						 pattern_name[pat], kind ? "pass" : "full",
						 thread_counts[t], direct ? "direct" : "buffered");
					if (only && !strstr(name, only))
						continue;

					for (int k = 0; k < reps; k++)
						if (!seq_write(&e, e.npages_data * GUEST_PAGE_SIZE,
							       &sw[k], &ss[k]) &&
						    !writer(&e, kind, thread_counts[t], direct,
							    &w[k], &s[k], &moved))
							ok++;
					if (ok < reps)
						continue;
					bytes = moved * GUEST_PAGE_SIZE;
					wm = bench_median(w, reps);
					sm = bench_median(s, reps);
					swm = bench_median(sw, reps);
					ssm = bench_median(ss, reps);
					r = mbs(bytes, wm);
					rs = mbs(bytes, wm + sm);
					q = mbs(bytes, swm);
					qs = mbs(bytes, swm + ssm);
					printf("%-9s %-5s %3u %-8s %6.0f %8.1f %8.1f %8.0f %8.0f "
					       "%8.0f "
					       "%5.0f%% %9.0f%%\n",
					       pattern_name[pat], kind ? "pass" : "full",
					       thread_counts[t], direct ? "direct" : "buffered",
					       bytes / 1048576.0, wm, sm, r, q, qs,
					       q ? 100 * r / q : 0, qs ? 100 * rs / qs : 0);
					fflush(stdout);
					if (c)
						fprintf(c,
							"%llu,%s,%s,%u,%s,%.1f,%.2f,%.2f,%.1f,%.1f,"
							"%.2f,%.2f,%.1f,%.1f,%.3f,%.3f\n",
							(unsigned long long)(ram >> 20),
							pattern_name[pat], kind ? "pass" : "full",
							thread_counts[t],
							direct ? "direct" : "buffered",
							bytes / 1048576.0, wm, sm, r, rs, swm, ssm,
							q, qs, q ? r / q : 0, qs ? rs / qs : 0);
				}
		free(e.seq_src);
		free(e.slot_off);
		free_ram(&e);
	}
	if (c)
		fclose(c);
	return 0;
}
