/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_restore.c - what a restore checks before it touches a VM: the
 * snapshot against the VM built from its config and against this host
 * (memory layout, vCPUs, CPU features), and a chain of diff layers. All of
 * it compares data the caller passes; nothing here asks KVM.
 */
#include <string.h>

#include "cpu_features.h"
#include "snap_internal.h"

static const char *const reg_names[] = {"eax", "ebx", "ecx", "edx"};

/* The feature's name where the guest CPU's table names it (cpu_features.c). */
static const char *cpu_bit_name(const struct snap_cpu_word *w, uint32_t bit)
{
	return cpu_features_bit_name(w->leaf, w->subleaf, w->reg, bit);
}

/* Appends to buf (cap bytes, NUL terminated), silently cut at cap. */
static void append(char *buf, size_t cap, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (*n + 1 >= cap)
		return;
	va_start(ap, fmt);
	r = vsnprintf(buf + *n, cap - *n, fmt, ap);
	va_end(ap);
	*n = r < 0 ? *n : (*n + (size_t)r < cap ? *n + (size_t)r : cap - 1);
}

static uint32_t host_bits(const struct snap_host *host, const struct snap_cpu_word *w)
{
	for (uint32_t i = 0; i < host->ncpu; i++)
		if (host->cpu[i].leaf == w->leaf && host->cpu[i].subleaf == w->subleaf &&
		    host->cpu[i].reg == w->reg)
			return host->cpu[i].bits;
	return 0;
}

static int check_cpu(const struct snap_view *v, const struct snap_host *host, char *err,
		     size_t errlen)
{
	char msg[512];
	size_t n = 0;
	uint32_t missing = 0;

	for (uint32_t i = 0; i < v->ncpu; i++) {
		struct snap_cpu_word w = snap_view_cpu_word(v, i);
		uint32_t lack = w.bits & ~host_bits(host, &w);

		for (uint32_t bit = 0; bit < 32; bit++) {
			const char *name;

			if (!(lack >> bit & 1))
				continue;
			name = cpu_bit_name(&w, bit);
			append(msg, sizeof(msg), &n, "%s%s%s0x%x.%u:%s[%u]%s", missing ? ", " : "",
			       name ? name : "", name ? " (" : "", w.leaf, w.subleaf,
			       reg_names[w.reg & 3], bit, name ? ")" : "");
			missing++;
		}
	}
	if (missing)
		return proto_refuse(err, errlen,
				    "snapshot: this host lacks %u CPU feature%s the guest uses: %s",
				    missing, missing == 1 ? "" : "s", msg);
	return 0;
}

int snap_restore_check(const struct snap_view *v, const struct snap_host *host, char *err,
		       size_t errlen)
{
	uint64_t memory = 0;

	for (uint32_t i = 0; i < host->nslots; i++)
		memory += host->slots[i].size;
	if (memory != v->h.memory || host->nslots != v->h.nslots)
		return proto_refuse(
		    err, errlen,
		    "snapshot: memory layout differs: the snapshot has %llu bytes in "
		    "%u slots, this VM %llu bytes in %u",
		    (unsigned long long)v->h.memory, v->h.nslots, (unsigned long long)memory,
		    host->nslots);
	for (uint32_t i = 0; i < v->h.nslots; i++) {
		struct snap_slot s = snap_view_slot(v, i);

		if (s.gpa != host->slots[i].gpa || s.size != host->slots[i].size)
			return proto_refuse(
			    err, errlen,
			    "snapshot: memory layout differs: slot %u is [0x%llx, "
			    "+0x%llx) in the snapshot, [0x%llx, +0x%llx) in this VM",
			    i, (unsigned long long)s.gpa, (unsigned long long)s.size,
			    (unsigned long long)host->slots[i].gpa,
			    (unsigned long long)host->slots[i].size);
	}
	if (host->nvcpus != v->h.nvcpus)
		return proto_refuse(err, errlen, "snapshot: %u vCPUs, this VM has %u", v->h.nvcpus,
				    host->nvcpus);
	return check_cpu(v, host, err, errlen);
}

int snap_layer_check(const struct snap_view *p, const struct snap_view *c, uint32_t i, char *err,
		     size_t errlen)
{
	char a[33], b[33];

	snap_id_hex(&c->h.id, a);
	if (!(c->h.flags & SNAP_F_DIFF))
		return proto_refuse(err, errlen,
				    "snapshot layer %u (%s) is a full snapshot, not a diff "
				    "layer",
				    i, a);
	if (memcmp(&c->h.parent, &p->h.id, sizeof(c->h.parent))) {
		snap_id_hex(&c->h.parent, a);
		snap_id_hex(&p->h.id, b);
		return proto_refuse(err, errlen,
				    "snapshot layer %u was taken on top of %s, not on layer "
				    "%u (%s)",
				    i, a, i - 1, b);
	}
	if (c->h.generation != p->h.generation + 1)
		return proto_refuse(err, errlen,
				    "snapshot layer %u (%s): generation %u on a parent of "
				    "generation %u",
				    i, a, c->h.generation, p->h.generation);
	if (c->h.nslots != p->h.nslots || c->h.memory != p->h.memory ||
	    memcmp(c->layout, p->layout, (size_t)c->h.nslots * SNAP_SLOT_LEN))
		return proto_refuse(err, errlen,
				    "snapshot layer %u (%s): its memory layout differs from "
				    "its parent's",
				    i, a);
	return 0;
}

int snap_chain_check(const struct snap_view *const *layers, uint32_t n, char *err, size_t errlen)
{
	char a[33];

	if (!n || n > SNAP_LAYERS_MAX + 1)
		return -EINVAL;
	if (layers[0]->h.flags & SNAP_F_DIFF) {
		snap_id_hex(&layers[0]->h.parent, a);
		return proto_refuse(
		    err, errlen, "snapshot layer 0 is a diff layer: its parent %s is missing", a);
	}
	for (uint32_t i = 1; i < n; i++) {
		int ret = snap_layer_check(layers[i - 1], layers[i], i, err, errlen);

		if (ret)
			return ret;
	}
	return 0;
}
