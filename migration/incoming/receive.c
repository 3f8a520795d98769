/* SPDX-License-Identifier: Apache-2.0 */
/*
 * receive.c - the incoming side, top level (migration.h's incoming half): accept one
 * migration and create the VM (incoming.c), start the receivers
 * (ram_recv.c), read the main connection up to END (main_recv.c), verify
 * that every channel delivered what the source says it sent and load the
 * state. The commit follows (settle.c: PREPARED, the source's decision),
 * then a postcopy goes on in its threads (postcopy.c). Any failure
 * before PREPARED discards the VM and tells the source (ERROR record) so
 * it resumes. Threads and locks: docs/architecture.md.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bitmap.h"
#include "clock.h"
#include "codec.h"
#include "digest.h"
#include "incoming.h"
#include "migration.h"
#include "postcopy.h"
#include "settle.h"
#include "tls.h"
#include "vm.h"
#include "test_faults.h"

/* Joins the receivers; the first receiver error becomes the migration's. */
static int join_receivers(struct incoming *in, char *err, size_t errlen)
{
	int ret = 0;

	for (unsigned i = 0; i < in->connections; i++) {
		struct recv_chan *rc = &in->chans[i];

		if (!rc->started)
			continue;
		if (__atomic_load_n(&in->abort, __ATOMIC_RELAXED))
			chan_abort(&rc->chan);
		else
			recv_chan_poll_done(rc);
		recv_chan_join(rc);
		if (rc->error && !ret) {
			ret = rc->error;
			snprintf(err, errlen, "%s", rc->err);
		}
	}
	return ret;
}

/* The gate goes under status_lock: a cancel may be waking it. */
static void stop_gate(struct incoming *in)
{
	struct gate *g;

	pthread_mutex_lock(&in->status.status_lock);
	g = in->gate;
	in->gate = NULL;
	pthread_mutex_unlock(&in->status.status_lock);
	gate_stop(g);
}

/* True (err set to the operator's reason) once migration_incoming_cancel() came. */
static bool cancelled(struct incoming *in, char *err, size_t errlen)
{
	bool c;

	pthread_mutex_lock(&in->status.status_lock);
	c = in->status.cancelled;
	if (c && err)
		snprintf(err, errlen, "%s", in->status.cancel_why);
	pthread_mutex_unlock(&in->status.status_lock);
	return c;
}

/* The listening socket's file, unless another vmm has bound that path since. */
static void unlink_unix_path(struct incoming *in)
{
	struct stat st;

	if (in->unix_path && !lstat(in->unix_path, &st) && st.st_dev == in->unix_dev &&
	    st.st_ino == in->unix_ino)
		unlink(in->unix_path);
	free(in->unix_path);
	in->unix_path = NULL;
}

static void incoming_free(struct incoming *in)
{
	if (!in)
		return;
	incoming_unboost(in);
	__atomic_store_n(&in->abort, true, __ATOMIC_RELAXED);
	/*
	 * The gate's taker (the control thread) returns first; then the gate's
	 * workers, which may be settling a recover connection, before the
	 * settle state goes.
	 */
	pthread_mutex_lock(&in->status.status_lock);
	if (in->gate)
		gate_cancel(in->gate);
	pthread_mutex_unlock(&in->status.status_lock);
	test_hook_watch_stop(&in->kill_watch);
	if (in->post.on)
		postcopy_incoming_stop(in);
	stop_gate(in);
	settle_stop(in);
	for (unsigned i = 0; in->chans && i < in->connections; i++)
		chan_abort(&in->chans[i].chan);
	for (unsigned i = 0; in->chans && i < in->connections; i++) {
		recv_chan_join(&in->chans[i]);
		recv_chan_destroy(&in->chans[i]);
	}
	free(in->chans);
	recv_chan_destroy(&in->post.urgent);
	if (in->ram.base) /* preallocated, and no VM took it */
		guest_mem_destroy(&in->ram);
	bitmap_array_free(in->written, in->nwritten);
	postcopy_incoming_free(in);
	if (in->lfd >= 0)
		close(in->lfd);
	else if (in->open_lfd >= 0)
		close(in->open_lfd);
	unlink_unix_path(in);
	chan_close(&in->main);
	if (in->post.uffd_probe >= 0)
		close(in->post.uffd_probe);
	pthread_mutex_destroy(&in->main_wlock);
	pthread_mutex_destroy(&in->post.urgent_wlock);
	pthread_mutex_destroy(&in->status.status_lock);
	tls_ctx_free(in->tls);
	free(in);
}

static void kill_self(void *arg)
{
	(void)arg;
	raise(SIGKILL);
}

