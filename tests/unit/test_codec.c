/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_codec.c - the wire codec without sockets or KVM: little-endian
 * layout, every record's round trip, and the malformed streams
 * migrate_malformed.sh sends a KVM-backed target (the record table's own
 * tests are in test_codec_table.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "codec.h"
#include "proof.h"

static char err[256];

/* ret is -EPROTO and the message contains want. */
static void refused(int ret, const char *want)
{
	if (ret != -EPROTO || !strstr(err, want))
		fail_msg("want -EPROTO with \"%s\", got %d \"%s\"", want, ret, err);
	err[0] = '\0';
}

static void test_le(void **state)
{
	uint8_t b[8];
	struct mig_rec_hdr h;

	(void)state;
	le_put16(b, 0x1234);
	assert_int_equal(b[0], 0x34);
	assert_int_equal(le_get16(b), 0x1234);
	le_put32(b, 0x89abcdefu);
	assert_memory_equal(b, "\xef\xcd\xab\x89", 4);
	assert_int_equal(le_get32(b), 0x89abcdefu);
	le_put64(b, 0x0102030405060708ull);
	assert_memory_equal(b, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
	assert_true(le_get64(b) == 0x0102030405060708ull);
	mig_rec_hdr_encode(b, MIG_REC_PAGES, 0x01020304);
	assert_memory_equal(b, "\x10\0\0\0\x04\x03\x02\x01", 8);
	mig_rec_hdr_decode(b, &h);
	assert_int_equal(h.type, MIG_REC_PAGES);
	assert_int_equal(h.len, 0x01020304);
}

static void test_hello(void **state)
{
	uint8_t b[MIG_HELLO_LEN];
	struct mig_hello h;

	(void)state;
	mig_hello_encode(b, 0x1122334455667788ull, MIG_ROLE_DATA, 3);
	assert_memory_equal(b, "VMMMIG\r\n\x06\0\0\0\x01\0\0\0", 16); /* 6.1 */
	assert_int_equal(mig_hello_decode(b, &h, err, sizeof(err)), 0);
	assert_true(h.session_id == 0x1122334455667788ull);
	assert_int_equal(h.role, MIG_ROLE_DATA);
	assert_int_equal(h.index, 3);
	assert_int_equal(h.version_major, MIG_VERSION_MAJOR);
	assert_int_equal(h.version_minor, 1);
	/* A 6.0 peer (release 0.3.0) and a later 6.x are both spoken to. */
	le_put32(b + 12, 0);
	assert_int_equal(mig_hello_decode(b, &h, err, sizeof(err)), 0);
	assert_int_equal(h.version_minor, 0);
	le_put32(b + 12, 9);
	assert_int_equal(mig_hello_decode(b, &h, err, sizeof(err)), 0);
	/* migrate_malformed.sh bad-magic: an HTTP request. */
	memcpy(b, "GET / HTTP/1.1\r\nHost: x\r\n\r\n\0\0\0\0\0", MIG_HELLO_LEN);
	refused(mig_hello_decode(b, &h, err, sizeof(err)), "not a vmm migration stream");
	mig_hello_encode(b, 1, MIG_ROLE_MAIN, 0);
	le_put32(b + 8, 2);
	refused(mig_hello_decode(b, &h, err, sizeof(err)),
		"migration protocol version 2.1, this vmm speaks 6.x");
	mig_hello_encode(b, 1, MIG_ROLE_MAX + 1, 0);
	refused(mig_hello_decode(b, &h, err, sizeof(err)), "hello: unknown channel role 5");
}

/*
 * A fixed record: encode, compare with the packed struct (the host layout
 * on a little-endian host, which docs/migration-protocol.md describes),
 * decode, and refuse one byte more or less.
 */
#define ROUND_TRIP(T, LEN, ENC, DEC, ...)                                                          \
	do {                                                                                       \
		T in = __VA_ARGS__, out;                                                           \
		uint8_t b[LEN + 1];                                                                \
		ENC(b, &in);                                                                       \
		assert_memory_equal(b, &in, LEN);                                                  \
		memset(&out, 0xee, sizeof(out));                                                   \
		assert_int_equal(DEC(b, LEN, &out, err, sizeof(err)), 0);                          \
		assert_memory_equal(&in, &out, LEN);                                               \
		refused(DEC(b, LEN - 1, &out, err, sizeof(err)), "bad length");                    \
		refused(DEC(b, LEN + 1, &out, err, sizeof(err)), "bad length");                    \
	} while (0)

static void test_fixed_records(void **state)
{
	(void)state;
	ROUND_TRIP(struct mig_switchover, MIG_SWITCHOVER_LEN, mig_switchover_encode,
		   mig_switchover_decode, {.pass = 7});
	ROUND_TRIP(struct mig_sync, MIG_SYNC_LEN, mig_sync_encode, mig_sync_decode,
		   {.seq = 0x123456789ull});
	ROUND_TRIP(struct mig_committed, MIG_COMMITTED_LEN, mig_committed_encode,
		   mig_committed_decode,
		   {.restore_us = 5, .resume_mono_ns = 1ull << 40, .boot_id = "0123456789abcde"});
	ROUND_TRIP(
	    struct mig_prepared, MIG_PREPARED_LEN, mig_prepared_encode, mig_prepared_decode,
	    {.restore_us = 1ull << 35,
	     .keys = {"run key: 32 bytes of a public k", "discard key, 32 bytes as well.."}});
	ROUND_TRIP(struct mig_decided, MIG_DECIDED_LEN, mig_decided_encode, mig_decided_decode,
		   {.what = MIG_DECIDED_DISCARDED, .proof = "a 64-byte signature"});
	{
		uint8_t db[MIG_DECIDED_LEN] = {3};
		struct mig_decided dv;

		refused(mig_decided_decode(db, sizeof(db), &dv, err, sizeof(err)),
			"DECIDED: what 3 is neither 1 (runs) nor 2 (discarded)");
		db[0] = 0;
		refused(mig_decided_decode(db, sizeof(db), &dv, err, sizeof(err)),
			"DECIDED: what 0");
	}
	ROUND_TRIP(struct mig_heartbeat, MIG_HEARTBEAT_LEN, mig_heartbeat_encode,
		   mig_heartbeat_decode,
		   {.missing = 1ull << 33, .flags = MIG_HEARTBEAT_DONE | 0x80});
	ROUND_TRIP(struct mig_recover_state, MIG_RECOVER_STATE_LEN, mig_recover_state_encode,
		   mig_recover_state_decode, {.state = MIG_RECOVER_RUNNING});
	{
		uint8_t rb[MIG_RECOVER_STATE_LEN] = {3};
		struct mig_recover_state rs;

		refused(mig_recover_state_decode(rb, sizeof(rb), &rs, err, sizeof(err)),
			"RECOVER_STATE: unknown state 3");
	}
	ROUND_TRIP(struct mig_postcopy, MIG_POSTCOPY_LEN, mig_postcopy_encode, mig_postcopy_decode,
		   {.pass = 3, .flags = MIG_POSTCOPY_NO_FINAL_BITMAP});
	ROUND_TRIP(struct mig_bitmap_end, MIG_BITMAP_END_LEN, mig_bitmap_end_encode,
		   mig_bitmap_end_decode,
		   {.nbitmaps = 2, .flags = MIG_BITMAP_END_PRELIMINARY, .pages = 1ull << 33});
	ROUND_TRIP(struct mig_postcopy_done, MIG_POSTCOPY_DONE_LEN, mig_postcopy_done_encode,
		   mig_postcopy_done_decode, {1, 2, 3, 4, 5, 6, 7});
	ROUND_TRIP(struct mig_channel_end, MIG_CHANNEL_END_LEN, mig_channel_end_encode,
		   mig_channel_end_decode, {.records = 9, .pages = 4000});
	ROUND_TRIP(struct mig_page_req, MIG_PAGE_REQ_LEN, mig_page_req_encode, mig_page_req_decode,
		   {.slot = 2, .page = 65535});
}

/* CAPS: the target's answer to VM_DESC; the reason bounded and printable. */
static void test_caps(void **state)
{
	static const char why[] = "userfaultfd: the syscall: Operation not permitted; "
				  "/dev/userfaultfd: Permission denied";
	uint8_t b[MIG_CAPS_MAX + 8];
	char longer[MIG_CAPS_REASON_MAX + 40];
	struct mig_caps_view v;
	uint32_t n;

	(void)state;
	/* Round trip, can do postcopy: the header alone. */
	assert_int_equal(mig_caps_encode(b, MIG_CAPS_POSTCOPY, NULL), 0);
	assert_memory_equal(b, "\x01\0\0\0\0\0\0\0", 8);
	assert_int_equal(mig_caps_decode(b, MIG_CAPS_LEN, &v, err, sizeof(err)), 0);
	assert_int_equal(v.flags, MIG_CAPS_POSTCOPY);
	assert_string_equal(v.reason, "");
	/* Round trip, cannot: the reason follows the header. */
	n = mig_caps_encode(b, 0, why);
	assert_int_equal(n, strlen(why));
	assert_int_equal(le_get32(b + 4), n);
	memcpy(b + MIG_CAPS_LEN, why, n);
	assert_int_equal(mig_caps_decode(b, MIG_CAPS_LEN + n, &v, err, sizeof(err)), 0);
	assert_int_equal(v.flags, 0);
	assert_string_equal(v.reason, why);
	/* Unknown capability bits (a later minor version) are kept, not refused. */
	le_put32(b, 0x80000000u);
	assert_int_equal(mig_caps_decode(b, MIG_CAPS_LEN + n, &v, err, sizeof(err)), 0);
	assert_int_equal(v.flags, 0x80000000u);
	le_put32(b, 0);
	/* Truncated: shorter than the header, or than its reason. */
	refused(mig_caps_decode(b, MIG_CAPS_LEN - 1, &v, err, sizeof(err)),
		"CAPS record with bad length 7");
	refused(mig_caps_decode(b, MIG_CAPS_LEN + n - 1, &v, err, sizeof(err)), "CAPS: reason of");
	/* A reason when postcopy works, none when it does not. */
	mig_caps_encode(b, MIG_CAPS_POSTCOPY, NULL);
	le_put32(b + 4, 3);
	refused(mig_caps_decode(b, MIG_CAPS_LEN + 3, &v, err, sizeof(err)),
		"postcopy is possible but a reason is given");
	mig_caps_encode(b, 0, NULL);
	refused(mig_caps_decode(b, MIG_CAPS_LEN, &v, err, sizeof(err)), "no reason given");
	/* A newline would make the source's one-line error two. */
	mig_caps_encode(b, 0, "a\nb");
	memcpy(b + MIG_CAPS_LEN, "a\nb", 3);
	refused(mig_caps_decode(b, MIG_CAPS_LEN + 3, &v, err, sizeof(err)),
		"reason byte 1 is 0x0a");
	/* Over-long: the encoder cuts at the limit, the decoder and the table refuse more. */
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_int_equal(mig_caps_encode(b, 0, longer), MIG_CAPS_REASON_MAX);
	memset(b + MIG_CAPS_LEN, 'x', MIG_CAPS_REASON_MAX + 1);
	assert_int_equal(
	    mig_caps_decode(b, MIG_CAPS_LEN + MIG_CAPS_REASON_MAX, &v, err, sizeof(err)), 0);
	assert_int_equal(strlen(v.reason), MIG_CAPS_REASON_MAX);
	le_put32(b + 4, MIG_CAPS_REASON_MAX + 1);
	refused(mig_caps_decode(b, MIG_CAPS_LEN + MIG_CAPS_REASON_MAX + 1, &v, err, sizeof(err)),
		"CAPS: reason of 257 bytes, at most 256");
	refused(mig_caps_decode(b, MIG_CAPS_MAX + 1, &v, err, sizeof(err)),
		"CAPS record with bad length 793");
	{
		struct mig_rec_hdr h = {.type = MIG_REC_CAPS, .len = MIG_CAPS_MAX + 1};

		refused(mig_rec_check(&h, MIG_ROLE_MAIN, MIG_DIR_T2S, 0, err, sizeof(err)),
			"CAPS: record larger than 792 bytes");
		h.len = MIG_CAPS_LEN;
		assert_int_equal(mig_rec_check(&h, MIG_ROLE_MAIN, MIG_DIR_T2S, 0, err, sizeof(err)),
				 0);
		/* Only the target sends it, only on main. */
		refused(mig_rec_check(&h, MIG_ROLE_MAIN, MIG_DIR_S2T, 0, err, sizeof(err)),
			"unexpected CAPS record");
		refused(mig_rec_check(&h, MIG_ROLE_MAIN_RESUME, MIG_DIR_T2S, 0, err, sizeof(err)),
			"unexpected CAPS record");
	}
}

/* A CAPS of 6.1: flags, reason, then the formats block of fm (bit 1 set). */
static uint32_t caps_with_formats(uint8_t *b, uint32_t flags, const char *why,
				  const struct mig_caps_formats *fm)
{
	uint32_t n = mig_caps_encode(b, flags | MIG_CAPS_FORMATS, why);

	if (why)
		memcpy(b + MIG_CAPS_LEN, why, n);
	return MIG_CAPS_LEN + n + mig_caps_formats_encode(b + MIG_CAPS_LEN + n, fm);
}

/*
 * CAPS's formats block (6.1): what the target reads, after the reason;
 * every count and version bounded, and a 6.0 CAPS (no bit 1) unchanged.
 */
static void test_caps_formats(void **state)
{
	static const char why[] = "userfaultfd: the syscall: Operation not permitted";
	struct mig_caps_formats fm = {.protocol_minor = 1,
				      .framing_oldest = 2,
				      .framing_newest = 3,
				      .ncomp = 3,
				      .comp = {{1, 1, 1}, {5, 1, 2}, {9, 1, 1}}};
	uint8_t b[MIG_CAPS_MAX + 16];
	struct mig_caps_view v;
	uint32_t len, base;

	(void)state;
	/* Round trip with postcopy (no reason) and without (a reason first). */
	len = caps_with_formats(b, MIG_CAPS_POSTCOPY, NULL, &fm);
	assert_int_equal(len, MIG_CAPS_LEN + MIG_CAPS_FORMATS_LEN + 3 * MIG_CAPS_COMP_LEN);
	assert_memory_equal(b, "\x03\0\0\0\0\0\0\0\x01\0\0\0\x02\0\x03\0\x03\0\0\0\0\0\0\0", 24);
	assert_memory_equal(b + 32, "\x05\0\0\0\x01\0\x02\0", 8);
	assert_int_equal(mig_caps_decode(b, len, &v, err, sizeof(err)), 0);
	assert_true(v.has_formats);
	assert_int_equal(v.flags, MIG_CAPS_POSTCOPY | MIG_CAPS_FORMATS);
	assert_int_equal(v.formats.protocol_minor, 1);
	assert_int_equal(v.formats.framing_oldest, 2);
	assert_int_equal(v.formats.framing_newest, 3);
	assert_int_equal(v.formats.ncomp, 3);
	assert_int_equal(v.formats.comp[1].id, 5);
	assert_int_equal(v.formats.comp[1].oldest, 1);
	assert_int_equal(v.formats.comp[1].newest, 2);
	len = caps_with_formats(b, 0, why, &fm);
	assert_int_equal(mig_caps_decode(b, len, &v, err, sizeof(err)), 0);
	assert_string_equal(v.reason, why);
	assert_int_equal(v.formats.comp[2].id, 9); /* unknown here: kept, the source skips it */
	/* Without bit 1 the bytes after the reason are refused as before (6.0). */
	le_put32(b, 0);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)), "CAPS: reason of");
	/* The largest block: every component, the longest reason. */
	{
		char longest[MIG_CAPS_REASON_MAX + 1];
		struct mig_caps_formats all = {.protocol_minor = 7,
					       .framing_oldest = 1,
					       .framing_newest = 1,
					       .ncomp = MIG_CAPS_COMPS_MAX};

		memset(longest, 'r', MIG_CAPS_REASON_MAX);
		longest[MIG_CAPS_REASON_MAX] = '\0';
		for (uint32_t i = 0; i < MIG_CAPS_COMPS_MAX; i++)
			all.comp[i] = (struct mig_caps_comp){i + 1, 1, 1};
		len = caps_with_formats(b, 0, longest, &all);
		assert_int_equal(len, MIG_CAPS_MAX);
		assert_int_equal(mig_caps_decode(b, len, &v, err, sizeof(err)), 0);
		assert_int_equal(v.formats.ncomp, MIG_CAPS_COMPS_MAX);
	}
	/* Each bound of the block. */
	base = MIG_CAPS_LEN; /* postcopy, no reason: the block starts at 8 */
	len = caps_with_formats(b, MIG_CAPS_POSTCOPY, NULL, &fm);
	refused(mig_caps_decode(b, base + 15, &v, err, sizeof(err)),
		"formats block of 15 bytes, at least 16");
	refused(mig_caps_decode(b, len - 1, &v, err, sizeof(err)),
		"formats block of 39 bytes for 3 components");
	le_put32(b + base, 0);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)),
		"formats block from protocol minor 0");
	le_put32(b + base, 1);
	le_put16(b + base + 4, 0);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)), "state framings 0..3");
	le_put16(b + base + 4, 4);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)), "state framings 4..3");
	le_put16(b + base + 4, 2);
	le_put32(b + base + 8, 0);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)), "CAPS: 0 components (1..64)");
	le_put32(b + base + 8, MIG_CAPS_COMPS_MAX + 1);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)), "CAPS: 65 components (1..64)");
	le_put32(b + base + 8, 3);
	le_put32(b + base + 16 + 8, 0);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)), "component 1: id 0, versions 1..2");
	le_put32(b + base + 16 + 8, 1);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)), "CAPS: component 1 twice");
	le_put32(b + base + 16 + 8, 5);
	le_put16(b + base + 16 + 8 + 4, 0);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)), "component 1: id 5, versions 0..2");
	le_put16(b + base + 16 + 8 + 4, 3);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)), "component 1: id 5, versions 3..2");
	le_put16(b + base + 16 + 8 + 4, 1);
	assert_int_equal(mig_caps_decode(b, len, &v, err, sizeof(err)), 0);
	/* A reason that claims the block's bytes as its own, or more than there is. */
	le_put32(b + 4, len - MIG_CAPS_LEN + 1);
	refused(mig_caps_decode(b, len, &v, err, sizeof(err)), "CAPS: reason of");
}

