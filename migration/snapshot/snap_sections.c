/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_sections.c - the payloads of the state file's sections this build
 * reads (LAYOUT, INDEX, CPU), where a page is in the memory file, the
 * memory file's header, and the checks of a restore: the snapshot against
 * the restoring VM and host, and a chain of diff layers.
 */
#include <string.h>
#include <zstd.h>

#include "bitmap.h"
#include "crc32c.h"
#include "le.h"
#include "slot_table.h"
#include "snap_internal.h"

/* Bytes of a slot's bitmap: 8 * ceil(pages / 64) (the wire's BITMAP raw_len). */
static uint64_t raw_len(uint64_t npages)
{
	return bitmap_words(npages) * 8;
}

/* ---- LAYOUT ---- */

uint64_t snap_layout_encode(uint8_t *out, const struct mig_slot_desc *slots, uint32_t n)
{
	uint64_t off = SNAP_MEM_ALIGN, end = off;

	for (uint32_t i = 0; i < n; i++) {
		uint8_t *e = out + (size_t)i * SNAP_SLOT_LEN;

		le_put64(e, slots[i].gpa);
		le_put64(e + 8, slots[i].size);
		le_put64(e + 16, off);
		end = off + slots[i].size;
		off = snap_align(end, SNAP_MEM_ALIGN);
	}
	return end;
}

struct snap_slot snap_view_slot(const struct snap_view *v, uint32_t s)
{
	const uint8_t *e = v->layout + (size_t)s * SNAP_SLOT_LEN;

	return (struct snap_slot){
	    .gpa = le_get64(e), .size = le_get64(e + 8), .file_offset = le_get64(e + 16)};
}

int snap_layout_len_check(const struct snap_header *h, uint64_t len, char *err, size_t errlen)
{
	if (len != (uint64_t)h->nslots * SNAP_SLOT_LEN)
		return proto_refuse(err, errlen,
				    "snapshot state: LAYOUT of %llu bytes for %u slots",
				    (unsigned long long)len, h->nslots);
	return 0;
}

int snap_layout_decode(struct snap_view *v, const uint8_t *p, uint64_t len, char *err,
		       size_t errlen)
{
	uint64_t total = 0, off = SNAP_MEM_ALIGN, end = off;
	uint32_t bad;
	int ret = snap_layout_len_check(&v->h, len, err, errlen);

	if (ret)
		return ret;
	v->layout = p;
	/* The table's shape is the one a migration's VM_DESC has: checked in one place. */
	bad = slot_table_shape(p, v->h.nslots, SNAP_SLOT_LEN, MIG_PAGE_SIZE, MIG_SLOT_SIZE_MAX,
			       &total);
	if (bad < v->h.nslots) {
		struct snap_slot s = snap_view_slot(v, bad);

		return proto_refuse(err, errlen,
				    "snapshot state: LAYOUT slot %u [0x%llx, +0x%llx) is malformed",
				    bad, (unsigned long long)s.gpa, (unsigned long long)s.size);
	}
	/* Each slot's pages where the last one's end, aligned, puts them. */
	for (uint32_t i = 0; i < v->h.nslots; i++) {
		struct snap_slot s = snap_view_slot(v, i);

		if (s.file_offset != off)
			return proto_refuse(err, errlen,
					    "snapshot state: LAYOUT slot %u at file offset %llu, "
					    "expected %llu",
					    i, (unsigned long long)s.file_offset,
					    (unsigned long long)off);
		end = off + s.size;
		off = snap_align(end, SNAP_MEM_ALIGN);
	}
	if (total != v->h.memory || end != v->h.memory_file_len)
		return proto_refuse(err, errlen,
				    "snapshot state: LAYOUT slots add up to %llu bytes in a memory "
				    "file of %llu, the header says %llu and %llu",
				    (unsigned long long)total, (unsigned long long)end,
				    (unsigned long long)v->h.memory,
				    (unsigned long long)v->h.memory_file_len);
	return 0;
}

/* ---- INDEX ---- */

