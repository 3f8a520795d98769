/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_features_check.c - what a host lacks of a guest's CPU features, named
 * in one place: the list "name (leaf.subleaf:reg[bit]), ..." built from the
 * feature table (cpu_features.c, through its public accessors) or from raw
 * CPUID words (a snapshot's CPU section), the check of a set against this
 * host, and the CPU features' state part (state_part.h), whose only job is
 * that check, first of all parts.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "cpu_features.h"
#include "state_part.h"
#include "vm.h"
#include "vm_struct.h"

void cpu_missing_init(struct cpu_missing *m, char *names, size_t len)
{
	*m = (struct cpu_missing){.names = names, .len = len};
	if (len)
		names[0] = '\0';
}

/* Appends one entry, ", "-separated; cut at the buffer's end, counted anyway. */
static void missing_add(struct cpu_missing *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void missing_add(struct cpu_missing *m, const char *fmt, ...)
{
	va_list ap;
	int r = 0;

	if (m->n + 1 < m->len && m->count)
		r = snprintf(m->names + m->n, m->len - m->n, ", ");
	if (r > 0)
		m->n = m->n + (size_t)r < m->len ? m->n + (size_t)r : m->len - 1;
	if (m->n + 1 < m->len) {
		va_start(ap, fmt);
		r = vsnprintf(m->names + m->n, m->len - m->n, fmt, ap);
		va_end(ap);
		if (r > 0)
			m->n = m->n + (size_t)r < m->len ? m->n + (size_t)r : m->len - 1;
	}
	m->count++;
}

/* The table's name of CPUID bit `bit` of reg of leaf.subleaf, or NULL. */
static const char *bit_name(uint32_t leaf, uint32_t subleaf, unsigned reg, unsigned bit)
{
	for (unsigned i = 0; i < cpu_features_count(); i++) {
		uint32_t l, sl;
		unsigned r, b;

		if (!cpu_features_place(i, &l, &sl, &r, &b) && l == leaf && sl == subleaf &&
		    r == reg && b == bit)
			return cpu_features_name(i);
	}
	return NULL;
}

void cpu_missing_word(struct cpu_missing *m, uint32_t leaf, uint32_t subleaf, unsigned reg,
		      uint32_t lack)
{
	static const char *const reg_names[] = {"eax", "ebx", "ecx", "edx"};

	for (unsigned bit = 0; bit < 32; bit++) {
		const char *name;

		if (!(lack >> bit & 1))
			continue;
		name = bit_name(leaf, subleaf, reg, bit);
		if (name)
			missing_add(m, "%s (0x%x.%u:%s[%u])", name, leaf, subleaf,
				    reg_names[reg & 3], bit);
		else
			missing_add(m, "0x%x.%u:%s[%u]", leaf, subleaf, reg_names[reg & 3], bit);
	}
}

unsigned cpu_features_missing(const struct cpu_features *want, const struct cpu_features *have,
			      char *names, size_t len)
{
	struct cpu_missing m;

	cpu_missing_init(&m, names, len);
	for (unsigned i = 0; i < cpu_features_count(); i++)
		if (cpu_features_has(want, i) && !cpu_features_has(have, i))
			missing_add(&m, "%s", cpu_features_name(i));
	return m.count;
}

int cpu_features_host_check(const struct cpu_features *want, const struct cpu_features *host,
			    char *err, size_t errlen)
{
	char missing[512];
	unsigned n = cpu_features_missing(want, host, missing, sizeof(missing));

	if (!n)
		return 0;
	snprintf(err, errlen,
		 "[vm] cpu_features: this host cannot give the guest %u of its CPU features: %s", n,
		 missing);
	return -ENOTSUP;
}

/*
 * The CPU features component's part (state_part.h). Its state is the
 * resolved [vm] cpu_features the config carries (and a snapshot's CPU
 * section, checked as raw words by the snapshot's reader through
 * cpu_missing_word()): vm_create() gave the vCPUs exactly that CPUID, so
 * there is nothing to save or load, only the check against this host,
 * first of all, before any other part's.
 */
static int part_check(struct vm *vm, unsigned i, const struct state_part_in *in, char *err,
		      size_t errlen)
{
	struct cpu_features want;
	int ret;

	(void)i;
	(void)in;
	ret = cpu_features_resolve(vm->cfg.cpu_features, &vm->host_cpu, &want, err, errlen);
	return ret ? ret : cpu_features_host_check(&want, &vm->host_cpu, err, errlen);
}

const struct state_part cpu_features_part = {
    .name = "cpu-features",
    .comps = {STATE_COMP_CPU_FEATURES},
    .blob = STATE_PART_NONE,
    .check = part_check,
};
