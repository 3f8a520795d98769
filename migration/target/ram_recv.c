/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Receiving guest RAM on the target: one thread per data connection.
 * Every field of a PAGES record is checked before any byte of guest memory
 * is written: the slot must exist and belong to this connection, counts
 * and lengths must agree, every page index must lie inside the slot, and
 * compressed data must expand to exactly the announced pages.
 * A zero page is written only if this target wrote that page before:
 * fresh memory is already zero, and touching it would make the host
 * allocate it (on our hosts the first touch of a page, a fault plus a
 * zeroed allocation, costs more than copying the page's data).
 *
 * After a postcopy switchover pages go in through pc_place() (pc_state.c),
 * the one lower module receivers call; a failure once the guest runs here
 * only marks the connection lost there (the control thread resumes), a
 * failure before that aborts the migration. Receivers never call up.
 */
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "incoming.h"
#include "pc_state.h"
#include "vm.h"

#define MAX_DATA_LEN (ZSTD_COMPRESSBOUND((size_t)MIG_PAGES_MAX * 4096))
#define MAX_PAGES_REC                                                                              \
	(sizeof(struct mig_pages_hdr) + 2 * MIG_PAGES_MAX * sizeof(uint32_t) + MAX_DATA_LEN)

int recv_chan_init(struct recv_chan *rc, struct incoming *in, unsigned index)
{
	memset(rc, 0, sizeof(*rc));
	rc->in = in;
	rc->index = index;
	rc->chan.fd = -1;
	rc->dctx = ZSTD_createDCtx();
	rc->buf = malloc(MAX_DATA_LEN);
	/* Page aligned: UFFDIO_COPY takes pages from here in postcopy. */
	rc->pages_buf = aligned_alloc(GUEST_PAGE_SIZE, (size_t)MIG_PAGES_MAX * GUEST_PAGE_SIZE);
	return rc->dctx && rc->buf && rc->pages_buf ? 0 : -ENOMEM;
}

void recv_chan_destroy(struct recv_chan *rc)
{
	chan_close(&rc->chan);
	ZSTD_freeDCtx(rc->dctx);
	free(rc->buf);
	free(rc->pages_buf);
	rc->dctx = NULL;
	rc->buf = rc->pages_buf = NULL;
}

static int fail(struct recv_chan *rc, int ret, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct recv_chan *rc, int ret, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(rc->err, sizeof(rc->err), "data connection %u: ", rc->index);

	va_start(ap, fmt);
	vsnprintf(rc->err + n, sizeof(rc->err) - (size_t)n, fmt, ap);
	va_end(ap);
	rc->error = ret;
	return ret;
}

static int apply_pages(struct recv_chan *rc, uint32_t len)
{
	struct incoming *in = rc->in;
	struct guest_mem *mem = &in->vm->mem;
	struct mig_pages_hdr ph;
	uint32_t idx[2 * MIG_PAGES_MAX];
	const struct memslot *slot;
	uint64_t *written;
	size_t raw_len;
	int ret;

	if (len < sizeof(ph))
		return fail(rc, -EPROTO, "PAGES record of %u bytes is shorter than its header",
			    len);
	ret = chan_read(&rc->chan, &ph, sizeof(ph));
	if (ret)
		return fail(rc, ret, "reading PAGES: %s", chan_strerror(ret));
	if (ph.slot >= mem->nslots)
		return fail(rc, -EPROTO, "PAGES for slot %u of %u", ph.slot, mem->nslots);
	if (ph.nzero > MIG_PAGES_MAX || ph.ndata > MIG_PAGES_MAX ||
	    ph.nzero + ph.ndata > MIG_PAGES_MAX || ph.nzero + ph.ndata == 0)
		return fail(rc, -EPROTO, "PAGES with %u zero + %u data pages (1..%u allowed)",
			    ph.nzero, ph.ndata, MIG_PAGES_MAX);
	raw_len = (size_t)ph.ndata * GUEST_PAGE_SIZE;
	if ((ph.encoding == MIG_ENC_RAW && ph.data_len != raw_len) ||
	    (ph.encoding == MIG_ENC_ZSTD && (ph.data_len > MAX_DATA_LEN || !ph.ndata)) ||
	    ph.encoding > MIG_ENC_ZSTD)
		return fail(rc, -EPROTO, "PAGES encoding %u with %u data bytes for %u pages",
			    ph.encoding, ph.data_len, ph.ndata);
	if ((uint64_t)len != sizeof(ph) + (uint64_t)(ph.nzero + ph.ndata) * 4 + ph.data_len)
		return fail(rc, -EPROTO, "PAGES record length %u does not match its contents", len);
	ret = chan_read(&rc->chan, idx, (ph.nzero + ph.ndata) * sizeof(uint32_t));
	if (!ret)
		ret = chan_read(&rc->chan, rc->buf, ph.data_len);
	if (ret)
		return fail(rc, ret, "reading PAGES: %s", chan_strerror(ret));
	slot = &mem->slots[ph.slot];
	for (uint32_t i = 0; i < ph.nzero + ph.ndata; i++) {
		if (idx[i] >= slot->npages)
			return fail(rc, -EPROTO, "PAGES: page %u is outside slot %u (%llu pages)",
				    idx[i], ph.slot, (unsigned long long)slot->npages);
		/* Another connection's shard here could overtake a newer copy. */
		if (!rc->urgent && (ph.slot + idx[i] / in->shard_pages) % in->nchans != rc->index)
			return fail(rc, -EPROTO,
				    "PAGES: page %u of slot %u belongs to another connection",
				    idx[i], ph.slot);
	}
	if (ph.encoding == MIG_ENC_ZSTD) {
		size_t n =
		    ZSTD_decompressDCtx(rc->dctx, rc->pages_buf, raw_len, rc->buf, ph.data_len);

		if (ZSTD_isError(n) || n != raw_len)
			return fail(
			    rc, -EPROTO, "PAGES: compressed data does not expand to %u pages (%s)",
			    ph.ndata, ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size");
	} else if (raw_len) {
		memcpy(rc->pages_buf, rc->buf, raw_len);
	}
	if (__atomic_load_n(&in->postcopy, __ATOMIC_ACQUIRE)) {
		/* After a postcopy switchover pages go in through userfaultfd, once each. */
		if (!__atomic_load_n(&in->pc.uffd_ready, __ATOMIC_ACQUIRE))
			return fail(rc, -EPROTO, "PAGES during the postcopy switchover");
		for (uint32_t i = 0; i < ph.nzero + ph.ndata; i++) {
			const void *src =
			    i < ph.nzero ? NULL
					 : rc->pages_buf + (size_t)(i - ph.nzero) * GUEST_PAGE_SIZE;

			ret = pc_place(&in->pc, ph.slot, idx[i], src);
			if (ret)
				return fail(rc, ret, "placing page %u of slot %u: %s", idx[i],
					    ph.slot, strerror(-ret));
		}
		__atomic_store_n(&rc->records, rc->records + 1, __ATOMIC_RELEASE);
		return 0;
	}
	written = in->written[ph.slot];
	for (uint32_t i = 0; i < ph.nzero; i++) {
		uint32_t p = idx[i];

		if (written[p / 64] & (1ull << (p % 64)))
			memset(slot->hva + (uint64_t)p * GUEST_PAGE_SIZE, 0, GUEST_PAGE_SIZE);
	}
	for (uint32_t i = 0; i < ph.ndata; i++) {
		uint32_t p = idx[ph.nzero + i];

		memcpy(slot->hva + (uint64_t)p * GUEST_PAGE_SIZE,
		       rc->pages_buf + (size_t)i * GUEST_PAGE_SIZE, GUEST_PAGE_SIZE);
		written[p / 64] |= 1ull << (p % 64);
	}
	__atomic_store_n(&rc->records, rc->records + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Acknowledges a SYNC once every connection has applied its pages up to it. */
static int apply_sync(struct recv_chan *rc, uint32_t len)
{
	struct incoming *in = rc->in;
	struct mig_sync sync;
	uint64_t min = UINT64_MAX;
	int ret;

	if (len != sizeof(sync))
		return fail(rc, -EPROTO, "SYNC record of %u bytes", len);
	ret = chan_read(&rc->chan, &sync, sizeof(sync));
	if (ret)
		return fail(rc, ret, "reading SYNC: %s", chan_strerror(ret));
	if (sync.seq != rc->synced + 1)
		return fail(rc, -EPROTO, "SYNC %llu after %llu", (unsigned long long)sync.seq,
			    (unsigned long long)rc->synced);
	pthread_mutex_lock(&in->main_wlock);
	rc->synced = sync.seq;
	for (unsigned i = 0; i < in->nchans; i++)
		if (in->chans[i].synced < min)
			min = in->chans[i].synced;
	if (min > in->sync_acked) {
		in->sync_acked = min;
		ret = chan_send_record(&in->main, MIG_REC_SYNC_ACK, &(struct mig_sync){.seq = min},
				       sizeof(struct mig_sync), NULL, 0);
	}
	pthread_mutex_unlock(&in->main_wlock);
	if (ret)
		return fail(rc, ret, "sending SYNC_ACK: %s", chan_strerror(ret));
	return 0;
}

static void *ram_recv_thread(void *arg)
{
	struct recv_chan *rc = arg;

	for (;;) {
		struct mig_rec_hdr h;
		int ret = chan_recv_hdr(&rc->chan, &h, (uint32_t)MAX_PAGES_REC);

		if (ret) {
			fail(rc, ret, "%s",
			     ret == -EPROTO ? "record too large" : chan_strerror(ret));
			break;
		}
		if (h.type == MIG_REC_PAGES) {
			if (apply_pages(rc, h.len))
				break;
		} else if (h.type == MIG_REC_SYNC) {
			if (apply_sync(rc, h.len))
				break;
		} else if (h.type == MIG_REC_CHANNEL_END &&
			   h.len == sizeof(struct mig_channel_end)) {
			struct mig_channel_end ce;

			ret = chan_read(&rc->chan, &ce, sizeof(ce));
			if (ret) {
				fail(rc, ret, "reading CHANNEL_END: %s", chan_strerror(ret));
			} else if (ce.records != rc->records) {
				fail(rc, -EPROTO,
				     "CHANNEL_END announces %llu PAGES records, %llu arrived",
				     (unsigned long long)ce.records,
				     (unsigned long long)rc->records);
			} else {
				rc->ended = true;
			}
			break;
		} else {
			fail(rc, -EPROTO, "unexpected %s record (type %u, %u bytes)",
			     mig_rec_name(h.type), h.type, h.len);
			break;
		}
	}
	if (rc->error && pc_started(&rc->in->pc)) {
		/* The guest already runs here: wait for the source to come back. */
		pc_mark_lost(&rc->in->pc, rc->err);
	} else if (rc->error) {
		/* Wake the main connection's reader: this migration is over. */
		__atomic_store_n(&rc->in->abort, true, __ATOMIC_RELAXED);
		chan_abort(&rc->in->main);
	}
	return NULL;
}

int recv_chan_start(struct recv_chan *rc)
{
	int ret = -pthread_create(&rc->thread, NULL, ram_recv_thread, rc);

	rc->started = !ret;
	return ret;
}

void recv_chan_join(struct recv_chan *rc)
{
	if (rc->started)
		pthread_join(rc->thread, NULL);
	rc->started = false;
}
