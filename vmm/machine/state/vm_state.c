/* SPDX-License-Identifier: Apache-2.0 */
#include "vm_state.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vcpu_state.h"
#include "vm_struct.h"

_Static_assert(sizeof(struct kvm_irqchip) == 520, "kvm_irqchip");
_Static_assert(sizeof(struct kvm_pit_state2) == 112, "kvm_pit_state2");
_Static_assert(sizeof(struct kvm_clock_data) == 48, "kvm_clock_data");

enum {
	S_PIC_MASTER,
	S_PIC_SLAVE,
	S_IOAPIC,
	S_PIT2,
	S_CLOCK,
	S_SERIAL,
	S_VIRTIO0,
	S_VIRTIO1,
	S_COUNT
};
_Static_assert(S_COUNT - S_VIRTIO0 == DEVICES_MAX, "one section per device");

/* A device's blob: the transport's 32 bytes and 1..VIRTIO_MMIO_MAX_QUEUES queue blobs. */
#define VIRTIO_SPEC(i, n)                                                                          \
	{                                                                                          \
		VM_SEC_VIRTIO_BASE + (i), n, VIRTIO_MMIO_STATE_FIXED + VIRTQ_STATE_SIZE,           \
		    VIRTIO_MMIO_STATE_FIXED + VIRTIO_MMIO_MAX_QUEUES *VIRTQ_STATE_SIZE, false,     \
		    VIRTQ_STATE_SIZE, 0                                                            \
	}

#define EXACT(t, n, sz, comp)                                                                      \
	{                                                                                          \
		t, n, sz, sz, true, 0, comp                                                        \
	}
static const struct state_section_spec specs[S_COUNT] = {
    [S_PIC_MASTER] =
	EXACT(VM_SEC_PIC_MASTER, "PIC_MASTER", sizeof(struct kvm_irqchip), STATE_COMP_VM),
    [S_PIC_SLAVE] = EXACT(VM_SEC_PIC_SLAVE, "PIC_SLAVE", sizeof(struct kvm_irqchip), STATE_COMP_VM),
    [S_IOAPIC] = EXACT(VM_SEC_IOAPIC, "IOAPIC", sizeof(struct kvm_irqchip), STATE_COMP_VM),
    [S_PIT2] = EXACT(VM_SEC_PIT2, "PIT2", sizeof(struct kvm_pit_state2), STATE_COMP_VM),
    [S_CLOCK] = EXACT(VM_SEC_CLOCK, "CLOCK", sizeof(struct kvm_clock_data), STATE_COMP_CLOCK),
    /* Version 1: 16 fixed bytes, then the guest's unread input (serial_state.c). */
    [S_SERIAL] = {VM_SEC_SERIAL, "SERIAL", SERIAL_STATE_FIXED, SERIAL_STATE_MAX, true, 1,
		  STATE_COMP_SERIAL},
    /* Present exactly when the VM has the device (vm_state_load() checks). */
    [S_VIRTIO0] = VIRTIO_SPEC(0, "VIRTIO0"),
    [S_VIRTIO1] = VIRTIO_SPEC(1, "VIRTIO1"),
};

#define WHAT "vm state"

void vm_state_used(const struct vm *vm, bool used[STATE_COMP_COUNT])
{
	memset(used, 0, STATE_COMP_COUNT * sizeof(bool));
	used[STATE_COMP_VM - 1] = used[STATE_COMP_VCPU - 1] = true;
	used[STATE_COMP_CLOCK - 1] = used[STATE_COMP_SERIAL - 1] = true;
	used[STATE_COMP_CPU_FEATURES - 1] = true;
	for (unsigned i = 0; i < vm->devices.n; i++)
		used[vm->devices.dev[i]->ops->state_comp - 1] = true;
}

