/* SPDX-License-Identifier: Apache-2.0 */
#include "dirtylog.h"

#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vm.h"

int dirtylog_enable(struct dirtylog *dl, struct vm *vm, bool use_initially_set)
{
	int caps = vm_check_cap(vm, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2);
	uint64_t want = 0;

	memset(dl, 0, sizeof(*dl));
	dl->vm = vm;
	if (caps & KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE) {
		want = KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE;
		if (use_initially_set && (caps & KVM_DIRTY_LOG_INITIALLY_SET))
			want |= KVM_DIRTY_LOG_INITIALLY_SET;
	}
	/* Set (or reset) the mode every time: a previous migration may have left another. */
	if (caps) {
		struct kvm_enable_cap cap = {.cap = KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2,
					     .args = {want}};

		if (ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap) < 0)
			want = 0;
	}
	dl->manual_protect = want & KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE;
	dl->initially_set = want & KVM_DIRTY_LOG_INITIALLY_SET;
	dl->first_pass_all = !dl->initially_set;
	for (uint32_t i = 0; i < vm->mem.nslots; i++) {
		int ret = vm_memslot_register(vm, &vm->mem.slots[i], KVM_MEM_LOG_DIRTY_PAGES);

		if (ret) {
			for (uint32_t j = 0; j < i; j++)
				vm_memslot_register(vm, &vm->mem.slots[j], 0);
			return ret;
		}
	}
	dl->enabled = true;
	return 0;
}

int dirtylog_disable(struct dirtylog *dl)
{
	int ret = 0;

	if (!dl->enabled)
		return 0;
	for (uint32_t i = 0; i < dl->vm->mem.nslots; i++) {
		int r = vm_memslot_register(dl->vm, &dl->vm->mem.slots[i], 0);

		if (r && !ret)
			ret = r;
	}
	dl->enabled = false;
	return ret;
}

int dirtylog_get(struct dirtylog *dl, const struct memslot *slot, uint64_t *bitmap)
{
	struct kvm_dirty_log log = {.slot = slot->id, .dirty_bitmap = bitmap};

	return ioctl(dl->vm->vm_fd, KVM_GET_DIRTY_LOG, &log) < 0 ? -errno : 0;
}

int dirtylog_clear(struct dirtylog *dl, const struct memslot *slot, uint64_t first, uint64_t n,
		   uint64_t *mask)
{
	struct kvm_clear_dirty_log c = {
		.slot = slot->id,
		.num_pages = (uint32_t)n,
		.first_page = first,
		.dirty_bitmap = mask,
	};

	if (!dl->manual_protect)
		return 0;
	return ioctl(dl->vm->vm_fd, KVM_CLEAR_DIRTY_LOG, &c) < 0 ? -errno : 0;
}
