/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_dirty_log.c - KVM's dirty page log of a VM's memslots: the mode
 * (KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2), logging on and off per slot, and
 * KVM_GET_DIRTY_LOG / KVM_CLEAR_DIRTY_LOG. The engine's dirtylog.c decides
 * when; the ioctls are the machine's, as every other KVM call (vm.h has
 * the contracts).
 */
#include <errno.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>

#include "vm_struct.h"

void vm_dirty_log_set_mode(struct vm *vm, bool want_initially_set, struct vm_dirty_log_mode *mode)
{
	int caps = vm_check_cap(vm, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2);
	uint64_t want = 0;

	if (caps & KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE) {
		want = KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE;
		if (want_initially_set && (caps & KVM_DIRTY_LOG_INITIALLY_SET))
			want |= KVM_DIRTY_LOG_INITIALLY_SET;
	}
	/* Set (or reset) the mode every time: a previous migration may have left another. */
	if (caps) {
		struct kvm_enable_cap cap = {.cap = KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2,
					     .args = {want}};

		/* Refused: KVM keeps its plain mode, GET re-protecting as it copies. */
		if (ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap) < 0)
			want = 0;
	}
	mode->manual_protect = want & KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE;
	mode->initially_set = want & KVM_DIRTY_LOG_INITIALLY_SET;
}

int vm_dirty_log_slots(struct vm *vm, bool on)
{
	int ret = 0;

	if (!on) {
		/* Every slot, whatever one refuses: logging left on costs the guest faults. */
		for (uint32_t i = 0; i < vm->mem.nslots; i++) {
			int r = vm_memslot_register(vm, &vm->mem.slots[i], 0);

			if (r && !ret)
				ret = r;
		}
		return ret;
	}
	for (uint32_t i = 0; i < vm->mem.nslots; i++) {
		ret = vm_memslot_register(vm, &vm->mem.slots[i], KVM_MEM_LOG_DIRTY_PAGES);
		if (ret) {
			/* All or none: a half-logged VM would lose the others' pages. */
			for (uint32_t j = 0; j < i; j++)
				vm_memslot_register(vm, &vm->mem.slots[j], 0);
			return ret;
		}
	}
	return 0;
}

int vm_dirty_log_get(struct vm *vm, const struct memslot *slot, uint64_t *bitmap)
{
	struct kvm_dirty_log log = {.slot = slot->id, .dirty_bitmap = bitmap};

	return ioctl(vm->vm_fd, KVM_GET_DIRTY_LOG, &log) < 0 ? -errno : 0;
}

int vm_dirty_log_clear(struct vm *vm, const struct memslot *slot, uint64_t first, uint64_t n,
		       uint64_t *mask)
{
	struct kvm_clear_dirty_log c = {
	    .slot = slot->id,
	    .num_pages = (uint32_t)n,
	    .first_page = first,
	    .dirty_bitmap = mask,
	};

	return ioctl(vm->vm_fd, KVM_CLEAR_DIRTY_LOG, &c) < 0 ? -errno : 0;
}
