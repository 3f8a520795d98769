/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SWITCHOVER the postcopy way, up to the commit. While the guest runs:
 * POSTCOPY and a preliminary round of bitmaps (the target arms outside the
 * downtime). Then pause; the final concurrent harvest, each slot's bitmap
 * zstd-compressed by the worker that harvested it; one BITMAP per slot
 * with stale pages, BITMAP_END, the state, END; page requests are served
 * from then on (the target loads the state); the commit (commit.c).
 * Without COMMITTED the serve starts paused: the resume that settles it is
 * a COMMIT to a target still waiting. Why the final bitmap, and what each
 * step costs: docs/architecture.md, "Postcopy".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "codec.h"
#include "phases.h"
#include "vm.h"

/* Immediate postcopy (no precopy pass yet): never-written pages are not stale. */
static int drop_unwritten(struct migration *m)
{
	const struct guest_mem *ram = vm_mem(m->vm);

	for (uint32_t i = 0; i < ram->nslots; i++) {
		struct harvest_slot *hs = &m->harvest.slots[i];
		int64_t n = slot_resident_bits(&ram->slots[i], hs->scratch);

		if (n < 0)
			return (int)n;
		hs->npending = 0;
		for (uint64_t w = 0; w < bitmap_words(ram->slots[i].npages); w++) {
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
	uint8_t beb[MIG_BITMAP_END_LEN];
	uint64_t t0 = now_ns();
	char err[256];
	int ret = 0;

	for (uint32_t i = 0; !ret && !m->pc.all_stale && i < m->harvest.nslots; i++) {
		struct harvest_slot *hs = &m->harvest.slots[i];
		struct mig_bitmap_hdr bh = {
		    .slot = i,
		    .raw_len = (uint32_t)mig_bitmap_raw_len(vm_mem(m->vm)->slots[i].npages),
		    .data_len = (uint32_t)hs->zlen,
		};
		uint8_t bhb[MIG_BITMAP_HDR_LEN];

		be.pages += hs->npending;
		if (!hs->npending)
			continue;
		/* The zstd frame of the slot's words: little endian as they are (protocol.h). */
		mig_bitmap_hdr_encode(bhb, &bh);
		ret = send_rec(&m->main, MIG_REC_BITMAP, bhb, sizeof(bhb), hs->zbuf, bh.data_len,
			       err, sizeof(err));
		be.nbitmaps++;
	}
	if (!ret) {
		mig_bitmap_end_encode(beb, &be);
		ret = send_rec(&m->main, MIG_REC_BITMAP_END, beb, sizeof(beb), NULL, 0, err,
			       sizeof(err));
	}
	if (ret) {
		migration_fail(m, ret, "sending the %s dirty bitmap: %s",
			       flags & MIG_BITMAP_END_PRELIMINARY ? "preliminary" : "final", err);
		return ret;
	}
	if (flags & MIG_BITMAP_END_PRELIMINARY)
		return 0;
	pthread_mutex_lock(&m->lock);
	m->progress.bitmap_raw_bytes = st->bitmap_bytes;
	m->progress.bitmap_bytes = m->pc.all_stale ? 0 : st->zbytes;
	m->progress.bitmap_send_us = (now_ns() - t0) / 1000;
	m->progress.postcopy_pages =
	    m->pc.all_stale ? vm_mem(m->vm)->size / GUEST_PAGE_SIZE : be.pages;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/*
 * Step 0, before the pause, while the guest runs: POSTCOPY, then a
 * preliminary harvest's bitmaps. The target arms userfaultfd, drops those
 * stale pages and answers POSTCOPY_ARMED; only then does the source pause,
 * so the blackout drops only what the guest dirtied in this short while.
 */
static int arm_target(struct migration *m, bool immediate)
{
	struct mig_postcopy pc = {.pass = m->pass,
				  .flags = m->pc.all_stale ? MIG_POSTCOPY_NO_FINAL_BITMAP : 0};
	struct harvest_stats st = {0};
	uint8_t pcb[MIG_POSTCOPY_LEN], reply[REPLY_MAX];
	char err[256];
	uint32_t len;
	int ret;

	mig_postcopy_encode(pcb, &pc);
	ret = send_rec(&m->main, MIG_REC_POSTCOPY, pcb, sizeof(pcb), NULL, 0, err, sizeof(err));
	if (ret) {
		migration_fail(m, ret, "starting the postcopy switchover: %s", err);
		return ret;
	}
	/* Immediate postcopy has no precopy pass to be stale against; the baseline drops all. */
	if (!immediate && !m->pc.all_stale) {
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
		ret = wait_reply(m, MIG_REC_POSTCOPY_ARMED, reply, &len,
				 "waiting for the target to arm postcopy"); /* no payload */
	return ret;
}

/* Step 1 after the pause: the final stale set, compressed per slot. */
static int final_harvest(struct migration *m, bool immediate, struct harvest_stats *st)
{
	/* No precopy pass yet: unwritten pages leave the bitmap before it is compressed. */
	int ret = harvest_run(&m->harvest, !immediate, st);

	if (!ret && immediate && m->check_residency && !m->pc.all_stale)
		ret = drop_unwritten(m);
	if (!ret && immediate)
		ret = harvest_compress(&m->harvest, st);
	if (ret) {
		migration_fail(m, ret, "harvesting the final dirty log: %s", strerror(-ret));
		return ret;
	}
	if (m->pc.all_stale)
		harvest_mark_all(&m->harvest);
	pthread_mutex_lock(&m->lock);
	m->progress.harvest_final_us = st->wall_ns / 1000;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int postcopy_switchover(struct migration *m, uint64_t *t_pause)
{
	struct harvest_stats st;
	struct mig_committed *ack = &m->commit.ack;
	bool immediate = m->first_pass_pending;
	struct mig_prepared prep;
	char err[256] = "";
	uint64_t t1, t2, t3;
	int ret;

	m->pc.all_stale = m->params.no_final_bitmap;
	m->pc.switching = true;
	/* Allocated now: after COMMIT nothing may fail for want of memory. */
	ret = claim_init(m);
	if (ret) {
		migration_fail(m, ret, "starting postcopy: %s", strerror(-ret));
		return ret;
	}
	/*
	 * Arming userfaultfd and the threads, and dropping most stale pages
	 * (~0.3 + ~0.4 ms here), happen before the pause: outside the downtime,
	 * and not competing for the CPUs with the pause and the harvest.
	 */
	ret = arm_target(m, immediate);
	if (!ret)
		ret = blackout_begin(m, t_pause);
	if (!ret)
		test_hook_step(&m->hooks, TEST_STEP_SOURCE_PAUSED);
	if (!ret)
		ret = final_harvest(m, immediate, &st);
	if (ret)
		return ret;
	t1 = now_ns();
	ret = send_bitmaps(m, &st, 0);
	t2 = now_ns();
	if (!ret)
		ret = send_state(m);
	/* The data connections stay open: they carry the push after the ACK. */
	if (!ret)
		ret = send_end(m);
	t3 = now_ns();
	/* The target may fault on stale pages while it loads the state. */
	if (!ret)
		ret = postcopy_urgent_start(m);
	if (!ret)
		ret = commit_wait_prepared(m, &prep);
	if (ret) {
		postcopy_urgent_stop(m);
		return ret;
	}
	/* Never fails from here on: COMMIT is the decision, whether or not it arrives. */
	ret = commit_decide(m, ack, err, sizeof(err));
	if (ret == COMMIT_DISCARDED)
		ret = -ECANCELED; /* paused: its operator may resume it here (recover) */
	/* A late COMMIT (the target stalled) was RELEASEd in commit_decide(): commit_fsm.c. */
	pthread_mutex_lock(&m->lock);
	m->progress.blackout_send_us = (t2 - t1) / 1000; /* the bitmap: no pages here */
	m->progress.blackout_state_us = (t3 - t2) / 1000;
	m->progress.blackout_ack_us = (now_ns() - t3) / 1000;
	blackout_record_waits(m);
	m->progress.target_restore_us = prep.restore_us;
	if (!ret)
		record_downtime(m, *t_pause, ack);
	m->progress.state = MIGRATION_POSTCOPY_ACTIVE;
	snprintf(m->progress.mode_used, sizeof(m->progress.mode_used), "%s",
		 MIGRATION_USED_POSTCOPY);
	if (ret)
		snprintf(m->progress.error, sizeof(m->progress.error),
			 "switchover outcome unknown (%.150s): `vmm migrate --resume` "
			 "settles it",
			 err);
	pthread_mutex_unlock(&m->lock);
	m->commit.unconfirmed = ret != 0;
	return 0;
}
