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

/*
 * The x86-64 psABI's microarchitecture levels, each the one before plus its
 * own features: what a fleet of mixed hosts can promise a guest. Level 1 is
 * the architectural base every x86-64 CPU has (what a 64-bit kernel needs
 * to run at all: the psABI's list plus the long-mode basics it takes for
 * granted); v2 adds CMPXCHG16B, LAHF/SAHF, POPCNT, SSE3, SSE4.1, SSE4.2 and
 * SSSE3; v3 AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT (abm), MOVBE and XSAVE;
 * v4 AVX512F, -BW, -CD, -DQ and -VL.
 */
static const struct baseline {
	const char *name;
	const char *adds; /* features beyond the level before */
} baselines[] = {
    {"x86-64", "fpu,vme,de,pse,tsc,msr,pae,mce,cx8,apic,sep,mtrr,pge,mca,cmov,pat,pse36,"
	       "clflush,mmx,fxsr,sse,sse2,syscall,nx,lm"},
    {"x86-64-v2", "cx16,lahf_lm,popcnt,pni,sse4_1,sse4_2,ssse3"},
    {"x86-64-v3", "avx,avx2,bmi1,bmi2,f16c,fma,abm,movbe,xsave"},
    {"x86-64-v4", "avx512f,avx512bw,avx512cd,avx512dq,avx512vl"},
};

#define NBASELINES (sizeof(baselines) / sizeof(baselines[0]))

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

/* The table's index of the name p[0..len), or NFEATURES. */
static unsigned find(const char *p, size_t len)
{
	unsigned i;

	for (i = 0; i < NFEATURES; i++)
		if (strlen(table[i].name) == len && !strncmp(table[i].name, p, len))
			break;
	return i;
}

static int parse(const char *list, const struct cpu_features *host, struct cpu_features *out,
		 char *err, size_t errlen);

/* Adds baseline b and every level below it. The names are the table's: a unit test reads them. */
static void add_baseline(unsigned b, struct cpu_features *out)
{
	for (unsigned l = 0; l <= b; l++) {
		struct cpu_features f;
		char err[8];

		if (parse(baselines[l].adds, NULL, &f, err, sizeof(err)))
			continue; /* cannot happen: test_cpu_features parses each */
		for (unsigned w = 0; w < CPU_FEATURES_WORDS; w++)
			out->bits[w] |= f.bits[w];
	}
}

static int parse(const char *list, const struct cpu_features *host, struct cpu_features *out,
		 char *err, size_t errlen)
{
	const char *p = list;

	memset(out, 0, sizeof(*out));
	while (*p) {
		size_t len;
		unsigned i, b;

		p += strspn(p, " \t,");
		len = strcspn(p, " \t,");
		if (!len)
			break;
		i = find(p, len);
		if (i < NFEATURES) {
			add(out, i);
			p += len;
			continue;
		}
		for (b = 0; b < NBASELINES; b++)
			if (strlen(baselines[b].name) == len && !strncmp(baselines[b].name, p, len))
				break;
		if (b < NBASELINES) {
			add_baseline(b, out);
		} else if (host && len == 4 && !strncmp(p, "host", 4)) {
			for (unsigned w = 0; w < CPU_FEATURES_WORDS; w++)
				out->bits[w] |= host->bits[w];
		} else {
			snprintf(err, errlen, "unknown CPU feature '%.*s'",
				 (int)(len > 64 ? 64 : len), p);
			return -EINVAL;
		}
		p += len;
	}
	return 0;
}

int cpu_features_parse(const char *list, struct cpu_features *out, char *err, size_t errlen)
{
	/* "host" is every feature here: only a VM on a host knows what it means. */
	static const struct cpu_features all = {{~0ull, ~0ull, ~0ull, ~0ull}};

	_Static_assert(CPU_FEATURES_WORDS == 4, "the initialiser above names every word");
	return parse(list, &all, out, err, errlen);
}

int cpu_features_resolve(const char *list, const struct cpu_features *host,
			 struct cpu_features *out, char *err, size_t errlen)
{
	return parse(list, host, out, err, errlen);
}

unsigned cpu_features_baseline_count(void)
{
	return (unsigned)NBASELINES;
}

const char *cpu_features_baseline_name(unsigned b)
{
	return b < NBASELINES ? baselines[b].name : NULL;
}

void cpu_features_baseline(unsigned b, struct cpu_features *out)
{
	memset(out, 0, sizeof(*out));
	if (b < NBASELINES)
		add_baseline(b, out);
}

bool cpu_features_has(const struct cpu_features *f, unsigned i)
{
	return i < NFEATURES && has(f, i);
}

int cpu_features_add_name(struct cpu_features *f, const char *name)
{
	unsigned i = find(name, strlen(name));

	if (i == NFEATURES)
		return -ENOENT;
	add(f, i);
	return 0;
}

bool cpu_features_subset(const struct cpu_features *a, const struct cpu_features *b)
{
	for (unsigned w = 0; w < CPU_FEATURES_WORDS; w++)
		if (a->bits[w] & ~b->bits[w])
			return false;
	return true;
}

void cpu_features_intersect(struct cpu_features *a, const struct cpu_features *b)
{
	for (unsigned w = 0; w < CPU_FEATURES_WORDS; w++)
		a->bits[w] &= b->bits[w];
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

void cpu_features_mask(struct kvm_cpuid2 *t, const struct cpu_features *keep)
{
	for (unsigned i = 0; i < NFEATURES; i++) {
		struct kvm_cpuid_entry2 *e = entry(t, table[i].leaf, table[i].subleaf);

		if (e && !has(keep, i))
			*reg_of(e, table[i].reg) &= ~(1u << table[i].bit);
	}
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
