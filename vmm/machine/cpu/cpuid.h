/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpuid.h - the CPUID table each vCPU is given (KVM_SET_CPUID2).
 *
 * vmm does not pass KVM_GET_SUPPORTED_CPUID through: cpuid_build() starts
 * from it and sets deliberately what the guest's view of the machine
 * depends on: the per-vCPU APIC ID, the hypervisor bit, TSC-deadline from
 * KVM_CAP_TSC_DEADLINE_TIMER, the vendor string, and the KVM paravirt
 * leaves with only the features whose state vmm migrates (the policy
 * table: docs/architecture.md, "The guest CPU"). It is a pure function of its inputs (no ioctl), so
 * tests/unit/test_cpuid.c checks it without /dev/kvm.
 *
 * Main thread, while the vCPU is created (before it first runs).
 */
#ifndef VMM_CPUID_H
#define VMM_CPUID_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* KVM paravirt CPUID leaves (Linux's Documentation/virt/kvm/x86/cpuid.rst). */
#define CPUID_KVM_SIGNATURE 0x40000000u
#define CPUID_KVM_FEATURES  0x40000001u
#define CPUID_KVM_TIMING    0x40000010u /* EAX TSC kHz, EBX APIC bus kHz */

/* 0x40000001 EAX bits (KVM_FEATURE_*). */
#define KVM_PV_CLOCKSOURCE	  (1u << 0)
#define KVM_PV_NOP_IO_DELAY	  (1u << 1)
#define KVM_PV_CLOCKSOURCE2	  (1u << 3)
#define KVM_PV_ASYNC_PF		  (1u << 4)
#define KVM_PV_STEAL_TIME	  (1u << 5)
#define KVM_PV_EOI		  (1u << 6)
#define KVM_PV_UNHALT		  (1u << 7)
#define KVM_PV_POLL_CONTROL	  (1u << 12)
#define KVM_PV_ASYNC_PF_INT	  (1u << 14)
#define KVM_PV_MIGRATION_CONTROL  (1u << 17)
#define KVM_PV_CLOCKSOURCE_STABLE (1u << 24)

/*
 * The paravirt features vmm may advertise (and then only those KVM also
 * lists): each one's guest-visible state is in guest RAM or in an MSR of
 * vcpu_state_msrs (vcpu_state.c), so it migrates, and none needs a
 * hypercall (PV_UNHALT's kick is one, and a nested KVM that emulates VMCALL
 * may re-run it forever). Why each is in or out: docs/architecture.md, "The
 * guest CPU".
 */
#define CPUID_KVM_FEATURES_ALLOWED                                                                 \
	(KVM_PV_NOP_IO_DELAY | KVM_PV_CLOCKSOURCE2 | KVM_PV_STEAL_TIME | KVM_PV_EOI |              \
	 KVM_PV_CLOCKSOURCE_STABLE)

/* The in-kernel LAPIC timer counts at 1 GHz (KVM's APIC_BUS_CYCLE_NS = 1). */
#define CPUID_APIC_BUS_KHZ 1000000u

struct cpuid_params {
	unsigned vcpu_index;	/* its APIC ID */
	enum cpu_vendor vendor; /* CPU_VENDOR_HOST leaves the table's strings */
	uint32_t tsc_khz;  /* the guest's (effective) TSC frequency, 0 = leave 0x40000010 out */
	bool tsc_deadline; /* KVM_CAP_TSC_DEADLINE_TIMER */
};

/* Entries cpuid_build() may add beyond the supported table's. */
#define CPUID_EXTRA_ENTRIES 4u

/*
 * Writes into `out` (room for `cap` entries, at least supported->nent +
 * CPUID_EXTRA_ENTRIES) the table for one vCPU. Returns 0 or -ENOSPC.
 */
int cpuid_build(const struct kvm_cpuid2 *supported, const struct cpuid_params *p,
		struct kvm_cpuid2 *out, uint32_t cap);

/*
 * The vendor the supported table reports: CPU_VENDOR_INTEL or _AMD, or
 * CPU_VENDOR_HOST for any other (the description then says "host").
 */
enum cpu_vendor cpuid_host_vendor(const struct kvm_cpuid2 *supported);

/* The entry for function/index (index ignored unless the entry is indexed), or NULL. */
struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t function, uint32_t index);

#endif /* VMM_CPUID_H */
