/* SPDX-License-Identifier: Apache-2.0 */
/* The guest CPUID table (cpuid.c) from a fake KVM_GET_SUPPORTED_CPUID: no /dev/kvm. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpuid.h"
#include "cpuid_table.h"

/* What this host's KVM (AMD EPYC, Linux 6.18) reports, trimmed to the leaves that matter. */
static void supported_amd(struct table *t, bool with_kvm_leaves)
{
	memset(t, 0, sizeof(*t));
	add(t, 0, 0, 0, 0x1c, 0x68747541, 0x444d4163, 0x69746e65);
	add(t, 1, 0, 0, 0x00a10f11, 0x01020800, 0x81202000 & ~(1u << 31), 0x078bfbff);
	add(t, 0xb, 0, KVM_CPUID_FLAG_SIGNIFCANT_INDEX, 0, 1, 0x100, 7);
	add(t, 0xb, 1, KVM_CPUID_FLAG_SIGNIFCANT_INDEX, 0, 1, 0x201, 7);
	add(t, 0x1f, 0, KVM_CPUID_FLAG_SIGNIFCANT_INDEX, 0, 1, 0x100, 7);
	add(t, 0x80000000u, 0, 0, 0x80000021u, 0x68747541, 0x444d4163, 0x69746e65);
	add(t, 0x80000007u, 0, 0, 0, 0, 0, 0x100); /* invariant TSC */
	add(t, 0x8000001eu, 0, 0, 0, 0, 0, 0);
	if (with_kvm_leaves) {
		add(t, 0x40000000u, 0, 0, 0x40000001u, 0x4b4d564b, 0x564b4d56, 0x4d);
		add(t, 0x40000001u, 0, 0, 0x01007efb, 0, 0, 0x1); /* all of 6.18's, a hint */
	}
}

static struct kvm_cpuid_entry2 *leaf(struct table *t, uint32_t fn, uint32_t idx)
{
	struct kvm_cpuid_entry2 *e = cpuid_find(&t->hdr, fn, idx);

	assert_non_null(e);
	return e;
}

static void build(const struct table *in, const struct cpuid_params *p, struct table *out)
{
	memset(out, 0xee, sizeof(*out));
	assert_int_equal(cpuid_build(&in->hdr, p, &out->hdr, CAP), 0);
}

/* No invariant TSC: a Linux guest keeps kvm-clock rather than switching clocksources. */
static void test_no_invariant_tsc(void **state)
{
	struct table in, out;
	struct cpuid_params p = {.vcpu_index = 0, .tsc_deadline = true, .tsc_khz = 2596144};
	(void)state;

	supported_amd(&in, true);
	build(&in, &p, &out);
	assert_int_equal(leaf(&out, 0x80000007u, 0)->edx & 0x100, 0);
}

static void test_apic_ids(void **state)
{
	struct table in, out;
	(void)state;

	supported_amd(&in, true);
	for (unsigned i = 0; i < 64; i += 21) {
		struct cpuid_params p = {.vcpu_index = i, .tsc_deadline = true};

		build(&in, &p, &out);
		assert_int_equal(leaf(&out, 1, 0)->ebx >> 24, i);
		/* the rest of EBX (CLFLUSH size, logical count) is KVM's */
		assert_int_equal(leaf(&out, 1, 0)->ebx & 0xffffff, 0x020800);
		assert_int_equal(leaf(&out, 0xb, 0)->edx, i);
		assert_int_equal(leaf(&out, 0xb, 1)->edx, i);
		assert_int_equal(leaf(&out, 0x1f, 0)->edx, i);
		assert_int_equal(leaf(&out, 0xb, 1)->ecx, 0x201);
		assert_int_equal(leaf(&out, 0x8000001eu, 0)->eax, i);
	}
	/* the input is left alone */
	assert_int_equal(leaf(&in, 1, 0)->ebx, 0x01020800);
}

