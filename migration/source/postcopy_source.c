/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The source side of a postcopy switchover (shared/seeds/000):
 *
 *   1. pause the vCPUs; harvest the final dirty log of all memslots
 *      concurrently, each slot's bitmap zstd-compressed by the worker that
 *      harvested it (the overlap that pays off on our kernel);
 *   2. send POSTCOPY, one BITMAP record per memslot with stale pages (the
 *      target can drop stale copies slot by slot as they arrive),
 *      BITMAP_END, then the VM and vCPU state and END;
 *   3. on the target's ACK the VM runs there: the downtime ends. From now
 *      on the source's copy is the only complete one and its vCPUs never
 *      run again;
 *   4. serve page requests on the urgent connection ahead of the background
 *      push of the remaining stale pages on the data connections; a page is
 *      claimed in `sent` before it goes out either way, so no page is sent
 *      twice;
 *   5. wait for POSTCOPY_DONE: every page arrived.
 *
 * A broken connection after the ACK pauses the migration (both sides keep
 * their state) until migration_resume() reconnects; the target then sends
 * the bitmap of pages it still lacks, and steps 4-5 repeat.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <zstd.h>

#include "clock.h"
#include "migration_internal.h"
#include "vm.h"

bool postcopy_claim_page(struct migration *m, uint32_t slot, uint64_t p)
{
	uint64_t bit = 1ull << (p % 64);

	return !(__atomic_fetch_or(&m->sent[slot][p / 64], bit, __ATOMIC_ACQ_REL) & bit);
}

/* Immediate postcopy (no precopy pass yet): never-written pages are not stale. */
static int drop_unwritten(struct migration *m)
{
	for (uint32_t i = 0; i < m->vm->mem.nslots; i++) {
		struct harvest_slot *hs = &m->harvest.slots[i];
		int64_t n = slot_resident_bits(&m->vm->mem.slots[i], hs->scratch);

		if (n < 0)
			return (int)n;
		hs->npending = 0;
		for (uint64_t w = 0; w < bitmap_words(m->vm->mem.slots[i].npages); w++) {
			hs->pending[w] &= hs->scratch[w];
			hs->npending += bits_count(hs->pending[w]);
		}
	}
	return 0;
}

/*
 * One round of BITMAP records (slots with stale pages) and its BITMAP_END.
 * The preliminary round goes out while the guest runs; the final one after
 * the pause carries supersets of its bitmaps.
 */
