/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control thread of the target's postcopy, from POSTCOPY to the stop.
 * The threads below it only change pc_state and write its wake_fd; this
 * thread acts on what they report:
 *
 *   - complete: once the vCPUs run and the last missing page is in place,
 *     POSTCOPY_DONE to the source with the statistics, userfaultfd
 *     unregistered (which wakes anything still blocked: every page is in
 *     place), the fault thread told to end.
 *   - monitor: once the vCPUs run, the main connection is watched. Before
 *     DONE, EOF or an error means the source is gone: a lost connection.
 *     After DONE the source answers RELEASE and exits: the migration is
 *     finished. Main failing between DONE and RELEASE means DONE may be
 *     lost: the source's resume then gets an empty missing bitmap and DONE
 *     again (resume_after_done).
 *   - resume: a lost connection (any thread's pc_mark_lost) leaves faulting
 *     vCPUs waiting (the guest never sees stale memory) and keeps
 *     everything. This thread aborts every connection, joins the
 *     receivers, accepts the source's reconnection on the listening
 *     socket, sends the bitmap of pages still missing, restarts the
 *     receivers and re-sends outstanding requests. A loss before the vCPUs
 *     run only aborts the connections: the main thread's reads (or the
 *     ACK) then fail the migration, and the source resumes the VM itself.
 *
 * Completion and resume run only here, so they never race each other.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zstd.h>

#include "bitmap.h"
#include "clock.h"
#include "codec.h"
#include "deadline.h"
#include "incoming.h"
#include "postcopy.h"
#include "proof.h"
#include "uffd.h"
#include "vm.h"

#define ACCEPT_RETRY_MS 100

struct pc_control {
	pthread_t thread;
	bool started;	 /* main thread at arm; postcopy_incoming_stop joins */
	bool aborted;	 /* this thread's: connections aborted for the pause being handled */
	bool monitoring; /* this thread's: watching main for the source's EOF */
	bool finished;	 /* atomic: the source released us after DONE */
	/* this thread's: POSTCOPY_DONE went out (kept to send again after a resume) */
	bool done_sent;
	bool redo;	       /* main broke after DONE and before RELEASE: DONE may be lost */
	bool released;	       /* PC_ACT_RELEASED: the source's EOF (its exit) ends it */
	uint64_t next_beat_ns; /* this thread's: the next HEARTBEAT while monitoring */
	uint8_t done[MIG_POSTCOPY_DONE_LEN];
};

static void complete(struct incoming *in)
{
	struct guest_mem *mem = vm_mem(in->vm);
	struct pc_control *c = in->post.ctl;
	struct mig_postcopy_done d;

	if (!pc_take_completion(&in->pc, &d))
		return;
	/* Unregistering wakes anything still blocked; every page is in place now. */
	uffd_unregister(in->pc.uffd, mem->base, mem->size);
	pc_fault_quit(in);
	mig_postcopy_done_encode(c->done, &d);
	c->done_sent = true;
	incoming_send_main(in, MIG_REC_POSTCOPY_DONE, c->done, sizeof(c->done), NULL, 0);
}

static void abort_connections(struct incoming *in)
{
	chan_abort(&in->main);
	chan_abort(&in->post.urgent.chan);
	for (unsigned i = 0; i < in->connections; i++)
		chan_abort(&in->chans[i].chan);
}

/* Ends the old session: receivers joined, connections closed, counters reset. */
static void close_connections(struct incoming *in)
{
	abort_connections(in);
	for (unsigned i = 0; i < in->connections; i++) {
		struct recv_chan *rc = &in->chans[i];

		recv_chan_join(rc);
		chan_close(&rc->chan);
		rc->error = 0;
		rc->records = 0;
		rc->ended = false;
		rc->synced = 0;
	}
	recv_chan_join(&in->post.urgent);
	pthread_mutex_lock(&in->post.urgent_wlock);
	chan_close(&in->post.urgent.chan);
	pthread_mutex_unlock(&in->post.urgent_wlock);
	in->post.urgent.error = 0;
	pthread_mutex_lock(&in->main_wlock);
	chan_close(&in->main);
	pthread_mutex_unlock(&in->main_wlock);
}