uint64_t snap_index_len_max(const uint64_t *npages, uint32_t n)
{
	uint64_t len = (uint64_t)n * SNAP_INDEX_ENT_LEN;

	for (uint32_t i = 0; i < n; i++)
		len += ZSTD_COMPRESSBOUND(raw_len(npages[i]));
	return len;
}

long long snap_index_encode(uint8_t *out, size_t outlen, const uint64_t *const *bitmaps,
			    const uint64_t *npages, uint32_t n, uint32_t enc)
{
	uint64_t off = (uint64_t)n * SNAP_INDEX_ENT_LEN;

	if (enc != SNAP_INDEX_RAW && enc != SNAP_INDEX_ZSTD)
		return -EINVAL;
	if (outlen < off)
		return -ENOSPC;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t raw = raw_len(npages[i]);
		size_t d;

		if (enc == SNAP_INDEX_RAW) {
			if (outlen - off < raw)
				return -ENOSPC;
			memcpy(out + off, bitmaps[i], raw);
			d = raw;
		} else {
			d = ZSTD_compress(out + off, outlen - off, bitmaps[i], raw, 3);
			if (ZSTD_isError(d))
				return -ENOSPC;
		}
		le_put64(out + i * SNAP_INDEX_ENT_LEN, bitmap_count(bitmaps[i], raw / 8));
		le_put32(out + i * SNAP_INDEX_ENT_LEN + 8, enc);
		le_put32(out + i * SNAP_INDEX_ENT_LEN + 12, (uint32_t)d);
		off += d;
	}
	return (long long)off;
}

struct snap_index_ent snap_view_index_ent(const struct snap_view *v, uint32_t s)
{
	const uint8_t *e = v->index + (size_t)s * SNAP_INDEX_ENT_LEN;

	return (struct snap_index_ent){
	    .present = le_get64(e), .encoding = le_get32(e + 8), .data_len = le_get32(e + 12)};
}

int snap_index_decode(struct snap_view *v, const uint8_t *p, uint64_t len, char *err, size_t errlen)
{
	uint64_t data = 0, ents = (uint64_t)v->h.nslots * SNAP_INDEX_ENT_LEN;

	if (len < ents)
		return proto_refuse(err, errlen, "snapshot state: INDEX of %llu bytes for %u slots",
				    (unsigned long long)len, v->h.nslots);
	v->index = p;
	v->index_len = len;
	for (uint32_t i = 0; i < v->h.nslots; i++) {
		struct snap_index_ent e = snap_view_index_ent(v, i);
		uint64_t pages = snap_view_slot(v, i).size / MIG_PAGE_SIZE, raw = raw_len(pages);

		if (e.present > pages || (e.encoding == SNAP_INDEX_RAW && e.data_len != raw) ||
		    (e.encoding == SNAP_INDEX_ZSTD &&
		     (!e.data_len || e.data_len > ZSTD_COMPRESSBOUND(raw))) ||
		    e.encoding > SNAP_INDEX_ZSTD)
			return proto_refuse(
			    err, errlen,
			    "snapshot state: INDEX of slot %u: %llu present pages of "
			    "%llu, encoding %u, %u bytes",
			    i, (unsigned long long)e.present, (unsigned long long)pages, e.encoding,
			    e.data_len);
		data += e.data_len;
	}
	if (data != len - ents)
		return proto_refuse(
		    err, errlen,
		    "snapshot state: INDEX holds %llu bytes of bitmaps, its entries "
		    "say %llu",
		    (unsigned long long)(len - ents), (unsigned long long)data);
	return 0;
}

