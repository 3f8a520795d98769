/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target side, top level (migration.h's target half): accept one
 * migration (incoming.c: handshake, VM description, create the VM), start
 * the receivers (ram_recv.c), read the main connection (SWITCHOVER, the
 * postcopy switchover records, VM_STATE, VCPU_STATE, END), verify that
 * every channel delivered what the source says it sent, then load the
 * state. The caller starts the vCPUs and acknowledges. Any failure
 * discards the VM and tells the source (ERROR record) so it resumes.
 * Threads and locks: incoming.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "digest.h"
#include <zstd.h>

#include "bitmap.h"
#include "codec.h"
#include "incoming.h"
#include "migration.h"
#include "postcopy.h"
#include "tls.h"
#include "vcpu_state.h"
#include "vm.h"
#include "vm_state.h"

struct states {
	uint8_t *vm;
	uint32_t vm_len;
	uint8_t **vcpu;
	uint32_t *vcpu_len;
	struct mig_end end;
	uint64_t counts[MIGRATION_MAX_CONNECTIONS];
};

/*
 * The caller's bound on the main connection, on top of the record table's
 * own per-type limits (VM_STATE and VCPU_STATE: MIG_STATE_MAX of state):
 * a BITMAP holds at most one slot's compressed bitmap, so the largest of
 * this VM's slots bounds it.
 */
static uint32_t main_ctx_max(const struct incoming *in)
{
	uint32_t max = MIG_STATE_MAX + MIG_VCPU_STATE_HDR_LEN;

	for (uint32_t i = 0; i < in->vm->mem.nslots; i++) {
		uint32_t b = mig_bitmap_rec_max(in->vm->mem.slots[i].npages);

		if (b > max)
			max = b;
	}
	return max;
}

static int read_blob(struct incoming *in, uint32_t len, uint8_t **out, char *err, size_t errlen,
		     const char *what)
{
	int ret;

	*out = malloc(len ? len : 1);
	if (!*out)
		return -ENOMEM;
	ret = chan_read(&in->main, *out, len);
	if (ret)
		snprintf(err, errlen, "%s: %s", what, chan_strerror(ret));
	return ret;
}

static int read_vcpu_state(struct incoming *in, struct states *st, uint32_t len, char *err,
			   size_t errlen)
{
	uint8_t b[MIG_VCPU_STATE_HDR_LEN];
	struct mig_vcpu_state_hdr vh;
	uint32_t blob_len;
	int ret = chan_read(&in->main, b, sizeof(b));

	if (ret) {
		snprintf(err, errlen, "VCPU_STATE: %s", chan_strerror(ret));
		return ret;
	}
	ret = mig_vcpu_state_hdr_decode(b, len, &vh, &blob_len, err, errlen);
	if (ret)
		return ret;
	if (vh.index >= in->vm->nvcpus || st->vcpu[vh.index]) {
		snprintf(err, errlen, "VCPU_STATE for vCPU %u (%u vCPUs, or sent twice)", vh.index,
			 in->vm->nvcpus);
		return -EPROTO;
	}
	st->vcpu_len[vh.index] = blob_len;
	return read_blob(in, blob_len, &st->vcpu[vh.index], err, errlen, "VCPU_STATE");
}

static int decode_end(struct incoming *in, struct states *st, const void *p, uint32_t len,
		      char *err, size_t errlen)
{
	struct mig_end_view v;
	int ret = mig_end_decode(p, len, &v, err, errlen);

	if (ret)
		return ret;
	if (v.end.nconnections != in->nchans) {
		snprintf(err, errlen, "END for %u connections, %u were opened", v.end.nconnections,
			 in->nchans);
		return -EPROTO;
	}
	st->end = v.end;
	for (unsigned i = 0; i < in->nchans; i++)
		st->counts[i] = mig_end_count(&v, i);
	return 0;
}

/*
 * A record read whole (the table bounded its length) and decoded:
 * SWITCHOVER, END, and the postcopy switchover's POSTCOPY, BITMAP,
 * BITMAP_END. 1 after END.
 */
static int read_record(struct incoming *in, struct states *st, const struct mig_rec_hdr *h,
		       char *err, size_t errlen)
{
	uint8_t small[MIG_END_REC_MAX];
	uint8_t *p = small;
	struct mig_switchover so;
	int ret;

	if (h->type == MIG_REC_VM_DESC) {
		snprintf(err, errlen,
			 "unexpected VM_DESC record (type %u, %u bytes) on the main "
			 "connection",
			 h->type, h->len);
		return -EPROTO;
	}
	/* The table keeps every other record here within MIG_END_REC_MAX bytes. */
	if (h->type == MIG_REC_BITMAP)
		p = malloc(h->len ? h->len : 1);
	else if (h->len > sizeof(small))
		return -EPROTO;
	if (!p)
		return -ENOMEM;
	ret = chan_read(&in->main, p, h->len);
	if (ret) {
		snprintf(err, errlen, "%s: %s", mig_rec_name(h->type), chan_strerror(ret));
	} else if (h->type == MIG_REC_SWITCHOVER) {
		ret = mig_switchover_decode(p, h->len, &so, err, errlen);
	} else if (h->type == MIG_REC_END) {
		ret = decode_end(in, st, p, h->len, err, errlen);
		if (!ret)
			ret = 1;
	} else {
		ret = postcopy_target_record(in, h->type, p, h->len, err, errlen);
	}
	if (p != small)
		free(p);
	return ret;
}

/*
 * Main connection: SWITCHOVER, [POSTCOPY, BITMAP..., BITMAP_END, BITMAP...,
 * BITMAP_END], VM_STATE, VCPU_STATE x n, END. Every header is bounded by
 * the record table (each record by its own limit) before anything is read.
 */
static int read_main(struct incoming *in, struct states *st, char *err, size_t errlen)
{
	uint32_t ctx_max = main_ctx_max(in);

	for (;;) {
		struct mig_rec_hdr h;
		int ret = chan_recv_rec(&in->main, ctx_max, &h, err, errlen);

		if (ret) {
			if (__atomic_load_n(&in->abort, __ATOMIC_RELAXED))
				return -EPIPE; /* a data connection failed; its error wins */
			if (ret != -EPROTO)
				snprintf(err, errlen, "main connection: %s", chan_strerror(ret));
			return ret;
		}
		if (h.type == MIG_REC_VM_STATE) {
			if (st->vm) {
				snprintf(err, errlen, "VM_STATE sent twice");
				return -EPROTO;
			}
			st->vm_len = h.len;
			ret = read_blob(in, h.len, &st->vm, err, errlen, "VM_STATE");
		} else if (h.type == MIG_REC_VCPU_STATE) {
			ret = read_vcpu_state(in, st, h.len, err, errlen);
		} else {
			ret = read_record(in, st, &h, err, errlen);
			if (ret == 1)
				return 0; /* END */
		}
		if (ret) {
			if (!err[0])
				snprintf(err, errlen, "main connection: %s", chan_strerror(ret));
			return ret;
		}
	}
}

static int load_state(struct incoming *in, struct states *st, char *err, size_t errlen)
{
	struct vm *vm = in->vm;
	char e[256];
	int ret;

	if (!st->vm) {
		snprintf(err, errlen, "the stream ended without VM_STATE");
		return -EPROTO;
	}
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		if (!st->vcpu[i]) {
			snprintf(err, errlen, "the stream ended without VCPU_STATE for vCPU %u", i);
			return -EPROTO;
		}
	}
	/* VM-wide first (irqchip, PIT, clock), then each vCPU: LAPICs route through the irqchip. */
	ret = vm_state_load(vm, st->vm, st->vm_len, e, sizeof(e));
	if (ret) {
		snprintf(err, errlen, "VM_STATE: %s", e);
		return ret;
	}
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		ret = vcpu_state_load(&vm->vcpus[i], st->vcpu[i], st->vcpu_len[i], e, sizeof(e));
		if (ret) {
			snprintf(err, errlen, "VCPU_STATE %u: %s", i, e);
			return ret;
		}
	}
	return 0;
}

