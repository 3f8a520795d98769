/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_wire_source.c - the return channel as the source reads it.
 *
 * The first input byte picks the connection (byte % 3); the rest is what
 * the target sends on it, read through the real channel (fuzz_chan.h,
 * receiving target-to-source as after chan_send_hello()) and decoded with
 * the codec the way migration/source does it, on a VM that is only a slot
 * layout:
 *   0 main: the replies of session_io.c wait_reply() (each record bounded
 *     at REPLY_MAX): ACK, SYNC_ACK (seq in order), ERROR, POSTCOPY_ARMED,
 *     HEARTBEAT, POSTCOPY_DONE, in any order, until an error or the end.
 *   1 urgent: PAGE_REQ (postcopy_serve.c recv_request: slot and page
 *     inside the guest).
 *   2 main-resume: the target's missing pages (postcopy_serve.c
 *     read_missing: BITMAP per slot with the compressed size bounded by
 *     the slot, zstd expanding to exactly raw_len, the tail check;
 *     BITMAP_END not preliminary and counting what arrived; ERROR).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "codec.h"
#include "fuzz_chan.h"

#define REPLY_MAX MIG_ERROR_MAX /* migration/source/session.h */

/* The source's guest: 3 slots, one not a multiple of 64 pages. */
static const uint64_t npages[] = {512, 257, 64};
#define NSLOTS 3u

static ZSTD_DCtx *dctx;
static uint64_t *pending[NSLOTS];
static uint8_t *zbuf[NSLOTS];
static size_t zcap[NSLOTS];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	dctx = ZSTD_createDCtx();
	for (uint32_t i = 0; i < NSLOTS; i++) {
		pending[i] = calloc(mig_bitmap_raw_len(npages[i]) / 8, 8);
		zcap[i] = ZSTD_compressBound(mig_bitmap_raw_len(npages[i]));
		zbuf[i] = malloc(zcap[i]);
		if (!pending[i] || !zbuf[i])
			abort();
	}
	if (!dctx)
		abort();
	return 0;
}

static void replies(struct mig_chan *c)
{
	uint64_t seq = 0;
	char e[256], msg[MIG_ERROR_MAX + 1];

	for (;;) {
		uint8_t buf[REPLY_MAX];
		struct mig_rec_hdr h;
		int ret = chan_recv_record(c, 0, &h, buf, sizeof(buf), e, sizeof(e));

		if (ret)
			return;
		if (h.type == MIG_REC_ERROR) {
			mig_error_decode(buf, h.len, msg, sizeof(msg), NULL, 0);
			if (strlen(msg) > MIG_ERROR_MAX)
				abort();
			return;
		} else if (h.type == MIG_REC_COMMITTED) {
			struct mig_committed a;

			ret = mig_committed_decode(buf, h.len, &a, e, sizeof(e));
		} else if (h.type == MIG_REC_PREPARED) {
			struct mig_prepared p;

			ret = mig_prepared_decode(buf, h.len, &p, e, sizeof(e));
		} else if (h.type == MIG_REC_DECIDED) {
			struct mig_decided d;

			/* commit.c's read_decided: the proof is checked after the decoder. */
			ret = mig_decided_decode(buf, h.len, &d, e, sizeof(e));
			if (!ret && d.what != MIG_DECIDED_RUNS && d.what != MIG_DECIDED_DISCARDED)
				abort(); /* the decoder lets only the two through */
		} else if (h.type == MIG_REC_RECOVER_STATE) {
			struct mig_recover_state rs;

			ret = mig_recover_state_decode(buf, h.len, &rs, e, sizeof(e));
			if (!ret && rs.state != MIG_RECOVER_PREPARED &&
			    rs.state != MIG_RECOVER_RUNNING)
				abort(); /* the decoder lets only the two states through */
		} else if (h.type == MIG_REC_SYNC_ACK) {
			struct mig_sync s;

			ret = mig_sync_decode(buf, h.len, &s, e, sizeof(e));
			if (!ret && s.seq != ++seq)
				ret = -1;
		} else if (h.type == MIG_REC_POSTCOPY_DONE) {
			struct mig_postcopy_done d;

			ret = mig_postcopy_done_decode(buf, h.len, &d, e, sizeof(e));
		} else if (h.type == MIG_REC_HEARTBEAT) {
			struct mig_heartbeat hb;

			ret = mig_heartbeat_decode(buf, h.len, &hb, e, sizeof(e));
		} else if (h.type == MIG_REC_CAPS) {
			struct mig_caps_view cv;

			ret = mig_caps_decode(buf, h.len, &cv, e, sizeof(e));
			/* The reason is the one-line string the source prints: bounded, NUL-ended.
			 */
			if (!ret && (strlen(cv.reason) != cv.reason_len ||
				     cv.reason_len > MIG_CAPS_REASON_MAX))
				abort();
		} else if (h.type != MIG_REC_POSTCOPY_ARMED) {
			abort(); /* the table lets nothing else through, target to source */
		}
		if (ret)
			return;
	}
}

