/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_limits: this host's limits that migration numbers are compared
 * with, measured in one run: memcpy bandwidth (into touched and into
 * never-touched memory), loopback TCP (1 and 4 streams), and zstd level 1
 * (the migration default) compress and decompress speed, in batches of
 * MIG_PAGES_MAX-sized 2 MiB frames as ram_send.c compresses them, on three
 * kinds of pages:
 *   dirty     - the firmware `dirty` workload's: zero but for five stamped
 *               words (magic, index, pass, check, tail);
 *   random    - incompressible (xorshift);
 *   memverify - the Linux guest memverify workload's (memverify_page.h):
 *               two plain words and a pseudo-random stream.
 * bench_run (bench/run) plots migration wire rates against these.
 *
 * usage: bench_limits [--csv FILE] [--quick]   (no KVM, no root needed)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "bench_limits_lib.h"
#include "bench_util.h"
#include "memverify_page.h"

#define PROG	    "bench_limits"
#define PAGE	    4096u
#define BATCH_PAGES 512u /* MIG_PAGES_MAX: one zstd frame per batch */

static uint64_t xs_state = 0x9E3779B97F4A7C15ull;

static uint64_t xs_next(void)
{
	uint64_t x = xs_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	xs_state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* Fills npages pages of `kind` (0 dirty, 1 random, 2 memverify). */
static void fill_pages(uint64_t *p, size_t npages, int kind)
{
	const size_t words = PAGE / 8;

	for (size_t i = 0; i < npages; i++) {
		uint64_t *w = p + i * words;

		if (kind == 0) {
			memset(w, 0, PAGE);
			w[0] = 0x5644495254590000ull | (i & 1);
			w[1] = i;
			w[2] = 7;
			w[3] = w[words - 1] = mv_splitmix64(i * 31 + 7);
		} else if (kind == 1) {
			for (size_t k = 0; k < words; k++)
				w[k] = xs_next();
		} else {
			mv_page_fill(w, i, 3);
		}
	}
}

struct zres {
	double comp_gbps, decomp_gbps, ratio;
};

/* zstd level 1 over `bytes` of pages in 2 MiB frames; best of reps passes. */
static int zstd_speed(int kind, size_t bytes, int reps, struct zres *zr)
{
	const size_t frame = (size_t)BATCH_PAGES * PAGE, nframes = bytes / frame;
	size_t cap = ZSTD_compressBound(frame), zsum = 0;
	uint64_t *src = malloc(bytes);
	char *z = malloc(cap * nframes), *out = malloc(frame);
	size_t *zlen = calloc(nframes, sizeof(*zlen));
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	int ret = -1;

	memset(zr, 0, sizeof(*zr));
	if (!src || !z || !out || !zlen || !cc || !dc)
		goto out;
	fill_pages(src, bytes / PAGE, kind);
	for (int r = 0; r < reps; r++) {
		double t0 = bench_now_ms(), g;

		zsum = 0;
		for (size_t f = 0; f < nframes; f++) {
			zlen[f] = ZSTD_compressCCtx(cc, z + f * cap, cap, (char *)src + f * frame,
						    frame, 1);
			if (ZSTD_isError(zlen[f]))
				goto out;
			zsum += zlen[f];
		}
		g = (double)bytes / ((bench_now_ms() - t0) / 1e3) / 1e9;
		if (g > zr->comp_gbps)
			zr->comp_gbps = g;
		t0 = bench_now_ms();
		for (size_t f = 0; f < nframes; f++) {
			size_t n = ZSTD_decompressDCtx(dc, out, frame, z + f * cap, zlen[f]);

			if (ZSTD_isError(n) || n != frame ||
			    memcmp(out, (char *)src + f * frame, 64))
				goto out;
		}
		g = (double)bytes / ((bench_now_ms() - t0) / 1e3) / 1e9;
		if (g > zr->decomp_gbps)
			zr->decomp_gbps = g;
	}
	zr->ratio = zsum ? (double)bytes / (double)zsum : 0;
	ret = 0;
out:
	ZSTD_freeCCtx(cc);
	ZSTD_freeDCtx(dc);
	free(src);
	free(z);
	free(out);
	free(zlen);
	return ret;
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = {"dirty", "random", "memverify"};
	const char *csv_path = NULL;
	bool quick = false;
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else {
			fprintf(stderr, "usage: " PROG " [--csv FILE] [--quick]\n");
			return 2;
		}
	}
	if (csv_path && !(csv = fopen(csv_path, "w"))) {
		perror(csv_path);
		return 1;
	}
	size_t mem = quick ? 256ull << 20 : 1ull << 30, zbytes = quick ? 64ull << 20 : 256ull << 20;
	int zreps = quick ? 1 : 3;
	double mct = bench_memcpy_gbps(mem, true), mcf = bench_memcpy_gbps(mem, false);
	double t1 = bench_tcp_gbps(1, mem), t4 = bench_tcp_gbps(4, mem);

	if (csv)
		fprintf(csv, "limit,data,gbps,ratio\n");
	printf("host limits (GB/s = 1e9 bytes/s, best of the run)\n\n");
	printf("%-24s %-10s %9s %8s\n", "limit", "data", "GB/s", "ratio");
	printf("%-24s %-10s %9.2f %8s\n", "memcpy_touched", "-", mct, "-");
	printf("%-24s %-10s %9.2f %8s\n", "memcpy_fresh", "-", mcf, "-");
	printf("%-24s %-10s %9.2f %8s\n", "tcp_1_stream", "-", t1, "-");
	printf("%-24s %-10s %9.2f %8s\n", "tcp_4_streams", "-", t4, "-");
	if (csv)
		fprintf(csv,
			"memcpy_touched,-,%.3f,\nmemcpy_fresh,-,%.3f,\ntcp_1_stream,-,%.3f,\n"
			"tcp_4_streams,-,%.3f,\n",
			mct, mcf, t1, t4);
	for (int k = 0; k < 3; k++) {
		struct zres zr;

		if (zstd_speed(k, zbytes, zreps, &zr)) {
			fprintf(stderr, PROG ": zstd on %s pages failed\n", kinds[k]);
			continue;
		}
		printf("%-24s %-10s %9.2f %8.1f\n", "zstd1_compress", kinds[k], zr.comp_gbps,
		       zr.ratio);
		printf("%-24s %-10s %9.2f %8.1f\n", "zstd1_decompress", kinds[k], zr.decomp_gbps,
		       zr.ratio);
		if (csv)
			fprintf(csv, "zstd1_compress,%s,%.3f,%.2f\nzstd1_decompress,%s,%.3f,%.2f\n",
				kinds[k], zr.comp_gbps, zr.ratio, kinds[k], zr.decomp_gbps,
				zr.ratio);
	}
	printf("\nzstd rates are of uncompressed page bytes; ratio = raw / compressed\n");
	if (csv)
		fclose(csv);
	return 0;
}
