/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POSTCOPY_ACTIVE / POSTCOPY_PAUSED: after the postcopy switchover's ACK
 * the VM runs on the target and the source holds the only copy of the
 * stale pages, so this phase cannot fail, only pause:
 *
 *   4. serve page requests on the urgent connection (the urgent thread)
 *      ahead of the background push of the remaining stale pages on the
 *      data connections (the senders); a page is claimed in `sent` before
 *      it goes out either way, so no page is sent twice;
 *   5. wait for POSTCOPY_DONE: every page arrived (postcopy_done.c).
 *
 * A broken connection pauses the migration (both sides keep their state)
 * until migration_resume() reconnects; the target then sends the bitmap of
 * pages it still lacks (postcopy_missing.c), those are unclaimed, and
 * steps 4-5 repeat.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "clock.h"
#include "codec.h"
#include "deadline.h"
#include "phases.h"
#include "test_faults.h"
#include "vm.h"

/* Sends page `rq` on the urgent connection, raw, as a one-page PAGES record. */
static int send_requested(struct migration *m, const struct mig_page_req *rq)
{
	const struct memslot *slot = &vm_mem(m->vm)->slots[rq->slot];
	struct mig_pages_hdr ph = {
	    .slot = rq->slot, .ndata = 1, .encoding = MIG_ENC_RAW, .data_len = GUEST_PAGE_SIZE};
	uint8_t frame[PAGES_FRAME_LEN];
	uint32_t idx = rq->page; /* the index array: one little-endian uint32 */
	struct iovec iov[3] = {
	    {frame, sizeof(frame)},
	    {&idx, sizeof(idx)},
	    {slot->hva + (uint64_t)rq->page * GUEST_PAGE_SIZE, GUEST_PAGE_SIZE},
	};

	pages_frame(frame, &ph);
	return chan_writev(&m->pc.urgent, iov, 3);
}

/* The next PAGE_REQ on the urgent connection, bounded by the table and checked against the VM. */
static int recv_request(struct migration *m, struct mig_page_req *rq, char *err, size_t errlen)
{
	uint8_t buf[MIG_PAGE_REQ_LEN];
	struct mig_rec_hdr h;
	int ret;

	/* The table lets only PAGE_REQ (fixed size) reach us on urgent. */
	ret = chan_recv_record(&m->pc.urgent, 0, &h, buf, sizeof(buf), err, errlen);
	if (!ret)
		ret = mig_page_req_decode(buf, h.len, rq, err, errlen);
	if (!ret && (rq->slot >= vm_mem(m->vm)->nslots ||
		     rq->page >= vm_mem(m->vm)->slots[rq->slot].npages)) {
		snprintf(err, errlen, "page %u of slot %u is outside the guest", rq->page,
			 rq->slot);
		ret = -EPROTO;
	}
	return ret;
}

/* The urgent thread: answers page requests until the connection ends. */
static void *urgent_main(void *arg)
{
	struct migration *m = arg;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_URGENT, vm_config(m->vm)->seccomp);
	for (;;) {
		struct mig_page_req rq;
		char err[256];
		int ret = recv_request(m, &rq, err, sizeof(err));

		if (ret) {
			if (!migration_cancelled(m) && ret == -EPROTO)
				migration_fail(m, ret, "urgent connection: bad page request (%s)",
					       err);
			else if (!migration_cancelled(m))
				migration_fail(m, ret, "urgent connection: %s", err);
			return NULL;
		}
		/* Already claimed: it is on its way in the push (or was sent before a resume). */
		if (!claim_page(m, rq.slot, rq.page))
			continue;
		ret = send_requested(m, &rq);
		if (ret) {
			if (!migration_cancelled(m))
				migration_fail(m, ret, "urgent connection: %s", chan_strerror(ret));
			return NULL;
		}
		__atomic_fetch_add(&m->pc.pages_requested, 1, __ATOMIC_RELAXED);
	}
}

/*
 * Bulk data queued in a socket delays a page that was claimed for it: keep
 * the push's send buffers small so a requested page never waits long.
 */