int snap_index_bitmap(const struct snap_view *v, uint32_t s, uint64_t *words, uint64_t nwords,
		      char *err, size_t errlen)
{
	uint64_t off = (uint64_t)v->h.nslots * SNAP_INDEX_ENT_LEN, pages, raw;
	struct snap_index_ent e;
	size_t got;

	if (s >= v->h.nslots)
		return -EINVAL;
	pages = snap_view_slot(v, s).size / MIG_PAGE_SIZE;
	raw = raw_len(pages);
	if (nwords < raw / 8)
		return -EINVAL;
	for (uint32_t i = 0; i < s; i++)
		off += snap_view_index_ent(v, i).data_len;
	e = snap_view_index_ent(v, s);
	if (e.encoding == SNAP_INDEX_RAW) {
		memcpy(words, v->index + off, raw);
	} else {
		got = ZSTD_decompress(words, raw, v->index + off, e.data_len);
		if (ZSTD_isError(got) || got != raw)
			return proto_refuse(
			    err, errlen, "snapshot state: INDEX of slot %u: %s (%zu of %llu bytes)",
			    s, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short",
			    ZSTD_isError(got) ? 0 : got, (unsigned long long)raw);
	}
	if (!bitmap_tail_clean(words, pages))
		return proto_refuse(err, errlen,
				    "snapshot state: INDEX of slot %u marks pages past its end", s);
	if (bitmap_count(words, raw / 8) != e.present)
		return proto_refuse(
		    err, errlen,
		    "snapshot state: INDEX of slot %u has %llu pages, its entry says "
		    "%llu",
		    s, (unsigned long long)bitmap_count(words, raw / 8),
		    (unsigned long long)e.present);
	return 0;
}

/* ---- Pages ---- */

int snap_page_offset(const struct snap_view *v, uint32_t s, uint64_t p, uint64_t *off)
{
	struct snap_slot sl;

	if (s >= v->h.nslots)
		return -ERANGE;
	sl = snap_view_slot(v, s);
	if (p >= sl.size / MIG_PAGE_SIZE)
		return -ERANGE;
	*off = sl.file_offset + p * MIG_PAGE_SIZE;
	return 0;
}

int snap_gpa_offset(const struct snap_view *v, uint64_t gpa, uint64_t *off)
{
	uint32_t lo = 0, hi = v->h.nslots;

	/* The slots are ascending and disjoint: the last one starting at or below gpa. */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (snap_view_slot(v, mid).gpa <= gpa)
			lo = mid;
		else
			hi = mid;
	}
	{
		struct snap_slot sl = snap_view_slot(v, lo);

		if (gpa < sl.gpa || gpa - sl.gpa >= sl.size)
			return -ERANGE;
		*off = sl.file_offset + (gpa - sl.gpa);
	}
	return 0;
}

/* ---- CPU ---- */

void snap_cpu_encode(uint8_t *out, const struct snap_cpu_word *w, uint32_t n)
{
	le_put32(out, n);
	le_put32(out + 4, 0);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *e = out + SNAP_CPU_HDR_LEN + (size_t)i * SNAP_CPU_WORD_LEN;

		le_put32(e, w[i].leaf);
		le_put32(e + 4, w[i].subleaf);
		le_put32(e + 8, w[i].reg);
		le_put32(e + 12, w[i].bits);
	}
}

struct snap_cpu_word snap_view_cpu_word(const struct snap_view *v, uint32_t i)
{
	const uint8_t *e = v->cpu + (size_t)i * SNAP_CPU_WORD_LEN;

	return (struct snap_cpu_word){.leaf = le_get32(e),
				      .subleaf = le_get32(e + 4),
				      .reg = le_get32(e + 8),
				      .bits = le_get32(e + 12)};
}

static int cpu_cmp(const struct snap_cpu_word *a, const struct snap_cpu_word *b)
{
	if (a->leaf != b->leaf)
		return a->leaf < b->leaf ? -1 : 1;
	if (a->subleaf != b->subleaf)
		return a->subleaf < b->subleaf ? -1 : 1;
	if (a->reg != b->reg)
		return a->reg < b->reg ? -1 : 1;
	return 0;
}

