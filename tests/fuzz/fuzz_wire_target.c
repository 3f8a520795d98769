/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_wire_target.c - a migration connection as the target reads it.
 *
 * The input is everything a peer sends on one connection: the hello, then
 * records. It is read through the real channel (fuzz_chan.h) and decoded
 * with the codec the way migration/incoming does it, with the target's own
 * context checks mirrored here on a VM that exists only as a slot layout:
 *   main: VM_DESC first (incoming.c read_desc: the target's limits, then
 *     the config through config_load_text), then the main loop of
 *     main_recv.c: SWITCHOVER, POSTCOPY, BITMAP (zstd, into the slot's
 *     bitmap, as pc_drop.c), BITMAP_END, VM_STATE and VCPU_STATE (the
 *     blobs through vm_state_load/vcpu_state_load on a VM without KVM:
 *     fd -1, so every check runs and the first ioctl fails), END.
 *   data / urgent: PAGES (ram_recv.c: mig_pages_hdr_decode, then
 *     mig_pages_check_ctx for the slot, index range and shard rule, zstd
 *     expanding to exactly the pages), SYNC, CHANNEL_END; the
 *     layout is fixed (a data connection never sees the VM_DESC).
 *   main-resume: the target receives nothing there; the table refuses.
 * Any crash, sanitizer report or leak is a bug in the codec, the channel
 * or the state parsers.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "codec.h"
#include "proof.h"
#include "config.h"
#include "frontend_config.h"
#include "fuzz_chan.h"
#include "vcpu_state.h"
#include "vm_struct.h" /* white-box: builds a VM and a vCPU by hand */
#include "vm_state.h"

/* The harness's own bound on a described VM (the bitmaps it allocates): 64 GiB. */
#define HARNESS_MAX_PAGES (1ull << 24)
#define HARNESS_MAX_SLOTS 64u
/* incoming.c's limits. */
#define TARGET_MAX_SLOTS       32764u
#define TARGET_MAX_CONNECTIONS 16u

/* The layout data connections check against: 3 slots, 4 connections. */
static const uint64_t data_npages[] = {512, 257, 64};
#define DATA_NSLOTS 3u
#define DATA_NCHANS 4u
#define DATA_SHARD  64u

static ZSTD_DCtx *dctx;
static bool verbose;   /* FUZZ_VERBOSE set: say where each input stopped */
static uint8_t *zbuf;  /* MIG_PAGES_DATA_MAX: a PAGES record's data */
static uint8_t *pages; /* MIG_PAGES_MAX pages, expanded */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	dctx = ZSTD_createDCtx();
	zbuf = malloc(MIG_PAGES_DATA_MAX);
	pages = malloc((size_t)MIG_PAGES_MAX * MIG_PAGE_SIZE);
	if (!dctx || !zbuf || !pages)
		abort();
	return 0;
}

static uint64_t words_of(uint64_t npages)
{
	return (npages + 63) / 64;
}

static uint64_t popcount_words(const uint64_t *w, uint64_t n)
{
	uint64_t c = 0;

	for (uint64_t i = 0; i < n; i++)
		c += (uint64_t)__builtin_popcountll(w[i]);
	return c;
}

/* ---- data and urgent connections (ram_recv.c) ---- */

