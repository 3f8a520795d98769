/* SPDX-License-Identifier: Apache-2.0 */
#include "harvest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "dirtylog.h"
#include "vm.h"

uint64_t bitmap_words(uint64_t nbits)
{
	return (nbits + 63) / 64;
}

static void harvest_slot(struct harvest *h, unsigned worker, uint32_t i)
{
	struct memslot *s = &h->vm->mem.slots[i];
	struct harvest_slot *hs = &h->slots[i];
	uint64_t words = bitmap_words(s->npages), n = 0, t0 = vm_now_ns();
	int ret = dirtylog_get(h->dl, s, hs->scratch);

	__atomic_fetch_add(&h->ioctl_ns, vm_now_ns() - t0, __ATOMIC_RELAXED);
	if (ret) {
		__atomic_store_n(&h->error, ret, __ATOMIC_RELAXED);
		return;
	}
	guest_mem_take_vmm_dirty(s, hs->scratch);
	for (uint64_t w = 0; w < words; w++) {
		hs->pending[w] |= hs->scratch[w];
		n += (uint64_t)__builtin_popcountll(hs->pending[w]);
	}
	hs->npending = n;
	hs->zlen = 0;
	if (h->compress) {
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
	int ret;

	memset(h, 0, sizeof(*h));
	h->vm = vm;
	h->dl = dl;
	h->nslots = vm->mem.nslots;
	h->nthreads = nthreads ? nthreads : 1;
	h->slots = calloc(h->nslots, sizeof(*h->slots));
	h->cctx = calloc(h->nthreads, sizeof(*h->cctx));
	if (!h->slots || !h->cctx)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->nslots; i++) {
		struct harvest_slot *hs = &h->slots[i];
		size_t bytes = bitmap_words(vm->mem.slots[i].npages) * 8;

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
	ret = team_init(&h->team, h->nthreads - 1, harvest_worker, h);
	return ret;
}

void harvest_mark_all(struct harvest *h)
{
	for (uint32_t i = 0; i < h->nslots; i++) {
		const struct memslot *s = &h->vm->mem.slots[i];
		uint64_t words = bitmap_words(s->npages);

		memset(h->slots[i].pending, 0xff, words * 8);
		if (s->npages % 64)
			h->slots[i].pending[words - 1] = (1ull << (s->npages % 64)) - 1;
		h->slots[i].npending = s->npages;
	}
}

int harvest_run(struct harvest *h, bool compress, struct harvest_stats *st)
{
	uint64_t t0 = vm_now_ns();

	h->next = 0;
	h->error = 0;
	h->ioctl_ns = 0;
	h->compress = compress;
	team_run(&h->team, true);
	if (st) {
		memset(st, 0, sizeof(*st));
		st->wall_ns = vm_now_ns() - t0;
		st->ioctl_ns = h->ioctl_ns;
		for (uint32_t i = 0; i < h->nslots; i++) {
			st->pending += h->slots[i].npending;
			st->bitmap_bytes += bitmap_words(h->vm->mem.slots[i].npages) * 8;
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