/* The VERSIONS entries of this VM's blob in form f; 0 or -EPROTONOSUPPORT. */
static int vm_versions(const struct vm *vm, const struct state_form *f, struct state_version_ent *e,
		       unsigned *n, char *err, size_t errlen)
{
	static const uint32_t fixed[][2] = {
	    {VM_SEC_PIC_MASTER, STATE_COMP_VM}, {VM_SEC_PIC_SLAVE, STATE_COMP_VM},
	    {VM_SEC_IOAPIC, STATE_COMP_VM},	{VM_SEC_PIT2, STATE_COMP_VM},
	    {VM_SEC_CLOCK, STATE_COMP_CLOCK},	{VM_SEC_SERIAL, STATE_COMP_SERIAL},
	};
	bool used[STATE_COMP_COUNT];
	int ret = state_form_check(f, err, errlen);

	if (ret)
		return ret;
	vm_state_used(vm, used);
	for (size_t i = 0; i < STATE_COMP_COUNT; i++)
		if (used[i] && !f->v[i])
			return state_fail(-EPROTONOSUPPORT, err, errlen,
					  WHAT ": the form asked for has no %s state",
					  state_comps[i].name);
	*n = 0;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		e[(*n)++] = (struct state_version_ent){fixed[i][0], (uint16_t)fixed[i][1],
						       f->v[fixed[i][1] - 1]};
	for (unsigned i = 0; i < vm->devices.n; i++) {
		uint16_t c = vm->devices.dev[i]->ops->state_comp;

		e[(*n)++] = (struct state_version_ent){VM_SEC_VIRTIO_BASE + i, c, f->v[c - 1]};
	}
	return 0;
}

int vm_state_save_err(struct vm *vm, struct state_buf *out, char *err, size_t errlen)
{
	struct state_form f;

	state_form_current(&f);
	return vm_state_save_form(vm, &f, out, err, errlen);
}

int vm_state_save_form(struct vm *vm, const struct state_form *f, struct state_buf *out, char *err,
		       size_t errlen)
{
	struct state_version_ent ents[S_COUNT];
	unsigned nents = 0;
	struct kvm_irqchip chip[3];
	struct kvm_pit_state2 pit;
	struct kvm_clock_data clock;
	struct serial_snapshot serial;
	uint8_t serial_blob[SERIAL_STATE_MAX];
	size_t serial_len, start = out->len;
	int ret = vm_versions(vm, f, ents, &nents, err, errlen);

	if (ret)
		return ret;

	/* Zeroed so that padding in the blob is deterministic. */
	memset(chip, 0, sizeof(chip));
	memset(&pit, 0, sizeof(pit));
	memset(&clock, 0, sizeof(clock));
	for (uint32_t i = 0; i < 3; i++) {
		chip[i].chip_id = i; /* KVM_IRQCHIP_PIC_MASTER, _PIC_SLAVE, _IOAPIC */
		if (ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &chip[i]) < 0)
			return state_fail(-errno, err, errlen, WHAT ": KVM_GET_IRQCHIP chip %u: %s",
					  i, strerror(errno));
	}
	if (ioctl(vm->vm_fd, KVM_GET_PIT2, &pit) < 0)
		return state_fail(-errno, err, errlen, WHAT ": KVM_GET_PIT2: %s", strerror(errno));
	if (ioctl(vm->vm_fd, KVM_GET_CLOCK, &clock) < 0)
		return state_fail(-errno, err, errlen, WHAT ": KVM_GET_CLOCK: %s", strerror(errno));
	serial_save(&vm->serial, &serial);
	serial_len = serial_state_encode(&serial, serial_blob);

	/* Sections in restore order (see vm_state_load). */
	state_buf_put_header_versions(out, STATE_KIND_VM, vm->nvcpus, f->framing, ents, nents);
	state_buf_put_section(out, VM_SEC_PIC_MASTER, &chip[0], sizeof(chip[0]));
	state_buf_put_section(out, VM_SEC_PIC_SLAVE, &chip[1], sizeof(chip[1]));
	state_buf_put_section(out, VM_SEC_IOAPIC, &chip[2], sizeof(chip[2]));
	state_buf_put_section(out, VM_SEC_PIT2, &pit, sizeof(pit));
	state_buf_put_section(out, VM_SEC_CLOCK, &clock, sizeof(clock));
	state_buf_put_section(out, VM_SEC_SERIAL, serial_blob, serial_len);
	/* The devices are parked with the vCPUs (vm_pause()): no request is in flight. */
	for (unsigned i = 0; i < vm->devices.n; i++) {
		uint8_t blob[VIRTIO_MMIO_STATE_FIXED + VIRTIO_MMIO_MAX_QUEUES * VIRTQ_STATE_SIZE];
		size_t n = virtio_dev_save(vm->devices.dev[i], blob);

		state_buf_put_section(out, VM_SEC_VIRTIO_BASE + i, blob, (uint32_t)n);
	}
	state_buf_put_section(out, STATE_SEC_END, NULL, 0);
	ret = out->error;
	if (ret) {
		state_fail(ret, err, errlen, WHAT ": out of memory");
		if (!out->error)
			out->len = start;
	}
	return ret;
}

