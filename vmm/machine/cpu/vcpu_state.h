/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vcpu_state.h - save and restore everything KVM holds for one vCPU, in
 * the blob format of docs/state-format.md.
 *
 * Contract: the vCPU must not be inside KVM_RUN: either the VM has never
 * been started or it is paused (vm_pause()) or stopped. Call from a thread
 * that is not a vCPU thread. One vCPU at a time per call; different vCPUs
 * may be saved or loaded from different threads.
 *
 * Load validates the whole blob before the first ioctl, so a malformed
 * blob leaves the vCPU untouched. A failing KVM ioctl half way through the
 * restore leaves the vCPU partly restored: the target VM must then be
 * destroyed, not run. Load into a VM created with the same config as the
 * source (same CPUID, same vCPU count); the blob's vCPU index must match.
 * Load the VM-wide state (vm_state_load) first, then every vCPU.
 */
#ifndef VMM_VCPU_STATE_H
#define VMM_VCPU_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "state_buf.h"
#include "state_versions.h"
#include "vm.h"

struct vcpu;

/* vCPU section types (docs/state-format.md). */
#define VCPU_SEC_MP_STATE    0x0101u /* struct kvm_mp_state, 4 bytes */
#define VCPU_SEC_REGS	     0x0102u /* struct kvm_regs, 144 */
#define VCPU_SEC_SREGS	     0x0103u /* struct kvm_sregs, 312 */
#define VCPU_SEC_XSAVE	     0x0104u /* struct kvm_xsave, 4096 (or FPU) */
#define VCPU_SEC_FPU	     0x0105u /* struct kvm_fpu, 416 (only when XSAVE failed) */
#define VCPU_SEC_XCRS	     0x0106u /* struct kvm_xcrs, 392 */
#define VCPU_SEC_LAPIC	     0x0107u /* struct kvm_lapic_state, 1024 */
#define VCPU_SEC_MSRS	     0x0108u /* u32 count, u32 0, count x kvm_msr_entry */
#define VCPU_SEC_VCPU_EVENTS 0x0109u /* struct kvm_vcpu_events, 64 */
#define VCPU_SEC_DEBUGREGS   0x010au /* struct kvm_debugregs, 128 */

/* Bound on the MSRS section's count (the list below is far shorter). */
#define VCPU_STATE_MAX_MSRS 256u

/*
 * The MSRs vmm migrates, in the order they are saved and restored; only
 * those KVM_GET_MSR_INDEX_LIST reports are saved. A blob naming an MSR
 * outside this list is refused.
 */
extern const uint32_t vcpu_state_msrs[];
extern const size_t vcpu_state_nmsrs;

/* Appends this vCPU's sections to out (HEADER ... END); -errno. On error
 * out->len is put back where it was (unless out->error is set). */
int vcpu_state_save(struct vcpu *vcpu, struct state_buf *out);
/* Same, with a one-line message naming the ioctl that failed. */
int vcpu_state_save_err(struct vcpu *vcpu, struct state_buf *out, char *err, size_t errlen);
/* Same, in the form f; -EPROTONOSUPPORT before any ioctl when f cannot hold a vCPU. */
int vcpu_state_save_form(struct vcpu *vcpu, const struct state_form *f, struct state_buf *out,
			 char *err, size_t errlen);

/* Restores a blob made by vcpu_state_save() in any form this build reads; -EINVAL on a malformed
 * blob and -errno when KVM refuses a section, with one line in err. */
int vcpu_state_load(struct vcpu *vcpu, const void *data, size_t len, char *err, size_t errlen);

#endif /* VMM_VCPU_STATE_H */
