/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rec_table.c - the table of record types: which channel and direction
 * each may travel, and its payload length bounds; the one check every
 * reader runs on a header before it reads a payload.
 */
#include <stdio.h>

#include "proto_refuse.h"
#include "rec_table.h"

/* One row per record, kept as a table. */
/* clang-format off */
#define S2T(ch) {[MIG_DIR_S2T] = (ch)}
#define T2S(ch) {[MIG_DIR_T2S] = (ch)}
#define BOTH(s2t, t2s) {[MIG_DIR_S2T] = (s2t), [MIG_DIR_T2S] = (t2s)}
#define FIXED(n) (n), (n)

/* In type order. Fixed-size records have min_len == max_len. */
static const struct mig_rec_info table[] = {
	{MIG_REC_VM_DESC, "VM_DESC", S2T(MIG_CH_MAIN), MIG_VM_DESC_LEN, MIG_VM_DESC_MAX},
	{MIG_REC_SWITCHOVER, "SWITCHOVER", S2T(MIG_CH_MAIN), FIXED(MIG_SWITCHOVER_LEN)},
	{MIG_REC_VCPU_STATE, "VCPU_STATE", S2T(MIG_CH_MAIN), MIG_VCPU_STATE_HDR_LEN,
	 MIG_VCPU_STATE_HDR_LEN + MIG_STATE_MAX},
	{MIG_REC_VM_STATE, "VM_STATE", S2T(MIG_CH_MAIN), 0, MIG_STATE_MAX},
	{MIG_REC_END, "END", S2T(MIG_CH_MAIN), MIG_END_LEN, (uint32_t)MIG_END_REC_MAX},
	{MIG_REC_COMMITTED, "COMMITTED", T2S(MIG_CH_MAIN | MIG_CH_RECOVER), FIXED(MIG_COMMITTED_LEN)},
	{MIG_REC_ERROR, "ERROR", T2S(MIG_CH_MAIN | MIG_CH_RESUME | MIG_CH_RECOVER), 0, MIG_ERROR_MAX},
	{MIG_REC_SYNC_ACK, "SYNC_ACK", T2S(MIG_CH_MAIN), FIXED(MIG_SYNC_LEN)},
	{MIG_REC_POSTCOPY, "POSTCOPY", S2T(MIG_CH_MAIN), FIXED(MIG_POSTCOPY_LEN)},
	/* Stale pages at a switchover; on a resume, the target's missing pages. */
	{MIG_REC_BITMAP, "BITMAP", BOTH(MIG_CH_MAIN, MIG_CH_RESUME), MIG_BITMAP_HDR_LEN,
	 (uint32_t)MIG_BITMAP_REC_MAX},
	{MIG_REC_BITMAP_END, "BITMAP_END", BOTH(MIG_CH_MAIN, MIG_CH_RESUME),
	 FIXED(MIG_BITMAP_END_LEN)},
	{MIG_REC_POSTCOPY_DONE, "POSTCOPY_DONE", T2S(MIG_CH_MAIN | MIG_CH_RESUME),
	 FIXED(MIG_POSTCOPY_DONE_LEN)},
	{MIG_REC_POSTCOPY_ARMED, "POSTCOPY_ARMED", T2S(MIG_CH_MAIN), FIXED(0)},
	/* The background push on data connections, a requested page on urgent. */
	{MIG_REC_PAGES, "PAGES", S2T(MIG_CH_DATA | MIG_CH_URGENT), MIG_PAGES_HDR_LEN,
	 (uint32_t)MIG_PAGES_REC_MAX},
	{MIG_REC_CHANNEL_END, "CHANNEL_END", S2T(MIG_CH_DATA), FIXED(MIG_CHANNEL_END_LEN)},
	{MIG_REC_SYNC, "SYNC", S2T(MIG_CH_DATA), FIXED(MIG_SYNC_LEN)},
	{MIG_REC_PAGE_REQ, "PAGE_REQ", T2S(MIG_CH_URGENT), FIXED(MIG_PAGE_REQ_LEN)},
	/* The switchover commit: the source decides, the target runs only on COMMIT. */
	{MIG_REC_PREPARED, "PREPARED", T2S(MIG_CH_MAIN), FIXED(MIG_PREPARED_LEN)},
	/* Each decision with its own proof (proof.h): a signature, an ABORT's message after it. */
	{MIG_REC_COMMIT, "COMMIT", S2T(MIG_CH_MAIN | MIG_CH_RECOVER), FIXED(MIG_SIG_LEN)},
	{MIG_REC_ABORT, "ABORT", S2T(MIG_CH_MAIN | MIG_CH_RECOVER), MIG_SIG_LEN,
	 MIG_SIG_LEN + MIG_ERROR_MAX},
	/* After COMMITTED (precopy) or POSTCOPY_DONE, which may come on a resumed main. */
	{MIG_REC_RELEASE, "RELEASE", S2T(MIG_CH_MAIN | MIG_CH_RESUME | MIG_CH_RECOVER),
	 FIXED(MIG_SIG_LEN)},
	{MIG_REC_RECOVER_STATE, "RECOVER_STATE", T2S(MIG_CH_RECOVER), FIXED(MIG_RECOVER_STATE_LEN)},
	/* The target's answer to VM_DESC: can it do postcopy, and if not why. */
	{MIG_REC_CAPS, "CAPS", T2S(MIG_CH_MAIN), MIG_CAPS_LEN, MIG_CAPS_MAX},
	/* Postcopy: the target is alive, and how far it is. */
	{MIG_REC_HEARTBEAT, "HEARTBEAT", T2S(MIG_CH_MAIN | MIG_CH_RESUME), FIXED(MIG_HEARTBEAT_LEN)},
	/* The local handover: guest RAM's descriptors, after VM_DESC (UNIX sockets only). */
	{MIG_REC_RAM_FD, "RAM_FD", S2T(MIG_CH_MAIN), FIXED(MIG_RAM_FD_LEN)},
	/* The first record of a resumed main: its attempt's proof. */
	{MIG_REC_RESUME, "RESUME", S2T(MIG_CH_RESUME), FIXED(MIG_SIG_LEN)},
	/* The target's operator decided: proven with the target's own key. */
	{MIG_REC_DECIDED, "DECIDED", T2S(MIG_CH_MAIN), FIXED(MIG_DECIDED_LEN)},
};
/* clang-format on */

