/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cpu_features.c - the guest's CPU features as a named set
 * (cpu_features.c) and the [vm] cpu_features key: read from a CPUID table,
 * written and parsed back, the missing ones named, masked into a table.
 * Fake KVM_GET_SUPPORTED_CPUID tables: no /dev/kvm.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cpu_features.h"
#include "cpuid_table.h"

#define SIG KVM_CPUID_FLAG_SIGNIFCANT_INDEX

/*
 * A host with sse2 (1.EDX 26), sse4_2 (1.ECX 20), avx (1.ECX 28), the
 * hypervisor bit (1.ECX 31, vmm's policy: not a named feature), avx2
 * (7.0.EBX 5), avx512f (7.0.EBX 16), and 7.1's avx_vnni (EAX 4), lm
 * (0x80000001.EDX 29) and an unnamed bit (7.0.EBX 1).
 */
static void host(struct table *t)
{
	memset(t, 0, sizeof(*t));
	add(t, 1, 0, 0, 0, 0, (1u << 20) | (1u << 28) | (1u << 31), 1u << 26);
	add(t, 7, 0, SIG, 0, (1u << 5) | (1u << 16) | (1u << 1), 0, 0);
	add(t, 7, 1, SIG, 1u << 4, 0, 0, 0);
	add(t, 0x80000001u, 0, 0, 0, 0, 0, 1u << 29);
}

static void test_of_and_format(void **state)
{
	struct table t;
	struct cpu_features f;
	char buf[512];

	(void)state;
	host(&t);
	cpu_features_of(&t.hdr, &f);
	assert_int_equal(cpu_features_format(&f, buf, sizeof(buf)), 0);
	/* table order; the hypervisor bit and the unnamed bit are not features */
	assert_string_equal(buf, "sse2,sse4_2,avx,avx2,avx512f,avx_vnni,lm");
	/* too small a buffer is an error, not a cut list */
	assert_int_equal(cpu_features_format(&f, buf, 10), -ENOSPC);
	assert_int_equal(cpu_features_format(&f, buf, 0), -ENOSPC);
}

