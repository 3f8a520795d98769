/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_snapshot.c - the snapshot state file (docs/snapshot-format.md) as a
 * restore reads it: snap_state_decode(), then, on a file it accepts, every
 * accessor a restore uses: each slot's present bitmap (snap_index_bitmap),
 * page and gpa offsets, the vCPU blobs, the restore checks against a VM
 * and host built from the file's own layout, the chain check, the memory
 * file's header.
 *
 * Byte 0 picks the mode, the rest is the file. Even: as it is. Odd: the
 * harness first rewrites the header's, the table's and each section's
 * CRC-32C as the file's own fields place them, so mutations get past the
 * checksums to the structural checks behind them.
 *
 * Findings: a crash or sanitizer report; a refusal that is not -EPROTO
 * with one non-empty line; an accepted file whose accessors disagree with
 * what the decoder accepted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "le.h"
#include "snap_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The harness's own memory bound for one slot's bitmap (a 4 GiB slot). */
#define BITMAP_WORDS_MAX (1u << 14)

static void one_line(int ret, const char *err)
{
	if (ret != -EPROTO || !err[0] || strchr(err, '\n'))
		abort();
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_snapshot: %s\n", err);
}

/* Rewrites the CRCs where the file's own fields put them, as far as they lie inside it. */
static void fix_crcs(uint8_t *p, size_t len)
{
	uint64_t n, table_end;

	if (len < SNAP_HEADER_LEN)
		return;
	n = le_get32(p + 76);
	if (n > SNAP_SECTIONS_MAX)
		n = SNAP_SECTIONS_MAX;
	table_end = SNAP_HEADER_LEN + n * SNAP_SEC_LEN;
	if (table_end <= len) {
		for (uint64_t i = 0; i < n; i++) {
			uint8_t *e = p + SNAP_HEADER_LEN + i * SNAP_SEC_LEN;
			uint64_t off = le_get64(e + 16), l = le_get64(e + 24);

			if (off <= len && l <= len - off)
				le_put32(e + 12, crc32c(0, p + off, l));
		}
		le_put32(p + 104, crc32c(0, p + SNAP_HEADER_LEN, n * SNAP_SEC_LEN));
	}
	le_put32(p + SNAP_HEADER_LEN - 4, crc32c(0, p, SNAP_HEADER_LEN - 4));
}

static void accepted(const struct snap_view *v)
{
	static uint64_t words[BITMAP_WORDS_MAX];
	char err[256];
	struct snap_cpu_word cpu[1] = {{1, 0, SNAP_CPU_ECX, 0xffffffff}};
	struct snap_host host = {.nvcpus = v->h.nvcpus, .cpu = cpu, .ncpu = 1};
	const struct snap_view *layers[2] = {v, v};
	struct snap_mem_header m = {
	    .version_major = SNAP_VERSION_MAJOR, .id = v->h.id, .file_len = v->h.memory_file_len};
	uint64_t off, end = 0;
	int ret;

	for (uint32_t s = 0; s < v->h.nslots; s++) {
		struct snap_slot sl = snap_view_slot(v, s);
		uint64_t pages = sl.size / MIG_PAGE_SIZE;

		/* Every page of every slot lies inside the memory file, after its header. */
		if (snap_page_offset(v, s, 0, &off) || off < SNAP_MEM_HEADER_LEN || off < end ||
		    snap_page_offset(v, s, pages - 1, &off) ||
		    off + MIG_PAGE_SIZE > v->h.memory_file_len ||
		    snap_page_offset(v, s, pages, &off) != -ERANGE)
			abort();
		end = off + MIG_PAGE_SIZE;
		if (snap_gpa_offset(v, sl.gpa + sl.size - 1, &off) || off + 1 != end)
			abort();
		if ((pages + 63) / 64 <= BITMAP_WORDS_MAX) {
			err[0] = '\0';
			ret = snap_index_bitmap(v, s, words, BITMAP_WORDS_MAX, err, sizeof(err));
			if (ret)
				one_line(ret, err);
		}
	}
	for (uint32_t c = 0; c < v->h.nvcpus; c++) {
		const uint8_t *blob;
		uint32_t len;

		snap_view_vcpu(v, c, &blob, &len);
		if (blob < v->file || blob + len > v->file + v->h.state_len || !len)
			abort();
	}
	err[0] = '\0';
	ret = snap_restore_check(v, &host, err, sizeof(err));
	if (ret)
		one_line(ret, err);
	err[0] = '\0';
	ret = snap_chain_check(layers, 1 + !!(v->h.flags & SNAP_F_DIFF), err, sizeof(err));
	if (ret)
		one_line(ret, err);
	if (snap_mem_check(v, &m, v->h.memory_file_len, err, sizeof(err)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snap_view v;
	char err[256];
	uint8_t *file;
	int ret;

	if (size < 1)
		return 0;
	/* A heap copy of exactly the file: ASan sees any read past its end. */
	file = malloc(size - 1 ? size - 1 : 1);
	if (!file)
		abort();
	memcpy(file, data + 1, size - 1);
	if (data[0] & 1)
		fix_crcs(file, size - 1);
	err[0] = '\0';
	ret = snap_state_decode(file, size - 1, NULL, &v, err, sizeof(err));
	if (ret)
		one_line(ret, err);
	else
		accepted(&v);
	free(file);
	return 0;
}
