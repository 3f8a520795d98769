/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target's main-connection reader, on the main thread from the VM's
 * creation to END: SWITCHOVER, the postcopy switchover's POSTCOPY, BITMAP
 * and BITMAP_END (handed to postcopy.c), VM_STATE, VCPU_STATE per
 * vCPU, END; then loading the state into the VM. Every header is bounded
 * by the record table (each record by its own limit: VM_STATE and a
 * VCPU_STATE's blob by MIG_STATE_MAX, BITMAP by this VM's largest slot)
 * before a byte of payload is allocated or read, and every payload is
 * decoded by the codec; only the context checks (vCPU index, each state
 * once, connection count) are made here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "incoming.h"
#include "postcopy.h"
#include "vm.h"
#include "vm_state.h"

int main_states_init(struct main_states *st, unsigned nvcpus)
{
	st->vcpu = calloc(nvcpus, sizeof(*st->vcpu));
	st->vcpu_len = calloc(nvcpus, sizeof(*st->vcpu_len));
	return st->vcpu && st->vcpu_len ? 0 : -ENOMEM;
}

/*
 * The caller's bound on the main connection, on top of the record table's
 * own per-type limits (VM_STATE and VCPU_STATE: MIG_STATE_MAX of state):
 * a BITMAP holds at most one slot's compressed bitmap, so the largest of
 * this VM's slots bounds it.
 */
static uint32_t main_ctx_max(const struct incoming *in)
{
	uint32_t max = MIG_STATE_MAX + MIG_VCPU_STATE_HDR_LEN;

	for (uint32_t i = 0; i < vm_mem(in->vm)->nslots; i++) {
		uint32_t b = mig_bitmap_rec_max(vm_mem(in->vm)->slots[i].npages);

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

static int read_vcpu_state(struct incoming *in, struct main_states *st, uint32_t len, char *err,
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
	if (vh.index >= vm_nvcpus(in->vm) || st->vcpu[vh.index]) {
		snprintf(err, errlen, "VCPU_STATE for vCPU %u (%u vCPUs, or sent twice)", vh.index,
			 vm_nvcpus(in->vm));
		return -EPROTO;
	}
	st->vcpu_len[vh.index] = blob_len;
	return read_blob(in, blob_len, &st->vcpu[vh.index], err, errlen, "VCPU_STATE");
}

static int decode_end(struct incoming *in, struct main_states *st, const void *p, uint32_t len,
		      char *err, size_t errlen)
{
	struct mig_end_view v;
	int ret = mig_end_decode(p, len, &v, err, errlen);

	if (ret)
		return ret;
	if (v.end.connections != in->connections) {
		snprintf(err, errlen, "END for %u connections, %u were opened", v.end.connections,
			 in->connections);
		return -EPROTO;
	}
	st->end = v.end;
	/* As long as the source waits for COMMITTED; 0 from an older source: the default. */
	if (v.end.commit_timeout_ms > MIG_COMMIT_TIMEOUT_MAX_MS) {
		snprintf(err, errlen, "END: commit_timeout_ms %u above the limit of %u",
			 v.end.commit_timeout_ms, MIG_COMMIT_TIMEOUT_MAX_MS);
		return -EPROTO;
	}
	if (v.end.commit_timeout_ms)
		in->sw.commit_timeout_ms = v.end.commit_timeout_ms;
	for (unsigned i = 0; i < in->connections; i++)
		st->counts[i] = mig_end_count(&v, i);
	return 0;
}

/*
 * A record read whole (the table bounded its length) and decoded:
 * SWITCHOVER, END, and the postcopy switchover's POSTCOPY, BITMAP,
 * BITMAP_END. 1 after END.
 */
static int read_record(struct incoming *in, struct main_states *st, const struct mig_rec_hdr *h,
		       char *err, size_t errlen)
{
	uint8_t small[MIG_END_REC_MAX];
	uint8_t *p = small;
	struct mig_switchover so;
	int ret;

	/* The commit's records come after END, to migration_incoming_prepare(). */
	if (h->type == MIG_REC_VM_DESC || h->type == MIG_REC_COMMIT || h->type == MIG_REC_ABORT ||
	    h->type == MIG_REC_RELEASE) {
		snprintf(err, errlen, "unexpected %s record (%u bytes) on the main connection%s",
			 mig_rec_name(h->type), h->len,
			 h->type == MIG_REC_VM_DESC ? "" : " before END");
		return -EPROTO;
	}
	/*
	 * A local handover maps the source's own memory: a postcopy would drop
	 * pages of it (pc_drop.c), which the source still needs if it resumes.
	 */
	if (!in->connections && (h->type == MIG_REC_POSTCOPY || h->type == MIG_REC_BITMAP ||
				 h->type == MIG_REC_BITMAP_END)) {
		snprintf(err, errlen, "unexpected %s record in a local handover",
			 mig_rec_name(h->type));
		return -EPROTO;
	}
	/*
	 * The guest stopped on the source: until it runs here, this thread's
	 * CPU wait is downtime.
	 */
	if (h->type == MIG_REC_SWITCHOVER || h->type == MIG_REC_POSTCOPY)
		incoming_boost(in, h->type == MIG_REC_SWITCHOVER);
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
		ret = postcopy_incoming_record(in, h->type, p, h->len, err, errlen);
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
int main_recv(struct incoming *in, struct main_states *st, char *err, size_t errlen)
{
	uint32_t ctx_max = main_ctx_max(in);

	for (;;) {
		struct mig_rec_hdr h;
		int ret;

		incoming_blackout_wait(in); /* from SWITCHOVER on: no sleep for the next record */
		ret = chan_recv_rec(&in->main, ctx_max, &h, err, errlen);

		if (ret) {
			if (__atomic_load_n(&in->abort, __ATOMIC_RELAXED)) {
				err[0] = '\0';
				return -EPIPE; /* a data connection failed; its error wins */
			}
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

/* vCPU i's blob as its VCPU_STATE record brought it. */
static void stream_vcpu_blob(const void *opaque, unsigned i, const void **blob, size_t *len)
{
	const struct main_states *st = opaque;

	*blob = st->vcpu[i];
	*len = st->vcpu_len[i];
}

int main_load_state(struct incoming *in, struct main_states *st, char *err, size_t errlen)
{
	struct vm *vm = in->vm;
	char e[256];
	int failed, ret;

	if (!st->vm) {
		snprintf(err, errlen, "the stream ended without VM_STATE");
		return -EPROTO;
	}
	for (unsigned i = 0; i < vm_nvcpus(vm); i++) {
		if (!st->vcpu[i]) {
			snprintf(err, errlen, "the stream ended without VCPU_STATE for vCPU %u", i);
			return -EPROTO;
		}
	}
	/* The machine's order (vm_load_whole()); the records name what failed. */
	ret = vm_load_whole(vm, st->vm, st->vm_len, stream_vcpu_blob, st, &failed, e, sizeof(e));
	if (ret && failed == VM_WHOLE_VM)
		snprintf(err, errlen, "VM_STATE: %s", e);
	else if (ret)
		snprintf(err, errlen, "VCPU_STATE %d: %s", failed, e);
	return ret;
}

void main_states_free(struct main_states *st, unsigned nvcpus)
{
	free(st->vm);
	for (unsigned i = 0; st->vcpu && i < nvcpus; i++)
		free(st->vcpu[i]);
	free(st->vcpu);
	free(st->vcpu_len);
}
