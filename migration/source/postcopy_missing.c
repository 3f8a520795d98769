/* SPDX-License-Identifier: Apache-2.0 */
/*
 * postcopy_missing.c - a resumed postcopy source learns what the target
 * still lacks: the BITMAP records and BITMAP_END the target sends on the
 * resumed main connection, each held to its slot's bound, read into the
 * slots' pending bitmaps, whose pages are unclaimed so that steps 4-5 of
 * postcopy_serve.c send them again. Called by postcopy_serve.c's
 * reconnect() on the migration thread, with no sender running.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "codec.h"
#include "phases.h"
#include "vm.h"

/*
 * One BITMAP record of the target's missing pages, whose header h was
 * read, into its slot's pending bitmap; the pages are unclaimed.
 */
static int read_missing_slot(struct migration *m, ZSTD_DCtx *d, const struct mig_rec_hdr *h,
			     char *err, size_t errlen)
{
	uint8_t bhb[MIG_BITMAP_HDR_LEN];
	struct mig_bitmap_hdr bh;
	struct harvest_slot *hs;
	uint64_t np = 0;
	size_t raw;
	int ret = chan_read(&m->main, bhb, sizeof(bhb));

	if (ret) {
		snprintf(err, errlen, "%s", chan_strerror(ret));
		return ret;
	}
	ret = mig_bitmap_hdr_decode(bhb, h->len, &bh, err, errlen);
	if (!ret && bh.slot < m->harvest.nslots) {
		np = vm_mem(m->vm)->slots[bh.slot].npages;
		/* The record's own limit, for its slot: one zstd frame of its bitmap. */
		if (h->len > mig_bitmap_rec_max(np)) {
			snprintf(err, errlen,
				 "BITMAP for slot %u: record larger than %u bytes, the limit for "
				 "its %llu pages (%u bytes)",
				 bh.slot, mig_bitmap_rec_max(np), (unsigned long long)np, h->len);
			return -EPROTO;
		}
	}
	if (!ret)
		ret = mig_bitmap_check_slot(&bh, m->harvest.nslots, np, err, errlen);
	if (ret)
		return ret;
	/*
	 * zbuf holds ZSTD_compressBound() of the slot's bitmap (harvest.c): the
	 * record limit just checked, less the BITMAP header, is exactly that.
	 */
	hs = &m->harvest.slots[bh.slot];
	ret = chan_read(&m->main, hs->zbuf, bh.data_len);
	if (ret) {
		snprintf(err, errlen, "%s", chan_strerror(ret));
		return ret;
	}
	raw = ZSTD_decompressDCtx(d, hs->pending, bh.raw_len, hs->zbuf, bh.data_len);
	if (ZSTD_isError(raw) || raw != bh.raw_len) {
		snprintf(err, errlen, "BITMAP for slot %u does not expand to %u bytes", bh.slot,
			 bh.raw_len);
		return -EPROTO;
	}
	/* A bit past the slot's last page would make us read past guest RAM. */
	ret = mig_bitmap_check_tail(hs->pending, np, bh.slot, err, errlen);
	if (ret)
		return ret;
	for (uint64_t w = 0; w < bh.raw_len / 8; w++) {
		/* Lost in flight when the connection broke: send again. */
		claim_forget(m, bh.slot, w, hs->pending[w]);
		hs->npending += bits_count(hs->pending[w]);
	}
	return 0;
}

/* The round's BITMAP_END, whose header was read: the counts must match what arrived. */
static int read_missing_end(struct migration *m, uint32_t len, uint32_t nbitmaps, char *err,
			    size_t errlen)
{
	uint8_t buf[MIG_BITMAP_END_LEN];
	struct mig_bitmap_end be;
	uint64_t pages = 0;
	int ret = chan_read(&m->main, buf, sizeof(buf));

	if (ret) {
		snprintf(err, errlen, "%s", chan_strerror(ret));
		return ret;
	}
	ret = mig_bitmap_end_decode(buf, len, &be, err, errlen);
	if (!ret && (be.flags & MIG_BITMAP_END_PRELIMINARY)) {
		snprintf(err, errlen, "BITMAP_END: a preliminary round from the target");
		return -EPROTO;
	}
	for (uint32_t i = 0; i < m->harvest.nslots; i++)
		pages += m->harvest.slots[i].npending;
	return ret ? ret : mig_bitmap_end_check(&be, nbitmaps, pages, err, errlen);
}

/*
 * Reads the target's bitmap of pages it still lacks (BITMAP records, then
 * BITMAP_END, on the resumed main connection) into pending; unclaims them.
 */
int postcopy_read_missing(struct migration *m, char *err, size_t errlen)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	uint32_t nbitmaps = 0;
	uint8_t other[MIG_ERROR_MAX];
	char msg[MIG_ERROR_MAX + 1];
	int ret = d ? 0 : -ENOMEM;

	if (ret)
		snprintf(err, errlen, "%s", strerror(ENOMEM));
	for (uint32_t i = 0; i < m->harvest.nslots; i++) {
		memset(m->harvest.slots[i].pending, 0,
		       bitmap_words(vm_mem(m->vm)->slots[i].npages) * 8);
		m->harvest.slots[i].npending = 0;
	}
	while (!ret) {
		struct mig_rec_hdr h;

		/*
		 * Each type by its own table limit (ctx_max 0): a tighter one
		 * would apply to every type and give an ERROR a BITMAP's bound
		 * (and name it). A BITMAP is then held to its slot's limit as
		 * soon as its 16-byte header names the slot (read_missing_slot).
		 */
		ret = chan_recv_rec(&m->main, 0, &h, err, errlen);
		if (ret)
			break;
		if (h.type == MIG_REC_BITMAP_END) {
			ret = read_missing_end(m, h.len, nbitmaps, err, errlen);
			break;
		}
		if (h.type == MIG_REC_BITMAP) {
			ret = read_missing_slot(m, d, &h, err, errlen);
			nbitmaps++;
			continue;
		}
		if (h.type == MIG_REC_ERROR) {
			/* At most MIG_ERROR_MAX bytes: the table checked it. */
			ret = chan_read(&m->main, other, h.len);
			if (ret) {
				snprintf(err, errlen, "ERROR: %s", chan_strerror(ret));
				break;
			}
			mig_error_decode(other, h.len, msg, sizeof(msg), NULL, 0);
			snprintf(err, errlen, "the target failed: %.200s", msg);
		} else {
			/* A POSTCOPY_DONE out of place: refused unread. */
			snprintf(err, errlen, "expected BITMAP or BITMAP_END, got %s (%u bytes)",
				 mig_rec_name(h.type), h.len);
		}
		ret = -EPROTO;
	}
	ZSTD_freeDCtx(d);
	return ret;
}
