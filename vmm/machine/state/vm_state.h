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
 * (framing 2 or 3, each component's oldest_read..newest): its parts
 * (state_part.h) all checked, then loaded; -EINVAL on a malformed blob
 * and -errno when KVM refuses a section, with one line in err. */
int vm_state_load(struct vm *vm, const void *data, size_t len, char *err, size_t errlen);

/*
 * The whole VM's state: the VM-wide blob and every vCPU's, owned here once
 * for every path that moves a VM (a migration's source and target, a
 * snapshot's writer and restore). They differ only in how the blobs travel
 * (records on a connection, sections of a state file), never in what is
 * saved or in the order it is loaded. The blobs and their versions are
 * vm_state_save_form()'s and vcpu_state_save_form()'s; nothing here adds a
 * byte to them.
 */

/* Which blob a whole save or load failed on: the VM's, or vCPU i's (i >= 0). */
#define VM_WHOLE_VM (-1)

/* The whole VM's blobs, as vm_save_whole() made them. */
struct vm_saved {
	struct state_buf vm;
	struct state_buf *vcpu; /* nvcpus of them */
	unsigned nvcpus;
};

/*
 * Saves vm's state in form f: the VM-wide blob, then each vCPU's, into out
 * (initialised here; the caller frees it with vm_saved_free() whatever
 * happens). 0, or -errno with *failed naming the blob (VM_WHOLE_VM or the
 * vCPU's index) and one line in err, which the callers prefix their way.
 *
 * Who: the thread that paused vm (a migration's, a snapshot's), with the
 * VM paused and every vCPU stopped (vm_pause() returned, vm->stopping not
 * set), so that the blobs are one moment of the guest; f is the form the
 * caller chose before the pause.
 */
int vm_save_whole(struct vm *vm, const struct state_form *f, struct vm_saved *out, int *failed,
		  char *err, size_t errlen);
void vm_saved_free(struct vm_saved *s);

/* vCPU i's blob where the caller holds it (a stream's record, a snapshot's section). */
typedef void (*vm_vcpu_blob_fn)(const void *opaque, unsigned i, const void **blob, size_t *len);

/*
 * Loads a whole VM's state into vm in the one order that works (the parts'
 * table and its why are in vm_state.c, state_part.h): every part checked
 * first against this VM and host (the CPU features, the VM-wide blob's
 * parts, then each vCPU's blob, fetched from vcpu_blob(opaque, i) as its
 * turn comes), and only when all passed, each loaded in the same order.
 * Every blob must be there: the caller checked that none is missing. 0,
 * or the first failure (-EINVAL: a malformed blob, -ENOTSUP: the host
 * lacks a CPU feature, both before anything changed; -errno: KVM refused
 * a section) with *failed naming the blob and one line in err. A failure
 * of KVM leaves the VM partly loaded: destroy it.
 *
 * Who: a migration target's main thread once END arrived, a restore once
 * the pages are read; the VM created from the same config, its vCPUs not
 * yet run (or paused and stopped), the caller's thread not a vCPU's.
 */
int vm_load_whole(struct vm *vm, const void *vm_blob, size_t vm_len, vm_vcpu_blob_fn vcpu_blob,
		  const void *opaque, int *failed, char *err, size_t errlen);

#endif /* VMM_VM_STATE_H */