static void recv_data(struct mig_chan *c, uint32_t index, bool urgent)
{
	uint64_t *written[DATA_NSLOTS];
	uint64_t records = 0, synced = 0;
	struct mig_pages_ctx ctx = {.nslots = DATA_NSLOTS,
				    .shard_pages = DATA_SHARD,
				    .connections = DATA_NCHANS,
				    .index = index,
				    .urgent = urgent};
	char e[256] = "";

	for (uint32_t i = 0; i < DATA_NSLOTS; i++)
		written[i] = calloc(words_of(data_npages[i]), 8);
	if (!urgent && index >= DATA_NCHANS)
		goto out; /* incoming.c refuses an index past its connections */
	for (;;) {
		struct mig_rec_hdr h;
		struct mig_pages_hdr ph;
		uint8_t hdr[MIG_PAGES_HDR_LEN];
		uint32_t idx[2 * MIG_PAGES_MAX];
		uint8_t b[MIG_CHANNEL_END_LEN];
		size_t raw_len;

		if (chan_recv_rec(c, 0, &h, e, sizeof(e)))
			break;
		if (h.type == MIG_REC_CHANNEL_END) {
			struct mig_channel_end ce;

			if (!chan_read(c, b, sizeof(b)) &&
			    !mig_channel_end_decode(b, h.len, &ce, e, sizeof(e)))
				snprintf(e, sizeof(e), "CHANNEL_END, %s count",
					 ce.records == records ? "right" : "wrong");
			break;
		}
		if (h.type == MIG_REC_SYNC) {
			struct mig_sync s;

			if (chan_read(c, b, MIG_SYNC_LEN) ||
			    mig_sync_decode(b, h.len, &s, e, sizeof(e)) || s.seq != synced + 1)
				break;
			synced = s.seq;
			continue;
		}
		if (h.type != MIG_REC_PAGES)
			abort(); /* the table lets nothing else through on data/urgent */
		if (chan_read(c, hdr, sizeof(hdr)) ||
		    mig_pages_hdr_decode(hdr, h.len, &ph, e, sizeof(e)))
			break;
		/* ram_recv.c's checks, the same function: the slot, then the indexes. */
		if (mig_pages_check_ctx(&ph, NULL, &ctx, e, sizeof(e)))
			break;
		raw_len = (size_t)ph.ndata * MIG_PAGE_SIZE;
		if (chan_read(c, idx, (ph.nzero + ph.ndata) * sizeof(uint32_t)) ||
		    chan_read(c, zbuf, ph.data_len))
			break;
		ctx.slot_npages = data_npages[ph.slot];
		if (mig_pages_check_ctx(&ph, idx, &ctx, e, sizeof(e)))
			break;
		if (ph.encoding == MIG_ENC_ZSTD) {
			size_t n = ZSTD_decompressDCtx(dctx, pages, raw_len, zbuf, ph.data_len);

			if (ZSTD_isError(n) || n != raw_len)
				break;
		} else if (raw_len) {
			memcpy(pages, zbuf, raw_len);
		}
		/* Where ram_recv.c writes: the index must be inside the slot's bitmap. */
		for (uint32_t i = 0; i < ph.nzero + ph.ndata; i++)
			written[ph.slot][idx[i] / 64] |= 1ull << (idx[i] % 64);
		records++;
	}
out:
	if (verbose)
		fprintf(stderr, "fuzz: %s %u: %llu PAGES, %llu SYNC, stopped at: %s\n",
			urgent ? "urgent" : "data", index, (unsigned long long)records,
			(unsigned long long)synced, e[0] ? e : "(no message)");
	for (uint32_t i = 0; i < DATA_NSLOTS; i++)
		free(written[i]);
}

/* ---- the main connection (incoming.c, main_recv.c, postcopy.c, pc_drop.c) ---- */

struct tvm {
	struct mig_vm_desc d;
	uint64_t npages[HARNESS_MAX_SLOTS];
	uint64_t *missing[HARNESS_MAX_SLOTS];
	uint64_t *scratch;
	uint32_t nbitmaps;
	bool postcopy, pre_done, ended;
	uint8_t *vm_blob;
	uint32_t vm_len;
	uint8_t **vcpu_blob;
	uint32_t *vcpu_len;
};

/* settle_records.c's check on a plain channel: decision d's key signed it. */
static bool verify(const struct tvm *t, uint64_t session, unsigned d, const uint8_t *proof)
{
	static const uint8_t bind[MIG_BIND_LEN];

	return mig_proof_verify(t->d.keys[d], d, session, 0, bind, proof, MIG_SIG_LEN);
}