/* The receivers' buffers, the written bitmaps and the state table, once the VM exists. */
static int alloc_receivers(struct incoming *in, struct main_states *st)
{
	uint32_t nslots = vm_mem(in->vm)->nslots;
	uint64_t *words = calloc(nslots, sizeof(*words));
	int ret;

	if (!words)
		return -ENOMEM;
	for (uint32_t i = 0; i < nslots; i++)
		words[i] = bitmap_words(vm_mem(in->vm)->slots[i].npages);
	in->written = bitmap_array_new(nslots, words);
	in->nwritten = in->written ? nslots : 0;
	free(words);
	/* A local handover has no data connection: one idle entry keeps the code uniform. */
	in->chans = calloc(in->connections ? in->connections : 1, sizeof(*in->chans));
	ret = in->chans && in->written ? main_states_init(st, vm_nvcpus(in->vm)) : -ENOMEM;
	for (unsigned i = 0; !ret && i < in->connections; i++)
		ret = recv_chan_init(&in->chans[i], in, i);
	if (!ret) {
		ret = recv_chan_init(&in->post.urgent, in, in->connections);
		in->post.urgent.urgent = true;
	}
	if (!ret) {
		pthread_mutex_lock(&in->status.status_lock);
		in->status.chans_open = true;
		pthread_mutex_unlock(&in->status.status_lock);
	}
	return ret;
}

/* Every data connection delivered what END says was sent (postcopy: up to its last SYNC). */
static int verify_counts(struct incoming *in, const struct main_states *st, char *err,
			 size_t errlen)
{
	for (unsigned i = 0; i < in->connections; i++) {
		uint64_t got = __atomic_load_n(&in->chans[i].records, __ATOMIC_ACQUIRE);

		if ((!in->post.on && !in->chans[i].ended) || got != st->counts[i]) {
			snprintf(err, errlen,
				 "data connection %u delivered %llu PAGES records, the "
				 "source sent %llu",
				 i, (unsigned long long)got, (unsigned long long)st->counts[i]);
			return -EPROTO;
		}
	}
	return 0;
}

static int verify_digest(struct incoming *in, const struct main_states *st, char *err,
			 size_t errlen)
{
	uint64_t d;

	if (!st->end.memory_digest)
		return 0;
	if (in->post.on) {
		/* Reading the missing pages would wait on userfaultfd for the source. */
		snprintf(err, errlen,
			 "a memory digest (a test hook) cannot be checked in postcopy");
		return -EPROTO;
	}
	if (!test_hooks_built()) {
		snprintf(err, errlen,
			 "the source sent a memory digest (a test hook) and this vmm "
			 "was built without test hooks");
		return -EPROTO;
	}
	d = memory_digest(vm_mem(in->vm));
	if (d != st->end.memory_digest) {
		snprintf(err, errlen, "memory digest 0x%016llx differs from the source's 0x%016llx",
			 (unsigned long long)d, (unsigned long long)st->end.memory_digest);
		return -EIO;
	}
	in->digest = d;
	return 0;
}

