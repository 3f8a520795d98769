/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kvm.h - /dev/kvm access and the table of capabilities vmm needs.
 */
#ifndef VMM_KVM_H
#define VMM_KVM_H

#include <stddef.h>
#include <stdint.h>

struct kvm_cpuid2;

/* Opens /dev/kvm and checks the API version; -errno with a message. */
int kvm_open(int *kvm_fd, char *err, size_t errlen);

/*
 * Checks every required capability on the VM fd; the error names the first
 * one missing and what vmm needs it for. nslots is checked against
 * KVM_CAP_NR_MEMSLOTS.
 */
int kvm_check_caps(int kvm_fd, int vm_fd, uint32_t nslots, char *err, size_t errlen);

/* KVM_CHECK_EXTENSION on the VM fd (falls back to the system fd). */
int kvm_cap(int kvm_fd, int vm_fd, long cap);

/* KVM_GET_SUPPORTED_CPUID; caller frees. */
int kvm_supported_cpuid(int kvm_fd, struct kvm_cpuid2 **out);

#endif /* VMM_KVM_H */
