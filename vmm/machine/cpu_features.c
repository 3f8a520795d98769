/* SPDX-License-Identifier: Apache-2.0 */
/* cpu_features.c - named CPUID feature bits, as a set (cpu_features.h). */
#include "cpu_features.h"
#include "cpuid.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum reg { EAX, EBX, ECX, EDX };

struct feature {
	uint32_t leaf, subleaf;
	enum reg reg;
	uint8_t bit;
	const char *name; /* Linux's /proc/cpuinfo flag */
};

#define F(leaf, sub, reg, bit, name)                                                               \
	{                                                                                          \
		leaf, sub, reg, bit, name                                                          \
	}

/*
 * Append only: a feature's index is its bit in struct cpu_features, which
 * the set's text form does not depend on, but tests and logs read easier
 * when the order stays. Left out on purpose: bits vmm sets by policy
 * (1.ECX hypervisor 31, tsc_deadline_timer 24; 0x80000007.EDX invariant TSC),
 * bits the guest OS sets (1.ECX osxsave 27, 7.ECX ospke 4), and topology.
 */
static const struct feature table[] = {
    /* leaf 1 EDX */
    F(1, 0, EDX, 0, "fpu"),
    F(1, 0, EDX, 1, "vme"),
    F(1, 0, EDX, 2, "de"),
    F(1, 0, EDX, 3, "pse"),
    F(1, 0, EDX, 4, "tsc"),
    F(1, 0, EDX, 5, "msr"),
    F(1, 0, EDX, 6, "pae"),
    F(1, 0, EDX, 7, "mce"),
    F(1, 0, EDX, 8, "cx8"),
    F(1, 0, EDX, 9, "apic"),
    F(1, 0, EDX, 11, "sep"),
    F(1, 0, EDX, 12, "mtrr"),
    F(1, 0, EDX, 13, "pge"),
    F(1, 0, EDX, 14, "mca"),
    F(1, 0, EDX, 15, "cmov"),
    F(1, 0, EDX, 16, "pat"),
    F(1, 0, EDX, 17, "pse36"),
    F(1, 0, EDX, 19, "clflush"),
    F(1, 0, EDX, 23, "mmx"),
    F(1, 0, EDX, 24, "fxsr"),
    F(1, 0, EDX, 25, "sse"),
    F(1, 0, EDX, 26, "sse2"),
    /* leaf 1 ECX */
    F(1, 0, ECX, 0, "pni"),
    F(1, 0, ECX, 1, "pclmulqdq"),
    F(1, 0, ECX, 9, "ssse3"),
    F(1, 0, ECX, 12, "fma"),
    F(1, 0, ECX, 13, "cx16"),
    F(1, 0, ECX, 17, "pcid"),
    F(1, 0, ECX, 19, "sse4_1"),
    F(1, 0, ECX, 20, "sse4_2"),
    F(1, 0, ECX, 21, "x2apic"),
    F(1, 0, ECX, 22, "movbe"),
    F(1, 0, ECX, 23, "popcnt"),
    F(1, 0, ECX, 25, "aes"),
    F(1, 0, ECX, 26, "xsave"),
    F(1, 0, ECX, 28, "avx"),
    F(1, 0, ECX, 29, "f16c"),
    F(1, 0, ECX, 30, "rdrand"),
    /* leaf 7.0 EBX */
    F(7, 0, EBX, 0, "fsgsbase"),
    F(7, 0, EBX, 3, "bmi1"),
    F(7, 0, EBX, 4, "hle"),
    F(7, 0, EBX, 5, "avx2"),
    F(7, 0, EBX, 7, "smep"),
    F(7, 0, EBX, 8, "bmi2"),
    F(7, 0, EBX, 9, "erms"),
    F(7, 0, EBX, 10, "invpcid"),
    F(7, 0, EBX, 11, "rtm"),
    F(7, 0, EBX, 16, "avx512f"),
    F(7, 0, EBX, 17, "avx512dq"),
    F(7, 0, EBX, 18, "rdseed"),
    F(7, 0, EBX, 19, "adx"),
    F(7, 0, EBX, 20, "smap"),
    F(7, 0, EBX, 21, "avx512ifma"),
    F(7, 0, EBX, 23, "clflushopt"),
    F(7, 0, EBX, 24, "clwb"),
    F(7, 0, EBX, 28, "avx512cd"),
    F(7, 0, EBX, 29, "sha_ni"),
    F(7, 0, EBX, 30, "avx512bw"),
    F(7, 0, EBX, 31, "avx512vl"),
    /* leaf 7.0 ECX */
    F(7, 0, ECX, 1, "avx512vbmi"),
    F(7, 0, ECX, 2, "umip"),
    F(7, 0, ECX, 3, "pku"),
    F(7, 0, ECX, 5, "waitpkg"),
    F(7, 0, ECX, 6, "avx512_vbmi2"),
    F(7, 0, ECX, 8, "gfni"),
    F(7, 0, ECX, 9, "vaes"),
    F(7, 0, ECX, 10, "vpclmulqdq"),
    F(7, 0, ECX, 11, "avx512_vnni"),
    F(7, 0, ECX, 12, "avx512_bitalg"),
    F(7, 0, ECX, 14, "avx512_vpopcntdq"),
    F(7, 0, ECX, 16, "la57"),
    F(7, 0, ECX, 22, "rdpid"),
    F(7, 0, ECX, 27, "movdiri"),
    F(7, 0, ECX, 28, "movdir64b"),
    /* leaf 7.0 EDX */
    F(7, 0, EDX, 4, "fsrm"),
    F(7, 0, EDX, 8, "avx512_vp2intersect"),
    F(7, 0, EDX, 10, "md_clear"),
    F(7, 0, EDX, 14, "serialize"),
    F(7, 0, EDX, 16, "tsxldtrk"),
    F(7, 0, EDX, 22, "amx_bf16"),
    F(7, 0, EDX, 23, "avx512_fp16"),
    F(7, 0, EDX, 24, "amx_tile"),
    F(7, 0, EDX, 25, "amx_int8"),
    F(7, 0, EDX, 26, "spec_ctrl"),
    F(7, 0, EDX, 27, "intel_stibp"),
    F(7, 0, EDX, 28, "flush_l1d"),
    F(7, 0, EDX, 29, "arch_capabilities"),
    F(7, 0, EDX, 31, "ssbd"),
    /* leaf 7.1 EAX */
    F(7, 1, EAX, 4, "avx_vnni"),
    F(7, 1, EAX, 5, "avx512_bf16"),
    /* leaf 0xd.1 EAX */
    F(0xd, 1, EAX, 0, "xsaveopt"),
    F(0xd, 1, EAX, 1, "xsavec"),
    F(0xd, 1, EAX, 2, "xgetbv1"),
    F(0xd, 1, EAX, 3, "xsaves"),
    /* leaf 0x80000001 ECX */
    F(0x80000001u, 0, ECX, 0, "lahf_lm"),
    F(0x80000001u, 0, ECX, 5, "abm"),
    F(0x80000001u, 0, ECX, 6, "sse4a"),
    F(0x80000001u, 0, ECX, 7, "misalignsse"),
    F(0x80000001u, 0, ECX, 8, "3dnowprefetch"),
    F(0x80000001u, 0, ECX, 11, "xop"),
    F(0x80000001u, 0, ECX, 16, "fma4"),
    F(0x80000001u, 0, ECX, 21, "tbm"),
    /* leaf 0x80000001 EDX */
    F(0x80000001u, 0, EDX, 11, "syscall"),
    F(0x80000001u, 0, EDX, 20, "nx"),
    F(0x80000001u, 0, EDX, 22, "mmxext"),
    F(0x80000001u, 0, EDX, 25, "fxsr_opt"),
    F(0x80000001u, 0, EDX, 26, "pdpe1gb"),
    F(0x80000001u, 0, EDX, 27, "rdtscp"),
    F(0x80000001u, 0, EDX, 29, "lm"),
};