static int receive(struct incoming *in, const struct vm_config *local_cfg, int console_fd,
		   const struct incoming_hook *hook, char *err, size_t errlen)
{
	struct main_states st = {0};
	uint64_t t0;
	int ret;

	/* Before the source is even there: no blackout ever pays for a key (settle.h). */
	ret = settle_keys_new(in, err, errlen);
	if (!ret)
		ret = incoming_create_vm(in, local_cfg, console_fd, hook, err, errlen);
	if (!ret)
		ret = alloc_receivers(in, &st);
	/* A local handover (no data connection) goes straight on to the state. */
	if (!ret && in->connections)
		ret = incoming_accept_data(in, err, errlen);
	/* A cancel that came before main was ours: nothing else would notice it. */
	if (!ret && cancelled(in, NULL, 0))
		ret = -ECANCELED;
	for (unsigned i = 0; !ret && i < in->connections; i++)
		ret = recv_chan_start(&in->chans[i]);
	/* Test hook: die like a target killed in the middle of precopy. */
	if (!ret && in->connections && test_fault_on(&in->hooks, TEST_FAULT_KILL_DURING_PRECOPY))
		test_hook_watch_start(&in->kill_watch, &in->chans[0].records, 8, kill_self, NULL);
	if (!ret)
		ret = main_recv(in, &st, err, errlen);
	in->sw.end_ns = now_ns();
	if (!ret)
		test_hook_step(&in->hooks, TEST_STEP_TARGET_END);
	if (ret)
		__atomic_store_n(&in->abort, true, __ATOMIC_RELAXED);
	if (!in->post.on || ret) {
		char rerr[256] = "";
		/* main_recv() returns -EPIPE with no message when a receiver failed first. */
		bool receiver_first = !ret || (ret == -EPIPE && !err[0]);
		int r = in->chans ? join_receivers(in, rerr, sizeof(rerr)) : 0;

		/*
		 * The first end the target saw is the reason: a receiver's, which
		 * aborted main; not the ones join_receivers() caused by aborting
		 * the receivers after main failed on its own.
		 */
		if (r && receiver_first) {
			ret = r;
			snprintf(err, errlen, "%s", rerr);
		}
	}
	/* Postcopy: receivers stay for the push; all they had must be in (last SYNC). */
	if (!ret)
		ret = verify_counts(in, &st, err, errlen);
	if (!ret)
		ret = verify_digest(in, &st, err, errlen);
	if (!ret) {
		t0 = now_ns();
		/*
		 * Postcopy: the stale pages are dropped and userfaultfd takes pages
		 * before the state loads, because loading it may touch guest RAM
		 * (KVM maps the kvmclock page when its MSR is set): such a fault
		 * is served by the source, which answers page requests from END on.
		 */
		if (in->post.on)
			ret = postcopy_incoming_ready(in, err, errlen);
		if (!ret)
			ret = main_load_state(in, &st, err, errlen);
		/* The switchover's connections broke before PREPARED: say so, not the symptom. */
		if (ret && in->post.on && (pc_paused(&in->pc) || ret == -ECANCELED)) {
			pthread_mutex_lock(&in->pc.lock);
			snprintf(err, errlen,
				 "the source left before PREPARED (%.150s): it cannot have "
				 "committed, it keeps the VM",
				 in->pc.pause_reason[0] ? in->pc.pause_reason
							: "the switchover's connections broke");
			pthread_mutex_unlock(&in->pc.lock);
		}
		in->sw.restore_us = (now_ns() - t0) / 1000;
	}
	main_states_free(&st, in->vm ? vm_nvcpus(in->vm) : 0);
	return ret;
}

/* Best effort: tell the source why we give up, so it resumes at once. */
static void tell_source(struct incoming *in, const char *err)
{
	/* A copy without the sticky error (TLS state is shared through the pointer). */
	struct mig_chan c = in->main;

	if (in->main.fd < 0)
		return;
	c.error = 0;
	chan_set_timeout(&c, 1000);
	pthread_mutex_lock(&in->main_wlock);
	chan_send_record(&c, MIG_REC_ERROR, err, mig_error_len(err), NULL, 0);
	pthread_mutex_unlock(&in->main_wlock);
}

int migration_incoming_open(const char *listen_addr, const struct vm_config *local_cfg,
			    const struct migration_host *host, const struct test_hooks *hooks,
			    const struct incoming_hook *hook, struct incoming **in_out, char *err,
			    size_t errlen)
{
	struct incoming *in = calloc(1, sizeof(*in));
	int ret;

	*in_out = NULL;
	err[0] = '\0';
	if (!in)
		return -ENOMEM;
	incoming_init(in, hooks);
	ret = incoming_open(in, listen_addr, local_cfg, host, hook, &in->open_lfd, err, errlen);
	if (ret) {
		incoming_free(in);
		return ret;
	}
	*in_out = in;
	return 0;
}

int migration_incoming_receive(struct incoming *in, const struct vm_config *local_cfg,
			       int console_fd, const struct incoming_hook *hook, struct vm **vm_out,
			       char *err, size_t errlen)
{
	bool told;
	int ret;

	err[0] = '\0';
	ret = receive(in, local_cfg, console_fd, hook, err, errlen);
	*vm_out = in->vm;
	if (ret && !err[0])
		snprintf(err, errlen, "%s", chan_strerror(ret));
	/*
	 * From PREPARED on the source's two-phase commit decides: no cancel.
	 * A failure is in the status, with its reason, from here to the end.
	 */
	pthread_mutex_lock(&in->status.status_lock);
	if (in->status.cancelled) {
		ret = -ECANCELED;
		snprintf(err, errlen, "%s", in->status.cancel_why);
	}
	in->status.phase = ret ? INCOMING_FAILED : INCOMING_PREPARED;
	if (ret)
		snprintf(in->status.error, sizeof(in->status.error), "%s", err);
	told = in->status.told;
	pthread_mutex_unlock(&in->status.status_lock);
	if (ret) {
		test_hook_step(&in->hooks, TEST_STEP_TARGET_FAILED);
		/*
		 * Before any connection resets: the source reads why from main
		 * first. The caller frees the rest (engine threads first, they may
		 * still touch the VM's memory), then the VM.
		 */
		if (!told)
			tell_source(in, err);
		__atomic_store_n(&in->abort, true, __ATOMIC_RELAXED);
		stop_gate(in);
		return ret;
	}
	/*
	 * From here on the gate takes the source's recover connections
	 * (settle.c) and, in postcopy, its resume (pc_control.c).
	 */
	in->lfd = in->open_lfd;
	in->open_lfd = -1;
	settle_open_late(in);
	/*
	 * The data connections are done, but their buffers are freed only after
	 * the ACK (migration_incoming_free): unmapping touched memory means TLB
	 * shootdowns, which are slow in a nested VM and would add to downtime.
	 */
	return 0;
}