static void test_flags(void **state)
{
	uint8_t b[16];
	struct mig_postcopy pc;
	struct mig_bitmap_end be = {.nbitmaps = 1, .pages = 2};

	(void)state;
	mig_postcopy_encode(b, &(struct mig_postcopy){.flags = 2});
	refused(mig_postcopy_decode(b, sizeof(pc), &pc, err, sizeof(err)),
		"POSTCOPY with unknown flags 0x2");
	mig_bitmap_end_encode(b, &(struct mig_bitmap_end){.flags = 5});
	refused(mig_bitmap_end_decode(b, MIG_BITMAP_END_LEN, &be, err, sizeof(err)),
		"BITMAP_END with unknown flags 0x5");
	/* migrate_malformed.sh bitmap-end-mismatch */
	be = (struct mig_bitmap_end){.nbitmaps = 1, .pages = 2};
	refused(mig_bitmap_end_check(&be, 1, 1, err, sizeof(err)),
		"BITMAP_END announces 1 bitmaps / 2 pages, got 1 / 1");
	assert_int_equal(mig_bitmap_end_check(&be, 1, 2, err, sizeof(err)), 0);
}

static void test_vcpu_state_and_error(void **state)
{
	uint8_t b[MIG_ERROR_MAX + 8];
	struct mig_vcpu_state_hdr vh;
	uint32_t blob;
	char msg[16];

	(void)state;
	mig_vcpu_state_hdr_encode(b, 5);
	assert_int_equal(mig_vcpu_state_hdr_decode(b, 108, &vh, &blob, err, sizeof(err)), 0);
	assert_int_equal(vh.index, 5);
	assert_int_equal(blob, 100);
	refused(mig_vcpu_state_hdr_decode(b, 7, &vh, &blob, err, sizeof(err)), "VCPU_STATE");
	refused(mig_vcpu_state_hdr_decode(b, 8 + MIG_STATE_MAX + 1, &vh, &blob, err, sizeof(err)),
		"exceeds its limit of 1048576");

	assert_int_equal(mig_error_len("no room"), 7);
	memset(b, 'x', sizeof(b));
	b[sizeof(b) - 1] = '\0';
	assert_int_equal(mig_error_len((char *)b), MIG_ERROR_MAX);
	assert_int_equal(mig_error_decode("no room", 7, msg, sizeof(msg), err, sizeof(err)), 0);
	assert_string_equal(msg, "no room");
	assert_int_equal(mig_error_decode("a long message", 14, msg, 5, err, sizeof(err)), 0);
	assert_string_equal(msg, "a lo");
	assert_int_equal(mig_error_decode("ab\0cd", 5, msg, sizeof(msg), err, sizeof(err)), 0);
	assert_string_equal(msg, "ab");
	assert_int_equal(mig_error_decode("", 0, msg, sizeof(msg), err, sizeof(err)), 0);
	assert_string_equal(msg, "");
	refused(mig_error_decode(b, MIG_ERROR_MAX + 1, msg, sizeof(msg), err, sizeof(err)),
		"ERROR");
}