static void test_parse(void **state)
{
	struct cpu_features a, b;
	char buf[512], err[128];

	(void)state;
	assert_int_equal(cpu_features_parse(" lm , avx2,sse2 ", &a, err, sizeof(err)), 0);
	assert_int_equal(cpu_features_format(&a, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sse2,avx2,lm");
	assert_int_equal(cpu_features_parse("", &b, err, sizeof(err)), 0);
	assert_int_equal(cpu_features_format(&b, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(cpu_features_parse("sse2,avx3,lm", &b, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "unknown CPU feature 'avx3'");
	/* a prefix of a name is no name */
	assert_int_equal(cpu_features_parse("avx51", &b, err, sizeof(err)), -EINVAL);
	/* every name of the table reads back as itself */
	for (unsigned i = 0; i < cpu_features_count(); i++) {
		assert_int_equal(cpu_features_parse(cpu_features_name(i), &a, err, sizeof(err)), 0);
		assert_int_equal(cpu_features_format(&a, buf, sizeof(buf)), 0);
		assert_string_equal(buf, cpu_features_name(i));
		for (unsigned k = i + 1; k < cpu_features_count(); k++)
			assert_string_not_equal(cpu_features_name(i), cpu_features_name(k));
	}
	assert_null(cpu_features_name(cpu_features_count()));
}

/* All the names at once fit the config key's field. */
static void test_all_fit_the_key(void **state)
{
	struct cpu_features all;
	char list[CONFIG_CPU_FEATURES_MAX], err[128];
	size_t n = 0;

	(void)state;
	for (unsigned i = 0; i < cpu_features_count(); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? "," : "",
				      cpu_features_name(i));
	assert_true(n < sizeof(list));
	assert_int_equal(cpu_features_parse(list, &all, err, sizeof(err)), 0);
	assert_int_equal(cpu_features_format(&all, list, sizeof(list)), 0);
}

static void test_missing(void **state)
{
	struct table t;
	struct cpu_features have, want;
	char names[128], err[128];

	(void)state;
	host(&t);
	cpu_features_of(&t.hdr, &have);
	assert_int_equal(cpu_features_parse("sse2,avx2,lm", &want, err, sizeof(err)), 0);
	assert_int_equal(cpu_features_missing(&want, &have, names, sizeof(names)), 0);
	assert_string_equal(names, "");
	assert_int_equal(
	    cpu_features_parse("sse2,avx512bw,sha_ni,lm,rdrand", &want, err, sizeof(err)), 0);
	assert_int_equal(cpu_features_missing(&want, &have, names, sizeof(names)), 3);
	assert_string_equal(names, "rdrand, sha_ni, avx512bw");
	/* the count stays right when the names do not fit */
	assert_int_equal(cpu_features_missing(&want, &have, names, 8), 3);
	assert_true(strlen(names) < 8);
}

/*
 * Raw CPUID words (a snapshot's) are named by the same table: a named bit
 * with its place, an unnamed one by its place alone; one list with the
 * named sets' (", "), cut at the buffer's end and counted whole.
 */
static void test_missing_words(void **state)
{
	struct cpu_missing m;
	char names[128], small[12];

	(void)state;
	cpu_missing_init(&m, names, sizeof(names));
	cpu_missing_word(&m, 7, 0, 1, 1u << 5 | 1u << 8);
	cpu_missing_word(&m, 1, 0, 2, 1u << 27);
	cpu_missing_word(&m, 0xd, 1, 0, 0);
	assert_int_equal(m.count, 3);
	assert_string_equal(names, "avx2 (0x7.0:ebx[5]), bmi2 (0x7.0:ebx[8]), 0x1.0:ecx[27]");
	cpu_missing_init(&m, small, sizeof(small));
	cpu_missing_word(&m, 0x40000001u, 0, 0, 0xff);
	assert_int_equal(m.count, 8);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	cpu_missing_init(&m, NULL, 0);
	cpu_missing_word(&m, 1, 0, 3, 1);
	assert_int_equal(m.count, 1);
}

static void test_mask(void **state)
{
	struct table t;
	struct cpu_features keep, after;
	char buf[256], err[128];

	(void)state;
	host(&t);
	assert_int_equal(cpu_features_parse("sse2,avx,lm", &keep, err, sizeof(err)), 0);
	cpu_features_mask(&t.hdr, &keep);
	cpu_features_of(&t.hdr, &after);
	assert_int_equal(cpu_features_format(&after, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sse2,avx,lm");
	/* what the table does not name stays: the hypervisor bit, 7.0.EBX bit 1 */
	assert_int_equal(t.e[0].ecx, (1u << 28) | (1u << 31));
	assert_int_equal(t.e[1].ebx, 1u << 1);
	assert_int_equal(t.e[2].eax, 0);
	/* a subleaf that the table does not carry is left alone */
	assert_int_equal(t.hdr.nent, 4);
}

/* The psABI levels: each holds the one before, and names only features of the table. */
static void test_baselines(void **state)
{
	struct cpu_features prev = {{0}}, b, f;
	char buf[1024], err[128];

	(void)state;
	assert_int_equal(cpu_features_baseline_count(), 4);
	assert_string_equal(cpu_features_baseline_name(0), "x86-64");
	assert_string_equal(cpu_features_baseline_name(3), "x86-64-v4");
	assert_null(cpu_features_baseline_name(4));
	for (unsigned i = 0; i < cpu_features_baseline_count(); i++) {
		cpu_features_baseline(i, &b);
		assert_true(cpu_features_subset(&prev, &b));
		assert_false(cpu_features_subset(&b, &prev)); /* each adds something */
		/* the name parses to the same set */
		assert_int_equal(
		    cpu_features_parse(cpu_features_baseline_name(i), &f, err, sizeof(err)), 0);
		assert_memory_equal(&f, &b, sizeof(f));
		prev = b;
	}
	/* what the psABI lists for each level */
	assert_int_equal(cpu_features_parse("x86-64-v2", &f, err, sizeof(err)), 0);
	assert_int_equal(cpu_features_format(&f, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fpu,vme,de,pse,tsc,msr,pae,mce,cx8,apic,sep,mtrr,pge,mca,cmov,"
				 "pat,pse36,clflush,mmx,fxsr,sse,sse2,pni,ssse3,cx16,sse4_1,sse4_2,"
				 "popcnt,lahf_lm,syscall,nx,lm");
	assert_int_equal(cpu_features_parse("x86-64-v4", &f, err, sizeof(err)), 0);
	cpu_features_baseline(2, &b);
	for (unsigned i = 0; i < cpu_features_count(); i++) {
		const char *n = cpu_features_name(i);
		bool v4 = !strcmp(n, "avx512f") || !strcmp(n, "avx512bw") ||
			  !strcmp(n, "avx512cd") || !strcmp(n, "avx512dq") ||
			  !strcmp(n, "avx512vl");

		assert_int_equal(cpu_features_has(&f, i), cpu_features_has(&b, i) || v4);
	}
	/* a baseline plus names; an unknown level */
	assert_int_equal(cpu_features_parse("aes, x86-64-v3", &f, err, sizeof(err)), 0);
	assert_int_equal(cpu_features_add_name(&b, "aes"), 0);
	assert_memory_equal(&f, &b, sizeof(f));
	assert_int_equal(cpu_features_parse("x86-64-v5", &f, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "unknown CPU feature 'x86-64-v5'");
	assert_int_equal(cpu_features_add_name(&f, "x86-64-v2"), -ENOENT);
	assert_int_equal(cpu_features_add_name(&f, "host"), -ENOENT);
}

/* "host" is the host's set where one is known, and checks (as anything) where none is. */
static void test_resolve_host(void **state)
{
	struct table t;
	struct cpu_features have, f, want;
	char buf[256], err[128];

	(void)state;
	host(&t);
	cpu_features_of(&t.hdr, &have);
	assert_int_equal(cpu_features_resolve("host", &have, &f, err, sizeof(err)), 0);
	assert_memory_equal(&f, &have, sizeof(f));
	assert_int_equal(cpu_features_resolve("host,aes", &have, &f, err, sizeof(err)), 0);
	assert_int_equal(cpu_features_format(&f, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sse2,sse4_2,aes,avx,avx2,avx512f,avx_vnni,lm");
	assert_int_equal(cpu_features_parse("host", &f, err, sizeof(err)), 0);
	assert_int_equal(cpu_features_missing(&f, &have, buf, sizeof(buf)),
			 cpu_features_count() - 7);
	/* this host meets no level: x86-64 asks for much more than sse2 and lm */
	cpu_features_baseline(0, &want);
	assert_false(cpu_features_subset(&want, &have));
	cpu_features_intersect(&want, &have);
	assert_int_equal(cpu_features_format(&want, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "sse2,lm");
	assert_true(cpu_features_subset(&want, &have));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_of_and_format),   cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_all_fit_the_key), cmocka_unit_test(test_missing),
	    cmocka_unit_test(test_missing_words),   cmocka_unit_test(test_mask),
	    cmocka_unit_test(test_baselines),	    cmocka_unit_test(test_resolve_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