void migration_incoming_status(struct incoming *in, struct incoming_status *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&in->status.status_lock);
	out->phase = (enum incoming_phase)in->status.phase;
	memcpy(out->listen, in->status.listen, sizeof(out->listen));
	memcpy(out->peer, in->status.peer, sizeof(out->peer));
	memcpy(out->name, in->status.name, sizeof(out->name));
	out->refused = in->status.refused;
	out->blackout_waits = in->status.waits.waits;
	out->blackout_ready = in->status.waits.ready;
	out->blackout_polled = in->status.waits.spun;
	out->blackout_sleeps = in->status.waits.slept;
	out->blackout_polling_us = in->status.waits.spin_ns / 1000;
	out->end_to_prepared_us = in->status.end_to_prepared_us;
	memcpy(out->last_refused, in->status.last_refused, sizeof(out->last_refused));
	out->cancelled = in->status.cancelled;
	memcpy(out->error, in->status.error, sizeof(out->error));
	/* chans[] stays until incoming_free(), which the caller orders after us. */
	for (unsigned i = 0; in->status.chans_open && i < in->connections; i++) {
		struct recv_chan *rc = &in->chans[i];

		out->bytes_received += __atomic_load_n(&rc->bytes, __ATOMIC_RELAXED);
		out->pages_received += __atomic_load_n(&rc->pages, __ATOMIC_RELAXED);
		out->records_received += __atomic_load_n(&rc->records, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&in->status.status_lock);
}

int migration_incoming_cancel(struct incoming *in, const char *why, char *err, size_t errlen)
{
	int ret = 0;

	pthread_mutex_lock(&in->status.status_lock);
	if (in->status.phase == INCOMING_PREPARED) {
		snprintf(err, errlen,
			 "the VM is loaded and PREPARED went to the source: its two-phase commit "
			 "decides where the VM runs now");
		ret = -EBUSY;
	} else if (in->status.phase == INCOMING_FAILED || in->status.cancelled) {
		snprintf(err, errlen, "the incoming migration has already ended");
		ret = -EALREADY;
	} else {
		in->status.cancelled = true;
		snprintf(in->status.cancel_why, sizeof(in->status.cancel_why), "%s", why);
		__atomic_store_n(&in->abort, true, __ATOMIC_RELAXED);
		if (in->gate)
			gate_cancel(in->gate);
		/*
		 * The ERROR first, while every connection still works: the source
		 * looks for it on main when its data connections break. Then reads
		 * on main end (EOF), so main_recv() fails and the receivers are
		 * aborted.
		 */
		if (in->status.main_open && in->main.fd >= 0) {
			tell_source(in, in->status.cancel_why);
			in->status.told = true;
			shutdown(in->main.fd, SHUT_RD);
		}
	}
	pthread_mutex_unlock(&in->status.status_lock);
	return ret;
}

bool migration_incoming_finished(struct incoming *in)
{
	if (!in)
		return true;
	if (in->post.on)
		return postcopy_incoming_finished(in);
	/* Precopy: RELEASE came, then the source exited (its connection read EOF). */
	return settle_finished(in);
}

void migration_incoming_progress(struct incoming *in, struct migration_progress *out)
{
	uint64_t since;
	const char *what;

	if (in && in->post.on)
		postcopy_incoming_progress(in, out);
	if (in && incoming_outcome_unknown(in))
		out->state = MIGRATION_SWITCHOVER_UNKNOWN;
	if (in && settle_awaiting_release(in, &since, &what)) {
		out->state = MIGRATION_AWAITING_RELEASE;
		snprintf(out->error, sizeof(out->error),
			 "the VM runs here since COMMIT %llu ms ago; waiting for the source to let "
			 "go (%s): `vmm migrate --recover --decide run` here ends the wait",
			 (unsigned long long)ms_since(since), what);
	}
}

uint64_t migration_incoming_digest(const struct incoming *in)
{
	return in ? in->digest : 0;
}

void migration_incoming_free(struct incoming *in)
{
	incoming_free(in);
}
