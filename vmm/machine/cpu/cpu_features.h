/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_features.h - the CPU features a guest is given, as a set of named
 * CPUID bits (the names of Linux's /proc/cpuinfo), so that it can travel
 * with the VM and be checked where the VM is created again: a migration
 * target or a restore that cannot give every feature refuses the VM before
 * any page is sent, naming the missing ones, and the source runs on.
 *
 * The set covers the feature leaves (1, 7.0, 7.1, 0xd.1, 0x80000001)
 * except the bits vmm decides itself (the hypervisor bit, TSC-deadline,
 * invariant TSC: cpuid.c) and the bits the guest's OS turns on
 * (OSXSAVE, OSPKE). Bits the table does not name are left as KVM reports
 * them. Pure functions, any thread.
 */
#ifndef VMM_CPU_FEATURES_H
#define VMM_CPU_FEATURES_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPU_FEATURES_WORDS 4 /* room for 256 named features */

struct cpu_features {
	uint64_t bits[CPU_FEATURES_WORDS]; /* bit i: the table's feature i */
};

/* The named features that the CPUID table t sets (vCPU-independent leaves). */
void cpu_features_of(const struct kvm_cpuid2 *t, struct cpu_features *out);

/*
 * A comma-separated list of names into *out ("" is the empty set; blanks
 * around names are allowed). A name is a feature, a baseline (below: it
 * adds its features and those of the levels under it) or "host" (what
 * cpu_features_resolve's host has; here, where no host is known, every
 * feature, so that a config naming it checks). 0, or -EINVAL naming the
 * first unknown name.
 */
int cpu_features_parse(const char *list, struct cpu_features *out, char *err, size_t errlen);

/* cpu_features_parse with "host" meaning *host: what a VM on this host resolves. */
int cpu_features_resolve(const char *list, const struct cpu_features *host,
			 struct cpu_features *out, char *err, size_t errlen);

/*
 * The named baselines, the x86-64 psABI's microarchitecture levels in order:
 * "x86-64" (the architectural base), "x86-64-v2", "-v3", "-v4"; each holds
 * the one before. b-th name (NULL past the end) and its whole set.
 */
unsigned cpu_features_baseline_count(void);
const char *cpu_features_baseline_name(unsigned b);
void cpu_features_baseline(unsigned b, struct cpu_features *out);

/*
 * Feature i of the table in f; adding one feature by its exact name (not a
 * baseline, not "host"): 0, or -ENOENT for a name the table lacks.
 */
bool cpu_features_has(const struct cpu_features *f, unsigned i);
int cpu_features_add_name(struct cpu_features *f, const char *name);

/* Whether every feature of a is in b; a = a AND b. */
bool cpu_features_subset(const struct cpu_features *a, const struct cpu_features *b);
void cpu_features_intersect(struct cpu_features *a, const struct cpu_features *b);

/* The set as "name,name,..." in table order. 0, or -ENOSPC when it does not fit. */
int cpu_features_format(const struct cpu_features *f, char *buf, size_t len);

/*
 * Missing features are named here, and only here, whichever form the
 * wanted set comes in: a config's or a migration's named set
 * (cpu_features_missing), a snapshot's raw CPUID words
 * (cpu_missing_word). A list under construction: the names "a, b, c" in
 * the caller's buffer (cut at its end, never overrun), the count whole.
 */
struct cpu_missing {
	char *names;
	size_t len, n;
	unsigned count;
};
void cpu_missing_init(struct cpu_missing *m, char *names, size_t len);
/*
 * Adds each bit set in `lack`, of register reg (0 EAX .. 3 EDX) of CPUID
 * leaf.subleaf, lowest first: "avx2 (0x7.0:ebx[5])" where the table names
 * it, its place alone ("0x1.0:ecx[27]") where it does not.
 */
void cpu_missing_word(struct cpu_missing *m, uint32_t leaf, uint32_t subleaf, unsigned reg,
		      uint32_t lack);

/*
 * The features of `want` that `have` lacks: their count, and their names as
 * "a, b, c" in names (truncated to len), in table order.
 */
unsigned cpu_features_missing(const struct cpu_features *want, const struct cpu_features *have,
			      char *names, size_t len);

/*
 * Whether this host (`host`) can give a guest every feature of `want`:
 * 0, or -ENOTSUP with one line naming what it lacks. The one check of a
 * named set against a host: a config's at vm_create(), the CPU features
 * part's (state_part.h) before a migrated or restored VM loads.
 */
int cpu_features_host_check(const struct cpu_features *want, const struct cpu_features *host,
			    char *err, size_t errlen);

/* Clears in t every named feature bit that `keep` does not have; other bits stay. */
void cpu_features_mask(struct kvm_cpuid2 *t, const struct cpu_features *keep);

/*
 * Where feature i lives: CPUID leaf.subleaf, register (0 EAX .. 3 EDX) and
 * bit. 0, or -ERANGE past the table. For writers of raw feature words.
 */
int cpu_features_place(unsigned i, uint32_t *leaf, uint32_t *subleaf, unsigned *reg, unsigned *bit);

/* The table's size, and feature i's name (NULL past the end): for tests and docs. */
unsigned cpu_features_count(void);
const char *cpu_features_name(unsigned i);

#endif /* VMM_CPU_FEATURES_H */