static void free_states(struct states *st, unsigned nvcpus)
{
	free(st->vm);
	for (unsigned i = 0; st->vcpu && i < nvcpus; i++)
		free(st->vcpu[i]);
	free(st->vcpu);
	free(st->vcpu_len);
}

/* Joins the receivers; the first receiver error becomes the migration's. */
static int join_receivers(struct incoming *in, char *err, size_t errlen)
{
	int ret = 0;

	for (unsigned i = 0; i < in->nchans; i++) {
		struct recv_chan *rc = &in->chans[i];

		if (!rc->started)
			continue;
		if (__atomic_load_n(&in->abort, __ATOMIC_RELAXED))
			chan_abort(&rc->chan);
		recv_chan_join(rc);
		if (rc->error && !ret) {
			ret = rc->error;
			snprintf(err, errlen, "%s", rc->err);
		}
	}
	return ret;
}

static void incoming_free(struct incoming *in)
{
	if (!in)
		return;
	__atomic_store_n(&in->abort, true, __ATOMIC_RELAXED);
	test_hook_watch_stop(&in->kill_watch);
	if (in->postcopy)
		postcopy_target_stop(in);
	for (unsigned i = 0; in->chans && i < in->nchans; i++)
		chan_abort(&in->chans[i].chan);
	for (unsigned i = 0; in->chans && i < in->nchans; i++) {
		recv_chan_join(&in->chans[i]);
		recv_chan_destroy(&in->chans[i]);
	}
	free(in->chans);
	recv_chan_destroy(&in->urgent);
	bitmap_array_free(in->written, in->nwritten);
	postcopy_target_free(in);
	if (in->lfd >= 0)
		close(in->lfd);
	chan_close(&in->main);
	pthread_mutex_destroy(&in->main_wlock);
	pthread_mutex_destroy(&in->urgent_wlock);
	tls_ctx_free(in->tls);
	free(in);
}

