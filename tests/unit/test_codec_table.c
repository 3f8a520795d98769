/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_codec_table.c - the record table: every type on every channel and
 * direction, its length bounds and messages, and docs/migration-protocol.md
 * as its twin.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"

static char err[256];

/* ret is -EPROTO and the message contains want. */
static void refused(int ret, const char *want)
{
	if (ret != -EPROTO || !strstr(err, want))
		fail_msg("want -EPROTO with \"%s\", got %d \"%s\"", want, ret, err);
	err[0] = '\0';
}

static int check(uint32_t type, uint32_t len, uint32_t role, enum mig_dir dir, uint32_t ctx_max)
{
	struct mig_rec_hdr h = {.type = type, .len = len};

	return mig_rec_check(&h, role, dir, ctx_max, err, sizeof(err));
}

static void test_table(void **state)
{
	size_t n;
	const struct mig_rec_info *t = mig_rec_table(&n);
	static const uint32_t unknown[] = {0, 14, 15, 30, 0xffffffffu};

	(void)state;
	assert_int_equal(n, 27);
	for (size_t i = 0; i < n; i++) {
		assert_ptr_equal(mig_rec_lookup(t[i].type), &t[i]);
		assert_string_equal(mig_rec_name(t[i].type), t[i].name);
		assert_true(t[i].min_len <= t[i].max_len);
		assert_true(t[i].chans[MIG_DIR_S2T] | t[i].chans[MIG_DIR_T2S]);
		if (i)
			assert_true(t[i - 1].type < t[i].type);
	}
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		assert_null(mig_rec_lookup(unknown[i]));
		assert_string_equal(mig_rec_name(unknown[i]), "unknown");
	}
	assert_int_equal(mig_rec_lookup(MIG_REC_VM_DESC)->max_len, MIG_VM_DESC_MAX);
	assert_int_equal(mig_rec_lookup(MIG_REC_VM_STATE)->max_len, MIG_STATE_MAX);
	assert_int_equal(mig_rec_lookup(MIG_REC_ERROR)->max_len, MIG_ERROR_MAX);
	assert_int_equal(mig_rec_lookup(MIG_REC_PAGES)->max_len,
			 24 + 2 * 512 * 4 + ZSTD_COMPRESSBOUND(512 * 4096));
	assert_int_equal(mig_rec_lookup(MIG_REC_BITMAP)->max_len,
			 16 + ZSTD_COMPRESSBOUND((size_t)1 << 29));
	assert_string_equal(mig_role_name(MIG_ROLE_MAIN_RESUME), "main-resume");
	assert_string_equal(mig_role_name(MIG_ROLE_RECOVER), "recover");
	assert_string_equal(mig_role_name(9), "unknown");
}

/* Every type on every channel and direction: allowed exactly where the table says. */
static void test_check_channels(void **state)
{
	size_t n;
	const struct mig_rec_info *t = mig_rec_table(&n);

	(void)state;
	for (size_t i = 0; i < n; i++)
		for (uint32_t role = 0; role <= MIG_ROLE_MAX; role++)
			for (int dir = 0; dir < 2; dir++) {
				int ok = !!(t[i].chans[dir] & MIG_CH(role));
				int ret = check(t[i].type, t[i].min_len, role, dir, 0);

				if (ok) {
					assert_int_equal(ret, 0);
					assert_int_equal(
					    check(t[i].type, t[i].max_len, role, dir, 0), 0);
					refused(check(t[i].type, t[i].max_len + 1, role, dir, 0),
						t[i].name);
					if (t[i].min_len)
						refused(check(t[i].type, t[i].min_len - 1, role,
							      dir, 0),
							t[i].name);
				} else {
					refused(ret, "unexpected");
				}
			}
	refused(check(MIG_REC_SYNC, 8, 7, MIG_DIR_S2T, 0), "on the unknown connection");
}

