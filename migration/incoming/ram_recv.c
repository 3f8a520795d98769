/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Receiving guest RAM on the target: one thread per data connection, and
 * in postcopy one for the urgent connection. Every field of a PAGES record
 * is checked before any byte of guest memory is written: the codec checks
 * what needs no VM (counts and lengths agree, the encoding is known), this
 * file the context (the slot exists, every page index lies inside it and
 * belongs to this connection's shards), and compressed data must expand
 * to exactly the announced pages.
 * A zero page is written only if this target wrote that page before:
 * fresh memory is already zero, and touching it would make the host fault
 * in and allocate it; on the hosts this was measured on, first-touch
 * faults are the largest cost of receiving.
 *
 * After a postcopy switchover pages go in through pc_place() (pc_state.c),
 * the one lower module receivers call; a failure once the guest runs here
 * only marks the connection lost there (the control thread resumes), a
 * failure before that aborts the migration. Receivers never call up.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <zstd.h>

#include "bitmap.h"
#include "clock.h"
#include "codec.h"
#include "incoming.h"
#include "pc_state.h"
#include "vm.h"

int recv_chan_init(struct recv_chan *rc, struct incoming *in, unsigned index)
{
	memset(rc, 0, sizeof(*rc));
	rc->in = in;
	rc->index = index;
	rc->chan.fd = -1;
	rc->dctx = ZSTD_createDCtx();
	rc->buf = malloc(MIG_PAGES_DATA_MAX);
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

/* One PAGES record applied: its counters, for main (records) and the status (all). */
static void count_record(struct recv_chan *rc, uint32_t npages)
{
	__atomic_store_n(&rc->pages, rc->pages + npages, __ATOMIC_RELAXED);
	__atomic_store_n(&rc->bytes, rc->chan.bytes_in, __ATOMIC_RELAXED);
	__atomic_store_n(&rc->records, rc->records + 1, __ATOMIC_RELEASE);
}

/*
 * Zero pages: only those this target wrote before need zeroing (fresh
 * memory is zero, and touching it would fault it in).
 */
static void write_zero_pages(const uint64_t *written, const struct memslot *slot,
			     const uint32_t *idx, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (bitmap_test(written, idx[i]))
			memset(slot->hva + (uint64_t)idx[i] * GUEST_PAGE_SIZE, 0, GUEST_PAGE_SIZE);
}

/* n raw pages read from the socket into their places in the slot (indexes checked). */
static int recv_raw_in_place(struct recv_chan *rc, const struct memslot *slot, uint64_t *written,
			     const uint32_t *idx, uint32_t n)
{
	struct iovec iov[MIG_PAGES_MAX];
	int niov = 0;

	for (uint32_t i = 0; i < n; i++) {
		chan_iov_append(iov, &niov, slot->hva + (uint64_t)idx[i] * GUEST_PAGE_SIZE,
				GUEST_PAGE_SIZE);
		bitmap_set(written, idx[i]);
	}
	return chan_readv(&rc->chan, iov, niov);
}

static int apply_pages(struct recv_chan *rc, uint32_t len)
{
	struct incoming *in = rc->in;
	struct guest_mem *mem = vm_mem(in->vm);
	uint8_t hdr[MIG_PAGES_HDR_LEN];
	struct mig_pages_hdr ph;
	struct mig_pages_ctx ctx;
	/* The index arrays, little endian on the wire, used in place (as mig_pages_decode). */
	uint32_t idx[2 * MIG_PAGES_MAX];
	const struct memslot *slot;
	uint64_t *written;
	size_t raw_len;
	bool postcopy;
	char e[200];
	int ret;

	ret = chan_read(&rc->chan, hdr, sizeof(hdr)); /* len >= the header: the table */
	if (ret)
		return fail(rc, ret, "reading PAGES: %s", chan_strerror(ret));
	ret = mig_pages_hdr_decode(hdr, len, &ph, e, sizeof(e));
	if (ret)
		return fail(rc, ret, "%s", e);
	/* The slot before the indexes are read, then the indexes (codec.h). */
	ctx = (struct mig_pages_ctx){.nslots = mem->nslots,
				     .shard_pages = in->shard_pages,
				     .connections = in->connections,
				     .index = rc->index,
				     .urgent = rc->urgent};
	ret = mig_pages_check_ctx(&ph, NULL, &ctx, e, sizeof(e));
	if (ret)
		return fail(rc, ret, "%s", e);
	raw_len = (size_t)ph.ndata * GUEST_PAGE_SIZE;
	ret = chan_read(&rc->chan, idx, (ph.nzero + ph.ndata) * sizeof(uint32_t));
	if (ret)
		return fail(rc, ret, "reading PAGES: %s", chan_strerror(ret));
	slot = &mem->slots[ph.slot];
	ctx.slot_npages = slot->npages;
	ret = mig_pages_check_ctx(&ph, idx, &ctx, e, sizeof(e));
	if (ret)
		return fail(rc, ret, "%s", e);
	written = in->written[ph.slot];
	postcopy = __atomic_load_n(&in->post.on, __ATOMIC_ACQUIRE);
	if (ph.encoding == MIG_ENC_RAW && !postcopy) {
		/*
		 * Raw pages go from the socket straight to where they belong: no
		 * copy through a buffer (the largest cost left on one connection
		 * after the first-touch faults). Every index was checked above;
		 * a connection that breaks inside the data leaves pages half
		 * written, but a receive error before the switchover aborts the
		 * migration and this copy of the guest never runs.
		 */
		write_zero_pages(written, slot, idx, ph.nzero);
		ret = recv_raw_in_place(rc, slot, written, idx + ph.nzero, ph.ndata);
		if (ret)
			return fail(rc, ret, "reading PAGES: %s", chan_strerror(ret));
		count_record(rc, ph.nzero + ph.ndata);
		return 0;
	}
	/* Raw pages land where UFFDIO_COPY takes them from. */
	ret =
	    chan_read(&rc->chan, ph.encoding == MIG_ENC_RAW ? rc->pages_buf : rc->buf, ph.data_len);
	if (ret)
		return fail(rc, ret, "reading PAGES: %s", chan_strerror(ret));
	if (ph.encoding == MIG_ENC_ZSTD) {
		size_t n =
		    ZSTD_decompressDCtx(rc->dctx, rc->pages_buf, raw_len, rc->buf, ph.data_len);

		if (ZSTD_isError(n) || n != raw_len)
			return fail(
			    rc, -EPROTO, "PAGES: compressed data does not expand to %u pages (%s)",
			    ph.ndata, ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size");
	}
	if (postcopy) {
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
		count_record(rc, ph.nzero + ph.ndata);
		return 0;
	}
	write_zero_pages(written, slot, idx, ph.nzero);
	for (uint32_t i = 0; i < ph.ndata; i++) {
		uint32_t p = idx[ph.nzero + i];

		memcpy(slot->hva + (uint64_t)p * GUEST_PAGE_SIZE,
		       rc->pages_buf + (size_t)i * GUEST_PAGE_SIZE, GUEST_PAGE_SIZE);
		bitmap_set(written, p);
	}
	count_record(rc, ph.nzero + ph.ndata);
	return 0;
}

/* Acknowledges a SYNC once every connection has applied its pages up to it. */
static int apply_sync(struct recv_chan *rc, uint32_t len)
{
	struct incoming *in = rc->in;
	uint8_t b[MIG_SYNC_LEN], out[MIG_SYNC_LEN];
	struct mig_sync sync;
	uint64_t min = UINT64_MAX;
	char e[200];
	int ret;

	/* The table made len MIG_SYNC_LEN. */
	ret = chan_read(&rc->chan, b, sizeof(b));
	if (ret)
		return fail(rc, ret, "reading SYNC: %s", chan_strerror(ret));
	ret = mig_sync_decode(b, len, &sync, e, sizeof(e));
	if (ret)
		return fail(rc, ret, "%s", e);
	if (sync.seq != rc->synced + 1)
		return fail(rc, -EPROTO, "SYNC %llu after %llu", (unsigned long long)sync.seq,
			    (unsigned long long)rc->synced);
	pthread_mutex_lock(&in->main_wlock);
	rc->synced = sync.seq;
	for (unsigned i = 0; i < in->connections; i++)
		if (in->chans[i].synced < min)
			min = in->chans[i].synced;
	if (min > in->sync_acked) {
		/*
		 * Test hook: every connection has applied pass 0 and the source
		 * waits for this ACK, so a test stopping here holds the
		 * migration in precopy however fast either side is. The whole
		 * process stops: holding the lock blocks nobody meanwhile.
		 */
		if (min == 1)
			test_hook_step(&in->hooks, TEST_STEP_TARGET_FIRST_SYNC);
		in->sync_acked = min;
		mig_sync_encode(out, &(struct mig_sync){.seq = min});
		ret = chan_send_record(&in->main, MIG_REC_SYNC_ACK, out, sizeof(out), NULL, 0);
	}
	pthread_mutex_unlock(&in->main_wlock);
	if (ret)
		return fail(rc, ret, "sending SYNC_ACK: %s", chan_strerror(ret));
	return 0;
}

/* CHANNEL_END: the connection's last record; its count must match. */
static int apply_channel_end(struct recv_chan *rc, uint32_t len)
{
	uint8_t b[MIG_CHANNEL_END_LEN];
	struct mig_channel_end ce;
	char e[200];
	int ret = chan_read(&rc->chan, b, sizeof(b));

	if (ret)
		return fail(rc, ret, "reading CHANNEL_END: %s", chan_strerror(ret));
	ret = mig_channel_end_decode(b, len, &ce, e, sizeof(e));
	if (ret)
		return fail(rc, ret, "%s", e);
	if (ce.records != rc->records)
		return fail(rc, -EPROTO, "CHANNEL_END announces %llu PAGES records, %llu arrived",
			    (unsigned long long)ce.records, (unsigned long long)rc->records);
	rc->ended = true;
	return 0;
}

static void *ram_recv_thread(void *arg)
{
	struct recv_chan *rc = arg;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_RECEIVE, vm_config(rc->in->vm)->seccomp);
	for (;;) {
		struct mig_rec_hdr h;
		char e[200];
		/* The table bounds every record (PAGES at MIG_PAGES_REC_MAX) for this role. */
		int ret = chan_recv_rec(&rc->chan, 0, &h, e, sizeof(e));

		if (ret) {
			fail(rc, ret, "%s", e);
			break;
		}
		if (h.type == MIG_REC_CHANNEL_END) {
			/* The only other record the table lets through; the last one. */
			apply_channel_end(rc, h.len);
			break;
		}
		ret = h.type == MIG_REC_PAGES ? apply_pages(rc, h.len) : apply_sync(rc, h.len);
		if (ret)
			break;
	}
	if (rc->error && pc_started(&rc->in->pc)) {
		/* The guest already runs here: wait for the source to come back. */
		pc_mark_lost(&rc->in->pc, rc->err);
	} else if (rc->error) {
		/*
		 * Wake the main connection's reader: this migration is over. Its
		 * sending side stays: the source is told why (an ERROR record).
		 */
		__atomic_store_n(&rc->in->abort, true, __ATOMIC_RELAXED);
		if (rc->in->main.fd >= 0)
			shutdown(rc->in->main.fd, SHUT_RD);
	}
	__atomic_store_n(&rc->done, true, __ATOMIC_RELEASE);
	return NULL;
}

int recv_chan_start(struct recv_chan *rc)
{
	int ret;

	__atomic_store_n(&rc->done, false, __ATOMIC_RELAXED);
	ret = -pthread_create(&rc->thread, NULL, ram_recv_thread, rc);
	rc->started = !ret;
	return ret;
}

void recv_chan_poll_done(struct recv_chan *rc)
{
	struct incoming *in = rc->in;
	uint64_t t0 = now_ns();

	while (in->sw.polling && in->sw.spin_ns && !__atomic_load_n(&rc->done, __ATOMIC_ACQUIRE) &&
	       now_ns() - t0 < in->sw.spin_ns)
		sched_yield();
}

void recv_chan_join(struct recv_chan *rc)
{
	if (rc->started)
		pthread_join(rc->thread, NULL);
	rc->started = false;
}