static void kill_self(void *arg)
{
	(void)arg;
	raise(SIGKILL);
}

/* The receivers' buffers, the written bitmaps and the state table, once the VM exists. */
static int alloc_receivers(struct incoming *in, struct states *st)
{
	uint32_t nslots = in->vm->mem.nslots;
	uint64_t *words = calloc(nslots, sizeof(*words));
	int ret;

	if (!words)
		return -ENOMEM;
	for (uint32_t i = 0; i < nslots; i++)
		words[i] = bitmap_words(in->vm->mem.slots[i].npages);
	in->written = bitmap_array_new(nslots, words);
	in->nwritten = in->written ? nslots : 0;
	free(words);
	in->chans = calloc(in->nchans, sizeof(*in->chans));
	st->vcpu = calloc(in->vm->nvcpus, sizeof(*st->vcpu));
	st->vcpu_len = calloc(in->vm->nvcpus, sizeof(*st->vcpu_len));
	ret = in->chans && in->written && st->vcpu && st->vcpu_len ? 0 : -ENOMEM;
	for (unsigned i = 0; !ret && i < in->nchans; i++)
		ret = recv_chan_init(&in->chans[i], in, i);
	if (!ret) {
		ret = recv_chan_init(&in->urgent, in, in->nchans);
		in->urgent.urgent = true;
	}
	return ret;
}

/* Every data connection delivered what END says was sent (postcopy: up to its last SYNC). */
static int verify_counts(struct incoming *in, const struct states *st, char *err, size_t errlen)
{
	for (unsigned i = 0; i < in->nchans; i++) {
		uint64_t got = __atomic_load_n(&in->chans[i].records, __ATOMIC_ACQUIRE);

		if ((!in->postcopy && !in->chans[i].ended) || got != st->counts[i]) {
			snprintf(err, errlen,
				 "data connection %u delivered %llu PAGES records, the "
				 "source sent %llu",
				 i, (unsigned long long)got, (unsigned long long)st->counts[i]);
			return -EPROTO;
		}
	}
	return 0;
}

static int verify_digest(struct incoming *in, const struct states *st, char *err, size_t errlen)
{
	uint64_t d;

	if (!st->end.memory_digest)
		return 0;
	if (!test_hooks_built()) {
		snprintf(err, errlen,
			 "the source sent a memory digest (a test hook) and this vmm "
			 "was built without test hooks");
		return -EPROTO;
	}
	d = memory_digest(&in->vm->mem);
	if (d != st->end.memory_digest) {
		snprintf(err, errlen, "memory digest 0x%016llx differs from the source's 0x%016llx",
			 (unsigned long long)d, (unsigned long long)st->end.memory_digest);
		return -EIO;
	}
	in->digest = d;
	return 0;
}

