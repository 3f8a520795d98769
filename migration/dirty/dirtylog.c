/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dirtylog.c - the engine's side of KVM's dirty log: which mode it wants,
 * and what it remembers of the one it got. The ioctls are the machine's
 * (vm_dirty_log_*() in vm.h): no KVM call is made outside vmm/machine.
 */
#include "dirtylog.h"

#include <string.h>

#include "vm.h"

int dirtylog_enable(struct dirtylog *dl, struct vm *vm, bool use_initially_set)
{
	struct vm_dirty_log_mode mode;
	int ret;

	memset(dl, 0, sizeof(*dl));
	dl->vm = vm;
	vm_dirty_log_set_mode(vm, use_initially_set, &mode);
	dl->manual_protect = mode.manual_protect;
	dl->initially_set = mode.initially_set;
	dl->first_pass_all = !dl->initially_set;
	ret = vm_dirty_log_slots(vm, true);
	if (ret)
		return ret;
	dl->enabled = true;
	return 0;
}

int dirtylog_disable(struct dirtylog *dl)
{
	int ret;

	if (!dl->enabled)
		return 0;
	ret = vm_dirty_log_slots(dl->vm, false);
	dl->enabled = false;
	return ret;
}

int dirtylog_get(struct dirtylog *dl, const struct memslot *slot, uint64_t *bitmap)
{
	return vm_dirty_log_get(dl->vm, slot, bitmap);
}

int dirtylog_clear(struct dirtylog *dl, const struct memslot *slot, uint64_t first, uint64_t n,
		   uint64_t *mask)
{
	/* Without manual protect GET re-protected the pages already. */
	if (!dl->manual_protect)
		return 0;
	return vm_dirty_log_clear(dl->vm, slot, first, n, mask);
}
