/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_restore.c - what a restore checks before it touches a VM: the
 * snapshot against the VM built from its config and against this host
 * (vCPUs, CPU features), and a chain of diff layers. All of it compares
 * data the caller passes; nothing here asks KVM. The memory layout is
 * checked by the machine (guest_mem_layout_check(), as a migration target
 * checks the source's), the missing features named by it
 * (cpu_missing_word(), as a config's are).
 */
#include <string.h>

#include "cpu_features.h"
#include "snap_internal.h"

static uint32_t host_bits(const struct snap_host *host, const struct snap_cpu_word *w)
{
	for (uint32_t i = 0; i < host->ncpu; i++)
		if (host->cpu[i].leaf == w->leaf && host->cpu[i].subleaf == w->subleaf &&
		    host->cpu[i].reg == w->reg)
			return host->cpu[i].bits;
	return 0;
}

/* What the host lacks is named by the machine's feature table (cpu_missing_word()). */
static int check_cpu(const struct snap_view *v, const struct snap_host *host, char *err,
		     size_t errlen)
{
	char msg[512];
	struct cpu_missing m;

	cpu_missing_init(&m, msg, sizeof(msg));
	for (uint32_t i = 0; i < v->ncpu; i++) {
		struct snap_cpu_word w = snap_view_cpu_word(v, i);

		cpu_missing_word(&m, w.leaf, w.subleaf, w.reg, w.bits & ~host_bits(host, &w));
	}
	if (m.count)
		return proto_refuse(err, errlen,
				    "snapshot: this host lacks %u CPU feature%s the guest uses: %s",
				    m.count, m.count == 1 ? "" : "s", msg);
	return 0;
}

int snap_restore_check(const struct snap_view *v, const struct snap_host *host, char *err,
		       size_t errlen)
{
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