static int read_desc(struct mig_chan *c, struct tvm *t)
{
	const struct mig_desc_limits lim = {.max_slots = TARGET_MAX_SLOTS,
					    .max_vcpus = CONFIG_MAX_VCPUS,
					    .max_connections = TARGET_MAX_CONNECTIONS};
	struct mig_vm_desc_view v;
	struct mig_rec_hdr h;
	struct vm_config *cfg;
	uint64_t total = 0, max_words = 0;
	uint8_t *buf;
	char e[CONFIG_ERR_MAX];
	int ret;

	if (chan_recv_rec(c, 0, &h, e, sizeof(e)) || h.type != MIG_REC_VM_DESC)
		return -1;
	buf = malloc(h.len);
	if (!buf || chan_read(c, buf, h.len) ||
	    mig_vm_desc_decode(buf, h.len, &lim, &v, e, sizeof(e))) {
		free(buf);
		return -1;
	}
	cfg = malloc(sizeof(*cfg));
	if (!cfg)
		abort();
	config_defaults(cfg);
	/* As the gate reads it: the front end's sections checked, then dropped. */
	struct config_layer host = frontend_config_layer(NULL);

	ret = config_load_text_with(cfg, &host, v.config, v.d.config_len, "migration stream", e,
				    sizeof(e));
	if (!ret && (cfg->memory != v.d.memory || cfg->vcpus != v.d.nvcpus))
		ret = -1;
	t->d = v.d;
	if (!ret && v.d.nslots > HARNESS_MAX_SLOTS)
		ret = -1;
	for (uint32_t i = 0; !ret && i < v.d.nslots; i++) {
		struct mig_slot_desc s = mig_vm_desc_slot(&v, i);

		t->npages[i] = s.size / MIG_PAGE_SIZE;
		total += t->npages[i];
		if (words_of(t->npages[i]) > max_words)
			max_words = words_of(t->npages[i]);
	}
	if (!ret && total > HARNESS_MAX_PAGES)
		ret = -1; /* the harness's memory, not a finding */
	for (uint32_t i = 0; !ret && i < v.d.nslots; i++)
		if (!(t->missing[i] = calloc(words_of(t->npages[i]), 8)))
			abort();
	if (!ret) {
		t->scratch = calloc(max_words, 8);
		t->vcpu_blob = calloc(v.d.nvcpus, sizeof(*t->vcpu_blob));
		t->vcpu_len = calloc(v.d.nvcpus, sizeof(*t->vcpu_len));
		if (!t->scratch || !t->vcpu_blob || !t->vcpu_len)
			abort();
	}
	free(cfg);
	free(buf);
	return ret ? -1 : 0;
}

static int do_bitmap(struct tvm *t, const uint8_t *p, uint32_t len)
{
	struct mig_bitmap_hdr bh;
	char e[256];
	uint64_t words;
	size_t n;

	if (mig_bitmap_hdr_decode(p, len, &bh, e, sizeof(e)) ||
	    mig_bitmap_check_slot(&bh, t->d.nslots, bh.slot < t->d.nslots ? t->npages[bh.slot] : 0,
				  e, sizeof(e)) ||
	    t->ended)
		return -1;
	words = words_of(t->npages[bh.slot]);
	n = ZSTD_decompressDCtx(dctx, t->scratch, words * 8, p + MIG_BITMAP_HDR_LEN, bh.data_len);
	if (ZSTD_isError(n) || n != words * 8)
		return -1;
	if (mig_bitmap_check_tail(t->scratch, t->npages[bh.slot], bh.slot, e, sizeof(e)))
		return -1;
	t->nbitmaps++;
	for (uint64_t w = 0; w < words; w++)
		t->missing[bh.slot][w] |= t->scratch[w];
	return 0;
}

static int do_bitmap_end(struct tvm *t, const uint8_t *p, uint32_t len)
{
	struct mig_bitmap_end be;
	uint64_t pages = 0;
	char e[256];

	if (!t->postcopy || mig_bitmap_end_decode(p, len, &be, e, sizeof(e)))
		return -1;
	if (t->ended || ((be.flags & MIG_BITMAP_END_PRELIMINARY) && t->pre_done))
		return -1;
	for (uint32_t i = 0; i < t->d.nslots; i++)
		pages += popcount_words(t->missing[i], words_of(t->npages[i]));
	if (mig_bitmap_end_check(&be, t->nbitmaps, pages, e, sizeof(e)))
		return -1;
	t->nbitmaps = 0;
	if (be.flags & MIG_BITMAP_END_PRELIMINARY)
		t->pre_done = true;
	else
		t->ended = true;
	return 0;
}