int vm_state_save(struct vm *vm, struct state_buf *out)
{
	return vm_state_save_err(vm, out, NULL, 0);
}

int vm_state_load(struct vm *vm, const void *data, size_t len, char *err, size_t errlen)
{
	static const char *const chip_sec[3] = {"PIC_MASTER", "PIC_SLAVE", "IOAPIC"};
	struct state_section f[S_COUNT];
	struct state_header h;
	struct kvm_irqchip chip[3];
	struct kvm_pit_state2 pit;
	struct kvm_clock_data clock, set_clock;
	struct serial_snapshot serial;
	char why[160];
	int ret;

	ret = state_parse(WHAT, STATE_KIND_VM, data, len, specs, S_COUNT, f, &h, err, errlen);
	if (ret)
		return ret;
	if (h.index != vm->nvcpus)
		return state_fail(-EINVAL, err, errlen,
				  WHAT ": section HEADER: the VM had %u vCPUs, this one has %u",
				  h.index, vm->nvcpus);
	for (uint32_t i = 0; i < 3; i++) {
		memcpy(&chip[i], f[S_PIC_MASTER + i].payload, sizeof(chip[i]));
		if (chip[i].chip_id != i)
			return state_fail(-EINVAL, err, errlen,
					  WHAT ": section %s: chip_id %u, expected %u", chip_sec[i],
					  chip[i].chip_id, i);
	}
	memcpy(&pit, f[S_PIT2].payload, sizeof(pit));
	memcpy(&clock, f[S_CLOCK].payload, sizeof(clock));
	ret = serial_state_decode(f[S_SERIAL].payload, f[S_SERIAL].len, &serial, why, sizeof(why));
	if (ret)
		return state_fail(ret, err, errlen, WHAT ": %s", why);
	for (unsigned i = 0; i < DEVICES_MAX; i++) {
		bool have = i < vm->devices.n;
		uint16_t comp;

		if (have != f[S_VIRTIO0 + i].present)
			return state_fail(
			    -EINVAL, err, errlen, WHAT ": section VIRTIO%u: %s", i,
			    have ? "missing, and this VM has that device (the config's [disk] "
				   "and [net] must match the VM's)"
				 : "present, and this VM has no such device");
		if (!have)
			continue;
		/* Framing 2 says no kind: the device's own, which the config decided. */
		comp = vm->devices.dev[i]->ops->state_comp;
		if (f[S_VIRTIO0 + i].comp && f[S_VIRTIO0 + i].comp != comp)
			return state_fail(-EINVAL, err, errlen,
					  WHAT ": section VIRTIO%u: %s state, and this VM's device "
					       "%u is %s",
					  i, state_comp_get(f[S_VIRTIO0 + i].comp)->name, i,
					  state_comp_get(comp)->name);
	}

	/*
	 * RESTORE ORDER.
	 * 1. IRQCHIP: PIC master, PIC slave, IOAPIC, before the PIT: the PIT's
	 *    channel 0 raises IRQ0 as soon as its count is reloaded, and that
	 *    interrupt must meet the restored masks and redirection table, not
	 *    the defaults of a fresh VM.
	 */
	for (uint32_t i = 0; i < 3; i++)
		if (ioctl(vm->vm_fd, KVM_SET_IRQCHIP, &chip[i]) < 0)
			return state_fail(-errno, err, errlen,
					  WHAT ": section %s: KVM_SET_IRQCHIP: %s", chip_sec[i],
					  strerror(errno));
	/* 2. PIT2: reloads each channel's count; KVM restarts the timers from now. */
	if (ioctl(vm->vm_fd, KVM_SET_PIT2, &pit) < 0)
		return state_fail(-errno, err, errlen, WHAT ": section PIT2: KVM_SET_PIT2: %s",
				  strerror(errno));
	/*
	 * 3. CLOCK: the kvmclock goes on from the saved value (the guest was
	 *    paused). Only the clock value is given: flags are cleared as QEMU
	 *    does, because KVM_CLOCK_TSC_STABLE is an output-only flag that
	 *    older kernels refuse on set, and REALTIME/HOST_TSC would ask KVM
	 *    to advance the clock by the host time that passed in between.
	 */
	memset(&set_clock, 0, sizeof(set_clock));
	set_clock.clock = clock.clock;
	if (ioctl(vm->vm_fd, KVM_SET_CLOCK, &set_clock) < 0)
		return state_fail(-errno, err, errlen, WHAT ": section CLOCK: KVM_SET_CLOCK: %s",
				  strerror(errno));
	/*
	 * 4. SERIAL: vmm's own device, after the irqchip: restoring it
	 *    re-asserts IRQ 4 when the saved state has an interrupt pending,
	 *    and that level must reach the restored PIC and IOAPIC.
	 */
	serial_restore(&vm->serial, &serial);
	/*
	 * 5. VIRTIO: each device's transport and queues, checked whole against
	 *    the device this VM built from the same config (id, queue count,
	 *    features it offers, rings in RAM) before it changes. Its I/O thread
	 *    is parked; its first unpark sends the interrupt the state owes.
	 */
	for (unsigned i = 0; i < vm->devices.n; i++) {
		ret = virtio_dev_load(vm->devices.dev[i], f[S_VIRTIO0 + i].payload,
				      f[S_VIRTIO0 + i].len, why, sizeof(why));
		if (ret)
			return state_fail(ret, err, errlen, WHAT ": section VIRTIO%u: %s", i, why);
	}
	return 0;
}