static void page_requests(struct mig_chan *c)
{
	char e[256];

	for (;;) {
		uint8_t buf[MIG_PAGE_REQ_LEN];
		struct mig_page_req rq;
		struct mig_rec_hdr h;

		if (chan_recv_record(c, 0, &h, buf, sizeof(buf), e, sizeof(e)) ||
		    mig_page_req_decode(buf, h.len, &rq, e, sizeof(e)))
			return;
		if (rq.slot >= NSLOTS || rq.page >= npages[rq.slot])
			return;
		pending[rq.slot][rq.page / 64] |= 1ull << (rq.page % 64); /* claim_page() */
	}
}

static void missing(struct mig_chan *c)
{
	uint32_t nbitmaps = 0, ctx_max = 0;
	uint64_t npending[NSLOTS] = {0};
	char e[256], msg[MIG_ERROR_MAX + 1];

	for (uint32_t i = 0; i < NSLOTS; i++) {
		if (mig_bitmap_rec_max(npages[i]) > ctx_max)
			ctx_max = mig_bitmap_rec_max(npages[i]);
		memset(pending[i], 0, mig_bitmap_raw_len(npages[i]));
	}
	for (;;) {
		struct mig_rec_hdr h;

		if (chan_recv_rec(c, ctx_max, &h, e, sizeof(e)))
			return;
		if (h.type == MIG_REC_BITMAP_END) {
			uint8_t buf[MIG_BITMAP_END_LEN];
			struct mig_bitmap_end be;
			uint64_t pages = 0;

			if (chan_read(c, buf, sizeof(buf)) ||
			    mig_bitmap_end_decode(buf, h.len, &be, e, sizeof(e)) ||
			    (be.flags & MIG_BITMAP_END_PRELIMINARY))
				return;
			for (uint32_t i = 0; i < NSLOTS; i++)
				pages += npending[i];
			(void)mig_bitmap_end_check(&be, nbitmaps, pages, e, sizeof(e));
			return;
		}
		if (h.type == MIG_REC_BITMAP) {
			uint8_t bhb[MIG_BITMAP_HDR_LEN];
			struct mig_bitmap_hdr bh;
			uint64_t np = 0;
			size_t raw;

			if (chan_read(c, bhb, sizeof(bhb)) ||
			    mig_bitmap_hdr_decode(bhb, h.len, &bh, e, sizeof(e)))
				return;
			if (bh.slot < NSLOTS)
				np = npages[bh.slot];
			if (mig_bitmap_check_slot(&bh, NSLOTS, np, e, sizeof(e)) ||
			    bh.data_len > zcap[bh.slot] || chan_read(c, zbuf[bh.slot], bh.data_len))
				return;
			raw = ZSTD_decompressDCtx(dctx, pending[bh.slot], bh.raw_len, zbuf[bh.slot],
						  bh.data_len);
			if (ZSTD_isError(raw) || raw != bh.raw_len ||
			    mig_bitmap_check_tail(pending[bh.slot], np, bh.slot, e, sizeof(e)))
				return;
			for (uint64_t w = 0; w < bh.raw_len / 8; w++)
				npending[bh.slot] +=
				    (uint64_t)__builtin_popcountll(pending[bh.slot][w]);
			nbitmaps++;
			continue;
		}
		/* ERROR, or a POSTCOPY_DONE out of place: both small. */
		uint8_t other[MIG_ERROR_MAX];

		if (h.len > sizeof(other) || chan_read(c, other, h.len))
			return;
		if (h.type == MIG_REC_ERROR)
			mig_error_decode(other, h.len, msg, sizeof(msg), NULL, 0);
		return;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t roles[4] = {MIG_ROLE_MAIN, MIG_ROLE_URGENT, MIG_ROLE_MAIN_RESUME,
					  MIG_ROLE_RECOVER};
	struct mig_chan c;
	unsigned which;

	if (size < 1)
		return 0;
	which = data[0] % 4;
	fuzz_chan_open(&c, data + 1, size - 1, "main");
	chan_set_role(&c, roles[which], MIG_DIR_T2S);
	if (which == 0 || which == 3)
		replies(&c); /* main, or a recover connection's RECOVER_STATE, COMMITTED */
	else if (which == 1)
		page_requests(&c);
	else
		missing(&c);
	chan_close(&c);
	return 0;
}
