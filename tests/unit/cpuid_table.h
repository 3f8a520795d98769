/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpuid_table.h - a fake KVM_GET_SUPPORTED_CPUID table for unit tests of
 * the guest CPU (test_cpuid.c, test_cpu_features.c): no /dev/kvm.
 */
#ifndef VMM_TEST_CPUID_TABLE_H
#define VMM_TEST_CPUID_TABLE_H

#include <linux/kvm.h>
#include <stdint.h>

#define CAP 32u

struct table {
	struct kvm_cpuid2 hdr;
	struct kvm_cpuid_entry2 e[CAP];
};

static inline void add(struct table *t, uint32_t fn, uint32_t idx, uint32_t flags, uint32_t a,
		       uint32_t b, uint32_t c, uint32_t d)
{
	t->e[t->hdr.nent++] = (struct kvm_cpuid_entry2){
	    .function = fn, .index = idx, .flags = flags, .eax = a, .ebx = b, .ecx = c, .edx = d};
}

#endif /* VMM_TEST_CPUID_TABLE_H */
