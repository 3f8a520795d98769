/* SPDX-License-Identifier: Apache-2.0 */
#include "clock.h"
#include "harvest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zstd.h>

#include "dirtylog.h"
#include "vm.h"

static void harvest_slot(struct harvest *h, unsigned worker, uint32_t i)
{
	struct memslot *s = &vm_mem(h->vm)->slots[i];
	struct harvest_slot *hs = &h->slots[i];
	uint64_t words = bitmap_words(s->npages), n = 0, t0 = now_ns();
	int ret = dirtylog_get(h->dl, s, hs->scratch);

	hs->prev_got_ns = hs->got_ns;
	hs->got_ns = now_ns();
	__atomic_fetch_add(&h->ioctl_ns, hs->got_ns - t0, __ATOMIC_RELAXED);
	if (ret) {
		__atomic_store_n(&h->error, ret, __ATOMIC_RELAXED);
		return;
	}
	/* One pass over the bitmaps: KVM's bits, the VMM's own writes, pending. */
	for (uint64_t w = 0; w < words; w++) {
		uint64_t v = __atomic_load_n(&s->vmm_dirty[w], __ATOMIC_RELAXED);

		if (v)
			v = __atomic_exchange_n(&s->vmm_dirty[w], 0, __ATOMIC_RELAXED);
		hs->pending[w] |= hs->scratch[w] | v;
		n += bits_count(hs->pending[w]);
	}
	hs->npending = n;
	hs->zlen = 0;
	/* A slot with nothing stale sends no BITMAP record: nothing to compress. */
	if (h->compress && n) {
		size_t z = ZSTD_compressCCtx(h->cctx[worker], hs->zbuf, hs->zcap, hs->pending,
					     words * 8, 1);

		if (ZSTD_isError(z))
			__atomic_store_n(&h->error, -EIO, __ATOMIC_RELAXED);
		else
			hs->zlen = z;
	}
}

static void harvest_worker(void *arg, unsigned worker)
{
	struct harvest *h = arg;

	for (;;) {
		uint32_t i = __atomic_fetch_add(&h->next, 1, __ATOMIC_RELAXED);

		if (i >= h->nslots)
			break;
		harvest_slot(h, worker, i);
	}
}

int harvest_init(struct harvest *h, struct vm *vm, struct dirtylog *dl, unsigned nthreads)
{
	const struct guest_mem *ram = vm_mem(vm);
	int ret;

	memset(h, 0, sizeof(*h));
	h->vm = vm;
	h->dl = dl;
	h->nslots = ram->nslots;
	h->nthreads = nthreads ? nthreads : 1;
	h->slots = calloc(h->nslots, sizeof(*h->slots));
	h->cctx = calloc(h->nthreads, sizeof(*h->cctx));
	if (!h->slots || !h->cctx)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->nslots; i++) {
		struct harvest_slot *hs = &h->slots[i];
		size_t bytes = bitmap_words(ram->slots[i].npages) * 8;

		h->bitmap_bytes += bytes;
		hs->pending = calloc(1, bytes);
		hs->scratch = calloc(1, bytes);
		hs->zcap = ZSTD_compressBound(bytes);
		hs->zbuf = malloc(hs->zcap);
		if (!hs->pending || !hs->scratch || !hs->zbuf)
			return -ENOMEM;
	}
	for (unsigned i = 0; i < h->nthreads; i++) {
		h->cctx[i] = ZSTD_createCCtx();
		if (!h->cctx[i])
			return -ENOMEM;
	}
	ret = team_init(&h->team, h->nthreads - 1, harvest_worker, h, SECCOMP_THREAD_HARVEST,
			vm_config(vm)->seccomp);
	return ret;
}

void harvest_mark_all(struct harvest *h)
{
	for (uint32_t i = 0; i < h->nslots; i++) {
		const struct memslot *s = &vm_mem(h->vm)->slots[i];
		uint64_t words = bitmap_words(s->npages);

		memset(h->slots[i].pending, 0xff, words * 8);
		if (s->npages % 64)
			h->slots[i].pending[words - 1] = (1ull << (s->npages % 64)) - 1;
		h->slots[i].npending = s->npages;
	}
}