static void test_end(void **state)
{
	uint8_t b[MIG_END_LEN + 3 * 8];
	struct mig_end e = {.memory_digest = 0xdeadbeefull, .connections = 3};
	struct mig_end_view v;

	(void)state;
	mig_end_encode(b, &e);
	assert_memory_equal(b, &e, MIG_END_LEN);
	for (uint32_t i = 0; i < 3; i++)
		le_put64(b + MIG_END_LEN + 8 * i, 100 + i);
	assert_int_equal(mig_end_decode(b, sizeof(b), &v, err, sizeof(err)), 0);
	assert_true(v.end.memory_digest == 0xdeadbeefull);
	assert_int_equal(v.end.connections, 3);
	assert_true(mig_end_count(&v, 2) == 102);
	refused(mig_end_decode(b, sizeof(b) - 8, &v, err, sizeof(err)),
		"END record length 32 does not match 3 connections");
	refused(mig_end_decode(b, 12, &v, err, sizeof(err)), "END record with bad length 12");
	/* A local handover: no data connection, no counts. */
	le_put32(b + 8, 0);
	assert_int_equal(mig_end_decode(b, MIG_END_LEN, &v, err, sizeof(err)), 0);
	assert_int_equal(v.end.connections, 0);
	refused(mig_end_decode(b, MIG_END_LEN + 8, &v, err, sizeof(err)),
		"END record length 24 does not match 0 connections");
	le_put32(b + 8, MIG_CONNECTIONS_MAX + 1);
	refused(mig_end_decode(b, sizeof(b), &v, err, sizeof(err)), "END for 65 connections");
}

