/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_snap_format.c - the snapshot state file (migration/snapshot,
 * docs/snapshot-format.md) without files or KVM: the byte layout, the round
 * trip of header, sections and page index, where pages are, and every
 * refusal of a malformed, corrupted or truncated file. The checks of a
 * restore (layout, vCPUs, CPU, diff layers) are test_snap_restore.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>

#include "le.h"
#include "snap_fixture.h"

static char err[256];

/* ret is -EPROTO, the message contains want and is one line. */
static void refused(int ret, const char *want)
{
	if (ret != -EPROTO || !strstr(err, want) || strchr(err, '\n'))
		fail_msg("want -EPROTO with \"%s\", got %d \"%s\"", want, ret, err);
	err[0] = '\0';
}

static int decode(const struct fx *f, struct snap_view *v)
{
	return snap_state_decode(f->file, f->len, NULL, v, err, sizeof(err));
}

static void test_layout_bytes(void **state)
{
	static struct fx f;
	struct snap_sec s;

	(void)state;
	fx_init(&f, SNAP_INDEX_ZSTD);
	assert_true(fx_encode(&f) > 0);
	assert_memory_equal(f.file, "VMMSNS\r\n\x01\0\0\0\x80\0\0\0", 16);
	assert_memory_equal(f.file + 16, f.h.id.b, 16);
	assert_int_equal(le_get32(f.file + 68), 2);		       /* nslots */
	assert_int_equal(le_get32(f.file + 76), 7);		       /* nsections */
	assert_true(le_get64(f.file + 80) == f.len);		       /* state_len */
	assert_true(le_get64(f.file + 88) == (4u << 20) + 257 * 4096); /* memory file */
	/* The table at 128; the first section right after it, aligned to 8. */
	snap_sec_decode(f.file + SNAP_HEADER_LEN, &s);
	assert_int_equal(s.type, SNAP_SEC_LAYOUT);
	assert_int_equal(s.version, 1);
	assert_int_equal(s.flags, SNAP_SEC_REQUIRED);
	assert_true(s.offset == SNAP_HEADER_LEN + 7 * SNAP_SEC_LEN);
	assert_true(s.len == 48);
	/* LAYOUT: gpa, size, file offset; slot 1 starts at the next 2 MiB after slot 0. */
	assert_true(le_get64(f.file + s.offset + 24) == 1ull << 32);
	assert_true(le_get64(f.file + s.offset + 40) == 4u << 20);
	snap_sec_decode(f.file + SNAP_HEADER_LEN + 6 * SNAP_SEC_LEN, &s);
	assert_int_equal(s.type, SNAP_SEC_VCPU_STATE);
	assert_int_equal(s.instance, 1);
	assert_true(s.offset + s.len == f.len);
	assert_int_equal(s.offset % 8, 0);
}

static void round_trip(uint32_t enc)
{
	static struct fx f;
	struct snap_view v;
	uint64_t w[8];
	const uint8_t *blob;
	uint32_t len;

	fx_init(&f, enc);
	assert_true(fx_encode(&f) > 0);
	assert_int_equal(decode(&f, &v), 0);
	assert_true(v.h.memory == (2u << 20) + 257 * 4096);
	assert_int_equal(v.h.nvcpus, 2);
	assert_int_equal(v.h.nsections, 7);
	assert_int_equal(v.h.generation, 0);
	assert_true(v.h.created_ns == 1700000000000000000ull);
	assert_memory_equal(v.h.id.b, f.h.id.b, 16);
	assert_true(snap_id_is_zero(&v.h.parent));
	for (uint32_t i = 0; i < 2; i++) {
		struct snap_slot s = snap_view_slot(&v, i);

		assert_true(s.gpa == fx_slots[i].gpa && s.size == fx_slots[i].size);
	}
	assert_int_equal(snap_index_bitmap(&v, 0, w, 8, err, sizeof(err)), 0);
	assert_memory_equal(w, fx_map0, sizeof(fx_map0));
	assert_true(snap_view_index_ent(&v, 0).present == 3);
	assert_int_equal(snap_view_index_ent(&v, 0).encoding, enc);
	assert_int_equal(snap_index_bitmap(&v, 1, w, 5, err, sizeof(err)), 0);
	assert_memory_equal(w, fx_map1, sizeof(fx_map1));
	assert_int_equal(snap_index_bitmap(&v, 1, w, 4, err, sizeof(err)), -EINVAL);
	assert_int_equal(snap_index_bitmap(&v, 2, w, 8, err, sizeof(err)), -EINVAL);
	assert_int_equal(v.config_len, sizeof(fx_config) - 1);
	assert_memory_equal(v.config, fx_config, v.config_len);
	assert_int_equal(v.ncpu, 4);
	for (uint32_t i = 0; i < 4; i++) {
		struct snap_cpu_word w = snap_view_cpu_word(&v, i);

		assert_memory_equal(&w, &fx_cpu[i], sizeof(w));
	}
	assert_int_equal(v.vm_state_len, sizeof(f.vm));
	assert_memory_equal(v.vm_state, f.vm, sizeof(f.vm));
	for (uint32_t c = 0; c < 2; c++) {
		snap_view_vcpu(&v, c, &blob, &len);
		assert_int_equal(len, sizeof(f.vcpu[c]));
		assert_memory_equal(blob, f.vcpu[c], len);
	}
	assert_null(v.parent_path);
	assert_int_equal(v.skipped, 0);
}

