/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_fixture.h - a small valid snapshot state file, built with the
 * codec's own encoders, for test_snap_format.c and test_snap_restore.c.
 * Two memslots (512 pages at 0, 257 pages at 4 GiB), 2 vCPUs, a config,
 * four CPU feature words, blobs of recognisable bytes. Tests take the
 * section list, change it, and encode it again: the CRCs stay valid, so
 * what is refused is the structure.
 */
#ifndef TEST_SNAP_FIXTURE_H
#define TEST_SNAP_FIXTURE_H

#include <string.h>

#include "snap_codec.h"

#define FX_FILE_MAX 8192u

static const struct mig_slot_desc fx_slots[2] = {{0, 2u << 20}, {1ull << 32, 257 * 4096}};
static const uint64_t fx_npages[2] = {512, 257};
/* Present pages: 0, 2, 511 of slot 0; 256 (its last) of slot 1. */
static const uint64_t fx_map0[8] = {0x5, 0, 0, 0, 0, 0, 0, 1ull << 63};
static const uint64_t fx_map1[5] = {0, 0, 0, 0, 1};
static const char fx_config[] = "[vm]\nmemory = 3076K\nvcpus = 2\n";
static const struct snap_cpu_word fx_cpu[4] = {
    {1, 0, SNAP_CPU_ECX, 0x1c000001}, /* avx, xsave, sse3 ... */
    {1, 0, SNAP_CPU_EDX, 0x06000000}, /* sse, sse2 */
    {7, 0, SNAP_CPU_EBX, 0x00000128}, /* avx2, bmi1, bmi2 */
    {0xd, 1, SNAP_CPU_EAX, 0x0000000b},
};

struct fx {
	uint8_t layout[2 * SNAP_SLOT_LEN];
	uint8_t index[1024];
	uint8_t cpu[SNAP_CPU_HDR_LEN + 4 * SNAP_CPU_WORD_LEN];
	uint8_t vm[40];
	uint8_t vcpu[4][24];
	struct snap_header h;
	struct snap_sec_in s[16];
	uint32_t n;
	uint8_t file[FX_FILE_MAX];
	size_t len;
};

static inline struct snap_sec_in fx_sec(uint32_t type, uint32_t instance, const void *p,
					uint64_t len)
{
	return snap_sec_required(type, instance, p, len);
}

/* Adds a section where (type, instance) order puts it. */
static inline void fx_insert(struct fx *f, struct snap_sec_in x)
{
	uint32_t i = f->n;

	while (i &&
	       (f->s[i - 1].sec.type > x.sec.type || (f->s[i - 1].sec.type == x.sec.type &&
						      f->s[i - 1].sec.instance > x.sec.instance))) {
		f->s[i] = f->s[i - 1];
		i--;
	}
	f->s[i] = x;
	f->n++;
}

/* The default snapshot (full, id 0x11..., index encoded enc), not yet encoded. */
static inline void fx_init(struct fx *f, uint32_t enc)
{
	const uint64_t *maps[2] = {fx_map0, fx_map1};
	long long ilen;

	memset(f, 0, sizeof(*f));
	f->h = (struct snap_header){.version_major = SNAP_VERSION_MAJOR,
				    .version_minor = SNAP_VERSION_MINOR,
				    .header_len = SNAP_HEADER_LEN,
				    .page_size = MIG_PAGE_SIZE,
				    .nslots = 2,
				    .nvcpus = 2,
				    .memory = fx_slots[0].size + fx_slots[1].size,
				    .created_ns = 1700000000000000000ull};
	memset(f->h.id.b, 0x11, 16);
	f->h.memory_file_len = snap_layout_encode(f->layout, fx_slots, 2);
	ilen = snap_index_encode(f->index, sizeof(f->index), maps, fx_npages, 2, enc);
	snap_cpu_encode(f->cpu, fx_cpu, 4);
	for (size_t i = 0; i < sizeof(f->vm); i++)
		f->vm[i] = (uint8_t)(0xa0 + i);
	for (int c = 0; c < 4; c++)
		for (size_t i = 0; i < sizeof(f->vcpu[c]); i++)
			f->vcpu[c][i] = (uint8_t)(c * 16 + i);
	fx_insert(f, fx_sec(SNAP_SEC_LAYOUT, 0, f->layout, sizeof(f->layout)));
	fx_insert(f, fx_sec(SNAP_SEC_INDEX, 0, f->index, (uint64_t)ilen));
	fx_insert(f, fx_sec(SNAP_SEC_CONFIG, 0, fx_config, sizeof(fx_config) - 1));
	fx_insert(f, fx_sec(SNAP_SEC_CPU, 0, f->cpu, sizeof(f->cpu)));
	fx_insert(f, fx_sec(SNAP_SEC_VM_STATE, 0, f->vm, sizeof(f->vm)));
	fx_insert(f, fx_sec(SNAP_SEC_VCPU_STATE, 0, f->vcpu[0], sizeof(f->vcpu[0])));
	fx_insert(f, fx_sec(SNAP_SEC_VCPU_STATE, 1, f->vcpu[1], sizeof(f->vcpu[1])));
}

/* Makes f a diff layer on top of parent (which must be encoded). */
static inline void fx_diff(struct fx *f, const struct fx *parent, uint8_t id)
{
	f->h.flags = SNAP_F_DIFF;
	f->h.parent = parent->h.id;
	f->h.generation = parent->h.generation + 1;
	memset(f->h.id.b, id, 16);
}

static inline size_t fx_encode(struct fx *f)
{
	long long r = snap_state_encode(f->file, sizeof(f->file), &f->h, f->s, f->n);

	f->len = r > 0 ? (size_t)r : 0;
	return f->len;
}

#endif /* TEST_SNAP_FIXTURE_H */