/* A VM_DESC payload: header, slots, config "[vm]\n". Returns its length. */
static uint32_t make_desc(uint8_t *b, const struct mig_vm_desc *d, const struct mig_slot_desc *s)
{
	mig_vm_desc_encode(b, d);
	for (uint32_t i = 0; i < d->nslots; i++)
		mig_slot_desc_encode(b + MIG_VM_DESC_LEN + 16 * i, &s[i]);
	memcpy(b + MIG_VM_DESC_LEN + 16 * d->nslots, "[vm]\nmemory = 3M\n", d->config_len);
	return (uint32_t)mig_vm_desc_len(d);
}

static const struct mig_vm_desc good_desc = {
    .memory = 3 << 20,
    .page_size = 4096,
    .nslots = 2,
    .nvcpus = 2,
    .connections = 4,
    .config_len = 17,
    .shard_pages = 512,
    .keys = {"COMMIT's public key, 32 bytes..", "RELEASE's public key, 32 bytes.",
	     "ABORT's public key, 32 bytes...", "RESUME's public key, 32 bytes.."}};
static const struct mig_slot_desc good_slots[2] = {{0, 1 << 20}, {2 << 20, 2 << 20}};

static void test_vm_desc(void **state)
{
	uint8_t b[256];
	struct mig_vm_desc_view v;
	uint32_t len = make_desc(b, &good_desc, good_slots);
	struct mig_slot_desc s;

	(void)state;
	assert_int_equal(len, 160 + 32 + 17);
	assert_memory_equal(b, &good_desc, MIG_VM_DESC_LEN);
	/* The four decision keys at 32, 64, 96, 128 (docs/migration-protocol.md). */
	assert_memory_equal(b + 32 + 32 * MIG_DECIDE_ABORT, "ABORT's public key", 18);
	assert_int_equal(mig_vm_desc_decode(b, len, NULL, &v, err, sizeof(err)), 0);
	assert_memory_equal(&v.d, &good_desc, sizeof(good_desc));
	s = mig_vm_desc_slot(&v, 1);
	assert_true(s.gpa == 2 << 20 && s.size == 2 << 20);
	assert_memory_equal(v.config, "[vm]\nmemory = 3M\n", 17);
	/* migrate_malformed.sh truncated-desc and desc-bad-lengths */
	refused(mig_vm_desc_decode(b, 5, NULL, &v, err, sizeof(err)),
		"VM_DESC: record of 5 bytes is shorter than its header");
	{
		struct mig_vm_desc d = {.memory = 1 << 28,
					.page_size = 4096,
					.nslots = 1000,
					.nvcpus = 1,
					.connections = 1,
					.config_len = 10,
					.shard_pages = 512};

		mig_vm_desc_encode(b, &d);
		refused(mig_vm_desc_decode(b, 180, NULL, &v, err, sizeof(err)),
			"VM_DESC: length 180 does not match 1000 slots and 10 bytes of config");
	}
}