/* Sends the bitmap of pages still missing, slot by slot, then BITMAP_END. */
static int send_missing(struct incoming *in)
{
	struct pc_state *ps = &in->pc;
	struct mig_bitmap_end be = {0};
	int ret = 0;

	for (uint32_t i = 0; !ret && i < vm_mem(in->vm)->nslots; i++) {
		uint64_t words = pc_slot_words(ps, i), n = 0;
		size_t cap = ZSTD_compressBound(words * 8), z;
		uint64_t *copy = malloc(words * 8);
		void *buf = malloc(cap);

		if (!copy || !buf) {
			free(copy);
			free(buf);
			return -ENOMEM;
		}
		for (uint64_t w = 0; w < words; w++) {
			copy[w] = __atomic_load_n(&ps->missing[i][w], __ATOMIC_ACQUIRE);
			n += bits_count(copy[w]);
		}
		if (n) {
			struct mig_bitmap_hdr bh = {.slot = i, .raw_len = (uint32_t)(words * 8)};
			uint8_t hdr[MIG_BITMAP_HDR_LEN];

			/* The words are little endian, as on the wire (protocol.h). */
			z = ZSTD_compress(buf, cap, copy, words * 8, 1);
			if (ZSTD_isError(z)) {
				ret = -EIO;
			} else {
				bh.data_len = (uint32_t)z;
				mig_bitmap_hdr_encode(hdr, &bh);
				ret = incoming_send_main(in, MIG_REC_BITMAP, hdr, sizeof(hdr), buf,
							 bh.data_len);
				be.nbitmaps++;
				be.pages += n;
			}
		}
		free(copy);
		free(buf);
	}
	if (!ret) {
		uint8_t b[MIG_BITMAP_END_LEN];

		mig_bitmap_end_encode(b, &be);
		ret = incoming_send_main(in, MIG_REC_BITMAP_END, b, sizeof(b), NULL, 0);
	}
	return ret;
}

/*
 * One resume: the old session closed, a new one accepted and running.
 * -errno only when the listening socket failed.
 */
static int resume(struct incoming *in)
{
	for (;;) {
		int ret;

		close_connections(in);
		ret = incoming_accept_resume(in);
		if (ret)
			return ret;
		ret = send_missing(in);
		pc_resumed(&in->pc, ret == 0);
		if (ret)
			continue;
		/*
		 * Not paused any more before the receivers start: a failure of the
		 * new session is then a new loss, never one reported while paused
		 * (and so dropped).
		 */
		for (unsigned i = 0; i <= in->connections; i++) {
			struct recv_chan *rc =
			    i < in->connections ? &in->chans[i] : &in->post.urgent;

			if (recv_chan_start(rc))
				pc_mark_lost(&in->pc,
					     "starting a receiver after the resume failed");
		}
		/* Requests lost with the old connection: ask again for what vCPUs wait on. */
		pc_fault_rerequest(in);
		return 0;
	}
}

/*
 * After DONE: the source's RELEASE says it has DONE and lets go. Main
 * failing first means DONE may be lost: keep listening for a resume, which
 * gets an empty missing bitmap and DONE again.
 */
static void watch_release(struct incoming *in)
{
	struct pc_control *c = in->post.ctl;
	struct mig_rec_hdr h;
	uint8_t b[MIG_SIG_LEN];
	char err[128];
	int ret;

	/*
	 * Main is readable: the record ends within MIG_HEARTBEAT_DEAD_MS,
	 * whole, or main is lost. A peer trickling it would otherwise hold
	 * this thread (and the heartbeats and a resume) without end.
	 */
	chan_set_deadline(&in->main, deadline_at(now_ns(), MIG_HEARTBEAT_DEAD_MS));
	ret = chan_recv_record(&in->main, MIG_SIG_LEN, &h, b, sizeof(b), err, sizeof(err));
	chan_set_deadline(&in->main, 0);

	if (!ret) {
		/* Then the source's exit: only then is its API socket path ours to take. */
		if (h.type == MIG_REC_RELEASE &&
		    incoming_proof_ok(in, &in->main, MIG_DECIDE_RELEASE, 0, b, h.len) &&
		    pc_after_done(&in->pc, PC_EV_RELEASE) == PC_ACT_RELEASED)
			c->released = true;
		return;
	}
	c->monitoring = false;
	switch (pc_after_done(&in->pc, PC_EV_MAIN_ENDED)) {
	case PC_ACT_FINISH:
		__atomic_store_n(&c->finished, true, __ATOMIC_RELEASE);
		break;
	case PC_ACT_REDO_DONE:
		c->redo = true;
		pc_wake(&in->pc);
		break;
	default:
		break;
	}
}

/* The main connection is readable: before DONE anything but EOF or an error is ignored. */
static void watch_main(struct incoming *in)
{
	struct pc_control *c = in->post.ctl;
	char b;
	ssize_t n;

	if (c->done_sent) {
		watch_release(in);
		return;
	}
	/*
	 * Raw bytes, even under TLS: the source sends nothing on this
	 * connection before DONE (a resume brings a new one). The socket is
	 * non-blocking under TLS.
	 */
	n = recv(in->main.fd, &b, 1, MSG_DONTWAIT);
	if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN)))
		return; /* nothing is expected here */
	c->monitoring = false;
	pc_mark_lost(&in->pc, "the main connection closed before every page arrived");
}

/*
 * DONE went out but RELEASE never came: accept the source's resume, tell
 * it that nothing is missing, let its data connections end, send DONE
 * again. -errno only when the listening socket failed.
 */
static int resume_after_done(struct incoming *in)
{
	struct pc_control *c = in->post.ctl;
	int ret;

	for (;;) {
		close_connections(in);
		ret = incoming_accept_resume(in);
		if (ret)
			return ret;
		ret = send_missing(in);
		for (unsigned i = 0; !ret && i < in->connections; i++)
			ret = recv_chan_start(&in->chans[i]);
		if (!ret)
			ret = incoming_send_main(in, MIG_REC_POSTCOPY_DONE, c->done,
						 sizeof(c->done), NULL, 0);
		if (!ret)
			return 0;
	}
}

