/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sending guest RAM: each sender thread owns one data connection and the
 * chunks (shards) of every memslot with (slot + chunk) % connections == its
 * index, so each page always travels, in order, on the same stream, and
 * one hot slot still keeps every connection busy. For every chunk with
 * pending pages it
 *   1. takes the chunk's pending bits,
 *   2. KVM_CLEAR_DIRTY_LOG for exactly those pages (re-protects them), and
 *      only then
 *   3. reads them.
 * A write after step 2 is caught by the next harvest; clearing after the
 * read could lose it. Pages that were never resident (checked with
 * mincore, only when the host has no swap) were never written and are not
 * read at all, so untouched memory costs nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zstd.h>

#include "codec.h"
#include "ram_send.h"
#include "vm.h"
#include "zero_page.h"

#define MAX_CHUNK_PAGES 65536u
/* Postcopy pushes small batches: a claimed page waits at most for one. */
#define POSTCOPY_BATCH 64u

int ram_sender_init(struct ram_sender *s, struct migration *m, unsigned index)
{
	memset(s, 0, sizeof(*s));
	s->m = m;
	s->index = index;
	s->chan.fd = -1;
	if (m->params.compress_level > 0) {
		s->cctx = ZSTD_createCCtx();
		s->zcap = ZSTD_compressBound((size_t)MIG_PAGES_MAX * GUEST_PAGE_SIZE);
		s->zbuf = malloc(s->zcap);
		if (!s->cctx || !s->zbuf)
			return -ENOMEM;
		ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_compressionLevel, m->params.compress_level);
	}
	return 0;
}

void ram_sender_free_buffers(struct ram_sender *s)
{
	ZSTD_freeCCtx(s->cctx);
	free(s->zbuf);
	s->cctx = NULL;
	s->zbuf = NULL;
}

void ram_sender_destroy(struct ram_sender *s)
{
	chan_close(&s->chan);
	ram_sender_free_buffers(s);
}

struct batch {
	const struct memslot *slot;
	uint32_t nzero, ndata;
};

static int compress_pages(struct ram_sender *s, const struct batch *b, size_t *out_len)
{
	ZSTD_outBuffer out = {.dst = s->zbuf, .size = s->zcap, .pos = 0};

	ZSTD_CCtx_reset(s->cctx, ZSTD_reset_session_only);
	ZSTD_CCtx_setPledgedSrcSize(s->cctx, (uint64_t)b->ndata * GUEST_PAGE_SIZE);
	for (uint32_t i = 0; i < b->ndata; i++) {
		ZSTD_inBuffer in = {.src =
					b->slot->hva + (uint64_t)s->data_idx[i] * GUEST_PAGE_SIZE,
				    .size = GUEST_PAGE_SIZE,
				    .pos = 0};
		bool last = i + 1 == b->ndata;
		size_t r;

		do {
			r = ZSTD_compressStream2(s->cctx, &out, &in,
						 last ? ZSTD_e_end : ZSTD_e_continue);
			if (ZSTD_isError(r))
				return -EIO;
		} while (last ? r != 0 : in.pos < in.size);
	}
	*out_len = out.pos;
	return 0;
}

/*
 * Postcopy: claim each page only now, as the batch goes out, so a page a
 * vCPU asks for in the meantime leaves on the urgent connection instead of
 * waiting for this batch; pages already claimed that way are dropped here.
 */
static void claim_batch(struct ram_sender *s, struct batch *b)
{
	uint32_t nz = 0, nd = 0;

	for (uint32_t i = 0; i < b->nzero; i++)
		if (claim_page(s->m, b->slot->id, s->zero_idx[i]))
			s->zero_idx[nz++] = s->zero_idx[i];
	for (uint32_t i = 0; i < b->ndata; i++)
		if (claim_page(s->m, b->slot->id, s->data_idx[i]))
			s->data_idx[nd++] = s->data_idx[i];
	b->nzero = nz;
	b->ndata = nd;
}

static int flush_batch(struct ram_sender *s, struct batch *b)
{
	struct migration *m = s->m;
	struct mig_pages_hdr ph = {
	    .slot = b->slot->id,
	    .encoding = MIG_ENC_RAW,
	};
	uint8_t frame[PAGES_FRAME_LEN];
	struct iovec iov[3 + MIG_PAGES_MAX];
	uint32_t len;
	int n = 0, ret;

	if (m->pc.active)
		claim_batch(s, b);
	if (!b->nzero && !b->ndata)
		return 0;
	ph.nzero = b->nzero;
	ph.ndata = b->ndata;
	if (b->ndata && s->cctx) {
		size_t zlen;

		ret = compress_pages(s, b, &zlen);
		if (ret)
			return ret;
		ph.encoding = MIG_ENC_ZSTD;
		ph.data_len = (uint32_t)zlen;
	} else {
		ph.data_len = b->ndata * (uint32_t)GUEST_PAGE_SIZE;
	}
	len = pages_frame(frame, &ph);
	/* The index arrays go out as they are: little-endian uint32s (protocol.h). */
	iov[n++] = (struct iovec){frame, sizeof(frame)};
	iov[n++] = (struct iovec){s->zero_idx, b->nzero * sizeof(uint32_t)};
	iov[n++] = (struct iovec){s->data_idx, b->ndata * sizeof(uint32_t)};
	if (ph.encoding == MIG_ENC_ZSTD) {
		iov[n++] = (struct iovec){s->zbuf, ph.data_len};
	} else {
		int npages = 0;

		for (uint32_t i = 0; i < b->ndata; i++)
			chan_iov_append(iov + n, &npages,
					b->slot->hva + (uint64_t)s->data_idx[i] * GUEST_PAGE_SIZE,
					GUEST_PAGE_SIZE);
		n += npages;
	}
	ratelimit_take(&m->rl, MIG_REC_HDR_LEN + (uint64_t)len, &m->cancel);
	ret = chan_writev(&s->chan, iov, n);
	if (ret)
		return ret;
	s->records++;
	__atomic_fetch_add(&m->pages_sent, b->ndata, __ATOMIC_RELAXED);
	__atomic_fetch_add(&m->zero_pages, b->nzero, __ATOMIC_RELAXED);
	if (m->pc.active)
		__atomic_fetch_add(&m->pc.pages_pushed, b->nzero + b->ndata, __ATOMIC_RELAXED);
	b->nzero = b->ndata = 0;
	return 0;
}