static void test_vm_desc_bad_values(void **state)
{
	/* clang-format off */
	static const struct {
		size_t off;
		uint32_t val;
	} bad[] = {
		{8, 8192}, {12, 0},  {12, 17},  {16, 0},   {16, 65},
		{20, 17},  {28, 32}, {28, 100}, {28, 1u << 17}, {24, 0}, {24, 1u << 20},
	};
	/* clang-format on */
	const struct mig_desc_limits lim = {
	    .max_slots = 16, .max_vcpus = 64, .max_connections = 16};
	uint8_t b[256];
	struct mig_vm_desc_view v;
	uint32_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		len = make_desc(b, &good_desc, good_slots);
		le_put32(b + bad[i].off, bad[i].val);
		refused(mig_vm_desc_decode(b, len, &lim, &v, err, sizeof(err)),
			"VM_DESC: bad values");
	}
	/* No data connection: a local handover (RAM_FD follows). */
	len = make_desc(b, &good_desc, good_slots);
	le_put32(b + 20, 0);
	assert_int_equal(mig_vm_desc_decode(b, len, &lim, &v, err, sizeof(err)), 0);
	assert_int_equal(v.d.connections, 0);
	/* Without limits the protocol maxima apply. */
	len = make_desc(b, &good_desc, good_slots);
	le_put32(b + 16, 65);
	assert_int_equal(mig_vm_desc_decode(b, len, NULL, &v, err, sizeof(err)), 0);
	le_put32(b + 16, MIG_VCPUS_MAX + 1);
	refused(mig_vm_desc_decode(b, len, NULL, &v, err, sizeof(err)), "1025 vCPUs");
}

