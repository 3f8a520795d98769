/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pages_ctx.c - mig_pages_check_ctx() (migration/wire/codec.h): the
 * checks a receiver applies to a PAGES record against its VM and its
 * connection, shared by target/ram_recv.c and tests/fuzz/fuzz_wire_target.c.
 * Records are encoded and decoded with the codec first, as on the wire;
 * then good ones pass and each refusal names its rule.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "codec.h"

/* The fuzz target's layout: 3 slots, 4 data connections, 64-page shards. */
static const uint64_t npages[] = {512, 257, 64};
#define NSLOTS 3u
#define NCHANS 4u
#define SHARD  64u
#define NONE   UINT32_MAX /* ends an index list */

/* One record: header fields, zero then data indexes, the receiver, the outcome. */
struct row {
	const char *name;
	uint32_t slot;
	uint32_t zero[8], data[8]; /* each ends at NONE */
	uint32_t index;		   /* the data connection receiving it */
	bool urgent;
	const char *want; /* NULL: accepted; else the refusal's whole message */
};

static const struct row rows[] = {
    /* ---- good records ---- */
    {"own shard, zero and data pages", 0, {0, NONE}, {1, 63, NONE}, 0, false, NULL},
    {"own shard, the next round of shards", 0, {NONE}, {256, 319, NONE}, 0, false, NULL},
    {"data pages only", 0, {NONE}, {64, 127, NONE}, 1, false, NULL},
    {"zero pages only", 0, {128, 191, NONE}, {NONE}, 2, false, NULL},
    {"slot 1 starts at connection 1", 1, {NONE}, {0, NONE}, 1, false, NULL},
    {"the last page of an odd-sized slot", 1, {NONE}, {256, NONE}, 1, false, NULL},
    {"the last slot, first and last page", 2, {0, NONE}, {63, NONE}, 2, false, NULL},
    {"urgent: any shard of a slot", 0, {0, 64, NONE}, {128, 192, 511, NONE}, 0, true, NULL},
    {"urgent: index is not looked at", 2, {NONE}, {0, NONE}, 99, true, NULL},
    {"repeated index (the codec does not refuse it)", 0, {5, NONE}, {5, NONE}, 0, false, NULL},

    /* ---- the slot ---- */
    {"slot == nslots", 3, {NONE}, {0, NONE}, 3, false, "PAGES for slot 3 of 3"},
    {"slot past nslots", 1000, {0, NONE}, {NONE}, 0, false, "PAGES for slot 1000 of 3"},
    {"largest slot number",
     UINT32_MAX,
     {NONE},
     {0, NONE},
     0,
     true,
     "PAGES for slot 4294967295 of 3"},

    /* ---- the index range (before the shard rule) ---- */
    {"data page == slot's pages",
     1,
     {NONE},
     {257, NONE},
     1,
     false,
     "PAGES: page 257 is outside slot 1 (257 pages)"},
    {"zero page past the slot",
     2,
     {64, NONE},
     {1, NONE},
     2,
     false,
     "PAGES: page 64 is outside slot 2 (64 pages)"},
    {"an index near 2^32 (NONE ends the lists)",
     0,
     {NONE},
     {UINT32_MAX - 1, NONE},
     0,
     false,
     "PAGES: page 4294967294 is outside slot 0 (512 pages)"},
    {"urgent: the range still applies",
     0,
     {NONE},
     {512, NONE},
     0,
     true,
     "PAGES: page 512 is outside slot 0 (512 pages)"},
    {"range is checked before the shard",
     0,
     {NONE},
     {64, 600, NONE},
     0,
     false,
     "PAGES: page 600 is outside slot 0 (512 pages)"},

    /* ---- the shard rule ---- */
    {"data page of another connection",
     0,
     {0, NONE},
     {1, 64, NONE},
     0,
     false,
     "PAGES: page 64 of slot 0 belongs to another connection"},
    {"zero page of another connection",
     0,
     {0, NONE},
     {64, NONE},
     1,
     false,
     "PAGES: page 0 of slot 0 belongs to another connection"},
    {"the first offender is named",
     0,
     {NONE},
     {64, 128, NONE},
     0,
     false,
     "PAGES: page 64 of slot 0 belongs to another connection"},
    {"slot offsets the shard",
     1,
     {NONE},
     {0, NONE},
     0,
     false,
     "PAGES: page 0 of slot 1 belongs to another connection"},
    {"index past the connections",
     0,
     {NONE},
     {0, NONE},
     4,
     false,
     "PAGES: page 0 of slot 0 belongs to another connection"},
};

static uint32_t count(const uint32_t *l)
{
	uint32_t n = 0;

	while (n < 8 && l[n] != NONE)
		n++;
	return n;
}