static int receive(struct incoming *in, int lfd, const struct vm_config *local_cfg, int console_fd,
		   const struct incoming_hook *hook, char *err, size_t errlen)
{
	struct states st = {0};
	uint64_t t0;
	int ret;

	ret = incoming_create_vm(in, local_cfg, console_fd, hook, err, errlen);
	if (!ret)
		ret = alloc_receivers(in, &st);
	if (!ret)
		ret = incoming_accept_data(in, lfd, err, errlen);
	for (unsigned i = 0; !ret && i < in->nchans; i++)
		ret = recv_chan_start(&in->chans[i]);
	/* Test hook: die like a target killed in the middle of precopy. */
	if (!ret && in->hooks.fault == TEST_FAULT_KILL_DURING_PRECOPY)
		test_hook_watch_start(&in->kill_watch, &in->chans[0].records, 8, kill_self, NULL);
	if (!ret)
		ret = read_main(in, &st, err, errlen);
	in->end_ns = now_ns();
	if (ret)
		__atomic_store_n(&in->abort, true, __ATOMIC_RELAXED);
	if (!in->postcopy || ret) {
		char rerr[256] = "";
		int r = in->chans ? join_receivers(in, rerr, sizeof(rerr)) : 0;

		/* A receiver's error explains a main-connection failure better. */
		if (r && (!ret || ret == -EPIPE || ret == -ECONNRESET || ret == -ENODATA)) {
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
		ret = load_state(in, &st, err, errlen);
		/* Postcopy: the dropper worked through the bitmaps meanwhile. */
		if (!ret && in->postcopy)
			ret = postcopy_target_ready(in, err, errlen);
		in->restore_us = (now_ns() - t0) / 1000;
	}
	free_states(&st, in->vm ? in->vm->nvcpus : 0);
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

int migration_incoming(const char *listen_addr, const struct vm_config *local_cfg, int console_fd,
		       const struct test_hooks *hooks, const struct incoming_hook *hook,
		       struct incoming **in_out, struct vm **vm_out, char *err, size_t errlen)
{
	struct incoming *in = calloc(1, sizeof(*in));
	int lfd = -1, ret;

	*in_out = NULL;
	*vm_out = NULL;
	err[0] = '\0';
	if (!in)
		return -ENOMEM;
	incoming_init(in, hooks);
	ret = incoming_open(in, listen_addr, local_cfg, &lfd, err, errlen);
	if (!ret)
		ret = receive(in, lfd, local_cfg, console_fd, hook, err, errlen);
	if (ret) {
		/* Engine threads first: they may still touch the VM's memory. */
		struct vm *vm = in->vm;

		if (!err[0])
			snprintf(err, errlen, "%s", chan_strerror(ret));
		/* Before any connection resets: the source reads why from main first. */
		tell_source(in, err);
		if (lfd >= 0)
			close(lfd);
		incoming_free(in);
		if (vm) {
			vm_destroy(vm);
			free(vm);
		}
		return ret;
	}
	/* Postcopy keeps listening: a broken connection is resumed through it. */
	if (in->postcopy)
		in->lfd = lfd;
	else
		close(lfd);
	/*
	 * The data connections are done, but their buffers are freed only after
	 * the ACK (migration_incoming_free): unmapping touched memory means TLB
	 * shootdowns, which are slow in a nested VM and would add to downtime.
	 */
	*in_out = in;
	*vm_out = in->vm;
	return 0;
}

int migration_incoming_ack(struct incoming *in, char *err, size_t errlen)
{
	uint8_t b[MIG_ACK_LEN];
	struct mig_ack ack;
	int ret;

	/* Test hook: die like a target killed in the middle of the switchover. */
	if (in->hooks.fault == TEST_FAULT_KILL_BEFORE_ACK)
		raise(SIGKILL);
	/* From END received to ACK sent: the target's share of the downtime. */
	memset(&ack, 0, sizeof(ack));
	host_boot_id(ack.boot_id);
	ack.resume_mono_ns = now_ns();
	ack.restore_us = (ack.resume_mono_ns - in->end_ns) / 1000;
	mig_ack_encode(b, &ack);
	chan_set_timeout(&in->main, 5000);
	ret = incoming_send_main(in, MIG_REC_ACK, b, sizeof(b), NULL, 0);
	if (ret)
		snprintf(err, errlen, "sending ACK to the source: %s", chan_strerror(ret));
	else if (in->postcopy)
		postcopy_target_started(in);
	return ret;
}

bool migration_incoming_finished(struct incoming *in)
{
	char c;
	ssize_t n;

	if (!in)
		return true;
	if (in->postcopy)
		return postcopy_target_finished(in);
	/* Precopy: the source exits right after our ACK; its connection then reads EOF. */
	n = recv(in->main.fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

void migration_incoming_progress(struct incoming *in, struct migration_progress *out)
{
	if (in && in->postcopy)
		postcopy_target_progress(in, out);
}

uint64_t migration_incoming_digest(const struct incoming *in)
{
	return in ? in->digest : 0;
}

void migration_incoming_free(struct incoming *in)
{
	incoming_free(in);
}
