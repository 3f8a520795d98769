/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_state.h - save and restore the VM-wide device state KVM and vmm hold
 * outside the vCPUs: the in-kernel irqchip (PIC master, PIC slave,
 * IOAPIC), the PIT, the kvmclock and the COM1 serial registers, in the
 * blob format of docs/state-format.md. Guest RAM is not part of it.
 *
 * Contract: no vCPU may be in KVM_RUN (VM never started, paused or
 * stopped); call from a thread that is not a vCPU thread. Load validates
 * the whole blob before the first ioctl; a KVM failure half way leaves the
 * VM partly restored and it must be destroyed. Load into a VM created with
 * the same config (vm_create(), without vm_boot_setup()), before the
 * vCPUs' state (vcpu_state_load) and shortly before vm_start(): the
 * kvmclock continues from the saved value from the moment of the load.
 */
#ifndef VMM_VM_STATE_H
#define VMM_VM_STATE_H

#include <stddef.h>

#include "state_buf.h"
#include "state_versions.h"
#include "vm.h"

/* VM section types (docs/state-format.md). */
#define VM_SEC_PIC_MASTER 0x0201u /* struct kvm_irqchip, chip_id 0, 520 bytes */
#define VM_SEC_PIC_SLAVE  0x0202u /* struct kvm_irqchip, chip_id 1, 520 */
#define VM_SEC_IOAPIC	  0x0203u /* struct kvm_irqchip, chip_id 2, 520 */
#define VM_SEC_PIT2	  0x0204u /* struct kvm_pit_state2, 112 */
#define VM_SEC_CLOCK	  0x0205u /* struct kvm_clock_data, 48 */
#define VM_SEC_SERIAL	  0x0206u /* serial_state_encode(), version 1: 16..1056 */
/* Device i's transport and queues (virtio_dev_save()): 0x1000 + i, i < DEVICES_MAX. */
#define VM_SEC_VIRTIO_BASE 0x1000u

/* Appends the VM's sections (HEADER ... END) in the newest form; -errno. On
 * error out->len is put back where it was (unless out->error is set). */
int vm_state_save(struct vm *vm, struct state_buf *out);
/* Same, with a one-line message naming the ioctl that failed. */
int vm_state_save_err(struct vm *vm, struct state_buf *out, char *err, size_t errlen);
/*
 * Same, in the form f (state_versions.h: a negotiated one, a release's):
 * -EPROTONOSUPPORT before any ioctl when f cannot express this VM's state
 * (a component it has no version of, one this build cannot write).
 */
int vm_state_save_form(struct vm *vm, const struct state_form *f, struct state_buf *out, char *err,
		       size_t errlen);

/* Whether this VM has each component (indexed by id - 1): what a form must hold. */
void vm_state_used(const struct vm *vm, bool used[STATE_COMP_COUNT]);

/* Restores a blob made by vm_state_save() in any form this build reads
 * (framing 2 or 3, each component's oldest_read..newest); -EINVAL on a
 * malformed blob and -errno when KVM refuses a section, with one line in err. */
int vm_state_load(struct vm *vm, const void *data, size_t len, char *err, size_t errlen);

#endif /* VMM_VM_STATE_H */
