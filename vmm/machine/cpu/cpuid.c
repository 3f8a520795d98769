/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpuid.c - the guest CPUID table (cpuid.h): KVM's supported table with
 * what vmm decides set on top. The policy, leaf by leaf, and why, is in
 * docs/architecture.md ("The guest CPU").
 */
#include "cpuid.h"

#include <errno.h>
#include <string.h>

/* Leaf 0 / 0x80000000 vendor words, in register order EBX, EDX, ECX. */
#define INTEL_EBX   0x756e6547u /* "Genu" */
#define INTEL_EDX   0x49656e69u /* "ineI" */
#define INTEL_ECX   0x6c65746eu /* "ntel" */
#define AMD_EBX	    0x68747541u /* "Auth" */
#define AMD_EDX	    0x69746e65u /* "enti" */
#define AMD_ECX	    0x444d4163u /* "cAMD" */
#define KVM_SIG_EBX 0x4b4d564bu /* "KVMK" */
#define KVM_SIG_ECX 0x564b4d56u /* "VMKV" */
#define KVM_SIG_EDX 0x0000004du /* "M\0\0\0" */

#define LEAF1_ECX_X2APIC	(1u << 21)
#define LEAF1_ECX_TSC_DEADLINE	(1u << 24)
#define LEAF1_ECX_HYPERVISOR	(1u << 31)
#define LEAF80000007_EDX_INVTSC (1u << 8)

struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t function, uint32_t index)
{
	for (uint32_t i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		if (e->function != function)
			continue;
		if (!(e->flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX) || e->index == index)
			return e;
	}
	return NULL;
}

enum cpu_vendor cpuid_host_vendor(const struct kvm_cpuid2 *supported)
{
	for (uint32_t i = 0; i < supported->nent; i++) {
		const struct kvm_cpuid_entry2 *e = &supported->entries[i];

		if (e->function != 0)
			continue;
		if (e->ebx == INTEL_EBX && e->edx == INTEL_EDX && e->ecx == INTEL_ECX)
			return CPU_VENDOR_INTEL;
		if (e->ebx == AMD_EBX && e->edx == AMD_EDX && e->ecx == AMD_ECX)
			return CPU_VENDOR_AMD;
	}
	return CPU_VENDOR_HOST;
}

/* The entry for function (index 0), added zeroed when the table lacks it. */
static struct kvm_cpuid_entry2 *get_or_add(struct kvm_cpuid2 *c, uint32_t cap, uint32_t function)
{
	struct kvm_cpuid_entry2 *e = cpuid_find(c, function, 0);

	if (e || c->nent >= cap)
		return e;
	e = &c->entries[c->nent++];
	memset(e, 0, sizeof(*e));
	e->function = function;
	return e;
}

static void set_vendor(struct kvm_cpuid2 *c, enum cpu_vendor v)
{
	struct kvm_cpuid_entry2 *e0 = cpuid_find(c, 0, 0), *x0 = cpuid_find(c, 0x80000000u, 0);
	bool intel = v == CPU_VENDOR_INTEL;

	if (v == CPU_VENDOR_HOST)
		return;
	if (e0) {
		e0->ebx = intel ? INTEL_EBX : AMD_EBX;
		e0->edx = intel ? INTEL_EDX : AMD_EDX;
		e0->ecx = intel ? INTEL_ECX : AMD_ECX;
	}
	/* AMD repeats the string in the extended leaf; Intel reserves those registers (0). */
	if (x0) {
		x0->ebx = intel ? 0 : AMD_EBX;
		x0->edx = intel ? 0 : AMD_EDX;
		x0->ecx = intel ? 0 : AMD_ECX;
	}
}

int cpuid_build(const struct kvm_cpuid2 *supported, const struct cpuid_params *p,
		struct kvm_cpuid2 *out, uint32_t cap)
{
	struct kvm_cpuid_entry2 *e, *sig, *feat;
	uint32_t apic_id = p->vcpu_index;

	if (cap < supported->nent + CPUID_EXTRA_ENTRIES)
		return -ENOSPC;
	out->nent = supported->nent;
	out->padding = 0;
	memcpy(out->entries, supported->entries, supported->nent * sizeof(out->entries[0]));

	/* Each vCPU reports its own APIC ID: xAPIC in leaf 1, x2APIC in the topology leaves. */
	for (uint32_t i = 0; i < out->nent; i++) {
		e = &out->entries[i];
		if (e->function == 1)
			e->ebx = (e->ebx & 0x00ffffffu) | (apic_id << 24);
		if (e->function == 0xb || e->function == 0x1f)
			e->edx = apic_id;
		/* AMD's extended APIC ID; KVM reports the leaf zeroed (no host topology). */
		if (e->function == 0x8000001eu)
			e->eax = apic_id;
	}
	e = cpuid_find(out, 1, 0);
	if (e) {
		/* The guest must know it is virtual: Linux then looks for the KVM leaves. */
		e->ecx |= LEAF1_ECX_HYPERVISOR;
		/*
		 * The in-kernel LAPIC emulates TSC-deadline mode when KVM says so;
		 * KVM leaves the bit to the VMM (not in the supported table on
		 * every kernel). x2APIC stays as KVM reports it: the in-kernel
		 * LAPIC emulates it.
		 */
		if (p->tsc_deadline)
			e->ecx |= LEAF1_ECX_TSC_DEADLINE;
		else
			e->ecx &= ~LEAF1_ECX_TSC_DEADLINE;
	}
	/*
	 * No invariant TSC, as QEMU's default CPU models: a Linux guest then
	 * keeps kvm-clock, the clock built to survive migration, instead of
	 * switching to the TSC clocksource after boot. That switch is a
	 * stop_machine across all vCPUs, and on an overcommitted nested host
	 * it was seen to hang SMP guests for minutes.
	 */
	e = cpuid_find(out, 0x80000007u, 0);
	if (e)
		e->edx &= ~LEAF80000007_EDX_INVTSC;
	set_vendor(out, p->vendor);

	/* KVM's paravirt leaves, with only the features whose state migrates. */
	sig = get_or_add(out, cap, CPUID_KVM_SIGNATURE);
	feat = get_or_add(out, cap, CPUID_KVM_FEATURES);
	if (!sig || !feat)
		return -ENOSPC;
	sig->flags = feat->flags = 0;
	sig->index = feat->index = 0;
	sig->eax = p->tsc_khz ? CPUID_KVM_TIMING : CPUID_KVM_FEATURES;
	sig->ebx = KVM_SIG_EBX;
	sig->ecx = KVM_SIG_ECX;
	sig->edx = KVM_SIG_EDX;
	feat->eax &= CPUID_KVM_FEATURES_ALLOWED;
	feat->ebx = feat->ecx = 0;
	feat->edx = 0; /* no hints: vCPUs are not pinned (KVM_HINTS_REALTIME) */
	if (p->tsc_khz) {
		/* The VMware-defined timing leaf some guests (FreeBSD, VMware-aware) read. */
		e = get_or_add(out, cap, CPUID_KVM_TIMING);
		if (!e)
			return -ENOSPC;
		e->flags = 0;
		e->index = 0;
		e->eax = p->tsc_khz;
		e->ebx = CPUID_APIC_BUS_KHZ;
		e->ecx = e->edx = 0;
	}
	return 0;
}