static int send_bitmaps(struct migration *m, const struct harvest_stats *st, uint32_t flags)
{
	struct mig_bitmap_end be = {.flags = flags};
	uint64_t t0 = now_ns();
	int ret = 0;

	for (uint32_t i = 0; !ret && !m->postcopy_all && i < m->harvest.nslots; i++) {
		struct harvest_slot *hs = &m->harvest.slots[i];
		struct mig_bitmap_hdr bh = {
			.slot = i,
			.raw_len = (uint32_t)(bitmap_words(m->vm->mem.slots[i].npages) * 8),
			.data_len = (uint32_t)hs->zlen,
		};

		be.pages += hs->npending;
		if (!hs->npending)
			continue;
		ret = chan_send_record(&m->main, MIG_REC_BITMAP, &bh, sizeof(bh), hs->zbuf,
				       bh.data_len);
		be.nbitmaps++;
	}
	if (!ret)
		ret = chan_send_record(&m->main, MIG_REC_BITMAP_END, &be, sizeof(be), NULL, 0);
	if (ret) {
		migration_fail(m, ret, "sending the %s dirty bitmap: %s",
			       flags & MIG_BITMAP_END_PRELIMINARY ? "preliminary" : "final",
			       chan_strerror(ret));
		return ret;
	}
	if (flags & MIG_BITMAP_END_PRELIMINARY)
		return 0;
	pthread_mutex_lock(&m->lock);
	m->progress.bitmap_raw_bytes = st->bitmap_bytes;
	m->progress.bitmap_bytes = m->postcopy_all ? 0 : st->zbytes;
	m->progress.bitmap_send_us = (now_ns() - t0) / 1000;
	m->progress.postcopy_pages = m->postcopy_all ? m->vm->mem.size / GUEST_PAGE_SIZE : be.pages;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/*
 * Before the pause, while the guest runs: POSTCOPY, then a preliminary
 * harvest's bitmaps. The target arms userfaultfd, drops those stale pages
 * and answers POSTCOPY_ARMED; only then does the source pause, so the
 * blackout drops only what the guest dirtied in this short while.
 */
static int arm_target(struct migration *m, bool immediate)
{
	struct mig_postcopy pc = {.pass = m->progress.pass,
				  .flags = m->postcopy_all ? MIG_POSTCOPY_NO_FINAL_BITMAP : 0};
	struct harvest_stats st = {0};
	int ret = chan_send_record(&m->main, MIG_REC_POSTCOPY, &pc, sizeof(pc), NULL, 0);

	if (ret) {
		migration_fail(m, ret, "starting the postcopy switchover: %s", chan_strerror(ret));
		return ret;
	}
	/* Immediate postcopy has no precopy pass to be stale against; the baseline drops all. */
	if (!immediate && !m->postcopy_all) {
		ret = harvest_run(&m->harvest, true, &st);
		if (ret) {
			migration_fail(m, ret, "harvesting the dirty log: %s", strerror(-ret));
			return ret;
		}
	} else {
		for (uint32_t i = 0; i < m->harvest.nslots; i++)
			m->harvest.slots[i].npending = 0; /* an empty preliminary round */
	}
	ret = send_bitmaps(m, &st, MIG_BITMAP_END_PRELIMINARY);
	if (!ret)
		ret = wait_reply(m, MIG_REC_POSTCOPY_ARMED, NULL, 0,
				 "waiting for the target to arm postcopy");
	return ret;
}

/* Steps 1-3. Returns 0 once the target runs the VM. */
static int switchover(struct migration *m, uint64_t *t_pause)
{
	struct harvest_stats st;
	struct mig_ack *ack = &m->ack;
	bool immediate = m->first_pass_pending;
	uint64_t t1, t2, t3;
	int ret;

	/*
	 * Arming userfaultfd and the threads, and dropping most stale pages
	 * (~0.3 + ~0.4 ms here), happen before the pause: outside the downtime,
	 * and not competing for the CPUs with the pause and the harvest.
	 */
	ret = arm_target(m, immediate);
	if (ret)
		return ret;
	ret = blackout_begin(m, t_pause);
	if (ret)
		return ret;
	/* With no precopy pass yet, unwritten pages must leave the bitmap before it is compressed. */
	ret = harvest_run(&m->harvest, !immediate, &st);
	if (!ret && immediate && m->check_residency && !m->postcopy_all)
		ret = drop_unwritten(m);
	if (!ret && immediate)
		ret = harvest_compress(&m->harvest, &st);
	if (ret) {
		migration_fail(m, ret, "harvesting the final dirty log: %s", strerror(-ret));
		return ret;
	}
	if (m->postcopy_all)
		harvest_mark_all(&m->harvest);
	m->progress.harvest_us_final = st.wall_ns / 1000;
	t1 = now_ns();
	ret = send_bitmaps(m, &st, 0);
	t2 = now_ns();
	if (!ret)
		ret = send_state(m);
	/* The data connections stay open: they carry the push after the ACK. */
	if (!ret)
		ret = send_end(m);
	t3 = now_ns();
	if (!ret)
		ret = wait_ack(m, ack);
	if (ret)
		return ret;
	pthread_mutex_lock(&m->lock);
	m->progress.blackout_send_us = (t2 - t1) / 1000; /* the bitmap: no pages here */
	m->progress.blackout_state_us = (t3 - t2) / 1000;
	m->progress.blackout_ack_us = (now_ns() - t3) / 1000;
	record_downtime(m, *t_pause, ack);
	m->progress.target_restore_us = ack->restore_us;
	m->progress.state = MIGRATION_POSTCOPY_ACTIVE;
	snprintf(m->progress.mode_used, sizeof(m->progress.mode_used), "postcopy");
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/* Answers page requests until the connection ends. */
static void *urgent_main(void *arg)
{
	struct migration *m = arg;
	for (;;) {
		struct mig_rec_hdr h;
		struct mig_page_req rq;
		const struct memslot *slot;
		int ret = chan_recv_hdr(&m->urgent, &h, sizeof(rq));

		if (!ret && (h.type != MIG_REC_PAGE_REQ || h.len != sizeof(rq)))
			ret = -EPROTO;
		if (!ret)
			ret = chan_read(&m->urgent, &rq, sizeof(rq));
		if (!ret && (rq.slot >= m->vm->mem.nslots ||
			     rq.page >= m->vm->mem.slots[rq.slot].npages))
			ret = -EPROTO;
		if (ret) {
			if (!migration_cancelled(m))
				migration_fail(m, ret, "urgent connection: %s",
					       ret == -EPROTO ? "bad page request" : chan_strerror(ret));
			return NULL;
		}
		slot = &m->vm->mem.slots[rq.slot];
		/* Already claimed: it is on its way in the push (or was sent before a resume). */
		if (!postcopy_claim_page(m, rq.slot, rq.page))
			continue;
		{
			struct mig_pages_hdr ph = {.slot = rq.slot, .ndata = 1, .encoding = MIG_ENC_RAW,
						   .data_len = GUEST_PAGE_SIZE};
			struct mig_rec_hdr rh = {.type = MIG_REC_PAGES,
						 .len = sizeof(ph) + 4 + GUEST_PAGE_SIZE};
			uint32_t idx = rq.page;
			struct iovec iov[4] = {
				{&rh, sizeof(rh)},
				{&ph, sizeof(ph)},
				{&idx, sizeof(idx)},
				{slot->hva + (uint64_t)rq.page * GUEST_PAGE_SIZE, GUEST_PAGE_SIZE},
			};

			ret = chan_writev(&m->urgent, iov, 4);
			if (ret) {
				if (!migration_cancelled(m))
					migration_fail(m, ret, "urgent connection: %s",
						       chan_strerror(ret));
				return NULL;
			}
			__atomic_fetch_add(&m->pages_requested, 1, __ATOMIC_RELAXED);
		}
	}
}

static int wait_done(struct migration *m)
{
	struct mig_rec_hdr h;
	struct mig_postcopy_done d;
	int ret;

	/* The target may need a long time for the last pages: keepalive, no timeout. */
	chan_set_timeout(&m->main, 0);
	ret = chan_recv_hdr(&m->main, &h, sizeof(d));
	if (!ret && (h.type != MIG_REC_POSTCOPY_DONE || h.len != sizeof(d)))
		ret = -EPROTO;
	if (!ret)
		ret = chan_read(&m->main, &d, sizeof(d));
	if (ret) {
		if (!migration_cancelled(m))
			migration_fail(m, ret, "waiting for POSTCOPY_DONE: %s",
				       ret == -EPROTO ? "unexpected record" : chan_strerror(ret));
		return ret;
	}
	pthread_mutex_lock(&m->lock);
	m->progress.faults = d.faults;
	m->progress.fault_p50_us = d.fault_p50_us;
	m->progress.fault_p99_us = d.fault_p99_us;
	m->progress.fault_max_us = d.fault_max_us;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/*
 * Bulk data queued in a socket delays a page that was claimed for it: keep
 * the push's send buffers small so a requested page never waits long.
 */
static void shrink_send_buffers(struct migration *m)
{
	int size = 256 << 10;

	for (unsigned i = 0; i < m->nsenders; i++)
		setsockopt(m->senders[i].chan.fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

/* Steps 4-5 over the current connections. */
static int serve(struct migration *m)
{
	int ret;

	m->cancel = false;
	ret = -pthread_create(&m->urgent_thread, NULL, urgent_main, m);
	if (ret) {
		migration_fail(m, ret, "starting the urgent thread: %s", strerror(-ret));
		return ret;
	}
	m->urgent_started = true;
	team_run(&m->send_team, false);
	ret = migration_cancelled(m) ? -ECONNRESET : 0;
	for (unsigned i = 0; !ret && i < m->nsenders; i++)
		ret = m->senders[i].error;
	if (!ret)
		ret = end_data_channels(m);
	if (!ret)
		ret = wait_done(m);
	/* Done or broken: either way the urgent connection is over. */
	__atomic_store_n(&m->cancel, true, __ATOMIC_RELAXED);
	chan_abort(&m->urgent);
	pthread_join(m->urgent_thread, NULL);
	m->urgent_started = false;
	return ret;
}

static void close_channels(struct migration *m)
{
	chan_close(&m->main);
	chan_close(&m->urgent);
	for (unsigned i = 0; i < m->nsenders; i++) {
		chan_close(&m->senders[i].chan);
		m->senders[i].error = 0;
		m->senders[i].records = 0;
	}
}

/* Reads the target's bitmap of pages it still lacks into pending; unclaims them. */
static int read_missing(struct migration *m)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	uint32_t nbitmaps = 0;
	int ret = d ? 0 : -ENOMEM;

	for (uint32_t i = 0; i < m->harvest.nslots; i++) {
		memset(m->harvest.slots[i].pending, 0,
		       bitmap_words(m->vm->mem.slots[i].npages) * 8);
		m->harvest.slots[i].npending = 0;
	}
	while (!ret) {
		struct mig_rec_hdr h;
		struct mig_bitmap_hdr bh;
		struct harvest_slot *hs;
		size_t raw;

		ret = chan_recv_hdr(&m->main, &h, MIG_VM_DESC_MAX);
		if (ret)
			break;
		if (h.type == MIG_REC_BITMAP_END && h.len == sizeof(struct mig_bitmap_end)) {
			struct mig_bitmap_end be;
			uint64_t pages = 0;

			ret = chan_read(&m->main, &be, sizeof(be));
			for (uint32_t i = 0; i < m->harvest.nslots; i++)
				pages += m->harvest.slots[i].npending;
			if (!ret && (be.nbitmaps != nbitmaps || be.pages != pages))
				ret = -EPROTO;
			break;
		}
		if (h.type != MIG_REC_BITMAP || h.len < sizeof(bh)) {
			ret = -EPROTO;
			break;
		}
		ret = chan_read(&m->main, &bh, sizeof(bh));
		if (ret)
			break;
		if (bh.slot >= m->harvest.nslots ||
		    bh.raw_len != bitmap_words(m->vm->mem.slots[bh.slot].npages) * 8 ||
		    bh.data_len != h.len - sizeof(bh) || bh.data_len > m->harvest.slots[bh.slot].zcap) {
			ret = -EPROTO;
			break;
		}
		hs = &m->harvest.slots[bh.slot];
		ret = chan_read(&m->main, hs->zbuf, bh.data_len);
		if (ret)
			break;
		raw = ZSTD_decompressDCtx(d, hs->pending, bh.raw_len, hs->zbuf, bh.data_len);
		if (ZSTD_isError(raw) || raw != bh.raw_len) {
			ret = -EPROTO;
			break;
		}
		/* A bit past the slot's last page would make us read past guest RAM. */
		{
			uint64_t np = m->vm->mem.slots[bh.slot].npages;

			if (np % 64 && hs->pending[bh.raw_len / 8 - 1] >> (np % 64)) {
				ret = -EPROTO;
				break;
			}
		}
		nbitmaps++;
		for (uint64_t w = 0; w < bh.raw_len / 8; w++) {
			/* Lost in flight when the connection broke: send again. */
			__atomic_fetch_and(&m->sent[bh.slot][w], ~hs->pending[w], __ATOMIC_RELAXED);
			hs->npending += bits_count(hs->pending[w]);
		}
	}
	ZSTD_freeDCtx(d);
	return ret;
}

/* Waits for migration_resume(), reconnects, and learns what the target lacks. */
static int reconnect(struct migration *m)
{
	int ret;

	for (;;) {
		pthread_mutex_lock(&m->lock);
		m->progress.state = MIGRATION_POSTCOPY_PAUSED;
		while (!m->resume_requested)
			pthread_cond_wait(&m->resume_cond, &m->lock);
		m->resume_requested = false;
		m->progress.resumes++;
		m->progress.error[0] = '\0';
		m->progress.state = MIGRATION_POSTCOPY_ACTIVE;
		pthread_mutex_unlock(&m->lock);

		close_channels(m);
		m->cancel = false;
		ret = connect_all(m, MIG_ROLE_MAIN_RESUME);
		if (!ret)
			shrink_send_buffers(m);
		if (!ret) {
			ret = read_missing(m);
			if (ret)
				migration_fail(m, ret, "reading the target's missing pages: %s",
					       ret == -EPROTO ? "malformed BITMAP" : chan_strerror(ret));
		}
		if (!ret)
			return 0;
		close_channels(m);
	}
}

static void cut_all(void *arg)
{
	struct migration *m = arg;

	chan_abort(&m->main);
	chan_abort(&m->urgent);
	for (unsigned i = 0; i < m->nsenders; i++)
		chan_abort(&m->senders[i].chan);
}

int postcopy_source_run(struct migration *m, uint64_t *t_pause)
{
	uint64_t t_switch;
	int ret;

	m->postcopy_all = m->params.no_final_bitmap;
	m->sent = calloc(m->vm->mem.nslots, sizeof(*m->sent));
	for (uint32_t i = 0; m->sent && i < m->vm->mem.nslots; i++) {
		m->sent[i] = calloc(bitmap_words(m->vm->mem.slots[i].npages), 8);
		if (!m->sent[i])
			return -ENOMEM;
	}
	if (!m->sent)
		return -ENOMEM;
	ret = switchover(m, t_pause);
	if (ret)
		return ret; /* before the ACK: the caller resumes the VM here */
	t_switch = *t_pause;
	m->postcopy = true;
	shrink_send_buffers(m);
	/* Test hook: the network fails in the middle of the push. */
	if (m->hooks.fault == TEST_FAULT_CUT_POSTCOPY)
		test_hook_watch_start(&m->cut_watch, &m->pages_pushed, 2048, cut_all, m);
	for (;;) {
		ret = serve(m);
		if (!ret)
			break;
		/* From here the only way forward is a resume: the guest runs on the target. */
		ret = reconnect(m);
		if (ret)
			return ret;
	}
	test_hook_watch_stop(&m->cut_watch);
	pthread_mutex_lock(&m->lock);
	m->progress.all_arrived_ms = (now_ns() - t_switch) / 1000000;
	m->progress.pages_requested = __atomic_load_n(&m->pages_requested, __ATOMIC_RELAXED);
	m->progress.pages_pushed = __atomic_load_n(&m->pages_pushed, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&m->lock);
	return 0;
}