const struct mig_rec_info *mig_rec_table(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}

const struct mig_rec_info *mig_rec_lookup(uint32_t type)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].type == type)
			return &table[i];
	return NULL;
}

const char *mig_rec_name(uint32_t type)
{
	const struct mig_rec_info *r = mig_rec_lookup(type);

	return r ? r->name : "unknown";
}

const char *mig_role_name(uint32_t role)
{
	switch (role) {
	case MIG_ROLE_MAIN:
		return "main";
	case MIG_ROLE_DATA:
		return "data";
	case MIG_ROLE_URGENT:
		return "urgent";
	case MIG_ROLE_MAIN_RESUME:
		return "main-resume";
	case MIG_ROLE_RECOVER:
		return "recover";
	default:
		return "unknown";
	}
}

/* A limit for a message: "1 MiB", "64 KiB" or "2101252 bytes". */
static void fmt_limit(char *buf, size_t len, uint32_t n)
{
	if (n && n % (1u << 20) == 0)
		snprintf(buf, len, "%u MiB", n >> 20);
	else if (n && n % 1024 == 0)
		snprintf(buf, len, "%u KiB", n >> 10);
	else
		snprintf(buf, len, "%u bytes", n);
}

int mig_rec_check(const struct mig_rec_hdr *h, uint32_t role, enum mig_dir dir, uint32_t ctx_max,
		  char *err, size_t errlen)
{
	const struct mig_rec_info *r = mig_rec_lookup(h->type);
	uint32_t max;
	char lim[32];

	if (!r)
		return proto_refuse(err, errlen,
				    "unknown record type %u (%u bytes) on the %s connection",
				    h->type, h->len, mig_role_name(role));
	if (role > MIG_ROLE_MAX || (unsigned)dir > MIG_DIR_T2S || !(r->chans[dir] & MIG_CH(role)))
		return proto_refuse(
		    err, errlen,
		    "unexpected %s record (type %u, %u bytes) on the %s connection, %s", r->name,
		    h->type, h->len, mig_role_name(role),
		    dir == MIG_DIR_S2T ? "source to target" : "target to source");
	if (r->min_len == r->max_len && h->len != r->min_len)
		return proto_refuse(err, errlen, "%s record with bad length %u (expected %u)",
				    r->name, h->len, r->min_len);
	if (h->len < r->min_len)
		return proto_refuse(err, errlen,
				    "%s record of %u bytes is shorter than its minimum of %u",
				    r->name, h->len, r->min_len);
	max = ctx_max && ctx_max < r->max_len ? ctx_max : r->max_len;
	if (h->len > max) {
		fmt_limit(lim, sizeof(lim), max);
		return proto_refuse(err, errlen, "%s: record larger than %s (%u bytes)", r->name,
				    lim, h->len);
	}
	return 0;
}