/* Encodes r as a raw PAGES record into buf and decodes it, as a receiver would. */
static void encode_decode(const struct row *r, uint32_t *buf, struct mig_pages_view *v)
{
	struct mig_pages_hdr ph = {.slot = r->slot,
				   .nzero = count(r->zero),
				   .ndata = count(r->data),
				   .encoding = MIG_ENC_RAW};
	uint8_t *b = (uint8_t *)buf;
	char err[256];

	ph.data_len = ph.ndata * MIG_PAGE_SIZE;
	mig_pages_hdr_encode(b, &ph);
	memcpy(b + MIG_PAGES_HDR_LEN, r->zero, ph.nzero * sizeof(uint32_t));
	memcpy(b + MIG_PAGES_HDR_LEN + ph.nzero * sizeof(uint32_t), r->data,
	       ph.ndata * sizeof(uint32_t));
	if (mig_pages_decode(buf, (uint32_t)mig_pages_len(&ph), v, err, sizeof(err)))
		fail_msg("%s: the codec refused the record: %s", r->name, err);
}

static struct mig_pages_ctx ctx_for(const struct row *r)
{
	return (struct mig_pages_ctx){.nslots = NSLOTS,
				      .slot_npages = r->slot < NSLOTS ? npages[r->slot] : 0,
				      .shard_pages = SHARD,
				      .connections = NCHANS,
				      .index = r->index,
				      .urgent = r->urgent};
}

static uint32_t buf[(MIG_PAGES_HDR_LEN + 16 * 4 + 16 * MIG_PAGE_SIZE) / 4];

static void test_table(void **state)
{
	unsigned bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct mig_pages_ctx ctx = ctx_for(r);
		struct mig_pages_view v;
		char err[256] = "";
		int ret;

		encode_decode(r, buf, &v);
		ret = mig_pages_check_ctx(&v.h, v.zero_idx, &ctx, err, sizeof(err));
		if (r->want ? ret != -EPROTO || strcmp(err, r->want) : ret != 0) {
			fprintf(stderr, "row %zu \"%s\": got %d \"%s\", want %s\n", i, r->name, ret,
				err, r->want ? r->want : "0");
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* idx NULL: the slot only, so any index or shard passes; a bad slot does not. */
static void test_slot_only(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct mig_pages_ctx ctx = ctx_for(r);
		struct mig_pages_view v;
		char err[256] = "";
		int ret;

		encode_decode(r, buf, &v);
		ctx.slot_npages = 0; /* not known before the slot is */
		ret = mig_pages_check_ctx(&v.h, NULL, &ctx, err, sizeof(err));
		if (r->slot < NSLOTS) {
			assert_int_equal(ret, 0);
		} else {
			assert_int_equal(ret, -EPROTO);
			assert_string_equal(err, r->want);
		}
	}
}

/* Every page of every slot belongs to exactly one data connection: protocol.h's rule. */
static void test_one_owner(void **state)
{
	(void)state;
	for (uint32_t s = 0; s < NSLOTS; s++)
		for (uint32_t p = 0; p < npages[s]; p++) {
			struct mig_pages_hdr ph = {.slot = s, .ndata = 1};
			unsigned owners = 0;

			for (uint32_t c = 0; c < NCHANS; c++) {
				struct mig_pages_ctx ctx = {NSLOTS, npages[s], SHARD,
							    NCHANS, c,	       false};

				owners += !mig_pages_check_ctx(&ph, &p, &ctx, NULL, 0);
			}
			assert_int_equal(owners, 1);
		}
}

/* One connection, the largest record, shards as large as the protocol allows. */
static void test_edges(void **state)
{
	static uint32_t idx[MIG_PAGES_MAX];
	struct mig_pages_hdr ph = {.slot = 0, .nzero = 12, .ndata = MIG_PAGES_MAX - 12};
	struct mig_pages_ctx one = {1, MIG_PAGES_MAX, MIG_SHARD_PAGES_MIN, 1, 0, false};
	struct mig_pages_ctx big = {1, MIG_SLOT_PAGES_MAX, MIG_SHARD_PAGES_MAX, 16, 0, false};
	char err[8];

	(void)state;
	for (uint32_t i = 0; i < MIG_PAGES_MAX; i++)
		idx[i] = i;
	assert_int_equal(mig_pages_check_ctx(&ph, idx, &one, NULL, 0), 0);
	/* A slot of 2^32 pages: every uint32 index is inside; 65536-page shards. */
	idx[0] = 65535;
	idx[1] = UINT32_MAX - 65535; /* shard 65535: connection 65535 % 16 = 15 */
	ph.nzero = 0;
	ph.ndata = 1;
	assert_int_equal(mig_pages_check_ctx(&ph, idx, &big, NULL, 0), 0);
	big.index = 15;
	assert_int_equal(mig_pages_check_ctx(&ph, idx + 1, &big, NULL, 0), 0);
	assert_int_equal(mig_pages_check_ctx(&ph, idx, &big, NULL, 0), -EPROTO);
	/* No slots at all: every record is refused; err may be NULL or short. */
	one.nslots = 0;
	assert_int_equal(mig_pages_check_ctx(&ph, NULL, &one, NULL, 0), -EPROTO);
	assert_int_equal(mig_pages_check_ctx(&ph, idx, &one, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "PAGES f");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_slot_only),
	    cmocka_unit_test(test_one_owner),
	    cmocka_unit_test(test_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