/* What main_load_state() does once END arrived: the blobs into a VM without KVM. */
static void load_states(struct tvm *t)
{
	static struct vm vm;
	static struct vcpu vcpu;
	char e[256];

	if (!t->vm_blob)
		return;
	memset(&vm, 0, sizeof(vm));
	vm.kvm_fd = vm.vm_fd = -1;
	vm.nvcpus = t->d.nvcpus;
	(void)vm_state_load(&vm, t->vm_blob, t->vm_len, e, sizeof(e));
	if (verbose)
		fprintf(stderr, "fuzz: VM_STATE: %s\n", e);
	for (uint32_t i = 0; i < t->d.nvcpus; i++) {
		if (!t->vcpu_blob[i])
			continue;
		memset(&vcpu, 0, sizeof(vcpu));
		vcpu.fd = -1;
		vcpu.index = i;
		(void)vcpu_state_load(&vcpu, t->vcpu_blob[i], t->vcpu_len[i], e, sizeof(e));
		if (verbose)
			fprintf(stderr, "fuzz: VCPU_STATE %u: %s\n", i, e);
	}
}

static void recv_main(struct mig_chan *c, uint64_t session)
{
	struct tvm t;
	uint32_t ctx_max = MIG_STATE_MAX + MIG_VCPU_STATE_HDR_LEN, n = 0;
	bool ended = false;
	char e[256] = "";

	memset(&t, 0, sizeof(t));
	if (read_desc(c, &t))
		goto out;
	for (uint32_t i = 0; i < t.d.nslots; i++)
		if (mig_bitmap_rec_max(t.npages[i]) > ctx_max)
			ctx_max = mig_bitmap_rec_max(t.npages[i]);
	for (;;) {
		struct mig_rec_hdr h;
		uint8_t small[MIG_END_REC_MAX], *p = small;
		int ret = 0;

		if (chan_recv_rec(c, ctx_max, &h, e, sizeof(e)))
			break;
		n++;
		if (h.type == MIG_REC_VM_STATE) {
			if (t.vm_blob)
				break;
			t.vm_len = h.len;
			t.vm_blob = malloc(h.len ? h.len : 1);
			if (!t.vm_blob || chan_read(c, t.vm_blob, h.len))
				break;
			continue;
		}
		if (h.type == MIG_REC_VCPU_STATE) {
			struct mig_vcpu_state_hdr vh;
			uint32_t blob_len;
			uint8_t b[MIG_VCPU_STATE_HDR_LEN];

			if (chan_read(c, b, sizeof(b)) ||
			    mig_vcpu_state_hdr_decode(b, h.len, &vh, &blob_len, e, sizeof(e)) ||
			    vh.index >= t.d.nvcpus || t.vcpu_blob[vh.index])
				break;
			t.vcpu_len[vh.index] = blob_len;
			t.vcpu_blob[vh.index] = malloc(blob_len ? blob_len : 1);
			if (!t.vcpu_blob[vh.index] || chan_read(c, t.vcpu_blob[vh.index], blob_len))
				break;
			continue;
		}
		if (h.type == MIG_REC_VM_DESC)
			break;
		/* After END only the commit's records (settle.c); before it they are refused. */
		if (ended != (h.type == MIG_REC_COMMIT || h.type == MIG_REC_ABORT ||
			      h.type == MIG_REC_RELEASE))
			break;
		if (h.type == MIG_REC_BITMAP)
			p = malloc(h.len ? h.len : 1);
		else if (h.len > sizeof(small))
			abort(); /* the table keeps every other record within MIG_END_REC_MAX */
		if (!p)
			abort();
		if (chan_read(c, p, h.len)) {
			ret = -1;
		} else if (h.type == MIG_REC_RAM_FD) {
			struct mig_ram_fd rf;

			/*
			 * A local handover's, read with its descriptor on a UNIX
			 * socket only (gate_main.c): on this stream, as on TCP, it
			 * ends the migration. The codec must still hold.
			 */
			mig_ram_fd_decode(p, h.len, &rf, e, sizeof(e));
			ret = -1;
		} else if (h.type == MIG_REC_SWITCHOVER) {
			struct mig_switchover so;

			ret = mig_switchover_decode(p, h.len, &so, e, sizeof(e));
		} else if (h.type == MIG_REC_POSTCOPY) {
			struct mig_postcopy pc;

			ret = t.postcopy ? -1 : mig_postcopy_decode(p, h.len, &pc, e, sizeof(e));
			t.postcopy = true;
		} else if (h.type == MIG_REC_BITMAP) {
			ret = t.postcopy ? do_bitmap(&t, p, h.len) : -1;
		} else if (h.type == MIG_REC_BITMAP_END) {
			ret = do_bitmap_end(&t, p, h.len);
		} else if (h.type == MIG_REC_END) {
			struct mig_end_view v;
			uint64_t sum = 0;

			ret = mig_end_decode(p, h.len, &v, e, sizeof(e));
			if (!ret && v.end.connections == t.d.connections) {
				for (uint32_t i = 0; i < v.end.connections; i++)
					sum += mig_end_count(&v, i);
				(void)sum;
				load_states(&t);
				snprintf(e, sizeof(e), "END, states loaded");
			}
			ended = true; /* the commit's records may follow */
		} else if (h.type == MIG_REC_ABORT) {
			char msg[MIG_ERROR_MAX + 1];

			if (h.len < MIG_SIG_LEN)
				abort(); /* the table: the proof comes first */
			mig_error_decode(p + MIG_SIG_LEN, h.len - MIG_SIG_LEN, msg, sizeof(msg),
					 NULL, 0);
			if (strlen(msg) > MIG_ERROR_MAX)
				abort();
			/* settle_records.c's check: only a proven ABORT discards. */
			ret = verify(&t, session, MIG_DECIDE_ABORT, p) ? -1 : 0;
		} else if (h.type == MIG_REC_COMMIT || h.type == MIG_REC_RELEASE) {
			unsigned d =
			    h.type == MIG_REC_COMMIT ? MIG_DECIDE_COMMIT : MIG_DECIDE_RELEASE;

			if (h.len != MIG_SIG_LEN)
				abort(); /* the table keeps both at the proof's size */
			/* settle_records.c's check: only that decision's key's signature passes. */
			snprintf(e, sizeof(e), "%s, proof %s", mig_rec_name(h.type),
				 verify(&t, session, d, p) ? "valid" : "refused");
		} else {
			abort(); /* the table lets nothing else through on main, source to target */
		}
		if (p != small)
			free(p);
		if (ret)
			break;
	}
out:
	if (verbose)
		fprintf(stderr, "fuzz: main: %u records after VM_DESC, stopped at: %s\n", n,
			e[0] ? e : "(no message)");
	for (uint32_t i = 0; i < HARNESS_MAX_SLOTS; i++)
		free(t.missing[i]);
	free(t.scratch);
	free(t.vm_blob);
	for (uint32_t i = 0; t.vcpu_blob && i < t.d.nvcpus; i++)
		free(t.vcpu_blob[i]);
	free(t.vcpu_blob);
	free(t.vcpu_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mig_chan c;
	struct mig_hello h;
	char e[256];

	fuzz_chan_open(&c, data, size, "main");
	if (!chan_recv_hello(&c, &h, e, sizeof(e))) {
		if (h.role == MIG_ROLE_MAIN) {
			recv_main(&c, h.session_id);
		} else if (h.role == MIG_ROLE_DATA || h.role == MIG_ROLE_URGENT) {
			recv_data(&c, h.index, h.role == MIG_ROLE_URGENT);
		} else {
			struct mig_rec_hdr rh;

			uint8_t b[MIG_SIG_LEN];

			/* Source to target on main-resume: the RESUME proof first, RELEASE last. */
			if (!chan_recv_record(&c, MIG_SIG_LEN, &rh, b, sizeof(b), e, sizeof(e)) &&
			    ((rh.type != MIG_REC_RESUME && rh.type != MIG_REC_RELEASE) ||
			     rh.len != MIG_SIG_LEN))
				abort();
		}
	}
	chan_close(&c);
	return 0;
}