/*
 * Watching main from now on (the vCPUs run, or a resumed session): the
 * source hears a HEARTBEAT every MIG_HEARTBEAT_MS, and a send that no ACK
 * answers for MIG_HEARTBEAT_DEAD_MS breaks main (TCP_USER_TIMEOUT), so a
 * blackholed link is seen on this side too, not only after keepalive.
 */
static void start_monitoring(struct incoming *in)
{
	struct pc_control *c = in->post.ctl;
	unsigned int ms = MIG_HEARTBEAT_DEAD_MS;

	c->monitoring = true;
	c->next_beat_ns = now_ns();
	setsockopt(in->main.fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
}

/* A HEARTBEAT when one is due, until RELEASE; a failed send shows as main's error. */
static void heartbeat(struct incoming *in)
{
	struct pc_control *c = in->post.ctl;
	struct mig_heartbeat hb = {0};
	uint8_t b[MIG_HEARTBEAT_LEN];
	uint64_t now = now_ns();

	if (!c->monitoring || c->released || now < c->next_beat_ns)
		return;
	c->next_beat_ns = now + MIG_HEARTBEAT_MS * 1000000ull;
	hb.missing = __atomic_load_n(&in->pc.missing_left, __ATOMIC_RELAXED);
	hb.flags = c->done_sent ? MIG_HEARTBEAT_DONE : 0;
	mig_heartbeat_encode(b, &hb);
	incoming_send_main(in, MIG_REC_HEARTBEAT, b, sizeof(b), NULL, 0);
}

/* Blocks until wake_fd (or, when watched, the main connection) is readable or a beat is due. */
static bool wait_event(struct incoming *in)
{
	struct pc_control *c = in->post.ctl;
	struct pollfd p[2] = {{in->pc.wake_fd, POLLIN, 0}, {in->main.fd, POLLIN, 0}};
	int timeout = -1;
	uint64_t v, now = now_ns();

	if (c->monitoring && !c->released)
		timeout = c->next_beat_ns > now ? (int)((c->next_beat_ns - now) / 1000000u + 1) : 0;
	if (poll(p, c->monitoring ? 2 : 1, timeout) < 0)
		return false;
	if (p[0].revents && read(in->pc.wake_fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: another wake-up took it */
	}
	return c->monitoring && p[1].revents;
}

static void *control_main(void *arg)
{
	struct incoming *in = arg;
	struct pc_control *c = in->post.ctl;
	struct pc_state *ps = &in->pc;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_CONTROL, vm_config(in->vm)->seccomp);
	for (;;) {
		bool main_ready = wait_event(in);

		if (pc_stopping(ps))
			return NULL;
		if (c->redo) {
			if (resume_after_done(in)) {
				if (pc_stopping(ps))
					return NULL;
				sleep_ms(ACCEPT_RETRY_MS);
				pc_wake(ps);
				continue;
			}
			c->redo = false;
			start_monitoring(in);
			main_ready = false;
		} else if (pc_paused(ps)) {
			if (!c->aborted) {
				abort_connections(in);
				c->aborted = true;
				c->monitoring = false;
			}
			if (!pc_started(ps))
				continue; /* the migration fails on the main thread */
			if (resume(in)) {
				/* A stop shut the listening socket, or accept failed: retry. */
				if (pc_stopping(ps))
					return NULL;
				sleep_ms(ACCEPT_RETRY_MS);
				pc_wake(ps);
				continue;
			}
			c->aborted = false;
			start_monitoring(in);
			main_ready = false;
		} else if (pc_started(ps) && !c->monitoring && !c->aborted &&
			   !__atomic_load_n(&c->finished, __ATOMIC_RELAXED) && in->main.fd >= 0) {
			/* The vCPUs run (the ACK went out): watch the source from now on. */
			start_monitoring(in);
		}
		if (main_ready)
			watch_main(in);
		heartbeat(in);
		/*
		 * Nothing was stale, everything arrived before the ACK, or the last
		 * page just did. Never while paused: POSTCOPY_DONE must reach the
		 * source, so it goes out on the resumed session.
		 */
		if (!pc_paused(ps))
			complete(in);
	}
}

int pc_control_start(struct incoming *in)
{
	struct pc_control *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	in->post.ctl = c;
	ret = -pthread_create(&c->thread, NULL, control_main, in);
	c->started = !ret;
	return ret;
}

void pc_control_join(struct incoming *in)
{
	if (!in->post.ctl || !in->post.ctl->started)
		return;
	pthread_join(in->post.ctl->thread, NULL);
	in->post.ctl->started = false;
}

bool pc_control_finished(struct incoming *in)
{
	return in->post.ctl && __atomic_load_n(&in->post.ctl->finished, __ATOMIC_ACQUIRE);
}

void pc_control_free(struct incoming *in)
{
	free(in->post.ctl);
	in->post.ctl = NULL;
}