static void test_vm_desc_bad_slots(void **state)
{
	/* clang-format off */
	static const struct mig_slot_desc bad[][2] = {
		{{0, 1 << 20}, {2 << 20, 0}},             /* empty */
		{{0, 1 << 20}, {2 << 20, (2 << 20) + 1}}, /* size not page aligned */
		{{0, 1 << 20}, {(2 << 20) + 1, 2 << 20}}, /* gpa not page aligned */
		{{0, 2 << 20}, {1 << 20, 1 << 20}},       /* overlapping */
		{{2 << 20, 1 << 20}, {0, 2 << 20}},       /* not ascending */
		{{0, 1 << 20}, {~0ull - 4095, 2 << 20}},  /* wraps */
	};
	/* clang-format on */
	uint8_t b[256];
	struct mig_vm_desc_view v;
	struct mig_vm_desc d = good_desc;
	struct mig_slot_desc big[2] = {{0, 1 << 20}, {1ull << 50, MIG_SLOT_SIZE_MAX + 4096}};
	uint32_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		len = make_desc(b, &good_desc, bad[i]);
		refused(mig_vm_desc_decode(b, len, NULL, &v, err, sizeof(err)), ") is malformed");
	}
	d.memory = (1 << 20) + MIG_SLOT_SIZE_MAX + 4096;
	len = make_desc(b, &d, big);
	refused(mig_vm_desc_decode(b, len, NULL, &v, err, sizeof(err)), "VM_DESC: slot 1 [");
	d.memory = 4 << 20;
	len = make_desc(b, &d, good_slots);
	refused(mig_vm_desc_decode(b, len, NULL, &v, err, sizeof(err)),
		"VM_DESC: slots add up to 3145728 bytes, memory is 4194304");
}