/* ---- The whole VM: its blob and every vCPU's, in order (vm_state.h) ---- */

int vm_save_whole(struct vm *vm, const struct state_form *f, struct vm_saved *out, int *failed,
		  char *err, size_t errlen)
{
	int ret;

	*failed = VM_WHOLE_VM;
	state_buf_init(&out->vm);
	out->nvcpus = 0;
	out->vcpu = calloc(vm->nvcpus ? vm->nvcpus : 1, sizeof(*out->vcpu));
	if (!out->vcpu)
		return state_fail(-ENOMEM, err, errlen, "%s", strerror(ENOMEM));
	out->nvcpus = vm->nvcpus;
	for (unsigned i = 0; i < vm->nvcpus; i++)
		state_buf_init(&out->vcpu[i]);
	/* In the load's order, so that a reader may apply them as they come. */
	ret = vm_state_save_form(vm, f, &out->vm, err, errlen);
	for (unsigned i = 0; !ret && i < vm->nvcpus; i++) {
		*failed = (int)i;
		ret = vcpu_state_save_form(&vm->vcpus[i], f, &out->vcpu[i], err, errlen);
	}
	return ret;
}

void vm_saved_free(struct vm_saved *s)
{
	state_buf_free(&s->vm);
	for (unsigned i = 0; s->vcpu && i < s->nvcpus; i++)
		state_buf_free(&s->vcpu[i]);
	free(s->vcpu);
	s->vcpu = NULL;
	s->nvcpus = 0;
}

int vm_load_whole(struct vm *vm, const void *vm_blob, size_t vm_len, vm_vcpu_blob_fn vcpu_blob,
		  const void *opaque, int *failed, char *err, size_t errlen)
{
	int ret;

	/*
	 * VM-wide first (irqchip, PIT, clock), then each vCPU: LAPICs route
	 * through the irqchip. A migration target and a restore both load
	 * here, so the order is written once.
	 */
	*failed = VM_WHOLE_VM;
	ret = vm_state_load(vm, vm_blob, vm_len, err, errlen);
	for (unsigned i = 0; !ret && i < vm->nvcpus; i++) {
		const void *blob = NULL;
		size_t len = 0;

		*failed = (int)i;
		vcpu_blob(opaque, i, &blob, &len);
		ret = vcpu_state_load(&vm->vcpus[i], blob, len, err, errlen);
	}
	return ret;
}
