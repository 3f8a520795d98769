/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock_state.c - the clock component's part (state_part.h): the
 * kvmclock, the VM blob's CLOCK section (docs/state-format.md). Loaded
 * after the interrupt chips and the PIT (vm_state.c's order), shortly
 * before the VM runs: the guest's clock goes on from the load.
 */
#include "state_part.h"
#include "vm.h"
#include "vm_struct.h"
#include "vm_state.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

_Static_assert(sizeof(struct kvm_clock_data) == 48, "kvm_clock_data");

static const struct state_section_spec specs[] = {
    {VM_SEC_CLOCK, "CLOCK", sizeof(struct kvm_clock_data), sizeof(struct kvm_clock_data), true, 0,
     STATE_COMP_CLOCK},
};

static int save(struct vm *vm, unsigned i, const struct state_form *f, struct state_buf *out,
		char *err, size_t errlen)
{
	struct kvm_clock_data clock;

	(void)i;
	(void)f;			  /* version 1 is the only one */
	memset(&clock, 0, sizeof(clock)); /* deterministic padding */
	if (ioctl(vm->vm_fd, KVM_GET_CLOCK, &clock) < 0)
		return state_fail(-errno, err, errlen, "KVM_GET_CLOCK: %s", strerror(errno));
	state_buf_put_section(out, VM_SEC_CLOCK, &clock, sizeof(clock));
	return 0;
}

static int load(struct vm *vm, unsigned i, const struct state_part_in *in, char *err, size_t errlen)
{
	struct kvm_clock_data clock, set;

	(void)i;
	/*
	 * The kvmclock goes on from the saved value (the guest was paused).
	 * Only the clock value is given: flags are cleared as QEMU does,
	 * because KVM_CLOCK_TSC_STABLE is an output-only flag that older
	 * kernels refuse on set, and REALTIME/HOST_TSC would ask KVM to
	 * advance the clock by the host time that passed in between.
	 */
	memcpy(&clock, in->sec[0].payload, sizeof(clock));
	memset(&set, 0, sizeof(set));
	set.clock = clock.clock;
	if (ioctl(vm->vm_fd, KVM_SET_CLOCK, &set) < 0)
		return state_fail(-errno, err, errlen, "section CLOCK: KVM_SET_CLOCK: %s",
				  strerror(errno));
	return 0;
}

/* Nothing to check: any clock value is one the guest may have read. */
const struct state_part clock_part = {
    .name = "clock",
    .comps = {STATE_COMP_CLOCK},
    .blob = STATE_PART_VM,
    .specs = specs,
    .nspecs = 1,
    .save = save,
    .load = load,
};