/* A PAGES payload for ph, indexes 0, 1, 2...; 4-byte aligned. */
static uint32_t make_pages(uint32_t *buf, const struct mig_pages_hdr *ph)
{
	uint8_t *b = (uint8_t *)buf;

	mig_pages_hdr_encode(b, ph);
	for (uint32_t i = 0; i < ph->nzero + ph->ndata && i < 2 * MIG_PAGES_MAX; i++)
		le_put32(b + MIG_PAGES_HDR_LEN + 4 * i, i * 10);
	return (uint32_t)mig_pages_len(ph);
}

static uint32_t pages_buf[(MIG_PAGES_HDR_LEN + 4 * 512 + 512 * 4096) / 4 + 1];

static void test_pages(void **state)
{
	struct mig_pages_hdr ph = {.slot = 3, .nzero = 2, .ndata = 1, .data_len = 4096};
	struct mig_pages_view v;
	uint32_t len = make_pages(pages_buf, &ph);

	(void)state;
	assert_int_equal(len, 24 + 12 + 4096);
	assert_memory_equal(pages_buf, &ph, MIG_PAGES_HDR_LEN);
	assert_int_equal(mig_pages_decode(pages_buf, len, &v, err, sizeof(err)), 0);
	assert_memory_equal(&v.h, &ph, sizeof(ph));
	assert_int_equal(v.zero_idx[1], 10);
	assert_int_equal(v.data_idx[0], 20);
	assert_ptr_equal(v.data, (uint8_t *)pages_buf + 36);
	assert_int_equal(mig_pages_check_range(v.zero_idx, 3, 3, 21, err, sizeof(err)), 0);
	refused(mig_pages_check_range(v.zero_idx, 3, 3, 20, err, sizeof(err)),
		"PAGES: page 20 is outside slot 3 (20 pages)");
	assert_int_equal(mig_pages_decode((uint8_t *)pages_buf + 1, len, &v, err, sizeof(err)),
			 -EINVAL);
	/* zstd: any data length up to the bound, at least one data page. */
	ph = (struct mig_pages_hdr){
	    .nzero = 511, .ndata = 1, .encoding = MIG_ENC_ZSTD, .data_len = 100};
	len = make_pages(pages_buf, &ph);
	assert_int_equal(mig_pages_hdr_decode(pages_buf, len, &ph, err, sizeof(err)), 0);
	ph = (struct mig_pages_hdr){.nzero = 512};
	len = make_pages(pages_buf, &ph);
	assert_int_equal(mig_pages_decode(pages_buf, len, &v, err, sizeof(err)), 0);
}

static void test_pages_bad(void **state)
{
	/* clang-format off */
	static const struct {
		struct mig_pages_hdr ph;
		int extra; /* added to the record length */
		const char *want;
	} bad[] = {
		/* migrate_malformed.sh pages-too-many, pages-bad-length */
		{{.ndata = 100000, .data_len = 4096}, 0, "PAGES with 0 zero + 100000 data pages"},
		{{.ndata = 1, .data_len = 4096}, 7, "PAGES record length 4131 does not match"},
		{{.nzero = 0, .ndata = 0}, 0, "PAGES with 0 zero + 0 data pages (1..512 allowed)"},
		{{.nzero = 300, .ndata = 300, .data_len = 300 * 4096}, 0, "PAGES with 300 zero"},
		{{.nzero = 513}, 0, "PAGES with 513 zero"},
		{{.ndata = 1, .encoding = 2, .data_len = 4096}, 0, "PAGES encoding 2"},
		{{.ndata = 2, .data_len = 4096}, 0, "PAGES encoding 0 with 4096 data bytes for 2"},
		{{.nzero = 1, .encoding = MIG_ENC_ZSTD, .data_len = 10}, 0, "PAGES encoding 1"},
		{{.ndata = 1, .encoding = MIG_ENC_ZSTD, .data_len = MIG_PAGES_DATA_MAX + 1}, 0,
		 "PAGES encoding 1"},
		{{.ndata = 1, .data_len = 4096}, -1, "does not match its contents"},
	};
	/* clang-format on */
	struct mig_pages_view v;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t len = make_pages(pages_buf, &bad[i].ph) + (uint32_t)bad[i].extra;

		refused(mig_pages_decode(pages_buf, len, &v, err, sizeof(err)), bad[i].want);
	}
	refused(mig_pages_hdr_decode(pages_buf, 20, &v.h, err, sizeof(err)),
		"PAGES record of 20 bytes is shorter than its header");
	/* migrate_malformed.sh page-outside-slot: a 256 MiB slot has pages 0..65535. */
	refused(mig_pages_check_range(&(uint32_t){65536}, 1, 0, 65536, err, sizeof(err)),
		"PAGES: page 65536 is outside slot 0");
}