#define NFEATURES (sizeof(table) / sizeof(table[0]))
_Static_assert(NFEATURES <= 64 * CPU_FEATURES_WORDS, "struct cpu_features holds every feature");

static bool has(const struct cpu_features *f, unsigned i)
{
	return f->bits[i / 64] >> (i % 64) & 1;
}

static void add(struct cpu_features *f, unsigned i)
{
	f->bits[i / 64] |= 1ull << (i % 64);
}

/* cpuid_find() only reads the table; the const goes for its signature's sake. */
static struct kvm_cpuid_entry2 *entry(const struct kvm_cpuid2 *t, uint32_t leaf, uint32_t subleaf)
{
	return cpuid_find((struct kvm_cpuid2 *)t, leaf, subleaf);
}

static uint32_t *reg_of(struct kvm_cpuid_entry2 *e, enum reg r)
{
	return r == EAX ? &e->eax : r == EBX ? &e->ebx : r == ECX ? &e->ecx : &e->edx;
}

void cpu_features_of(const struct kvm_cpuid2 *t, struct cpu_features *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < NFEATURES; i++) {
		struct kvm_cpuid_entry2 *e = entry(t, table[i].leaf, table[i].subleaf);

		if (e && (*reg_of(e, table[i].reg) >> table[i].bit & 1))
			add(out, i);
	}
}

