/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_lazy.c - `vmm run --restore DIR --lazy` (api/snapshot.h): the
 * guest resumes before its memory is in. Guest RAM is registered with
 * userfaultfd (MISSING) before the vCPUs start; two threads fill it:
 *
 *   fault     a page the guest (or KVM, or the VMM) touches first: read
 *             from the memory file and placed (UFFDIO_COPY), or a zero
 *             page when the snapshot holds none there;
 *   prefetch  every other present page, in file order: the runs of a
 *             bitmap word claimed at once, each read with one pread and
 *             placed with one UFFDIO_COPY.
 *
 * A diff chain is served the same way: a page comes from the topmost
 * layer that holds it (a layer holds every page written since the one
 * below, a page that became zero as a hole), looked up in the layers'
 * bitmaps, top down; `present` is their union.
 *
 * Each page is placed exactly once: whoever claims its bit in `placed`
 * (one atomic OR) places it, and the placing ioctl wakes every thread that
 * waits on it, so a fault on a page the other thread claimed needs nothing.
 * When the prefetch has walked every present page and all of them are in,
 * RAM is unregistered (which wakes anything still blocked): what is left is
 * memory the snapshot held as zero, which the kernel now fills itself.
 *
 * A page that cannot be read stops the VM with the reason: a vCPU waiting
 * on it would otherwise wait forever. Until the restore is done, a reader
 * of guest RAM that trusts residency (a migration's first pass, a
 * snapshot's) would take missing pages for zero: the front end refuses
 * those (snapshot_lazy_get()).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bitmap.h"
#include "clock.h"
#include "persist.h"
#include "migration_seccomp.h"
#include "snapshot.h"
#include "uffd.h"
#include "vm.h"

#define FAULT_BATCH 64

/* One layer of the chain: its memory file and which pages it holds where. */
struct lazy_layer {
	int mem_fd;
	uint64_t **present;
	uint64_t *slot_off;
};

struct snapshot_lazy {
	struct vm *vm;
	int uffd, stop_fd, done_fd;
	struct lazy_layer layer[SNAP_LAYERS_MAX + 1]; /* [0] the top, down to the full snapshot */
	uint32_t nlayers;
	uint64_t **present, **placed; /* present: in any layer (layer 0's own with one layer) */
	bool present_own;	      /* present is the union, allocated for it */
	pthread_t fault, prefetch;
	bool fault_started, prefetch_started;
	uint64_t start_ns;
	/* atomics */
	uint64_t pages_in, faults, zero_faults, fault_max_us, done_ns;
	bool stopping, failed;
	uint64_t pages_total; /* present pages: set before the threads start */
};

static void lazy_fail(struct snapshot_lazy *l, uint32_t slot, uint64_t page, int err)
{
	const struct guest_mem *ram = vm_mem(l->vm);

	if (__atomic_exchange_n(&l->failed, true, __ATOMIC_ACQ_REL))
		return;
	vm_request_stop(l->vm, VM_END_ERROR, 1,
			"lazy restore: cannot place page %llu of slot %u from the memory file: %s",
			(unsigned long long)page, slot, strerror(-err));
	/*
	 * Nothing will serve the missing pages now: unregistering wakes every
	 * thread that waits on one (the vCPUs are kicked and stopping, and do
	 * not enter the guest again).
	 */
	uffd_unregister(l->uffd, ram->base, ram->size);
}

/* The topmost layer holding a page of the union. */
static const struct lazy_layer *layer_of(const struct snapshot_lazy *l, uint32_t slot,
					 uint64_t page)
{
	for (uint32_t i = 0; i + 1 < l->nlayers; i++)
		if (bitmap_test(l->layer[i].present[slot], page))
			return &l->layer[i];
	return &l->layer[l->nlayers - 1];
}

static int read_page(const struct lazy_layer *y, uint32_t slot, uint64_t page, void *buf,
		     uint64_t npages)
{
	return persist_io_full(y->mem_fd, false, buf, npages * GUEST_PAGE_SIZE,
			       y->slot_off[slot] + page * GUEST_PAGE_SIZE);
}

/* Places one claimed present page from buf; counts it. */
static void place(struct snapshot_lazy *l, uint32_t slot, uint64_t page, const void *buf)
{
	const struct memslot *s = &vm_mem(l->vm)->slots[slot];
	int ret = uffd_copy(l->uffd, s->hva + page * GUEST_PAGE_SIZE, buf, GUEST_PAGE_SIZE);

	/*
	 * EEXIST: something populated the page behind userfaultfd's back; the
	 * guest would see that, not the snapshot's data.
	 */
	if (ret)
		lazy_fail(l, slot, page, ret);
	__atomic_fetch_add(&l->pages_in, 1, __ATOMIC_RELEASE);
}

static void serve(struct snapshot_lazy *l, uint64_t hva, void *buf)
{
	uint64_t page, t0 = now_ns(), us, max;
	const struct memslot *s = guest_mem_slot_of_hva(vm_mem(l->vm), hva, &page);
	int ret;

	if (!s || !bitmap_claim_atomic(l->placed[s->id], page))
		return; /* not RAM, or placed (or being placed) by the prefetch, which wakes it */
	if (!bitmap_test(l->present[s->id], page)) {
		uffd_zeropage(l->uffd, s->hva + page * GUEST_PAGE_SIZE, GUEST_PAGE_SIZE);
		__atomic_fetch_add(&l->zero_faults, 1, __ATOMIC_RELAXED);
		return;
	}
	ret = read_page(layer_of(l, s->id, page), s->id, page, buf, 1);
	if (ret) {
		lazy_fail(l, s->id, page, ret);
		return;
	}
	place(l, s->id, page, buf);
	__atomic_fetch_add(&l->faults, 1, __ATOMIC_RELAXED);
	us = (now_ns() - t0) / 1000;
	max = __atomic_load_n(&l->fault_max_us, __ATOMIC_RELAXED);
	while (us > max && !__atomic_compare_exchange_n(&l->fault_max_us, &max, us, false,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
	}
}

static void *fault_main(void *arg)
{
	struct snapshot_lazy *l = arg;
	uint64_t addrs[FAULT_BATCH];
	void *buf = aligned_alloc(GUEST_PAGE_SIZE, GUEST_PAGE_SIZE);

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_SNAPSHOT, vm_config(l->vm)->seccomp);
	if (!buf)
		lazy_fail(l, 0, 0, -ENOMEM);
	for (; buf;) {
		struct pollfd p[2] = {{l->uffd, POLLIN, 0}, {l->stop_fd, POLLIN, 0}};
		int n;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			break;
		n = uffd_read_faults(l->uffd, addrs, FAULT_BATCH);
		for (int i = 0; i < n; i++)
			serve(l, addrs[i], buf);
	}
	free(buf);
	return NULL;
}

/* The runs of `mine` (pages of one bitmap word), each read from layer y and placed at once. */
static int prefetch_runs(struct snapshot_lazy *l, const struct lazy_layer *y, uint32_t slot,
			 uint64_t w, uint64_t mine, uint8_t *buf)
{
	const struct memslot *s = &vm_mem(l->vm)->slots[slot];

	while (mine) {
		unsigned b = (unsigned)__builtin_ctzll(mine), e = b;
		uint64_t first = w * 64 + b;
		int ret;

		while (e < 64 && (mine >> e & 1))
			e++;
		mine &= e < 64 ? ~((1ull << e) - 1) : 0;
		ret = read_page(y, slot, first, buf, e - b);
		if (!ret)
			ret = uffd_copy(l->uffd, s->hva + first * GUEST_PAGE_SIZE, buf,
					(uint64_t)(e - b) * GUEST_PAGE_SIZE);
		if (ret) {
			lazy_fail(l, slot, first, ret);
			return ret;
		}
		__atomic_fetch_add(&l->pages_in, e - b, __ATOMIC_RELEASE);
	}
	return 0;
}

/*
 * One bitmap word's present pages not yet placed: claimed together (one
 * atomic OR; the fault thread keeps those it claimed first), then split by
 * the layer each comes from (top down: a page a higher layer holds is
 * that layer's), each run read and placed with one pread and one UFFDIO_COPY.
 */
static void prefetch_word(struct snapshot_lazy *l, uint32_t slot, uint64_t w, uint8_t *buf)
{
	uint64_t want =
	    l->present[slot][w] & ~__atomic_load_n(&l->placed[slot][w], __ATOMIC_ACQUIRE);
	uint64_t mine =
	    want ? want & ~__atomic_fetch_or(&l->placed[slot][w], want, __ATOMIC_ACQ_REL) : 0;

	for (uint32_t i = 0; mine && i < l->nlayers; i++) {
		uint64_t here = i + 1 < l->nlayers ? mine & l->layer[i].present[slot][w] : mine;

		mine &= ~here;
		if (prefetch_runs(l, &l->layer[i], slot, w, here, buf))
			return;
	}
}

static void *prefetch_main(void *arg)
{
	struct snapshot_lazy *l = arg;
	const struct guest_mem *mem = vm_mem(l->vm);
	uint8_t *buf = aligned_alloc(GUEST_PAGE_SIZE, 64 * GUEST_PAGE_SIZE);
	uint64_t one = 1;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_SNAPSHOT, vm_config(l->vm)->seccomp);
	if (!buf)
		lazy_fail(l, 0, 0, -ENOMEM);
	for (uint32_t s = 0; buf && s < mem->nslots; s++)
		for (uint64_t w = 0; w < bitmap_words(mem->slots[s].npages); w++) {
			if (__atomic_load_n(&l->stopping, __ATOMIC_ACQUIRE) ||
			    __atomic_load_n(&l->failed, __ATOMIC_ACQUIRE))
				goto out;
			prefetch_word(l, s, w, buf);
		}
	/* Every present page is claimed; the fault thread may still be placing one. */
	while (buf && __atomic_load_n(&l->pages_in, __ATOMIC_ACQUIRE) < l->pages_total &&
	       !__atomic_load_n(&l->stopping, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&l->failed, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	if (buf && __atomic_load_n(&l->pages_in, __ATOMIC_ACQUIRE) >= l->pages_total) {
		/* What is left was zero: the kernel fills it from now on, and wakes any waiter. */
		uffd_unregister(l->uffd, mem->base, mem->size);
		__atomic_store_n(&l->done_ns, now_ns(), __ATOMIC_RELEASE);
	}
out:
	if (write(l->stop_fd, &one, sizeof(one)) < 0 || write(l->done_fd, &one, sizeof(one)) < 0) {
		/* eventfds: only an overflow fails, and they are readable then */
	}
	free(buf);
	return NULL;
}

/* Pages of guest RAM resident now (mincore), counted to the first. */
/*
 * Guest RAM must hold no page when it is registered: a page already there
 * takes no fault, and the guest would see it instead of the snapshot's.
 * This runs before the first guest instruction, so it must not cost more
 * with more RAM. [vm] prealloc populates RAM on purpose: refused. Anonymous
 * RAM is emptied with one MADV_DONTNEED, which costs what is mapped, not
 * the size (whatever is there is not the snapshot's anyway); scanning it
 * with mincore cost 9 ms at 16 GiB. A memfd cannot be emptied that way
 * (its pages stay in the file) and is checked in O(1) instead: a page
 * mapped shared is a page of the file, so no allocated block means no
 * page (mincore would look up every page in the page cache: 94 ms at
 * 16 GiB).
 */
static int empty_ram(struct vm *vm, char *err, size_t errlen)
{
	const struct guest_mem *mem = vm_mem(vm);
	struct stat st;

	if (vm_config(vm)->prealloc) {
		snprintf(err, errlen,
			 "--lazy: [vm] prealloc makes guest RAM resident before the restore, "
			 "and a resident page never faults in from the snapshot (unset it with "
			 "--set vm.prealloc=false)");
		return -EINVAL;
	}
	if (mem->memfd < 0) {
		if (madvise(mem->base, mem->size, MADV_DONTNEED) < 0) {
			snprintf(err, errlen, "--lazy: emptying guest RAM: %s", strerror(errno));
			return -errno;
		}
		return 0;
	}
	if (fstat(mem->memfd, &st) < 0) {
		snprintf(err, errlen, "--lazy: guest RAM's memfd: %s", strerror(errno));
		return -errno;
	}
	if (st.st_blocks) {
		snprintf(err, errlen,
			 "--lazy: guest RAM already holds pages before the restore (%llu KiB of "
			 "its memfd)",
			 (unsigned long long)st.st_blocks / 2);
		return -EEXIST;
	}
	return 0;
}

static void lazy_free_parts(struct snapshot_lazy *l)
{
	const struct guest_mem *mem = vm_mem(l->vm);

	for (uint32_t i = 0; i < l->nlayers; i++) {
		page_bitmaps_free(l->layer[i].present, mem);
		free(l->layer[i].slot_off);
		if (l->layer[i].mem_fd >= 0)
			close(l->layer[i].mem_fd);
	}
	if (l->present_own)
		page_bitmaps_free(l->present, mem);
	page_bitmaps_free(l->placed, mem);
	if (l->uffd >= 0)
		close(l->uffd);
	if (l->stop_fd >= 0)
		close(l->stop_fd);
	if (l->done_fd >= 0)
		close(l->done_fd);
	free(l);
}

/*
 * Every layer's bitmaps and file (top down), and their union in `present`
 * (a full snapshot alone: its own bitmaps, nothing copied): pages_total
 * counts each page once, whichever layers hold it.
 */
static int load_layers(struct snapshot_lazy *l, struct snapshot_image *img, char *err,
		       size_t errlen)
{
	const struct guest_mem *mem = vm_mem(l->vm);
	bool chain = img->parent != NULL;
	uint64_t n;
	int ret;

	l->present = chain ? page_bitmaps_new(mem) : NULL;
	l->present_own = l->present != NULL;
	if (chain && !l->present)
		return -ENOMEM;
	for (; img && l->nlayers <= SNAP_LAYERS_MAX; img = img->parent) {
		struct lazy_layer *y = &l->layer[l->nlayers++];

		y->mem_fd = dup(img->mem_fd);
		if (y->mem_fd < 0) {
			snprintf(err, errlen, "%s: %s", img->dir, strerror(errno));
			return -errno;
		}
		ret = image_present(img, mem, &y->present, &y->slot_off, &n, err, errlen);
		if (ret)
			return ret;
		if (!chain) {
			l->present = y->present;
			l->pages_total = n; /* INDEX's counts, checked against the bitmaps */
			return 0;
		}
		for (uint32_t s = 0; s < mem->nslots; s++)
			for (uint64_t w = 0; w < bitmap_words(mem->slots[s].npages); w++)
				l->present[s][w] |= y->present[s][w];
	}
	for (uint32_t s = 0; s < mem->nslots; s++)
		for (uint64_t w = 0; w < bitmap_words(mem->slots[s].npages); w++)
			l->pages_total += bits_count(l->present[s][w]);
	return 0;
}

/* Registered and filling: the files, the bitmaps, the userfaultfd, the threads. */
static int lazy_start(struct snapshot_lazy *l, struct snapshot_image *img, char *err, size_t errlen)
{
	struct guest_mem *mem = vm_mem(l->vm);
	char e[256];
	int ret = load_layers(l, img, err, errlen);

	if (ret)
		return ret;
	l->placed = page_bitmaps_new(mem);
	l->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	l->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!l->placed || l->stop_fd < 0 || l->done_fd < 0) {
		snprintf(err, errlen, "%s", strerror(l->placed ? errno : ENOMEM));
		return l->placed ? -errno : -ENOMEM;
	}
	ret = empty_ram(l->vm, err, errlen);
	if (ret)
		return ret;
	ret = uffd_open(&l->uffd, 0, e, sizeof(e));
	if (!ret)
		ret = uffd_register(l->uffd, mem->base, mem->size);
	if (ret) {
		snprintf(err, errlen, "--lazy needs userfaultfd: %s", e);
		return ret;
	}
	l->start_ns = now_ns();
	ret = -pthread_create(&l->fault, NULL, fault_main, l);
	l->fault_started = !ret;
	if (!ret) {
		ret = -pthread_create(&l->prefetch, NULL, prefetch_main, l);
		l->prefetch_started = !ret;
	}
	if (ret)
		snprintf(err, errlen, "starting the lazy restore's threads: %s", strerror(-ret));
	return ret;
}

int snapshot_image_restore_lazy(struct snapshot_image *img, struct vm *vm,
				struct snapshot_lazy **out, struct snapshot_restore_stats *st,
				char *err, size_t errlen)
{
	struct snapshot_lazy *l = calloc(1, sizeof(*l));
	uint64_t t0;
	int ret;

	*out = NULL;
	memset(st, 0, sizeof(*st));
	snap_id_hex(&img->v.h.id, st->id);
	if (!l)
		return -ENOMEM;
	l->vm = vm;
	l->uffd = l->stop_fd = l->done_fd = -1;
	ret = image_check_vm(img, vm, err, errlen);
	/*
	 * RAM registered and served before the state is loaded: KVM writes
	 * guest memory while it takes some of it (the kvmclock's wall clock
	 * and pvclock pages, on KVM_SET_MSRS), and such a write must fault the
	 * snapshot's page in first, as with an eager restore.
	 */
	t0 = now_ns();
	if (!ret)
		ret = lazy_start(l, img, err, errlen);
	st->setup_us = (now_ns() - t0) / 1000;
	t0 = now_ns();
	if (!ret)
		ret = image_load_state(img, vm, err, errlen);
	st->state_us = (now_ns() - t0) / 1000;
	if (ret) {
		snapshot_lazy_free(l);
		return ret;
	}
	st->threads = 2;
	*out = l;
	return 0;
}

int snapshot_lazy_done_fd(const struct snapshot_lazy *l)
{
	return l->done_fd;
}

void snapshot_lazy_get(struct snapshot_lazy *l, struct snapshot_lazy_progress *out)
{
	uint64_t done = __atomic_load_n(&l->done_ns, __ATOMIC_ACQUIRE);

	out->done = done != 0;
	out->failed = __atomic_load_n(&l->failed, __ATOMIC_ACQUIRE);
	out->pages_total = l->pages_total;
	out->pages_in = __atomic_load_n(&l->pages_in, __ATOMIC_ACQUIRE);
	out->faults = __atomic_load_n(&l->faults, __ATOMIC_RELAXED);
	out->zero_faults = __atomic_load_n(&l->zero_faults, __ATOMIC_RELAXED);
	out->fault_max_us = __atomic_load_n(&l->fault_max_us, __ATOMIC_RELAXED);
	out->done_ms = done ? (done - l->start_ns) / 1000000 : 0;
}

void snapshot_lazy_free(struct snapshot_lazy *l)
{
	uint64_t one = 1;

	if (!l)
		return;
	__atomic_store_n(&l->stopping, true, __ATOMIC_RELEASE);
	if (l->stop_fd >= 0 && write(l->stop_fd, &one, sizeof(one)) < 0) {
		/* an eventfd: only an overflow fails, and it is readable then */
	}
	if (l->prefetch_started)
		pthread_join(l->prefetch, NULL);
	if (l->fault_started)
		pthread_join(l->fault, NULL);
	lazy_free_parts(l);
}