int snap_cpu_decode(struct snap_view *v, const uint8_t *p, uint64_t len, char *err, size_t errlen)
{
	uint32_t n = len >= SNAP_CPU_HDR_LEN ? le_get32(p) : 0;

	if (len < SNAP_CPU_HDR_LEN || n > SNAP_CPU_WORDS_MAX ||
	    len != SNAP_CPU_HDR_LEN + (uint64_t)n * SNAP_CPU_WORD_LEN)
		return proto_refuse(err, errlen,
				    "snapshot state: CPU of %llu bytes for %u words (at most %u)",
				    (unsigned long long)len, n, SNAP_CPU_WORDS_MAX);
	v->cpu = p + SNAP_CPU_HDR_LEN;
	v->ncpu = n;
	for (uint32_t i = 0; i < n; i++) {
		struct snap_cpu_word w = snap_view_cpu_word(v, i), prev = {0};

		if (w.reg > SNAP_CPU_EDX)
			return proto_refuse(
			    err, errlen, "snapshot state: CPU word %u names register %u", i, w.reg);
		if (i)
			prev = snap_view_cpu_word(v, i - 1);
		if (i && cpu_cmp(&prev, &w) >= 0)
			return proto_refuse(
			    err, errlen, "snapshot state: CPU word %u out of order or repeated", i);
	}
	return 0;
}

/* ---- The memory file's header ---- */

#define SNAP_MEM_CRC_AT (SNAP_MEM_HEADER_LEN - 4)

void snap_mem_header_encode(uint8_t out[SNAP_MEM_HEADER_LEN], const struct snap_mem_header *m)
{
	memset(out, 0, SNAP_MEM_HEADER_LEN);
	memcpy(out, SNAP_MEM_MAGIC, 8);
	le_put16(out + 8, m->version_major);
	le_put16(out + 10, m->version_minor);
	memcpy(out + 16, m->id.b, 16);
	le_put64(out + 32, m->file_len);
	le_put32(out + SNAP_MEM_CRC_AT, crc32c(0, out, SNAP_MEM_CRC_AT));
}

int snap_mem_header_decode(const uint8_t *p, size_t len, struct snap_mem_header *m, char *err,
			   size_t errlen)
{
	if (len < SNAP_MEM_HEADER_LEN)
		return proto_refuse(err, errlen,
				    "snapshot memory: truncated: %zu bytes, the header needs %u",
				    len, SNAP_MEM_HEADER_LEN);
	if (memcmp(p, SNAP_MEM_MAGIC, 8))
		return proto_refuse(err, errlen,
				    "snapshot memory: not a vmm snapshot memory file (bad magic)");
	m->version_major = le_get16(p + 8);
	m->version_minor = le_get16(p + 10);
	if (m->version_major != SNAP_VERSION_MAJOR)
		return proto_refuse(err, errlen,
				    "snapshot memory: format version %u.%u, this vmm reads %u.x",
				    m->version_major, m->version_minor, SNAP_VERSION_MAJOR);
	if (le_get32(p + SNAP_MEM_CRC_AT) != crc32c(0, p, SNAP_MEM_CRC_AT))
		return proto_refuse(err, errlen,
				    "snapshot memory: header CRC mismatch (corrupted)");
	memcpy(m->id.b, p + 16, 16);
	m->file_len = le_get64(p + 32);
	return 0;
}

int snap_mem_check(const struct snap_view *v, const struct snap_mem_header *m, uint64_t file_len,
		   char *err, size_t errlen)
{
	char a[33], b[33];

	if (memcmp(&m->id, &v->h.id, sizeof(m->id))) {
		snap_id_hex(&m->id, a);
		snap_id_hex(&v->h.id, b);
		return proto_refuse(
		    err, errlen,
		    "snapshot memory: the file belongs to snapshot %s, the state to %s", a, b);
	}
	if (m->file_len != v->h.memory_file_len || file_len != v->h.memory_file_len)
		return proto_refuse(err, errlen,
				    "snapshot memory: %s: %llu bytes (its header says %llu), the "
				    "state expects %llu",
				    file_len < v->h.memory_file_len ? "truncated" : "wrong length",
				    (unsigned long long)file_len, (unsigned long long)m->file_len,
				    (unsigned long long)v->h.memory_file_len);
	return 0;
}