int harvest_run(struct harvest *h, bool compress, struct harvest_stats *st)
{
	uint64_t t0 = now_ns();

	h->next = 0;
	h->error = 0;
	h->ioctl_ns = 0;
	h->compress = compress;
	h->serial = h->bitmap_bytes < HARVEST_PARALLEL_MIN_BYTES;
	if (h->serial || h->nthreads == 1)
		harvest_worker(h, h->nthreads - 1); /* no thread to wake */
	else
		team_run(&h->team, true);
	if (st) {
		memset(st, 0, sizeof(*st));
		st->wall_ns = now_ns() - t0;
		st->ioctl_ns = h->ioctl_ns;
		for (uint32_t i = 0; i < h->nslots; i++) {
			st->pending += h->slots[i].npending;
			st->bitmap_bytes += bitmap_words(vm_mem(h->vm)->slots[i].npages) * 8;
			st->zbytes += h->slots[i].zlen;
		}
	}
	return h->error;
}

void harvest_destroy(struct harvest *h)
{
	if (h->team.threads)
		team_destroy(&h->team);
	for (uint32_t i = 0; h->slots && i < h->nslots; i++) {
		free(h->slots[i].pending);
		free(h->slots[i].scratch);
		free(h->slots[i].zbuf);
	}
	for (unsigned i = 0; h->cctx && i < h->nthreads; i++)
		ZSTD_freeCCtx(h->cctx[i]);
	free(h->cctx);
	free(h->slots);
	memset(h, 0, sizeof(*h));
}

int64_t slot_resident_bits(const struct memslot *s, uint64_t *bits)
{
	unsigned char vec[4096];
	int64_t total = 0;

	memset(bits, 0, bitmap_words(s->npages) * 8);
	for (uint64_t first = 0; first < s->npages; first += sizeof(vec)) {
		uint64_t n = s->npages - first < sizeof(vec) ? s->npages - first : sizeof(vec);

		if (mincore(s->hva + first * GUEST_PAGE_SIZE, n * GUEST_PAGE_SIZE, vec) < 0)
			return -errno;
		for (uint64_t q = 0; q < n; q += 8) {
			uint64_t eight = 0;

			/* Untouched memory is the common case: skip it 8 pages at a time. */
			memcpy(&eight, vec + q, n - q < 8 ? n - q : 8);
			if (!(eight & 0x0101010101010101ull))
				continue;
			for (uint64_t p = q; p < q + 8 && p < n; p++) {
				if (vec[p] & 1) {
					bits[(first + p) / 64] |= 1ull << ((first + p) % 64);
					total++;
				}
			}
		}
	}
	return total;
}

/*
 * Pending = the pages that are resident now (first pass without
 * INITIALLY_SET). A page not resident was never written (no swap), so it is
 * zero on the target too; one written after this call is in KVM's log,
 * which was enabled before.
 */
int harvest_mark_resident(struct harvest *h, uint64_t *resident)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < h->nslots; i++) {
		int64_t n = slot_resident_bits(&vm_mem(h->vm)->slots[i], h->slots[i].pending);

		if (n < 0)
			return (int)n;
		h->slots[i].npending = (uint64_t)n;
		total += (uint64_t)n;
	}
	*resident = total;
	return 0;
}

/* Compresses every slot's pending bitmap and recounts it, without a GET. */
int harvest_compress(struct harvest *h, struct harvest_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (uint32_t i = 0; i < h->nslots; i++) {
		struct harvest_slot *hs = &h->slots[i];
		uint64_t words = bitmap_words(vm_mem(h->vm)->slots[i].npages), n = 0;
		size_t z;

		for (uint64_t w = 0; w < words; w++)
			n += bits_count(hs->pending[w]);
		hs->npending = n;
		z = n ? ZSTD_compressCCtx(h->cctx[0], hs->zbuf, hs->zcap, hs->pending, words * 8, 1)
		      : 0;
		if (ZSTD_isError(z))
			return -EIO;
		hs->zlen = z;
		st->pending += n;
		st->bitmap_bytes += words * 8;
		st->zbytes += z;
	}
	return 0;
}
