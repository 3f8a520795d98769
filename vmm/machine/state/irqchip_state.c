/* SPDX-License-Identifier: Apache-2.0 */
/*
 * irqchip_state.c - the VM component's part (state_part.h): KVM's
 * in-kernel interrupt chips (PIC master, PIC slave, IOAPIC) and the PIT,
 * the PIC_MASTER, PIC_SLAVE, IOAPIC and PIT2 sections of the VM blob
 * (docs/state-format.md). Their order within the part is the restore's:
 * the chips before the PIT.
 */
#include "state_part.h"
#include "vm.h"
#include "vm_struct.h"
#include "vm_state.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

_Static_assert(sizeof(struct kvm_irqchip) == 520, "kvm_irqchip");
_Static_assert(sizeof(struct kvm_pit_state2) == 112, "kvm_pit_state2");

/* Indexes into specs[] and the instance's sections. */
enum { S_PIC_MASTER, S_PIC_SLAVE, S_IOAPIC, S_PIT2, S_COUNT };
_Static_assert(S_COUNT <= STATE_PART_SECS_MAX, "the part's sections fit");

#define EXACT(t, n, sz)                                                                            \
	{                                                                                          \
		t, n, sz, sz, true, 0, STATE_COMP_VM                                               \
	}
static const struct state_section_spec specs[S_COUNT] = {
    [S_PIC_MASTER] = EXACT(VM_SEC_PIC_MASTER, "PIC_MASTER", sizeof(struct kvm_irqchip)),
    [S_PIC_SLAVE] = EXACT(VM_SEC_PIC_SLAVE, "PIC_SLAVE", sizeof(struct kvm_irqchip)),
    [S_IOAPIC] = EXACT(VM_SEC_IOAPIC, "IOAPIC", sizeof(struct kvm_irqchip)),
    [S_PIT2] = EXACT(VM_SEC_PIT2, "PIT2", sizeof(struct kvm_pit_state2)),
};

/* chip_id i is KVM_IRQCHIP_PIC_MASTER, _PIC_SLAVE, _IOAPIC: the sections' order. */
#define NCHIPS 3u

static int save(struct vm *vm, unsigned i, const struct state_form *f, struct state_buf *out,
		char *err, size_t errlen)
{
	struct kvm_irqchip chip[NCHIPS];
	struct kvm_pit_state2 pit;

	(void)i;
	(void)f; /* version 1 is the only one */
	/* Zeroed so that padding in the blob is deterministic. */
	memset(chip, 0, sizeof(chip));
	memset(&pit, 0, sizeof(pit));
	for (uint32_t c = 0; c < NCHIPS; c++) {
		chip[c].chip_id = c;
		if (ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &chip[c]) < 0)
			return state_fail(-errno, err, errlen, "KVM_GET_IRQCHIP chip %u: %s", c,
					  strerror(errno));
	}
	if (ioctl(vm->vm_fd, KVM_GET_PIT2, &pit) < 0)
		return state_fail(-errno, err, errlen, "KVM_GET_PIT2: %s", strerror(errno));
	for (uint32_t c = 0; c < NCHIPS; c++)
		state_buf_put_section(out, specs[S_PIC_MASTER + c].type, &chip[c], sizeof(chip[c]));
	state_buf_put_section(out, VM_SEC_PIT2, &pit, sizeof(pit));
	return 0;
}

static int check(struct vm *vm, unsigned i, const struct state_part_in *in, char *err,
		 size_t errlen)
{
	(void)vm;
	(void)i;
	for (uint32_t c = 0; c < NCHIPS; c++) {
		struct kvm_irqchip chip;

		memcpy(&chip, in->sec[S_PIC_MASTER + c].payload, sizeof(chip));
		if (chip.chip_id != c)
			return state_fail(-EINVAL, err, errlen,
					  "section %s: chip_id %u, expected %u",
					  specs[S_PIC_MASTER + c].name, chip.chip_id, c);
	}
	return 0;
}

static int load(struct vm *vm, unsigned i, const struct state_part_in *in, char *err, size_t errlen)
{
	struct kvm_irqchip chip;
	struct kvm_pit_state2 pit;

	(void)i;
	/*
	 * The chips (PIC master, PIC slave, IOAPIC) before the PIT: the PIT's
	 * channel 0 raises IRQ0 as soon as its count is reloaded, and that
	 * interrupt must meet the restored masks and redirection table, not
	 * the defaults of a fresh VM.
	 */
	for (uint32_t c = 0; c < NCHIPS; c++) {
		memcpy(&chip, in->sec[S_PIC_MASTER + c].payload, sizeof(chip));
		if (ioctl(vm->vm_fd, KVM_SET_IRQCHIP, &chip) < 0)
			return state_fail(-errno, err, errlen, "section %s: KVM_SET_IRQCHIP: %s",
					  specs[S_PIC_MASTER + c].name, strerror(errno));
	}
	/* PIT2 reloads each channel's count; KVM restarts the timers from now. */
	memcpy(&pit, in->sec[S_PIT2].payload, sizeof(pit));
	if (ioctl(vm->vm_fd, KVM_SET_PIT2, &pit) < 0)
		return state_fail(-errno, err, errlen, "section PIT2: KVM_SET_PIT2: %s",
				  strerror(errno));
	return 0;
}

const struct state_part irqchip_part = {
    .name = "irqchip",
    .comps = {STATE_COMP_VM},
    .blob = STATE_PART_VM,
    .specs = specs,
    .nspecs = S_COUNT,
    .save = save,
    .check = check,
    .load = load,
};
