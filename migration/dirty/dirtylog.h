/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dirtylog.h - KVM dirty page logging on the VM's memslots.
 *
 * With KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2 + KVM_DIRTY_LOG_INITIALLY_SET
 * (KVM API, 4.117 KVM_CLEAR_DIRTY_LOG; the "enable dirty log gradually in
 * small chunks" patch) enabling logging write-protects nothing up front: every
 * page starts out "dirty", KVM_GET_DIRTY_LOG only copies the bitmap, and
 * pages are re-protected by KVM_CLEAR_DIRTY_LOG in small chunks right
 * before they are read for sending. Without manual protect, GET both
 * copies and re-protects, and the first pass must treat every page as dirty
 * itself (dirtylog.first_pass_all).
 *
 * The ioctls are the machine's (vm_dirty_log_*() in vm.h); this module
 * chooses the mode and keeps what it got.
 *
 * The ring (KVM_CAP_DIRTY_LOG_RING) is not used: it loses pages on our
 * hosts: measured, a 4096-entry ring left up to ~4000 stale pages in 21 of 37
 * migrations, with the kernel warning in kvm_dirty_ring_push.
 */
#ifndef VMM_MIGRATION_DIRTYLOG_H
#define VMM_MIGRATION_DIRTYLOG_H

#include <stdbool.h>
#include <stdint.h>

struct vm;
struct memslot;

struct dirtylog {
	struct vm *vm;
	bool manual_protect;
	bool initially_set;
	bool first_pass_all; /* userspace must treat every page as dirty in pass 0 */
	bool enabled;
};

/*
 * Turns logging on for every slot. use_initially_set=false keeps manual
 * protect but without INITIALLY_SET (for the benchmark); normal callers pass
 * true and get whatever the kernel offers.
 */
int dirtylog_enable(struct dirtylog *dl, struct vm *vm, bool use_initially_set);
int dirtylog_disable(struct dirtylog *dl);

/* KVM_GET_DIRTY_LOG of one slot into bitmap (slot->npages bits, 64-bit words). */
int dirtylog_get(struct dirtylog *dl, const struct memslot *slot, uint64_t *bitmap);

/*
 * KVM_CLEAR_DIRTY_LOG of [first, first+n) pages of a slot for the bits set in
 * mask (mask[0] bit 0 = page `first`). first must be a multiple of 64; n a
 * multiple of 64 unless the range ends at the slot's end. No-op without
 * manual protect.
 */
int dirtylog_clear(struct dirtylog *dl, const struct memslot *slot, uint64_t first, uint64_t n,
		   uint64_t *mask);

#endif /* VMM_MIGRATION_DIRTYLOG_H */