static void test_hypervisor_and_deadline(void **state)
{
	struct table in, out;
	struct cpuid_params p = {.vcpu_index = 0, .tsc_deadline = true};
	(void)state;

	supported_amd(&in, true);
	leaf(&in, 1, 0)->ecx &= ~(1u << 24);
	build(&in, &p, &out);
	assert_true(leaf(&out, 1, 0)->ecx & (1u << 31)); /* hypervisor */
	assert_true(leaf(&out, 1, 0)->ecx & (1u << 24)); /* TSC-deadline: KVM_CAP says so */
	assert_true(leaf(&out, 1, 0)->ecx & (1u << 21)); /* x2APIC as KVM reports it */
	assert_int_equal(leaf(&out, 1, 0)->edx, 0x078bfbff);

	/* without KVM_CAP_TSC_DEADLINE_TIMER the bit goes, even when the table had it */
	leaf(&in, 1, 0)->ecx |= 1u << 24;
	p.tsc_deadline = false;
	build(&in, &p, &out);
	assert_false(leaf(&out, 1, 0)->ecx & (1u << 24));
	assert_true(leaf(&out, 1, 0)->ecx & (1u << 31));

	/* x2APIC absent from KVM's table stays absent */
	leaf(&in, 1, 0)->ecx &= ~(1u << 21);
	build(&in, &p, &out);
	assert_false(leaf(&out, 1, 0)->ecx & (1u << 21));
}

static void check_signature(struct kvm_cpuid_entry2 *e, uint32_t max)
{
	char sig[13];

	memcpy(sig, &e->ebx, 4);
	memcpy(sig + 4, &e->ecx, 4);
	memcpy(sig + 8, &e->edx, 4);
	sig[12] = '\0';
	assert_memory_equal(sig, "KVMKVMKVM\0\0\0", 12);
	assert_int_equal(e->eax, max);
}

static void test_paravirt_leaves(void **state)
{
	struct table in, out;
	struct cpuid_params p = {.vcpu_index = 1, .tsc_deadline = true, .tsc_khz = 2596144};
	struct kvm_cpuid_entry2 *f;
	(void)state;

	supported_amd(&in, true);
	build(&in, &p, &out);
	check_signature(leaf(&out, 0x40000000u, 0), 0x40000010u);
	f = leaf(&out, 0x40000001u, 0);
	/* exactly the migratable list, of what KVM offers */
	assert_int_equal(f->eax, KVM_PV_NOP_IO_DELAY | KVM_PV_CLOCKSOURCE2 | KVM_PV_STEAL_TIME |
				     KVM_PV_EOI | KVM_PV_CLOCKSOURCE_STABLE);
	assert_false(f->eax & KVM_PV_UNHALT);	   /* its kick is a hypercall */
	assert_false(f->eax & KVM_PV_CLOCKSOURCE); /* the old MSRs 0x11/0x12 are not saved */
	assert_false(f->eax & KVM_PV_ASYNC_PF);	   /* in-flight tokens live in KVM only */
	assert_false(f->eax & KVM_PV_ASYNC_PF_INT);
	assert_false(f->eax & KVM_PV_POLL_CONTROL); /* MSR_KVM_POLL_CONTROL not saved */
	assert_false(f->eax & KVM_PV_MIGRATION_CONTROL);
	assert_int_equal(f->edx, 0); /* no KVM_HINTS_REALTIME */
	f = leaf(&out, 0x40000010u, 0);
	assert_int_equal(f->eax, 2596144);
	assert_int_equal(f->ebx, 1000000);
	assert_int_equal(out.hdr.nent, in.hdr.nent + 1);

	/* only what KVM lists: a feature KVM lacks is not invented */
	leaf(&in, 0x40000001u, 0)->eax = KVM_PV_CLOCKSOURCE | KVM_PV_CLOCKSOURCE2;
	build(&in, &p, &out);
	assert_int_equal(leaf(&out, 0x40000001u, 0)->eax, KVM_PV_CLOCKSOURCE2);

	/* no TSC frequency known: no timing leaf, the signature names 0x40000001 */
	p.tsc_khz = 0;
	build(&in, &p, &out);
	check_signature(leaf(&out, 0x40000000u, 0), 0x40000001u);
	assert_null(cpuid_find(&out.hdr, 0x40000010u, 0));

	/* a table without the KVM leaves gets the signature (and no features) */
	supported_amd(&in, false);
	p.tsc_khz = 1000;
	build(&in, &p, &out);
	check_signature(leaf(&out, 0x40000000u, 0), 0x40000010u);
	assert_int_equal(leaf(&out, 0x40000001u, 0)->eax, 0);
	assert_int_equal(leaf(&out, 0x40000010u, 0)->eax, 1000);
	assert_int_equal(out.hdr.nent, in.hdr.nent + 3);
}