static void test_round_trip(void **state)
{
	(void)state;
	round_trip(SNAP_INDEX_ZSTD);
	round_trip(SNAP_INDEX_RAW);
}

static void test_page_offsets(void **state)
{
	static struct fx f;
	struct snap_view v;
	uint64_t off;

	(void)state;
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_encode(&f);
	assert_int_equal(decode(&f, &v), 0);
	assert_int_equal(snap_page_offset(&v, 0, 0, &off), 0);
	assert_true(off == 2u << 20);
	assert_int_equal(snap_page_offset(&v, 0, 511, &off), 0);
	assert_true(off == (2u << 20) + 511 * 4096);
	assert_int_equal(snap_page_offset(&v, 0, 512, &off), -ERANGE);
	assert_int_equal(snap_page_offset(&v, 1, 0, &off), 0);
	assert_true(off == 4u << 20);
	assert_int_equal(snap_page_offset(&v, 1, 256, &off), 0);
	assert_true(off + 4096 == v.h.memory_file_len);
	assert_int_equal(snap_page_offset(&v, 1, 257, &off), -ERANGE);
	assert_int_equal(snap_page_offset(&v, 2, 0, &off), -ERANGE);
	assert_int_equal(snap_gpa_offset(&v, 0x1234, &off), 0);
	assert_true(off == (2u << 20) + 0x1234);
	assert_int_equal(snap_gpa_offset(&v, (1ull << 32) + 4096, &off), 0);
	assert_true(off == (4u << 20) + 4096);
	assert_int_equal(snap_gpa_offset(&v, 2u << 20, &off), -ERANGE); /* the gap */
	assert_int_equal(snap_gpa_offset(&v, (1ull << 32) + 257 * 4096, &off), -ERANGE);
}

static void test_magic_and_version(void **state)
{
	static struct fx f;
	struct snap_view v;

	(void)state;
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_encode(&f);
	memcpy(f.file, "VMMMIG\r\n", 8);
	refused(decode(&f, &v), "not a vmm snapshot (bad magic)");
	f.h.version_major = 2;
	fx_encode(&f);
	refused(decode(&f, &v), "snapshot format version 2.0, this vmm reads 1.x");
	f.h.version_major = 0;
	fx_encode(&f);
	refused(decode(&f, &v), "snapshot format version 0.0, this vmm reads 1.x");
	/* A newer minor version is read. */
	f.h.version_major = 1;
	f.h.version_minor = 7;
	fx_encode(&f);
	assert_int_equal(decode(&f, &v), 0);
	assert_int_equal(v.h.version_minor, 7);
}

/* Every byte of the file is under a CRC or must be zero padding: any flip is refused. */
static void test_every_byte_flipped(void **state)
{
	static struct fx f;
	struct snap_view v;

	(void)state;
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_encode(&f);
	for (size_t i = 0; i < f.len; i++) {
		f.file[i] ^= 0x01;
		if (decode(&f, &v) != -EPROTO || !err[0] || strchr(err, '\n'))
			fail_msg("byte %zu flipped: %s", i, err);
		err[0] = '\0';
		f.file[i] ^= 0x01;
	}
	assert_int_equal(decode(&f, &v), 0);
}

