/* SPDX-License-Identifier: Apache-2.0 */
/*
 * harvest.h - collecting the dirty log of all memslots concurrently.
 *
 * A pool of threads (the caller is one of them) takes memslots from a
 * shared counter; for each it runs KVM_GET_DIRTY_LOG into a scratch bitmap,
 * ORs that and the VMM's own dirty bits into the slot's `pending` bitmap
 * (pages still to send), counts them and, when asked, zstd-compresses the
 * pending bitmap (the form a postcopy target wants it in). On kernels where
 * GET_DIRTY_LOG of one VM serialises on the slots lock (ours, see
 * measured on our hosts), the gain comes from one thread merging, counting and
 * compressing a slot while another is inside the ioctl; on kernels with
 * the patch "KVM: For manual-protect GET_DIRTY_LOG, do not hold slots lock"
 * (kvm@vger.kernel.org, 2025-09-30) the ioctls themselves run in parallel.
 *
 * `pending` belongs to the harvest between harvest_run() calls only in the
 * sense that harvest ORs into it; senders clear bits as they send pages.
 * harvest_run() must not overlap with sending.
 */
#ifndef VMM_MIGRATION_HARVEST_H
#define VMM_MIGRATION_HARVEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bitmap.h"
#include "team.h"

struct vm;
struct dirtylog;
struct memslot;

/*
 * Below this much bitmap (1 MiB: 32 GiB of guest RAM) the caller harvests
 * alone: measured on our hosts, waking a second thread cost ~10 us more than
 * it saved (docs/benchmarks.md).
 */
#define HARVEST_PARALLEL_MIN_BYTES (1u << 20)

struct harvest_slot {
	uint64_t *pending;    /* pages to send, slot->npages bits */
	uint64_t *scratch;    /* KVM_GET_DIRTY_LOG target */
	uint64_t npending;    /* bits set in pending after the last harvest */
	uint64_t got_ns;      /* when the last harvest read this slot's log (its GET returned) */
	uint64_t prev_got_ns; /* ... and the harvest before that; 0: none */
	void *zbuf;	      /* compressed pending bitmap, when asked */
	size_t zcap, zlen;
};

struct harvest_stats {
	uint64_t wall_ns;  /* first GET to last slot done */
	uint64_t ioctl_ns; /* sum of time inside KVM_GET_DIRTY_LOG */
	uint64_t pending;  /* pages pending after the harvest */
	uint64_t bitmap_bytes;
	uint64_t zbytes; /* compressed bitmap bytes, when compressing */
};

struct harvest {
	struct vm *vm;
	struct dirtylog *dl;
	struct harvest_slot *slots;
	uint32_t nslots;
	unsigned nthreads; /* total, the caller included */
	struct team team;
	void **cctx;	       /* one ZSTD_CCtx per thread */
	uint64_t bitmap_bytes; /* all slots */
	/* per round */
	bool serial; /* bitmap under HARVEST_PARALLEL_MIN_BYTES: the caller alone */
	uint32_t next;
	bool compress;
	int error;
	uint64_t ioctl_ns;
};

int harvest_init(struct harvest *h, struct vm *vm, struct dirtylog *dl, unsigned nthreads);
/* Sets every page pending (first pass when the kernel has no INITIALLY_SET). */
void harvest_mark_all(struct harvest *h);
/*
 * Sets bits (slot->npages of them, others cleared) for the slot's pages that
 * are resident in host memory; returns how many, or -errno. With no swap, a
 * page that is not resident was never written.
 */
int64_t slot_resident_bits(const struct memslot *s, uint64_t *bits);
/* Sets exactly the resident pages pending (see harvest.c); *resident = their count. */
int harvest_mark_resident(struct harvest *h, uint64_t *resident);
int harvest_run(struct harvest *h, bool compress, struct harvest_stats *st);
/* Compresses and recounts every slot's pending bitmap as it stands (no GET). */
int harvest_compress(struct harvest *h, struct harvest_stats *st);
void harvest_destroy(struct harvest *h);

#endif /* VMM_MIGRATION_HARVEST_H */