int cpu_features_parse(const char *list, struct cpu_features *out, char *err, size_t errlen)
{
	const char *p = list;

	memset(out, 0, sizeof(*out));
	while (*p) {
		size_t len;
		unsigned i;

		p += strspn(p, " \t,");
		len = strcspn(p, " \t,");
		if (!len)
			break;
		for (i = 0; i < NFEATURES; i++)
			if (strlen(table[i].name) == len && !strncmp(table[i].name, p, len))
				break;
		if (i == NFEATURES) {
			snprintf(err, errlen, "unknown CPU feature '%.*s'",
				 (int)(len > 64 ? 64 : len), p);
			return -EINVAL;
		}
		add(out, i);
		p += len;
	}
	return 0;
}

int cpu_features_format(const struct cpu_features *f, char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return -ENOSPC;
	buf[0] = '\0';
	for (unsigned i = 0; i < NFEATURES; i++) {
		int w;

		if (!has(f, i))
			continue;
		w = snprintf(buf + n, len - n, "%s%s", n ? "," : "", table[i].name);
		if (w < 0 || (size_t)w >= len - n) {
			buf[n] = '\0';
			return -ENOSPC;
		}
		n += (size_t)w;
	}
	return 0;
}

unsigned cpu_features_missing(const struct cpu_features *want, const struct cpu_features *have,
			      char *names, size_t len)
{
	unsigned count = 0;
	size_t n = 0;

	if (len)
		names[0] = '\0';
	for (unsigned i = 0; i < NFEATURES; i++) {
		if (!has(want, i) || has(have, i))
			continue;
		if (len && n < len)
			n += (size_t)snprintf(names + n, len - n, "%s%s", count ? ", " : "",
					      table[i].name);
		count++;
	}
	return count;
}

void cpu_features_mask(struct kvm_cpuid2 *t, const struct cpu_features *keep)
{
	for (unsigned i = 0; i < NFEATURES; i++) {
		struct kvm_cpuid_entry2 *e = entry(t, table[i].leaf, table[i].subleaf);

		if (e && !has(keep, i))
			*reg_of(e, table[i].reg) &= ~(1u << table[i].bit);
	}
}

const char *cpu_features_bit_name(uint32_t leaf, uint32_t subleaf, unsigned reg, unsigned bit)
{
	for (unsigned i = 0; i < NFEATURES; i++)
		if (table[i].leaf == leaf && table[i].subleaf == subleaf &&
		    (unsigned)table[i].reg == reg && table[i].bit == bit)
			return table[i].name;
	return NULL;
}

unsigned cpu_features_count(void)
{
	return (unsigned)NFEATURES;
}

const char *cpu_features_name(unsigned i)
{
	return i < NFEATURES ? table[i].name : NULL;
}

int cpu_features_place(unsigned i, uint32_t *leaf, uint32_t *subleaf, unsigned *reg, unsigned *bit)
{
	if (i >= cpu_features_count())
		return -ERANGE;
	*leaf = table[i].leaf;
	*subleaf = table[i].subleaf;
	*reg = (unsigned)table[i].reg;
	*bit = table[i].bit;
	return 0;
}