static int send_chunk(struct ram_sender *s, struct batch *b, struct harvest_slot *hs,
		      uint64_t first, uint64_t n, uint64_t *mask, unsigned char *vec)
{
	struct migration *m = s->m;
	const struct memslot *slot = b->slot;
	uint64_t w0 = first / 64, nw = (n + 63) / 64, any = 0;
	int ret;

	for (uint64_t w = 0; w < nw; w++) {
		mask[w] = hs->pending[w0 + w];
		any |= mask[w];
	}
	if (!any)
		return 0;
	memset(&hs->pending[w0], 0, nw * 8);
	if (!m->blackout) {
		ret = dirtylog_clear(&m->dl, slot, first, n, mask);
		if (ret)
			return ret;
	}
	/* Later passes send pages the guest wrote since: resident by definition. */
	bool check = m->check_residency && (m->first_pass || m->pc.all_stale);

	if (check && mincore(slot->hva + first * GUEST_PAGE_SIZE, n * GUEST_PAGE_SIZE, vec) < 0)
		return -errno;
	for (uint64_t w = 0; w < nw; w++) {
		uint64_t bits = mask[w];

		while (bits) {
			uint64_t p = (w0 + w) * 64 + (uint64_t)__builtin_ctzll(bits);
			const uint8_t *page = slot->hva + p * GUEST_PAGE_SIZE;

			bits &= bits - 1;
			if (check && !(vec[p - first] & 1)) {
				/* Never written: the target lacks it only if it dropped all. */
				if (m->pc.all_stale)
					s->zero_idx[b->nzero++] = (uint32_t)p;
				else
					__atomic_fetch_add(&m->skipped_pages, 1, __ATOMIC_RELAXED);
			} else if (page_is_zero(page))
				s->zero_idx[b->nzero++] = (uint32_t)p;
			else
				s->data_idx[b->ndata++] = (uint32_t)p;
			if (b->nzero + b->ndata ==
			    (m->pc.active ? POSTCOPY_BATCH : MIG_PAGES_MAX)) {
				ret = flush_batch(s, b);
				if (ret)
					return ret;
			}
		}
	}
	return 0;
}

static int send_slot(struct ram_sender *s, uint32_t i, uint64_t *mask, unsigned char *vec)
{
	struct migration *m = s->m;
	const struct memslot *slot = &vm_mem(m->vm)->slots[i];
	struct harvest_slot *hs = &m->harvest.slots[i];
	uint64_t chunk = m->params.clear_chunk_pages;
	uint64_t c0 = (s->index + m->connections - i % m->connections) % m->connections;
	struct batch b = {.slot = slot};
	int ret = 0;

	/* npending is only read here: senders share a slot's bitmap by chunks. */
	if (!hs->npending)
		return 0;
	for (uint64_t c = c0; c * chunk < slot->npages && !ret; c += m->connections) {
		uint64_t first = c * chunk;
		uint64_t n = slot->npages - first < chunk ? slot->npages - first : chunk;

		if (migration_cancelled(m))
			return -ECANCELED;
		ret = send_chunk(s, &b, hs, first, n, mask, vec);
	}
	if (!ret)
		ret = flush_batch(s, &b);
	return ret;
}

void ram_send_pass(void *arg, unsigned worker)
{
	struct migration *m = arg;
	struct ram_sender *s = &m->senders[worker];
	uint64_t *mask = malloc(MAX_CHUNK_PAGES / 8);
	unsigned char *vec = malloc(MAX_CHUNK_PAGES);

	if (!mask || !vec)
		s->error = -ENOMEM;
	for (uint32_t i = 0; i < vm_mem(m->vm)->nslots && !s->error; i++) {
		int ret = send_slot(s, i, mask, vec);

		if (ret) {
			s->error = ret;
			/* One broken connection ends the migration: wake the others. */
			migration_fail(m, ret, "sending memory on data connection %u: %s", s->index,
				       strerror(-ret));
		}
	}
	if (!s->error && !m->blackout) {
		uint8_t sync[MIG_SYNC_LEN];
		char err[256];
		int ret;

		mig_sync_encode(sync, &(struct mig_sync){.seq = m->sync_seq});
		ret =
		    send_rec(&s->chan, MIG_REC_SYNC, sync, sizeof(sync), NULL, 0, err, sizeof(err));
		if (ret) {
			s->error = ret;
			migration_fail(m, ret, "sending SYNC on data connection %u: %s", s->index,
				       err);
		}
	}
	free(mask);
	free(vec);
}