static void test_bitmap(void **state)
{
	uint8_t b[MIG_BITMAP_HDR_LEN];
	struct mig_bitmap_hdr bh = {.slot = 1, .raw_len = 8192, .data_len = 30}, out;
	uint64_t words[2] = {~0ull, 0x7};

	(void)state;
	mig_bitmap_hdr_encode(b, &bh);
	assert_memory_equal(b, &bh, sizeof(b));
	assert_int_equal(mig_bitmap_hdr_decode(b, 16 + 30, &out, err, sizeof(err)), 0);
	assert_memory_equal(&out, &bh, sizeof(bh));
	refused(mig_bitmap_hdr_decode(b, 16 + 31, &out, err, sizeof(err)), "BITMAP for slot 1");
	refused(mig_bitmap_hdr_decode(b, 10, &out, err, sizeof(err)), "BITMAP record of 10 bytes");
	for (int i = 0; i < 4; i++) {
		static const uint32_t raw[4] = {0, 12, MIG_BITMAP_RAW_MAX + 8, 8};
		uint32_t data = i == 3 ? ZSTD_COMPRESSBOUND(8) + 1 : 30;

		mig_bitmap_hdr_encode(
		    b, &(struct mig_bitmap_hdr){.raw_len = raw[i], .data_len = data});
		refused(mig_bitmap_hdr_decode(b, 16 + data, &out, err, sizeof(err)),
			"inconsistent");
	}
	/* The slot's own size: 65536 pages are 8192 bytes of bitmap. */
	assert_int_equal(mig_bitmap_raw_len(65536), 8192);
	assert_int_equal(mig_bitmap_raw_len(65), 16);
	assert_int_equal(mig_bitmap_check_slot(&bh, 2, 65536, err, sizeof(err)), 0);
	refused(mig_bitmap_check_slot(&bh, 2, 65536 * 2, err, sizeof(err)),
		"BITMAP for slot 1: raw 8192, 30 compressed bytes do not fit the slot");
	/* migrate_malformed.sh bitmap-bad-slot */
	bh.slot = 7;
	refused(mig_bitmap_check_slot(&bh, 1, 0, err, sizeof(err)), "BITMAP for slot 7");
	assert_int_equal(mig_bitmap_check_tail(words, 67, 0, err, sizeof(err)), 0);
	refused(mig_bitmap_check_tail(words, 66, 4, err, sizeof(err)),
		"BITMAP for slot 4 marks pages past its end");
	assert_int_equal(mig_bitmap_check_tail(words, 64, 0, err, sizeof(err)), 0);
	assert_int_equal(mig_bitmap_rec_max(65536), 16 + ZSTD_COMPRESSBOUND(8192));
	assert_int_equal(mig_bitmap_rec_max(1ull << 40), MIG_BITMAP_REC_MAX);
}

static void test_ram_fd(void **state)
{
	struct mig_ram_fd r = {.size = 1ull << 30, .nfds = 1}, o;
	uint8_t b[MIG_RAM_FD_LEN];

	(void)state;
	mig_ram_fd_encode(b, &r);
	assert_memory_equal(b, "\0\0\0\x40\0\0\0\0\x01\0\0\0\0\0\0\0", MIG_RAM_FD_LEN);
	assert_int_equal(mig_ram_fd_decode(b, sizeof(b), &o, err, sizeof(err)), 0);
	assert_true(o.size == 1ull << 30);
	assert_int_equal(o.nfds, 1);
	refused(mig_ram_fd_decode(b, 8, &o, err, sizeof(err)), "RAM_FD record with bad length 8");
	le_put32(b + 8, 2);
	refused(mig_ram_fd_decode(b, sizeof(b), &o, err, sizeof(err)), "RAM_FD: bad values");
	le_put32(b + 8, 0);
	refused(mig_ram_fd_decode(b, sizeof(b), &o, err, sizeof(err)), "RAM_FD: bad values");
	le_put32(b + 8, 1);
	le_put64(b, 4095);
	refused(mig_ram_fd_decode(b, sizeof(b), &o, err, sizeof(err)), "RAM_FD: bad values");
	le_put64(b, 0);
	refused(mig_ram_fd_decode(b, sizeof(b), &o, err, sizeof(err)), "RAM_FD: bad values");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_le),
	    cmocka_unit_test(test_hello),
	    cmocka_unit_test(test_fixed_records),
	    cmocka_unit_test(test_caps),
	    cmocka_unit_test(test_caps_formats),
	    cmocka_unit_test(test_flags),
	    cmocka_unit_test(test_vcpu_state_and_error),
	    cmocka_unit_test(test_end),
	    cmocka_unit_test(test_ram_fd),
	    cmocka_unit_test(test_vm_desc),
	    cmocka_unit_test(test_vm_desc_bad_values),
	    cmocka_unit_test(test_vm_desc_bad_slots),
	    cmocka_unit_test(test_pages),
	    cmocka_unit_test(test_pages_bad),
	    cmocka_unit_test(test_bitmap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