static void vendor_of(struct kvm_cpuid_entry2 *e, char out[13])
{
	memcpy(out, &e->ebx, 4);
	memcpy(out + 4, &e->edx, 4);
	memcpy(out + 8, &e->ecx, 4);
	out[12] = '\0';
}

static void test_vendor(void **state)
{
	struct table in, out;
	struct cpuid_params p = {.vcpu_index = 0};
	char v[13];
	(void)state;

	supported_amd(&in, true);
	assert_int_equal(cpuid_host_vendor(&in.hdr), CPU_VENDOR_AMD);
	p.vendor = CPU_VENDOR_HOST;
	build(&in, &p, &out);
	vendor_of(leaf(&out, 0, 0), v);
	assert_string_equal(v, "AuthenticAMD");

	p.vendor = CPU_VENDOR_INTEL;
	build(&in, &p, &out);
	vendor_of(leaf(&out, 0, 0), v);
	assert_string_equal(v, "GenuineIntel");
	assert_int_equal(leaf(&out, 0, 0)->eax, 0x1c); /* max leaf kept */
	assert_int_equal(leaf(&out, 0x80000000u, 0)->ebx, 0);
	assert_int_equal(leaf(&out, 0x80000000u, 0)->ecx, 0);
	assert_int_equal(leaf(&out, 0x80000000u, 0)->edx, 0);
	assert_int_equal(leaf(&out, 0x80000000u, 0)->eax, 0x80000021u);
	assert_int_equal(cpuid_host_vendor(&out.hdr), CPU_VENDOR_INTEL);

	/* Intel table to AMD: the extended leaf repeats the string */
	p.vendor = CPU_VENDOR_AMD;
	build(&out, &p, &in);
	vendor_of(leaf(&in, 0, 0), v);
	assert_string_equal(v, "AuthenticAMD");
	vendor_of(leaf(&in, 0x80000000u, 0), v);
	assert_string_equal(v, "AuthenticAMD");

	/* another vendor is "host" */
	leaf(&in, 0, 0)->ebx = 0x6f677948; /* "Hygo" */
	assert_int_equal(cpuid_host_vendor(&in.hdr), CPU_VENDOR_HOST);
}

static void test_no_room(void **state)
{
	struct table in, out;
	struct cpuid_params p = {.vcpu_index = 0};
	(void)state;

	supported_amd(&in, true);
	assert_int_equal(cpuid_build(&in.hdr, &p, &out.hdr, in.hdr.nent + CPUID_EXTRA_ENTRIES - 1),
			 -ENOSPC);
	assert_int_equal(cpuid_build(&in.hdr, &p, &out.hdr, in.hdr.nent + CPUID_EXTRA_ENTRIES), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_apic_ids),
	    cmocka_unit_test(test_no_invariant_tsc),
	    cmocka_unit_test(test_hypervisor_and_deadline),
	    cmocka_unit_test(test_paravirt_leaves),
	    cmocka_unit_test(test_vendor),
	    cmocka_unit_test(test_no_room),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