static void shrink_send_buffers(struct migration *m)
{
	int size = 256 << 10;

	for (unsigned i = 0; i < m->connections; i++)
		setsockopt(m->senders[i].chan.fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

int postcopy_urgent_start(struct migration *m)
{
	int ret;

	if (m->pc.urgent_started)
		return 0;
	/*
	 * A guest may touch no missing page for a long while: a quiet urgent
	 * connection is no failure (it kept the connect timeout until now). A
	 * dead target still shows: the push's sends time out, then everything
	 * is aborted.
	 */
	chan_set_timeout(&m->pc.urgent, 0);
	ret = -pthread_create(&m->pc.urgent_thread, NULL, urgent_main, m);
	if (ret) {
		migration_fail(m, ret, "starting the urgent thread: %s", strerror(-ret));
		return ret;
	}
	m->pc.urgent_started = true;
	return 0;
}

void postcopy_urgent_stop(struct migration *m)
{
	bool was = __atomic_load_n(&m->cancel, __ATOMIC_RELAXED);

	if (!m->pc.urgent_started)
		return;
	/* Cancelled first: the thread's failing read is then no failure to report. */
	__atomic_store_n(&m->cancel, true, __ATOMIC_RELAXED);
	chan_abort(&m->pc.urgent);
	pthread_join(m->pc.urgent_thread, NULL);
	m->pc.urgent_started = false;
	__atomic_store_n(&m->cancel, was, __ATOMIC_RELAXED);
}

/* Steps 4-5 over the current connections; non-zero when they broke. */
static int serve(struct migration *m)
{
	int ret;

	__atomic_store_n(&m->cancel, false, __ATOMIC_RELAXED);
	/* Started at END already, unless a resume reconnected since. */
	ret = postcopy_urgent_start(m);
	if (ret)
		return ret;
	/* The push: the senders' team over the stale pages, claiming each. */
	team_run(&m->send_team, false);
	ret = migration_cancelled(m) ? -ECONNRESET : 0;
	for (unsigned i = 0; !ret && i < m->connections; i++)
		ret = m->senders[i].error;
	if (!ret)
		ret = end_data_channels(m);
	if (!ret)
		ret = postcopy_wait_done(m);
	/* Done or broken: either way the urgent connection is over. */
	postcopy_urgent_stop(m);
	__atomic_store_n(&m->cancel, true, __ATOMIC_RELAXED);
	return ret;
}

/* Every connection of the session; keep_main: all but main. */
static void close_channels(struct migration *m, bool keep_main)
{
	if (!keep_main)
		chan_close(&m->main);
	chan_close(&m->pc.urgent);
	for (unsigned i = 0; i < m->connections; i++) {
		chan_close(&m->senders[i].chan);
		m->senders[i].error = 0;
		m->senders[i].records = 0;
	}
}

/*
 * Waits for migration_resume(), reconnects, and learns what the target
 * lacks. 1: the operator resumed the VM here instead (migration_recover, only
 * while no resume ever reached a target that may never have run).
 */
static int reconnect(struct migration *m)
{
	char err[256];
	int ret;

	for (;;) {
		pthread_mutex_lock(&m->lock);
		m->progress.state = MIGRATION_POSTCOPY_PAUSED;
		while (!m->pc.resume_requested)
			pthread_cond_wait(&m->pc.resume_cond, &m->lock);
		m->pc.resume_requested = false;
		if (m->commit.recover_resume_here) {
			char to[256];

			snprintf(to, sizeof(to), "%s",
				 m->commit.recover_to[0] ? m->commit.recover_to : m->params.to);
			/* Refused once a RESUME went out (it may run there): stays paused. */
			if (commit_fsm_step(&m->commit.fsm, COMMIT_EV_OPERATOR_RESUME) !=
			    COMMIT_ACT_OVERRIDE) {
				m->commit.recover_resume_here = false;
				pthread_mutex_unlock(&m->lock);
				continue;
			}
			pthread_mutex_unlock(&m->lock);
			commit_override(m, to);
			return 1;
		}
		m->progress.resumes++;
		/* A new attempt: the last one's failure no longer stands. */
		m->error = 0;
		m->progress.error[0] = '\0';
		m->progress.state = MIGRATION_POSTCOPY_ACTIVE;
		pthread_mutex_unlock(&m->lock);

		close_channels(m, false);
		__atomic_store_n(&m->cancel, false, __ATOMIC_RELAXED);
		err[0] = '\0';
		m->pc.attempt++; /* in every hello of this attempt: the target tells them apart */
		ret = connect_main(m, MIG_ROLE_MAIN_RESUME);
		/*
		 * We committed long ago: this attempt's own proof opens the session
		 * (to a waiting target it is the COMMIT).
		 */
		if (!ret)
			ret = commit_resume_send(m, &m->main, m->pc.attempt, err, sizeof(err));
		if (!ret)
			ret = connect_data(m, MIG_ROLE_MAIN_RESUME);
		if (!ret)
			shrink_send_buffers(m);
		if (!ret) {
			/*
			 * The target answers once it has noticed that the old session
			 * is gone (our close just now) and joined its receivers: on a
			 * loaded host that can take longer than a connect.
			 */
			chan_set_timeout(&m->main, 3 * m->params.timeout_ms);
			/* The whole bitmap within 3T: one deadline, however it trickles. */
			chan_set_deadline(&m->main,
					  deadline_at(now_ns(), 3 * m->params.timeout_ms));
			ret = postcopy_read_missing(m, err, sizeof(err));
			chan_set_deadline(&m->main, 0);
			if (ret)
				migration_fail(m, ret, "reading the target's missing pages: %s",
					       err);
		}
		if (!ret) {
			pthread_mutex_lock(&m->lock);
			m->commit.resumed_once = true;
			pthread_mutex_unlock(&m->lock);
			return 0;
		}
		/*
		 * Paused again, saying why: a refusal's ERROR when the target sent
		 * one (a busy gate closes at once, so our COMMIT may be what fails).
		 */
		if (!migration_error(m))
			migration_fail(m, ret, "resuming: %s", err[0] ? err : chan_strerror(ret));
		close_channels(m, false);
	}
}

/*
 * The test hook's fire function: the network fails in the middle of the
 * push. The push ran slowed down until now (see postcopy_serve()); the
 * resumed one runs at the user's rate again.
 */
static void cut_all(void *arg)
{
	struct migration *m = arg;

	session_abort_channels(m);
	ratelimit_set(&m->rl, m->params.max_bandwidth);
}

/* The cut lands near this many pushed pages: early in any guest's working set. */
#define CUT_AFTER_PAGES 2048
/*
 * While the hook waits, the push runs at this rate: the cut comes ~60 ms
 * after the ACK, and a watcher woken 100 ms late (it polls every
 * millisecond) adds ~13000 pages. The test guest's working set (256 MiB)
 * is larger than what either path can deliver by then: the push, or the
 * urgent connection (never limited) answering the guest's faults.
 */
#define CUT_PUSH_RATE (128u << 20)

/* The step hook's fire function: stop like a source frozen late in the push. */
static void stop_late(void *arg)
{
	struct migration *m = arg;

	test_hook_step(&m->hooks, TEST_STEP_SOURCE_POSTCOPY_LATE);
}

int postcopy_serve(struct migration *m, uint64_t t_switch)
{
	uint64_t stale;

	/* The VM runs on the target: from here the bytes are postcopy's, the phase the push. */
	progress_postcopy_begin(m);
	pthread_mutex_lock(&m->lock);
	stale = m->progress.postcopy_pages;
	pthread_mutex_unlock(&m->lock);
	progress_phase_begin(m, stale);
	m->pc.active = true;
	shrink_send_buffers(m);
	if (m->hooks.stop_at == TEST_STEP_SOURCE_POSTCOPY_LATE)
		test_hook_watch_start(&m->commit.stop_watch, &m->pc.pages_pushed, CUT_AFTER_PAGES,
				      stop_late, m);
	/*
	 * No COMMITTED: the target may be running or still waiting. Either way
	 * only a resume goes on (to a waiting target it is the COMMIT).
	 */
	if (m->commit.unconfirmed) {
		postcopy_urgent_stop(m);
		/*
		 * Main stays open until the resume replaces it: should the
		 * operator take the VM back instead, its proven ABORT goes out
		 * on it after the COMMIT, and a target that only stalled reads
		 * both when it continues (commit_override), as in precopy.
		 */
		close_channels(m, true);
		if (reconnect(m)) {
			test_hook_watch_stop(&m->commit.stop_watch);
			return 1;
		}
	}
	test_hook_step(&m->hooks, TEST_STEP_SOURCE_POSTCOPY_EARLY);
	if (test_fault_on(&m->hooks, TEST_FAULT_CUT_POSTCOPY)) {
		ratelimit_set(&m->rl, CUT_PUSH_RATE);
		test_hook_watch_start(&m->pc.cut_watch, &m->pc.pages_pushed, CUT_AFTER_PAGES,
				      cut_all, m);
	}
	/* After a broken connection only a resume goes on: the guest runs on the target. */
	while (serve(m))
		reconnect(m); /* resume_here is refused once a resume reached the target */
	test_hook_watch_stop(&m->pc.cut_watch);
	test_hook_watch_stop(&m->commit.stop_watch);
	progress_phase_end(m);
	pthread_mutex_lock(&m->lock);
	m->progress.all_arrived_ms = (now_ns() - t_switch) / 1000000;
	m->progress.pages_requested = __atomic_load_n(&m->pc.pages_requested, __ATOMIC_RELAXED);
	m->progress.pages_pushed = __atomic_load_n(&m->pc.pages_pushed, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&m->lock);
	return 0;
}