/* A flip in each CRC'd part is named by that part's CRC. */
static void test_crc_parts(void **state)
{
	static struct fx f;
	struct snap_view v;
	static const char *const names[] = {"LAYOUT",	"INDEX",      "CONFIG",	   "CPU",
					    "VM_STATE", "VCPU_STATE", "VCPU_STATE"};

	(void)state;
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_encode(&f);
	f.file[100] ^= 0x80; /* created_ns */
	refused(decode(&f, &v), "header CRC mismatch");
	f.file[100] ^= 0x80;
	f.file[115] ^= 0x80; /* reserved: still under the CRC */
	refused(decode(&f, &v), "header CRC mismatch");
	f.file[115] ^= 0x80;
	f.file[SNAP_HEADER_LEN + 3 * SNAP_SEC_LEN + 1] ^= 0x40;
	refused(decode(&f, &v), "section table CRC mismatch");
	f.file[SNAP_HEADER_LEN + 3 * SNAP_SEC_LEN + 1] ^= 0x40;
	for (uint32_t i = 0; i < f.n; i++) {
		uint64_t at = f.s[i].sec.offset + f.s[i].sec.len / 2;
		char want[64];

		snprintf(want, sizeof(want), "section %s 0x%x instance %u: CRC mismatch", names[i],
			 f.s[i].sec.type, f.s[i].sec.instance);
		f.file[at] ^= 0x10;
		refused(decode(&f, &v), want);
		f.file[at] ^= 0x10;
	}
	assert_int_equal(decode(&f, &v), 0);
}

static void test_truncation(void **state)
{
	static struct fx f;
	struct snap_view v;
	uint8_t *copy;

	(void)state;
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_encode(&f);
	/* A heap copy of exactly each length: ASan sees a read past the end. */
	for (size_t len = 0; len < f.len; len++) {
		copy = malloc(len ? len : 1);
		memcpy(copy, f.file, len);
		if (snap_state_decode(copy, len, NULL, &v, err, sizeof(err)) != -EPROTO ||
		    !strstr(err, "truncated") || strchr(err, '\n'))
			fail_msg("truncated to %zu: %s", len, err);
		free(copy);
	}
	refused(snap_state_decode(f.file, f.len + 1, NULL, &v, err, sizeof(err)), "trailing bytes");
	refused(snap_state_decode(f.file, 5, NULL, &v, err, sizeof(err)),
		"truncated: 5 bytes, the header needs 128");
}

