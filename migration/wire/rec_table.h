/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rec_table.h - the record table (rec_table.c): the record size limits that
 * follow from protocol.h, which channels and direction each record may
 * take, and the one header check every reader runs before it reads a
 * payload. codec.h includes it; the table needs nothing else of the codec.
 */
#ifndef VMM_MIGRATION_REC_TABLE_H
#define VMM_MIGRATION_REC_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "protocol.h"

/* ---- Limits derived from protocol.h -------------------------------------- */

/* A PAGES record's data: one zstd frame of at most MIG_PAGES_MAX raw pages. */
#define MIG_PAGES_DATA_MAX ZSTD_COMPRESSBOUND((size_t)(MIG_PAGES_MAX * MIG_PAGE_SIZE))
#define MIG_PAGES_REC_MAX                                                                          \
	(MIG_PAGES_HDR_LEN + 2 * MIG_PAGES_MAX * sizeof(uint32_t) + MIG_PAGES_DATA_MAX)
/* The largest BITMAP: one zstd frame of the largest slot's bitmap. */
#define MIG_BITMAP_REC_MAX (MIG_BITMAP_HDR_LEN + ZSTD_COMPRESSBOUND((size_t)MIG_BITMAP_RAW_MAX))
#define MIG_END_REC_MAX	   (MIG_END_LEN + MIG_CONNECTIONS_MAX * sizeof(uint64_t))

_Static_assert(MIG_BITMAP_REC_MAX <= UINT32_MAX, "a BITMAP's length fits its header");

/* ---- The record table ---------------------------------------------------- */

/* Which way a record travels. */
enum mig_dir {
	MIG_DIR_S2T = 0, /* source to target */
	MIG_DIR_T2S = 1, /* target to source */
};

/* A set of channels: bit (1u << role) for each MIG_ROLE_* a record may use. */
#define MIG_CH(role)   (1u << (role))
#define MIG_CH_MAIN    MIG_CH(MIG_ROLE_MAIN)
#define MIG_CH_DATA    MIG_CH(MIG_ROLE_DATA)
#define MIG_CH_URGENT  MIG_CH(MIG_ROLE_URGENT)
#define MIG_CH_RESUME  MIG_CH(MIG_ROLE_MAIN_RESUME)
#define MIG_CH_RECOVER MIG_CH(MIG_ROLE_RECOVER)

struct mig_rec_info {
	uint32_t type;
	const char *name; /* "VM_DESC" */
	uint8_t chans[2]; /* per enum mig_dir: MIG_CH_* the record may travel on */
	uint32_t min_len; /* payload bytes */
	uint32_t max_len; /* == min_len: a fixed-size record */
};

/* The table entry of a type; NULL for a type the protocol does not have. */
const struct mig_rec_info *mig_rec_lookup(uint32_t type);
/* Every entry, in type order, for documentation and tests. */
const struct mig_rec_info *mig_rec_table(size_t *n);
/* The record's name, "unknown" for a type not in the table. */
const char *mig_rec_name(uint32_t type);
/* "main", "data", "urgent", "main-resume", "recover", "unknown". */
const char *mig_role_name(uint32_t role);

/*
 * Checks a received header against the table for a record arriving on a
 * channel of `role`, travelling `dir`. ctx_max, if not 0, is the caller's
 * tighter limit; the smaller of it and the type's own applies. It applies
 * to every type (the header is not read yet when the caller picks it), so
 * pass 0 (each type's own limit) and check a slot-dependent record (BITMAP)
 * against its slot once its header names it (mig_bitmap_check_slot()), or
 * the largest record you accept on that channel. 0, or -EPROTO with a
 * message naming the record and the
 * rule broken: unknown type, wrong channel or direction, fixed-size record
 * of another size, shorter than its minimum, or longer than its limit
 * ("VM_DESC: record larger than 1 MiB (4294967040 bytes)").
 */
int mig_rec_check(const struct mig_rec_hdr *h, uint32_t role, enum mig_dir dir, uint32_t ctx_max,
		  char *err, size_t errlen);

#endif /* VMM_MIGRATION_REC_TABLE_H */
