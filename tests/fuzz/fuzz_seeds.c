/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_seeds.c - writes the seed corpora of the wire and state targets
 * with the project's own encoders (codec.h, state_buf.h), so the seeds
 * follow the format when it changes:
 *   fuzz_seeds tests/fuzz/corpus
 * writes the files of corpus/fuzz_wire_target, corpus/fuzz_wire_source,
 * corpus/fuzz_state, corpus/fuzz_virtq (guest memory images laid out as
 * fuzz_virtq.h says), corpus/fuzz_snapshot (snap_codec.h) and
 * corpus/fuzz_virtio_mmio (access sequences as fuzz_virtio_mmio.h says).
 * The config, ELF and API seeds are plain files.
 * Every seed is a valid stream (or blob) that the harness follows to its
 * end, so fuzzing starts from full coverage of the good path.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "codec.h"
#include "proof.h"
#include "fuzz_virtio_mmio.h"
#include "fuzz_virtq.h"
#include "le.h"
#include "snap_codec.h"
#include "state_buf.h"
#include "virtio_mmio.h"
#include "virtq.h"
#include "serial.h"
#include "vcpu_state.h"
#include "vm_state.h"
#include "../unit/vm_state_blob.h"

struct out {
	uint8_t b[1 << 16];
	size_t n;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (o->n + n > sizeof(o->b)) {
		fprintf(stderr, "fuzz_seeds: seed too large\n");
		exit(1);
	}
	if (n)
		memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void rec(struct out *o, uint32_t type, const void *p, uint32_t len)
{
	uint8_t h[MIG_REC_HDR_LEN];

	mig_rec_hdr_encode(h, type, len);
	put(o, h, sizeof(h));
	put(o, p, len);
}

#define SEED_SESSION 0x1234567890abcdefull
/* The seeds' decision keys (fixed private bytes): VM_DESC carries their public halves. */
static struct mig_keys seed_keys;

static void seed_keys_init(void)
{
	uint8_t priv[MIG_KEY_LEN];

	for (unsigned d = 0; d < MIG_SOURCE_DECISIONS; d++) {
		memset(priv, 0x40 + (int)d, sizeof(priv));
		if (mig_keys_set(&seed_keys, d, priv))
			abort();
	}
}

/* Decision d's record, proven as the target checks it on a plain channel. */
static void proven(struct out *o, uint32_t type, unsigned d, uint32_t attempt)
{
	static const uint8_t bind[MIG_BIND_LEN];
	uint8_t sig[MIG_SIG_LEN];
	char err[128];

	if (mig_proof_sign(&seed_keys, d, SEED_SESSION, attempt, bind, sig, err, sizeof(err)))
		abort();
	rec(o, type, sig, sizeof(sig));
}

static void hello(struct out *o, uint32_t role, uint32_t index)
{
	uint8_t h[MIG_HELLO_LEN];

	mig_hello_encode(h, SEED_SESSION, role, index);
	put(o, h, sizeof(h));
}

static void save(const char *dir, const char *target, const char *name, const void *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
		fprintf(stderr, "fuzz_seeds: %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

/* ---- state blobs ---- */

/*
 * The header of a seed blob in framing 3 (a VERSIONS entry per section,
 * every component at 1) or 2 (release 0.3.0's: none); state_versions.h.
 */
static void seed_header(struct state_buf *b, enum state_kind kind, uint32_t index, unsigned framing,
			const uint32_t *types, unsigned n)
{
	struct state_version_ent ents[16];

	for (unsigned i = 0; i < n; i++) {
		uint16_t comp = kind == STATE_KIND_VCPU ? STATE_COMP_VCPU : STATE_COMP_VM;

		if (types[i] == VM_SEC_CLOCK)
			comp = STATE_COMP_CLOCK;
		else if (types[i] == VM_SEC_SERIAL)
			comp = STATE_COMP_SERIAL;
		ents[i] = (struct state_version_ent){types[i], comp, 1};
	}
	state_buf_put_header_versions(b, kind, index, framing, ents, n);
}

static void vcpu_blob(struct state_buf *b, unsigned framing)
{
	static const uint32_t types[] = {
	    VCPU_SEC_REGS,	  VCPU_SEC_SREGS,     VCPU_SEC_XSAVE,
	    VCPU_SEC_XCRS,	  VCPU_SEC_LAPIC,     VCPU_SEC_MSRS,
	    VCPU_SEC_VCPU_EVENTS, VCPU_SEC_DEBUGREGS, VCPU_SEC_MP_STATE};
	uint8_t zero[sizeof(struct kvm_xsave)] = {0};
	uint8_t msrs[8 + 2 * sizeof(struct kvm_msr_entry)] = {0};
	struct kvm_msr_entry e[2] = {{.index = vcpu_state_msrs[0], .data = 12345},
				     {.index = vcpu_state_msrs[1]}};
	uint32_t count = 2;

	memcpy(msrs, &count, 4);
	memcpy(msrs + 8, e, sizeof(e));
	seed_header(b, STATE_KIND_VCPU, 0, framing, types, sizeof(types) / sizeof(types[0]));
	state_buf_put_section(b, VCPU_SEC_REGS, zero, sizeof(struct kvm_regs));
	state_buf_put_section(b, VCPU_SEC_SREGS, zero, sizeof(struct kvm_sregs));
	state_buf_put_section(b, VCPU_SEC_XSAVE, zero, sizeof(struct kvm_xsave));
	state_buf_put_section(b, VCPU_SEC_XCRS, zero, sizeof(struct kvm_xcrs));
	state_buf_put_section(b, VCPU_SEC_LAPIC, zero, sizeof(struct kvm_lapic_state));
	state_buf_put_section(b, VCPU_SEC_MSRS, msrs, sizeof(msrs));
	state_buf_put_section(b, VCPU_SEC_VCPU_EVENTS, zero, sizeof(struct kvm_vcpu_events));
	state_buf_put_section(b, VCPU_SEC_DEBUGREGS, zero, sizeof(struct kvm_debugregs));
	state_buf_put_section(b, VCPU_SEC_MP_STATE, zero, sizeof(struct kvm_mp_state));
	state_buf_put_section(b, STATE_SEC_END, NULL, 0);
}

static void vm_blob(struct state_buf *b, unsigned framing)
{
	seed_header(b, STATE_KIND_VM, 1, framing, vm_blob_types(), VM_BLOB_NSECTIONS);
	vm_blob_sections(b, "ls\n"); /* "ls\n" typed and not read */
}

/* ---- wire ---- */

/* The described VM: 2 MiB at 0 (512 pages) and 257 pages at 2 MiB. */
static const char config[] = "[vm]\nmemory = 3076K\nvcpus = 1\n";
static const struct mig_slot_desc slots[2] = {{0, 2u << 20}, {2u << 20, 257 * 4096}};

static void vm_desc(struct out *o, uint32_t connections)
{
	uint8_t b[MIG_VM_DESC_LEN + 2 * MIG_SLOT_DESC_LEN + sizeof(config)];
	struct mig_vm_desc d = {.memory = slots[0].size + slots[1].size,
				.page_size = MIG_PAGE_SIZE,
				.nslots = 2,
				.nvcpus = 1,
				.connections = connections,
				.config_len = sizeof(config) - 1,
				.shard_pages = 64};

	seed_keys_init();
	memcpy(d.keys, seed_keys.pub, sizeof(d.keys));
	mig_vm_desc_encode(b, &d);
	for (int i = 0; i < 2; i++)
		mig_slot_desc_encode(b + MIG_VM_DESC_LEN + i * MIG_SLOT_DESC_LEN, &slots[i]);
	memcpy(b + MIG_VM_DESC_LEN + 2 * MIG_SLOT_DESC_LEN, config, sizeof(config) - 1);
	rec(o, MIG_REC_VM_DESC, b, (uint32_t)mig_vm_desc_len(&d));
}

static void states_and_end(struct out *o)
{
	struct state_buf b;
	uint8_t vh[MIG_VCPU_STATE_HDR_LEN], end[MIG_END_LEN + 8] = {0};
	uint8_t *v;

	state_buf_init(&b);
	vm_blob(&b, STATE_FRAMING_NEWEST);
	rec(o, MIG_REC_VM_STATE, b.data, (uint32_t)b.len);
	state_buf_free(&b);
	state_buf_init(&b);
	vcpu_blob(&b, STATE_FRAMING_NEWEST);
	mig_vcpu_state_hdr_encode(vh, 0);
	v = malloc(sizeof(vh) + b.len);
	memcpy(v, vh, sizeof(vh));
	memcpy(v + sizeof(vh), b.data, b.len);
	rec(o, MIG_REC_VCPU_STATE, v, (uint32_t)(sizeof(vh) + b.len));
	free(v);
	state_buf_free(&b);
	mig_end_encode(end, &(struct mig_end){.connections = 1});
	rec(o, MIG_REC_END, end, sizeof(end));
}

/* A BITMAP record of slot s with the given words (npages bits). */
static void bitmap(struct out *o, uint32_t slot, const uint64_t *words, uint32_t nwords)
{
	uint8_t b[MIG_BITMAP_HDR_LEN + 1024];
	size_t z = ZSTD_compress(b + MIG_BITMAP_HDR_LEN, 1024, words, nwords * 8, 1);
	struct mig_bitmap_hdr bh = {.slot = slot, .raw_len = nwords * 8, .data_len = (uint32_t)z};

	mig_bitmap_hdr_encode(b, &bh);
	rec(o, MIG_REC_BITMAP, b, (uint32_t)(MIG_BITMAP_HDR_LEN + z));
}

static void bitmap_end(struct out *o, uint32_t n, uint32_t flags, uint64_t pages)
{
	uint8_t b[MIG_BITMAP_END_LEN];

	mig_bitmap_end_encode(
	    b, &(struct mig_bitmap_end){.nbitmaps = n, .flags = flags, .pages = pages});
	rec(o, MIG_REC_BITMAP_END, b, sizeof(b));
}

/* PAGES of one slot: nz zero pages then nd data pages, raw or zstd. */
static void pages(struct out *o, uint32_t slot, const uint32_t *idx, uint32_t nz, uint32_t nd,
		  int zstd)
{
	static uint8_t raw[4 * 4096], b[MIG_PAGES_HDR_LEN + 64 + sizeof(raw) + 1024];
	struct mig_pages_hdr ph = {.slot = slot, .nzero = nz, .ndata = nd, .encoding = zstd};
	size_t off = MIG_PAGES_HDR_LEN, dl;

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 7 + slot);
	memcpy(b + off, idx, (nz + nd) * 4);
	off += (nz + nd) * 4;
	if (zstd)
		dl = ZSTD_compress(b + off, sizeof(b) - off, raw, nd * 4096, 1);
	else
		memcpy(b + off, raw, dl = nd * 4096);
	ph.data_len = (uint32_t)dl;
	mig_pages_hdr_encode(b, &ph);
	rec(o, MIG_REC_PAGES, b, (uint32_t)(off + dl));
}

static void wire_target(const char *dir)
{
	const char *t = "fuzz_wire_target";
	uint64_t w0[8] = {0x5, 0, 0, 0, 0, 0, 0, 1ull << 63}, w1[5] = {0, 0, 0, 0, 1};
	uint8_t b[64];
	struct out o;

	/* Precopy main connection: VM_DESC, SWITCHOVER, states, END, COMMIT, RELEASE. */
	o.n = 0;
	hello(&o, MIG_ROLE_MAIN, 0);
	vm_desc(&o, 1);
	mig_switchover_encode(b, &(struct mig_switchover){.pass = 3});
	rec(&o, MIG_REC_SWITCHOVER, b, MIG_SWITCHOVER_LEN);
	states_and_end(&o);
	proven(&o, MIG_REC_COMMIT, MIG_DECIDE_COMMIT, 0);
	proven(&o, MIG_REC_RELEASE, MIG_DECIDE_RELEASE, 0);
	save(dir, t, "main-precopy", o.b, o.n);

	/* The same without the state blobs (which are fuzz_state's): small, quick to mutate. */
	o.n = 0;
	hello(&o, MIG_ROLE_MAIN, 0);
	vm_desc(&o, 2);
	mig_switchover_encode(b, &(struct mig_switchover){.pass = 1});
	rec(&o, MIG_REC_SWITCHOVER, b, MIG_SWITCHOVER_LEN);
	mig_postcopy_encode(b, &(struct mig_postcopy){.flags = MIG_POSTCOPY_NO_FINAL_BITMAP});
	rec(&o, MIG_REC_POSTCOPY, b, MIG_POSTCOPY_LEN);
	bitmap(&o, 1, w1, 5);
	bitmap_end(&o, 1, 0, 1);
	{
		uint8_t end[MIG_END_LEN + 16] = {0};

		mig_end_encode(end, &(struct mig_end){.connections = 2});
		end[MIG_END_LEN] = 7;
		rec(&o, MIG_REC_END, end, sizeof(end));
	}
	save(dir, t, "main-small", o.b, o.n);

	/* Postcopy: POSTCOPY, a preliminary round, the final round, states, END. */
	o.n = 0;
	hello(&o, MIG_ROLE_MAIN, 0);
	vm_desc(&o, 1);
	mig_postcopy_encode(b, &(struct mig_postcopy){.pass = 2});
	rec(&o, MIG_REC_POSTCOPY, b, MIG_POSTCOPY_LEN);
	bitmap(&o, 0, w0, 8);
	bitmap_end(&o, 1, MIG_BITMAP_END_PRELIMINARY, 3);
	bitmap(&o, 1, w1, 5);
	bitmap_end(&o, 1, 0, 4);
	states_and_end(&o);
	save(dir, t, "main-postcopy", o.b, o.n);

	/*
	 * Data connection 0 of 4 (shard 64): zstd with a zero page, SYNC,
	 * CHANNEL_END. Seeds stay small (zstd, zero pages) so that mutations
	 * land on headers and indexes; raw pages get seeds of their own.
	 */
	o.n = 0;
	hello(&o, MIG_ROLE_DATA, 0);
	pages(&o, 0, (const uint32_t[]){1, 0}, 1, 1, 1);
	pages(&o, 0, (const uint32_t[]){2, 3, 63}, 0, 3, 1);
	mig_sync_encode(b, &(struct mig_sync){.seq = 1});
	rec(&o, MIG_REC_SYNC, b, MIG_SYNC_LEN);
	pages(&o, 0, (const uint32_t[]){60}, 1, 0, 0);
	mig_channel_end_encode(b, &(struct mig_channel_end){.records = 3, .pages = 6});
	rec(&o, MIG_REC_CHANNEL_END, b, MIG_CHANNEL_END_LEN);
	save(dir, t, "data", o.b, o.n);

	/* Urgent: requested pages, any shard; the last page of each slot. */
	o.n = 0;
	hello(&o, MIG_ROLE_URGENT, 0);
	pages(&o, 1, (const uint32_t[]){256}, 1, 0, 0);
	pages(&o, 0, (const uint32_t[]){511}, 0, 1, 1);
	pages(&o, 2, (const uint32_t[]){63}, 1, 0, 0);
	save(dir, t, "urgent", o.b, o.n);

	/* Raw page data: one page of slot 1 on urgent. */
	o.n = 0;
	hello(&o, MIG_ROLE_URGENT, 0);
	pages(&o, 1, (const uint32_t[]){256}, 0, 1, 0);
	save(dir, t, "urgent-raw", o.b, o.n);

	/* Data connection 2: slot 2 is its shard. */
	o.n = 0;
	hello(&o, MIG_ROLE_DATA, 2);
	pages(&o, 2, (const uint32_t[]){63, 0}, 1, 1, 1);
	mig_channel_end_encode(b, &(struct mig_channel_end){.records = 1, .pages = 2});
	rec(&o, MIG_REC_CHANNEL_END, b, MIG_CHANNEL_END_LEN);
	save(dir, t, "data-2", o.b, o.n);

	/* Main-resume: the target receives nothing there. */
	o.n = 0;
	hello(&o, MIG_ROLE_MAIN_RESUME, MIG_HELLO_SET_ATTEMPT(0, 1));
	seed_keys_init();
	proven(&o, MIG_REC_RESUME, MIG_DECIDE_RESUME, 1);
	proven(&o, MIG_REC_RELEASE, MIG_DECIDE_RELEASE, 0);
	save(dir, t, "resume", o.b, o.n);
}

static void wire_source(const char *dir)
{
	const char *t = "fuzz_wire_source";
	static const char msg[] = "VM_DESC: the memslot layout differs";
	uint64_t w0[8] = {0x3}, w1[5] = {0, 0, 0, 0, 1};
	uint8_t b[MIG_CAPS_MAX];
	struct out o;

	o.n = 0;
	put(&o, "\0", 1);
	for (uint64_t s = 1; s <= 2; s++) {
		mig_sync_encode(b, &(struct mig_sync){.seq = s});
		rec(&o, MIG_REC_SYNC_ACK, b, MIG_SYNC_LEN);
	}
	rec(&o, MIG_REC_POSTCOPY_ARMED, NULL, 0);
	mig_committed_encode(b, &(struct mig_committed){
				    .restore_us = 100, .resume_mono_ns = 1, .boot_id = {1, 2, 3}});
	rec(&o, MIG_REC_COMMITTED, b, MIG_COMMITTED_LEN);
	mig_heartbeat_encode(b, &(struct mig_heartbeat){.missing = 77});
	rec(&o, MIG_REC_HEARTBEAT, b, MIG_HEARTBEAT_LEN);
	mig_postcopy_done_encode(b, &(struct mig_postcopy_done){.faults = 3, .requested = 2});
	rec(&o, MIG_REC_POSTCOPY_DONE, b, MIG_POSTCOPY_DONE_LEN);
	mig_heartbeat_encode(b, &(struct mig_heartbeat){.flags = MIG_HEARTBEAT_DONE});
	rec(&o, MIG_REC_HEARTBEAT, b, MIG_HEARTBEAT_LEN);
	save(dir, t, "main-replies", o.b, o.n);

	/* CAPS, the answer to VM_DESC: a target that cannot do postcopy, and one that can. */
	o.n = 0;
	put(&o, "\0", 1);
	{
		static const char why[] = "userfaultfd: the syscall: Operation not permitted; "
					  "/dev/userfaultfd: No such file or directory";
		uint8_t h[MIG_REC_HDR_LEN];
		uint32_t n = mig_caps_encode(b, 0, why);

		mig_rec_hdr_encode(h, MIG_REC_CAPS, MIG_CAPS_LEN + n);
		put(&o, h, sizeof(h));
		put(&o, b, MIG_CAPS_LEN);
		put(&o, why, n);
		mig_caps_encode(b, MIG_CAPS_POSTCOPY, NULL);
		rec(&o, MIG_REC_CAPS, b, MIG_CAPS_LEN);
	}
	save(dir, t, "main-caps", o.b, o.n);

	/* 6.1's CAPS: the reason, then what the target reads (the formats block). */
	o.n = 0;
	put(&o, "\0", 1);
	{
		static const char why[] = "userfaultfd: the syscall: Function not implemented";
		struct mig_caps_formats fm = {.protocol_minor = 1,
					      .framing_oldest = 2,
					      .framing_newest = 3,
					      .ncomp = 3,
					      .comp = {{1, 1, 1}, {2, 1, 1}, {6, 1, 2}}};
		uint8_t h[MIG_REC_HDR_LEN];
		uint32_t n = mig_caps_encode(b, MIG_CAPS_FORMATS, why);
		uint32_t nf = mig_caps_formats_encode(b + MIG_CAPS_LEN + n, &fm);

		memcpy(b + MIG_CAPS_LEN, why, n);
		mig_rec_hdr_encode(h, MIG_REC_CAPS, MIG_CAPS_LEN + n + nf);
		put(&o, h, sizeof(h));
		put(&o, b, MIG_CAPS_LEN + n + nf);
	}
	save(dir, t, "main-caps-formats", o.b, o.n);

	/* The commit: PREPARED then COMMITTED on main; RECOVER_STATE on a recover connection. */
	o.n = 0;
	put(&o, "\0", 1);
	mig_prepared_encode(b, &(struct mig_prepared){.restore_us = 250});
	rec(&o, MIG_REC_PREPARED, b, MIG_PREPARED_LEN);
	mig_committed_encode(b, &(struct mig_committed){.resume_mono_ns = 2});
	rec(&o, MIG_REC_COMMITTED, b, MIG_COMMITTED_LEN);
	save(dir, t, "main-commit", o.b, o.n);
	/* The target's operator decided (a made-up proof: the source ignores it). */
	o.n = 0;
	put(&o, "\0", 1);
	mig_decided_encode(b, &(struct mig_decided){.what = MIG_DECIDED_RUNS});
	rec(&o, MIG_REC_DECIDED, b, MIG_DECIDED_LEN);
	save(dir, t, "main-decided", o.b, o.n);
	o.n = 0;
	put(&o, "\3", 1);
	mig_recover_state_encode(b, &(struct mig_recover_state){.state = MIG_RECOVER_PREPARED});
	rec(&o, MIG_REC_RECOVER_STATE, b, MIG_RECOVER_STATE_LEN);
	mig_committed_encode(b, &(struct mig_committed){.resume_mono_ns = 3});
	rec(&o, MIG_REC_COMMITTED, b, MIG_COMMITTED_LEN);
	save(dir, t, "recover", o.b, o.n);

	o.n = 0;
	put(&o, "\0", 1);
	rec(&o, MIG_REC_ERROR, msg, mig_error_len(msg));
	save(dir, t, "main-error", o.b, o.n);

	o.n = 0;
	put(&o, "\1", 1);
	mig_page_req_encode(b, &(struct mig_page_req){.slot = 0, .page = 5});
	rec(&o, MIG_REC_PAGE_REQ, b, MIG_PAGE_REQ_LEN);
	mig_page_req_encode(b, &(struct mig_page_req){.slot = 1, .page = 256});
	rec(&o, MIG_REC_PAGE_REQ, b, MIG_PAGE_REQ_LEN);
	save(dir, t, "urgent-page-req", o.b, o.n);

	/* The source's slots: 512, 257 and 64 pages. */
	o.n = 0;
	put(&o, "\2", 1);
	bitmap(&o, 0, w0, 8);
	bitmap(&o, 1, w1, 5);
	bitmap_end(&o, 2, 0, 3);
	save(dir, t, "resume-missing", o.b, o.n);

	o.n = 0;
	put(&o, "\2", 1);
	rec(&o, MIG_REC_ERROR, msg, mig_error_len(msg));
	save(dir, t, "resume-error", o.b, o.n);
}

static void state(const char *dir)
{
	/* The newest framing, and release 0.3.0's (framing 2, no VERSIONS section). */
	static const struct {
		unsigned framing;
		const char *vcpu, *vm;
	} forms[] = {{STATE_FRAMING_NEWEST, "vcpu", "vm"}, {2, "vcpu-0.3.0", "vm-0.3.0"}};
	struct state_buf b;
	struct out o;

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		state_buf_init(&b);
		vcpu_blob(&b, forms[i].framing);
		o.n = 0;
		put(&o, "\0", 1);
		put(&o, b.data, b.len);
		save(dir, "fuzz_state", forms[i].vcpu, o.b, o.n);
		state_buf_free(&b);
		state_buf_init(&b);
		vm_blob(&b, forms[i].framing);
		o.n = 0;
		put(&o, "\1", 1);
		put(&o, b.data, b.len);
		save(dir, "fuzz_state", forms[i].vm, o.b, o.n);
		state_buf_free(&b);
	}
}

/* ---- virtqueue images (fuzz_virtq.h) ---- */

struct vimg {
	uint8_t b[16384];
	size_t n; /* bytes used: FV_HDR + the image up to its last written byte */
	uint32_t size;
	uint16_t idx; /* the driver's avail idx */
};

static uint8_t *vat(struct vimg *v, uint64_t gpa, size_t len)
{
	if (FV_HDR + gpa + len > sizeof(v->b)) {
		fprintf(stderr, "fuzz_seeds: virtq image too large\n");
		exit(1);
	}
	if (FV_HDR + gpa + len > v->n)
		v->n = FV_HDR + gpa + len;
	return v->b + FV_HDR + gpa;
}

static void vinit(struct vimg *v, uint8_t log2, uint8_t flags, uint16_t start, uint16_t push_len,
		  uint16_t off)
{
	memset(v, 0, sizeof(*v));
	v->b[0] = log2;
	v->b[1] = flags;
	le_put16(v->b + 2, start);
	le_put16(v->b + 4, push_len);
	le_put16(v->b + 6, off);
	v->n = FV_HDR;
	v->size = fv_size(log2);
	v->idx = start;
	le_put16(vat(v, fv_avail(v->size) + 2, 2), start);
}

static void vdesc(struct vimg *v, uint64_t table, uint32_t i, uint64_t addr, uint32_t len,
		  uint16_t flags, uint16_t next)
{
	uint8_t *p = vat(v, table + 16ull * i, 16);

	le_put64(p, addr);
	le_put32(p + 8, len);
	le_put16(p + 12, flags);
	le_put16(p + 14, next);
}

static void vavail(struct vimg *v, uint16_t head)
{
	uint64_t a = fv_avail(v->size);

	le_put16(vat(v, a + 4 + 2ull * (v->idx % v->size), 2), head);
	v->idx++;
	le_put16(vat(v, a + 2, 2), v->idx);
}

static void virtq_images(const char *dir)
{
	const char *t = "fuzz_virtq";
	const uint16_t N = VIRTQ_DESC_F_NEXT, W = VIRTQ_DESC_F_WRITE, I = VIRTQ_DESC_F_INDIRECT;
	struct vimg v;

	/* One readable buffer. */
	vinit(&v, 3, 0, 0, 0, 0);
	vdesc(&v, 0, 0, 0x8000, 64, 0, 0);
	vavail(&v, 0);
	save(dir, t, "one", v.b, v.n);

	/* Three requests of 2 readable + 1 writable, EVENT_IDX, across the index wrap. */
	vinit(&v, 4, FV_EVENT_IDX, 65534, 512, 4);
	for (uint16_t k = 0; k < 3; k++) {
		vdesc(&v, 0, 3u * k, 0x8000 + 0x1000u * k, 16, N, (uint16_t)(3 * k + 1));
		vdesc(&v, 0, 3u * k + 1, 0x8800 + 0x1000u * k, 100, N, (uint16_t)(3 * k + 2));
		vdesc(&v, 0, 3u * k + 2, 0x20000 + 0x1000u * k, 4096, W, 0);
		vavail(&v, (uint16_t)(3 * k));
	}
	save(dir, t, "rw-wrap", v.b, v.n);

	/* An indirect table of 2 readable + 2 writable, then a direct chain. */
	vinit(&v, 2, FV_INDIRECT, 0, 100, 0);
	vdesc(&v, 0x2000, 0, 0x8000, 16, N, 1);
	vdesc(&v, 0x2000, 1, 0x8100, 16, N, 2);
	vdesc(&v, 0x2000, 2, 0x9000, 256, N | W, 3);
	vdesc(&v, 0x2000, 3, 0xa000, 1, W, 0);
	vdesc(&v, 0, 0, 0x2000, 64, I, 0);
	vdesc(&v, 0, 1, 0x8000, 8, N, 2);
	vdesc(&v, 0, 2, 0xb000, 8, W, 0);
	vavail(&v, 0);
	vavail(&v, 1);
	save(dir, t, "indirect", v.b, v.n);

	/* Refused chains between good ones: a loop, next out of range, read after
	 * write, a buffer outside RAM; the queue goes on. */
	vinit(&v, 3, 0, 7, 0, 0);
	vdesc(&v, 0, 0, 0x8000, 8, N, 1);
	vdesc(&v, 0, 1, 0x8000, 8, N, 0);
	vdesc(&v, 0, 2, 0x8000, 8, N, 9);
	vdesc(&v, 0, 3, 0x8000, 8, N | W, 4);
	vdesc(&v, 0, 4, 0x8000, 8, 0, 0);
	vdesc(&v, 0, 5, FV_RAM - 4, 8, W, 0);
	vdesc(&v, 0, 6, 0x8000, 8, W, 0);
	for (uint16_t h = 0; h < 7; h++)
		vavail(&v, h == 1 ? 6 : h);
	save(dir, t, "refusals", v.b, v.n);

	/* A full ring of 256, the used ring at the top of RAM. */
	vinit(&v, 8, FV_USED_TOP | FV_EVENT_IDX, 300, 8, 0);
	for (uint16_t h = 0; h < 256; h++) {
		vdesc(&v, 0, h, 0x10000 + 16u * h, 16, W, 0);
		vavail(&v, (uint16_t)(255 - h));
	}
	save(dir, t, "full-256", v.b, v.n);

	/* The driver jumps avail idx by more than the queue size: broken. */
	vinit(&v, 3, 0, 0, 0, 0);
	vdesc(&v, 0, 0, 0x8000, 8, 0, 0);
	le_put16(vat(&v, fv_avail(8) + 2, 2), 9);
	save(dir, t, "broken", v.b, v.n);
}

/* ---- snapshot state files ---- */

/*
 * A state file for the slots of the wire's seeds (512 pages at 0, 257 at
 * 2 MiB), 1 vCPU, with small stand-in blobs (the codec does not read them:
 * fuzz_state does). diff: a layer on top of id 0x11..., with a
 * PARENT_PATH and an optional device section.
 */
static void snap_seed(const char *dir, const char *name, uint8_t mode, uint32_t enc, int diff)
{
	static const uint64_t map0[8] = {0x5, 0, 0, 0, 0, 0, 0, 1ull << 63};
	static const uint64_t map1[5] = {0, 0, 0, 0, 1}, npages[2] = {512, 257};
	static const struct snap_cpu_word cpu[2] = {{1, 0, SNAP_CPU_ECX, 0x10000001},
						    {7, 0, SNAP_CPU_EBX, 0x20}};
	static const uint8_t vm[16] = "vm state blob..", vcpu[16] = "vcpu state blob";
	const uint64_t *maps[2] = {map0, map1};
	uint8_t layout[2 * SNAP_SLOT_LEN], index[512],
	    cpub[SNAP_CPU_HDR_LEN + 2 * SNAP_CPU_WORD_LEN];
	struct snap_header h = {.version_major = SNAP_VERSION_MAJOR,
				.version_minor = SNAP_VERSION_MINOR,
				.header_len = SNAP_HEADER_LEN,
				.page_size = MIG_PAGE_SIZE,
				.nslots = 2,
				.nvcpus = 1,
				.memory = slots[0].size + slots[1].size};
	struct snap_sec_in s[9];
	uint32_t n = 0;
	long long ilen, len;
	struct out o;

	memset(h.id.b, diff ? 0x22 : 0x11, 16);
	if (diff) {
		h.flags = SNAP_F_DIFF;
		h.generation = 1;
		memset(h.parent.b, 0x11, 16);
	}
	h.memory_file_len = snap_layout_encode(layout, slots, 2);
	ilen = snap_index_encode(index, sizeof(index), maps, npages, 2, enc);
	snap_cpu_encode(cpub, cpu, 2);
#define SEC(t, i, f, p, l)                                                                         \
	s[n++] = (struct snap_sec_in){.sec = {.type = (t),                                         \
					      .version = SNAP_SEC_VERSION,                         \
					      .flags = (f),                                        \
					      .instance = (i),                                     \
					      .len = (l)},                                         \
				      .payload = (p)}
	SEC(SNAP_SEC_LAYOUT, 0, SNAP_SEC_REQUIRED, layout, sizeof(layout));
	SEC(SNAP_SEC_INDEX, 0, SNAP_SEC_REQUIRED, index, (uint64_t)ilen);
	SEC(SNAP_SEC_CONFIG, 0, SNAP_SEC_REQUIRED, config, sizeof(config) - 1);
	SEC(SNAP_SEC_CPU, 0, SNAP_SEC_REQUIRED, cpub, sizeof(cpub));
	SEC(SNAP_SEC_VM_STATE, 0, SNAP_SEC_REQUIRED, vm, sizeof(vm));
	SEC(SNAP_SEC_VCPU_STATE, 0, SNAP_SEC_REQUIRED, vcpu, sizeof(vcpu));
	if (diff) {
		SEC(SNAP_SEC_PARENT_PATH, 0, 0, "../base", 7);
		SEC(SNAP_SEC_DEVICE_FIRST, 0, 0, "virtio-blk0 state", 17);
	}
#undef SEC
	o.n = 0;
	put(&o, &mode, 1);
	len = snap_state_encode(o.b + 1, sizeof(o.b) - 1, &h, s, n);
	if (len < 0) {
		fprintf(stderr, "fuzz_seeds: snapshot %s: %lld\n", name, len);
		exit(1);
	}
	o.n += (size_t)len;
	save(dir, "fuzz_snapshot", name, o.b, o.n);
}

static void snapshot(const char *dir)
{
	snap_seed(dir, "full", 0, SNAP_INDEX_ZSTD, 0);
	snap_seed(dir, "full-raw-fixcrc", 1, SNAP_INDEX_RAW, 0);
	snap_seed(dir, "diff-fixcrc", 1, SNAP_INDEX_ZSTD, 1);
}

/* ---- virtio-mmio access sequences (fuzz_virtio_mmio.h) ---- */

struct mseq {
	uint8_t b[8192];
	size_t nops;
	uint8_t ram[4096]; /* guest RAM from gpa 0 */
	size_t ram_len;
};

static void mop(struct mseq *m, uint8_t op, uint32_t off, uint32_t value)
{
	uint8_t *p = m->b + FM_HDR + m->nops * FM_OP;

	if (m->nops == 255) {
		fprintf(stderr, "fuzz_seeds: too many virtio-mmio ops\n");
		exit(1);
	}
	p[0] = (uint8_t)(op | (off & 3) << 2);
	p[1] = (uint8_t)(off / 4);
	le_put32(p + 2, value);
	m->nops++;
}

static void mw(struct mseq *m, uint32_t off, uint32_t value)
{
	mop(m, FM_WRITE, off, value);
}

static void mr(struct mseq *m, uint32_t off)
{
	mop(m, FM_READ, off, 0);
}

static void msave(struct mseq *m, const char *dir, const char *name, uint8_t knobs)
{
	size_t n = FM_HDR + m->nops * FM_OP;

	m->b[0] = knobs;
	m->b[1] = (uint8_t)m->nops;
	memcpy(m->b + n, m->ram, m->ram_len);
	save(dir, "fuzz_virtio_mmio", name, m->b, n + m->ram_len);
}

/* The driver's init up to FEATURES_OK, then queue q at desc/avail/used of size 8. */
static void minit(struct mseq *m, uint64_t features)
{
	mw(m, VIRTIO_MMIO_STATUS, 0);
	mr(m, VIRTIO_MMIO_MAGIC_VALUE);
	mr(m, VIRTIO_MMIO_VERSION);
	mr(m, VIRTIO_MMIO_DEVICE_ID);
	mw(m, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE);
	mw(m, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	mw(m, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	mr(m, VIRTIO_MMIO_DEVICE_FEATURES);
	mw(m, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	mw(m, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)features);
	mw(m, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	mw(m, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(features >> 32));
	mw(m, VIRTIO_MMIO_STATUS, 0x0b);
	mr(m, VIRTIO_MMIO_STATUS);
}

static void mqueue(struct mseq *m, uint32_t q, uint32_t desc, uint32_t avail, uint32_t used)
{
	mw(m, VIRTIO_MMIO_QUEUE_SEL, q);
	mr(m, VIRTIO_MMIO_QUEUE_READY);
	mr(m, VIRTIO_MMIO_QUEUE_NUM_MAX);
	mw(m, VIRTIO_MMIO_QUEUE_NUM, 8);
	mw(m, VIRTIO_MMIO_QUEUE_DESC_LOW, desc);
	mw(m, VIRTIO_MMIO_QUEUE_DESC_HIGH, 0);
	mw(m, VIRTIO_MMIO_QUEUE_DRIVER_LOW, avail);
	mw(m, VIRTIO_MMIO_QUEUE_DRIVER_HIGH, 0);
	mw(m, VIRTIO_MMIO_QUEUE_DEVICE_LOW, used);
	mw(m, VIRTIO_MMIO_QUEUE_DEVICE_HIGH, 0);
	mw(m, VIRTIO_MMIO_QUEUE_READY, 1);
}

static void virtio_mmio_seqs(const char *dir)
{
	struct mseq m;

	/* A net device: init, queue 0 with one chain (desc 0x100 -> 0x800, 64 bytes
	 * writable; avail at 0x200 has idx 1, ring[0] 0), DRIVER_OK, kick, ack,
	 * migrate, a second kick, a config change, reset. */
	memset(&m, 0, sizeof(m));
	le_put64(m.ram + 0x100, 0x800);
	le_put32(m.ram + 0x108, 64);
	le_put16(m.ram + 0x10c, VIRTQ_DESC_F_WRITE);
	le_put16(m.ram + 0x202, 1);
	m.ram_len = 0x300;
	minit(&m, 1ull << VIRTIO_F_VERSION_1 | 1ull << 5);
	mqueue(&m, 0, 0x100, 0x200, 0x280);
	mw(&m, VIRTIO_MMIO_STATUS, 0x0f);
	mw(&m, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	mr(&m, VIRTIO_MMIO_INTERRUPT_STATUS);
	mw(&m, VIRTIO_MMIO_INTERRUPT_ACK, 1);
	mop(&m, FM_SAVE, 0, 0);
	mw(&m, VIRTIO_MMIO_QUEUE_NOTIFY, 0);
	mop(&m, FM_DEVICE, 0, 2 | 4 << 8 | 0x77 << 16);
	mr(&m, VIRTIO_MMIO_CONFIG_GENERATION);
	mop(&m, FM_READ | 1 << 4, VIRTIO_MMIO_CONFIG + 4, 0);
	mop(&m, FM_DEVICE, 0, 3);
	mw(&m, VIRTIO_MMIO_STATUS, 0);
	msave(&m, dir, "net-init-kick", 0);

	/* EVENT_IDX and INDIRECT offered; a queue refused (misaligned used ring),
	 * DEVICE_NEEDS_RESET, a FEATURES_OK refused for an unoffered bit. */
	memset(&m, 0, sizeof(m));
	minit(&m, 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_F_RING_EVENT_IDX);
	mqueue(&m, 1, 0x100, 0x200, 0x282);
	mr(&m, VIRTIO_MMIO_STATUS);
	mqueue(&m, 0, 0x100, 0x200, 0x280);
	mop(&m, FM_SAVE, 0, 0);
	minit(&m, 1ull << VIRTIO_F_VERSION_1 | 1ull << 6);
	mr(&m, VIRTIO_MMIO_STATUS);
	msave(&m, dir, "refusals", FM_EVENT_IDX | FM_INDIRECT);

	/* A block device: config reads of every size, odd sizes and offsets, a
	 * QueueSel past the queue, a device that broke its queue. */
	memset(&m, 0, sizeof(m));
	minit(&m, 1ull << VIRTIO_F_VERSION_1);
	mop(&m, FM_READ | 1 << 4, VIRTIO_MMIO_CONFIG + 1, 0);
	mop(&m, FM_READ | 2 << 4, VIRTIO_MMIO_CONFIG + 2, 0);
	mop(&m, FM_READ, VIRTIO_MMIO_CONFIG + 4, 0);
	mop(&m, FM_READ | 3 << 4, VIRTIO_MMIO_CONFIG, 0);
	mop(&m, FM_READ, VIRTIO_MMIO_CONFIG + 6, 0);
	mop(&m, FM_WRITE | 1 << 4, VIRTIO_MMIO_STATUS, 0);
	mop(&m, FM_READ, VIRTIO_MMIO_STATUS + 2, 0);
	mw(&m, VIRTIO_MMIO_QUEUE_SEL, 5);
	mr(&m, VIRTIO_MMIO_QUEUE_NUM_MAX);
	mw(&m, VIRTIO_MMIO_QUEUE_READY, 1);
	mqueue(&m, 0, 0x100, 0x200, 0x280);
	mw(&m, VIRTIO_MMIO_STATUS, 0x0f);
	mop(&m, FM_DEVICE, 0, 1);
	mop(&m, FM_SAVE, 0, 0);
	mr(&m, VIRTIO_MMIO_INTERRUPT_STATUS);
	msave(&m, dir, "block-edges", FM_BLOCK);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seeds CORPUS_DIR\n");
		return 2;
	}
	mkdir(argv[1], 0755);
	wire_target(argv[1]);
	wire_source(argv[1]);
	state(argv[1]);
	virtq_images(argv[1]);
	snapshot(argv[1]);
	virtio_mmio_seqs(argv[1]);
	return 0;
}