static void test_unknown_sections(void **state)
{
	static struct fx f;
	static const uint8_t dev[12] = "virtio-net0";
	struct snap_sec_in x = fx_sec(SNAP_SEC_DEVICE_FIRST + 1, 3, dev, sizeof(dev));
	struct snap_view v;
	struct snap_sec s;

	(void)state;
	/* An optional section of a type this build does not know: skipped, still findable. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	x.sec.flags = 0;
	fx_insert(&f, x);
	fx_encode(&f);
	assert_int_equal(decode(&f, &v), 0);
	assert_int_equal(v.skipped, 1);
	assert_int_equal(snap_view_find(&v, SNAP_SEC_DEVICE_FIRST + 1, 3, &s), 0);
	assert_memory_equal(f.file + s.offset, dev, sizeof(dev));
	assert_int_equal(snap_view_find(&v, SNAP_SEC_DEVICE_FIRST + 1, 4, &s), -ENOENT);
	/* The same section required: refused, named. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	x.sec.flags = SNAP_SEC_REQUIRED;
	fx_insert(&f, x);
	fx_encode(&f);
	refused(decode(&f, &v), "required section 0x1001 version 1 (flags 0x1) is unknown to "
				"this vmm (format 1.0)");
	/* A known type of a later version: the same rule. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.s[4].sec.version = 2; /* VM_STATE */
	fx_encode(&f);
	refused(decode(&f, &v), "required section VM_STATE 0x10 version 2");
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_insert(
	    &f, (struct snap_sec_in){.sec = {.type = SNAP_SEC_PARENT_PATH, .version = 2, .len = 4},
				     .payload = "../x"});
	fx_encode(&f);
	assert_int_equal(decode(&f, &v), 0);
	assert_int_equal(v.skipped, 1);
	assert_null(v.parent_path);
	/* A flag this build does not know on a required section. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.s[2].sec.flags |= 0x8000; /* CONFIG */
	fx_encode(&f);
	refused(decode(&f, &v), "required section CONFIG 0x3 version 1 (flags 0x8001)");
	/* A known optional section is read. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_insert(
	    &f, (struct snap_sec_in){.sec = {.type = SNAP_SEC_PARENT_PATH, .version = 1, .len = 7},
				     .payload = "../base"});
	fx_encode(&f);
	assert_int_equal(decode(&f, &v), 0);
	assert_int_equal(v.skipped, 0);
	assert_int_equal(v.parent_path_len, 7);
	assert_memory_equal(v.parent_path, "../base", 7);
}

static void test_structure(void **state)
{
	static struct fx f;
	struct snap_view v;
	struct snap_sec_in t;

	(void)state;
	/* Sections out of (type, instance) order, or twice. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	t = f.s[5], f.s[5] = f.s[6], f.s[6] = t;
	fx_encode(&f);
	refused(decode(&f, &v), "section 6 (type 0x11 instance 0) out of order or repeated");
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.s[6].sec.instance = 0;
	fx_encode(&f);
	refused(decode(&f, &v), "out of order or repeated");
	/* A missing required section, a missing vCPU, a vCPU too many. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.s[3] = f.s[4], f.s[4] = f.s[5], f.s[5] = f.s[6], f.n--;
	fx_encode(&f);
	refused(decode(&f, &v), "missing section CPU");
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.n--;
	fx_encode(&f);
	refused(decode(&f, &v), "missing section VCPU_STATE for vCPU 1");
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_insert(&f, fx_sec(SNAP_SEC_VCPU_STATE, 2, f.vcpu[2], sizeof(f.vcpu[2])));
	fx_encode(&f);
	refused(decode(&f, &v), "VCPU_STATE for vCPU 2, expected vCPU 2 of 2");
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.s[6].sec.instance = 5;
	fx_encode(&f);
	refused(decode(&f, &v), "VCPU_STATE for vCPU 5, expected vCPU 1 of 2");
	/* A singleton with an instance. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.s[2].sec.instance = 1;
	fx_encode(&f);
	refused(decode(&f, &v), "section CONFIG with instance 1");
	/* Sections not where the plan puts them (the table's CRC made valid). */
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_encode(&f);
	f.s[3].sec.offset += 8;
	f.h.table_crc = snap_table_encode(f.file + SNAP_HEADER_LEN, f.s, f.n);
	snap_header_encode(f.file, &f.h);
	refused(decode(&f, &v), "section 3 (type 0x4) at");
	/* The last section running past the end of the file. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_encode(&f);
	f.s[6].sec.len += 8;
	f.h.table_crc = snap_table_encode(f.file + SNAP_HEADER_LEN, f.s, f.n);
	snap_header_encode(f.file, &f.h);
	refused(decode(&f, &v), "section 6 (type 0x11) at [");
	/* Non-zero padding between sections (CONFIG is 31 bytes: one byte of padding). */
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_encode(&f);
	f.file[f.s[2].sec.offset + f.s[2].sec.len] = 1;
	refused(decode(&f, &v), "padding before section 3 is not zero");
	/* The header's values. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.h.nvcpus = 0;
	fx_encode(&f);
	refused(decode(&f, &v), "bad header values");
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.h.flags = 0x2;
	fx_encode(&f);
	refused(decode(&f, &v), "unknown header flags 0x2");
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.h.generation = 1; /* a full snapshot with a generation */
	fx_encode(&f);
	refused(decode(&f, &v), "full snapshot with no parent id and generation 1");
	fx_init(&f, SNAP_INDEX_ZSTD);
	memset(f.h.id.b, 0, 16);
	fx_encode(&f);
	refused(decode(&f, &v), "bad snapshot id");
	/* The reader's own limits. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	fx_encode(&f);
	refused(snap_state_decode(f.file, f.len, &(struct snap_limits){.max_vcpus = 1}, &v, err,
				  sizeof(err)),
		"2 memory slots and 2 vCPUs, this vmm allows 32764 and 1");
	refused(snap_state_decode(f.file, f.len, &(struct snap_limits){.max_state_len = 100}, &v,
				  err, sizeof(err)),
		"this vmm reads at most 100");
}

static void test_payloads(void **state)
{
	static struct fx f;
	static uint8_t buf[1024];
	struct snap_view v;
	uint64_t w[8];
	const uint64_t *maps[2] = {fx_map0, fx_map1};
	uint64_t bad[8];

	(void)state;
	/* LAYOUT: memory, file offsets, overlap. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.h.memory += 4096;
	fx_encode(&f);
	refused(decode(&f, &v), "LAYOUT slots add up to 3149824 bytes in a memory file of 5246976, "
				"the header says 3153920");
	fx_init(&f, SNAP_INDEX_ZSTD);
	le_put64(f.layout + SNAP_SLOT_LEN + 16, 3u << 20);
	fx_encode(&f);
	refused(decode(&f, &v), "LAYOUT slot 1 at file offset 3145728, expected 4194304");
	fx_init(&f, SNAP_INDEX_ZSTD);
	le_put64(f.layout + SNAP_SLOT_LEN, 4096); /* slot 1 inside slot 0 */
	fx_encode(&f);
	refused(decode(&f, &v), "LAYOUT slot 1 [0x1000, +0x101000) is malformed");
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.s[0].sec.len = SNAP_SLOT_LEN;
	fx_encode(&f);
	refused(decode(&f, &v), "LAYOUT of 24 bytes for 2 slots");
	/* INDEX: entries against the slots. */
	fx_init(&f, SNAP_INDEX_RAW);
	le_put32(f.index + SNAP_INDEX_ENT_LEN + 12, 48);
	fx_encode(&f);
	refused(decode(&f, &v), "INDEX of slot 1: 1 present pages of 257, encoding 0, 48 bytes");
	fx_init(&f, SNAP_INDEX_RAW);
	le_put32(f.index + 8, 7);
	fx_encode(&f);
	refused(decode(&f, &v), "encoding 7");
	fx_init(&f, SNAP_INDEX_RAW);
	f.s[1].sec.len += 8;
	fx_encode(&f);
	refused(decode(&f, &v), "INDEX holds 112 bytes of bitmaps, its entries say 104");
	/* INDEX bitmaps: a count that disagrees, a page past the end, a short frame. */
	fx_init(&f, SNAP_INDEX_RAW);
	le_put64(f.index, 4);
	fx_encode(&f);
	assert_int_equal(decode(&f, &v), 0);
	refused(snap_index_bitmap(&v, 0, w, 8, err, sizeof(err)),
		"INDEX of slot 0 has 3 pages, its entry says 4");
	memcpy(bad, fx_map1, sizeof(fx_map1));
	bad[4] |= 2; /* page 257 of a 257-page slot */
	maps[1] = bad;
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.s[1].sec.len = (uint64_t)snap_index_encode(f.index, sizeof(f.index), maps, fx_npages, 2,
						     SNAP_INDEX_ZSTD);
	fx_encode(&f);
	assert_int_equal(decode(&f, &v), 0);
	refused(snap_index_bitmap(&v, 1, w, 8, err, sizeof(err)),
		"INDEX of slot 1 marks pages past its end");
	/* A zstd frame of slot 1's 40 bytes given as slot 0's (64 expected). */
	maps[1] = fx_map1;
	{
		const uint64_t n1[2] = {257, 257};
		long long l = snap_index_encode(buf, sizeof(buf), maps, n1, 2, SNAP_INDEX_ZSTD);
		uint32_t d0 = le_get32(buf + 12), d1 = le_get32(buf + 28);

		fx_init(&f, SNAP_INDEX_ZSTD);
		memcpy(f.index, buf, (size_t)l);
		/* Slot 0's entry now describes the 257-page frame: expands to 40, not 64 bytes. */
		le_put64(f.index, 3);
		assert_true(d0 && d1);
		f.s[1].sec.len = (uint64_t)l;
		fx_encode(&f);
		assert_int_equal(decode(&f, &v), 0);
		refused(snap_index_bitmap(&v, 0, w, 8, err, sizeof(err)), "INDEX of slot 0");
	}
	/* CPU words: order, register, count. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	le_put32(f.cpu + SNAP_CPU_HDR_LEN + SNAP_CPU_WORD_LEN + 8, 0);
	fx_encode(&f);
	refused(decode(&f, &v), "CPU word 1 out of order or repeated");
	fx_init(&f, SNAP_INDEX_ZSTD);
	le_put32(f.cpu + SNAP_CPU_HDR_LEN + 3 * SNAP_CPU_WORD_LEN + 8, 4);
	fx_encode(&f);
	refused(decode(&f, &v), "CPU word 3 names register 4");
	fx_init(&f, SNAP_INDEX_ZSTD);
	le_put32(f.cpu, 3);
	fx_encode(&f);
	refused(decode(&f, &v), "CPU of 72 bytes for 3 words");
	/* Text and blob bounds. */
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.s[2].payload = "[vm]\0x";
	f.s[2].sec.len = 6;
	fx_encode(&f);
	refused(decode(&f, &v), "section CONFIG has a NUL byte at 4");
	fx_init(&f, SNAP_INDEX_ZSTD);
	f.s[4].sec.len = 0;
	fx_encode(&f);
	refused(decode(&f, &v), "section VM_STATE of 0 bytes (1..1048576)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout_bytes),       cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_page_offsets),       cmocka_unit_test(test_magic_and_version),
	    cmocka_unit_test(test_every_byte_flipped), cmocka_unit_test(test_crc_parts),
	    cmocka_unit_test(test_truncation),	       cmocka_unit_test(test_unknown_sections),
	    cmocka_unit_test(test_structure),	       cmocka_unit_test(test_payloads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