static void test_check_messages(void **state)
{
	(void)state;
	refused(check(MIG_REC_VM_STATE, 104857600, MIG_ROLE_MAIN, MIG_DIR_S2T, 0),
		"VM_STATE: record larger than 1 MiB (104857600 bytes)");
	/* migrate_malformed.sh huge-record */
	refused(check(MIG_REC_VM_DESC, 0xffffff00u, MIG_ROLE_MAIN, MIG_DIR_S2T, 0),
		"VM_DESC: record larger than 1 MiB");
	refused(check(MIG_REC_PAGES, 100, MIG_ROLE_MAIN, MIG_DIR_S2T, 0),
		"unexpected PAGES record (type 16, 100 bytes) on the main connection");
	refused(check(MIG_REC_VM_DESC, 100, MIG_ROLE_MAIN, MIG_DIR_T2S, 0),
		"VM_DESC record (type 1, 100 bytes) on the main connection, target to source");
	refused(check(MIG_REC_PAGE_REQ, 8, MIG_ROLE_URGENT, MIG_DIR_S2T, 0), "unexpected PAGE_REQ");
	refused(check(MIG_REC_CHANNEL_END, 16, MIG_ROLE_URGENT, MIG_DIR_S2T, 0), "CHANNEL_END");
	refused(check(MIG_REC_SWITCHOVER, 8, MIG_ROLE_MAIN_RESUME, MIG_DIR_S2T, 0), "SWITCHOVER");
	refused(check(99, 4, MIG_ROLE_DATA, MIG_DIR_S2T, 0),
		"unknown record type 99 (4 bytes) on the data connection");
	refused(check(MIG_REC_SYNC, 9, MIG_ROLE_DATA, MIG_DIR_S2T, 0),
		"SYNC record with bad length 9 (expected 8)");
	refused(check(MIG_REC_POSTCOPY_ARMED, 1, MIG_ROLE_MAIN, MIG_DIR_T2S, 0), "POSTCOPY_ARMED");
	refused(check(MIG_REC_VCPU_STATE, 4, MIG_ROLE_MAIN, MIG_DIR_S2T, 0),
		"VCPU_STATE record of 4 bytes is shorter than its minimum of 8");
	refused(check(MIG_REC_ERROR, 513, MIG_ROLE_MAIN, MIG_DIR_T2S, 0),
		"ERROR: record larger than 512 bytes");
	/* A tighter context limit applies; a looser one does not. */
	assert_int_equal(check(MIG_REC_BITMAP, 4096, MIG_ROLE_MAIN, MIG_DIR_S2T, 4096), 0);
	refused(check(MIG_REC_BITMAP, 5000, MIG_ROLE_MAIN, MIG_DIR_S2T, 4096),
		"BITMAP: record larger than 4 KiB (5000 bytes)");
	refused(check(MIG_REC_VM_STATE, MIG_STATE_MAX + 1, MIG_ROLE_MAIN, MIG_DIR_S2T, UINT32_MAX),
		"VM_STATE: record larger than 1 MiB");
	/* The table's messages survive a NULL err. */
	assert_int_equal(mig_rec_check(&(struct mig_rec_hdr){.type = 99}, 0, 0, 0, NULL, 0),
			 -EPROTO);
}

/* "main, main-resume" to a MIG_CH_* set; "-" is none. */
static uint8_t parse_chans(char *text)
{
	uint8_t set = 0;

	for (char *tok = strtok(text, ", "); tok; tok = strtok(NULL, ", "))
		for (uint32_t role = 0; role <= MIG_ROLE_MAX; role++)
			if (!strcmp(tok, mig_role_name(role)))
				set |= (uint8_t)MIG_CH(role);
	return set;
}

/* docs/migration-protocol.md's record table is the code's, row by row. */
static void test_doc_table(void **state)
{
	FILE *f = fopen(TEST_DATA_DIR "/../../docs/migration-protocol.md", "r");
	char line[512];
	size_t n, rows = 0;
	bool in_table = false;

	(void)state;
	assert_non_null(f);
	mig_rec_table(&n);
	while (fgets(line, sizeof(line), f)) {
		char name[32], s2t[64], t2s[64];
		unsigned type, min, max;
		const struct mig_rec_info *r;

		if (!strncmp(line, "### ", 4))
			in_table = !strcmp(line, "### Record table\n");
		if (!in_table || sscanf(line, "| %u | %31[A-Z_] | %63[^|]| %63[^|]| %u | %u |",
					&type, name, s2t, t2s, &min, &max) != 6)
			continue;
		r = mig_rec_lookup(type);
		if (!r)
			fail_msg("the docs list type %u, the code does not", type);
		assert_string_equal(name, r->name);
		assert_int_equal(parse_chans(s2t), r->chans[MIG_DIR_S2T]);
		assert_int_equal(parse_chans(t2s), r->chans[MIG_DIR_T2S]);
		assert_int_equal(min, r->min_len);
		assert_int_equal(max, r->max_len);
		rows++;
	}
	fclose(f);
	assert_int_equal(rows, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_check_channels),
	    cmocka_unit_test(test_check_messages),
	    cmocka_unit_test(test_doc_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
