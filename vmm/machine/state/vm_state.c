/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_state.c - the order of the VM's parts (state_part.h), written once,
 * and the loops that save, check and load them: the VM blob (every
 * STATE_PART_VM part's sections, docs/state-format.md) and the whole VM
 * (that blob and every vCPU's) for every path that moves a VM.
 */
#include "vm_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_part.h"
#include "vcpu_state.h"
#include "vm_struct.h"

/*
 * RESTORE ORDER: the parts are checked in this order, every one before the
 * first changes anything, then loaded in it; saved in it too, so that a
 * reader may apply them as they come. Each step's why:
 *
 * 0. CPU features: the vCPUs got their CPUID when they were created, and
 *    KVM checks XCR0, XSAVE features, CR4 bits and MSRs of a vCPU's state
 *    against it; whether this host can give them is the first question.
 * 1. IRQCHIP: PIC master, PIC slave, IOAPIC, then 2. PIT2 (one part, in
 *    that order): the PIT's channel 0 raises IRQ0 as soon as its count is
 *    reloaded, and that interrupt must meet the restored masks and
 *    redirection table, not the defaults of a fresh VM.
 * 3. CLOCK after the PIT: the kvmclock goes on from the saved value from
 *    the moment of the load, so it comes as late as the VM-wide state
 *    allows.
 * 4. SERIAL after the irqchip: restoring the UART re-asserts IRQ 4 when an
 *    interrupt was pending, and that level must reach the restored chips.
 * 5. VIRTIO last of the VM blob: each device's transport and queues; its
 *    I/O thread is parked, and its first unpark sends the interrupt the
 *    state owes into restored chips.
 * 6. Each vCPU, a blob of its own, after all of the VM blob: LAPICs route
 *    through the irqchip.
 * tests/unit/test_state_parts.c holds the table to these constraints.
 */
static const struct state_part *const order[] = {
    &cpu_features_part, &irqchip_part, &clock_part, &serial_part, &virtio_part, &vcpu_part,
};
#define NPARTS (sizeof(order) / sizeof(order[0]))

const struct state_part *const *vm_state_parts(unsigned *n)
{
	*n = (unsigned)NPARTS;
	return order;
}

#define WHAT "vm state"

/* The VM blob's sections, at most: every VM part's (test_state_parts checks the sum). */
#define VM_SECS_MAX STATE_PART_VM_SECS_MAX

/* The VM blob's spec table, each VM part's specs after the one before's. */
struct vm_layout {
	struct state_section_spec specs[VM_SECS_MAX];
	unsigned first[NPARTS]; /* part k's first spec */
	unsigned n;
};

static void vm_layout(struct vm_layout *l)
{
	l->n = 0;
	for (unsigned k = 0; k < NPARTS; k++) {
		l->first[k] = l->n;
		if (order[k]->blob != STATE_PART_VM)
			continue;
		for (unsigned j = 0; j < order[k]->nspecs && l->n < VM_SECS_MAX; j++)
			l->specs[l->n++] = order[k]->specs[j];
	}
}

/* Instance i of VM part p: its sections are p->specs[*first .. *first + *n). */
static void instance_specs(const struct state_part *p, unsigned i, unsigned *first, unsigned *n)
{
	*first = p->count ? i : 0;
	*n = p->count ? 1 : p->nspecs;
}

void vm_state_used(const struct vm *vm, bool used[STATE_COMP_COUNT])
{
	memset(used, 0, STATE_COMP_COUNT * sizeof(bool));
	for (unsigned k = 0; k < NPARTS; k++)
		for (unsigned i = 0; i < state_part_count(order[k], vm); i++)
			used[state_part_comp(order[k], vm, i) - 1] = true;
}

/* The VERSIONS entries of this VM's blob in form f; 0 or -EPROTONOSUPPORT. */
static int vm_versions(const struct vm *vm, const struct state_form *f, struct state_version_ent *e,
		       unsigned *n, char *err, size_t errlen)
{
	bool used[STATE_COMP_COUNT];
	int ret = state_form_check(f, err, errlen);

	if (ret)
		return ret;
	vm_state_used(vm, used);
	for (size_t i = 0; i < STATE_COMP_COUNT; i++)
		if (used[i] && !f->v[i])
			return state_fail(-EPROTONOSUPPORT, err, errlen,
					  WHAT ": the form asked for has no %s state",
					  state_comps[i].name);
	*n = 0;
	for (unsigned k = 0; k < NPARTS; k++) {
		const struct state_part *p = order[k];

		if (p->blob != STATE_PART_VM)
			continue;
		for (unsigned i = 0; i < state_part_count(p, vm); i++) {
			uint16_t c = state_part_comp(p, vm, i);
			unsigned first, ns;

			instance_specs(p, i, &first, &ns);
			for (unsigned j = first; j < first + ns && *n < VM_SECS_MAX; j++)
				e[(*n)++] =
				    (struct state_version_ent){p->specs[j].type, c, f->v[c - 1]};
		}
	}
	return 0;
}

int vm_state_save_err(struct vm *vm, struct state_buf *out, char *err, size_t errlen)
{
	struct state_form f;

	state_form_current(&f);
	return vm_state_save_form(vm, &f, out, err, errlen);
}

int vm_state_save_form(struct vm *vm, const struct state_form *f, struct state_buf *out, char *err,
		       size_t errlen)
{
	struct state_version_ent ents[VM_SECS_MAX];
	unsigned nents = 0;
	size_t start = out->len;
	char why[200];
	int ret = vm_versions(vm, f, ents, &nents, err, errlen);

	if (ret)
		return ret;
	state_buf_put_header_versions(out, STATE_KIND_VM, vm->nvcpus, f->framing, ents, nents);
	for (unsigned k = 0; !ret && k < NPARTS; k++) {
		const struct state_part *p = order[k];

		if (p->blob != STATE_PART_VM)
			continue;
		for (unsigned i = 0; !ret && i < state_part_count(p, vm); i++)
			if (p->save && (ret = p->save(vm, i, f, out, why, sizeof(why))))
				state_fail(ret, err, errlen, WHAT ": %s", why);
	}
	if (!ret) {
		state_buf_put_section(out, STATE_SEC_END, NULL, 0);
		ret = out->error;
		if (ret)
			state_fail(ret, err, errlen, WHAT ": out of memory");
	}
	if (ret && !out->error)
		out->len = start;
	return ret;
}

int vm_state_save(struct vm *vm, struct state_buf *out)
{
	return vm_state_save_err(vm, out, NULL, 0);
}

/* What a load works from: the VM blob parsed, and where each vCPU's blob is. */
struct load_in {
	struct vm_layout l;
	struct state_section found[VM_SECS_MAX];
	vm_vcpu_blob_fn vcpu_blob; /* NULL: the VM blob alone (vm_state_load()) */
	const void *opaque;
	const void **blob; /* vCPU i's, fetched when its check comes */
	size_t *len;
};

/* Instance i of part k as its check and load see it. */
static void part_in(const struct load_in *x, unsigned k, unsigned i, struct state_part_in *in)
{
	const struct state_part *p = order[k];
	unsigned first, ns;

	memset(in, 0, sizeof(*in));
	if (p->blob == STATE_PART_VM) {
		instance_specs(p, i, &first, &ns);
		in->sec = &x->found[x->l.first[k] + first];
		in->version = in->sec[0].version;
	} else if (p->blob == STATE_PART_VCPU) {
		in->blob = x->blob[i];
		in->len = x->len[i];
	}
	/* A vCPU blob says its version itself (its parser gates it); the config has none. */
}

/* Whether part k of the VM blob can be loaded: its instances, and no section of one vm lacks. */
static int check_vm_part(struct vm *vm, const struct load_in *x, unsigned k, char *err,
			 size_t errlen)
{
	const struct state_part *p = order[k];
	unsigned n = state_part_count(p, vm);
	char why[240];

	for (unsigned i = 0; i < n; i++) {
		struct state_part_in in;
		unsigned first, ns;
		int ret;

		part_in(x, k, i, &in);
		instance_specs(p, i, &first, &ns);
		/* One component, one version: its sections cannot disagree. */
		for (unsigned j = 1; j < ns; j++)
			if (in.sec[j].version != in.version)
				return state_fail(-EINVAL, err, errlen,
						  WHAT
						  ": section %s: version %u, section %s's is %u",
						  p->specs[first + j].name, in.sec[j].version,
						  p->specs[first].name, in.version);
		ret = state_part_check(p, vm, i, state_part_comp(p, vm, i), &in, why, sizeof(why));
		if (ret)
			return state_fail(ret, err, errlen, WHAT ": %s", why);
	}
	/* After this VM's instances, so that a missing one is named before an extra one. */
	for (unsigned j = n; p->count && j < p->nspecs; j++)
		if (x->found[x->l.first[k] + j].present)
			return state_fail(-EINVAL, err, errlen,
					  WHAT
					  ": section %s: present, and this VM has no such device",
					  p->specs[j].name);
	return 0;
}

/*
 * The one loop: every part checked in order (a vCPU's blob fetched when
 * its turn comes), nothing changed until all passed; then every part
 * loaded in the same order. *failed names the blob (VM_WHOLE_VM, or the
 * vCPU's index).
 */
static int run_load(struct vm *vm, struct load_in *x, int *failed, char *err, size_t errlen)
{
	bool whole = x->vcpu_blob != NULL;
	int ret = 0;

	for (unsigned k = 0; !ret && k < NPARTS; k++) {
		const struct state_part *p = order[k];

		*failed = VM_WHOLE_VM;
		if (p->blob == STATE_PART_VM) {
			ret = check_vm_part(vm, x, k, err, errlen);
			continue;
		}
		if (!whole)
			continue;
		for (unsigned i = 0; !ret && i < state_part_count(p, vm); i++) {
			struct state_part_in in;

			if (p->blob == STATE_PART_VCPU) {
				*failed = (int)i;
				x->vcpu_blob(x->opaque, i, &x->blob[i], &x->len[i]);
			}
			part_in(x, k, i, &in);
			ret =
			    state_part_check(p, vm, i, state_part_comp(p, vm, i), &in, err, errlen);
		}
	}
	for (unsigned k = 0; !ret && k < NPARTS; k++) {
		const struct state_part *p = order[k];
		char why[240];

		if (!p->load || (!whole && p->blob != STATE_PART_VM))
			continue;
		for (unsigned i = 0; !ret && i < state_part_count(p, vm); i++) {
			struct state_part_in in;

			*failed = p->blob == STATE_PART_VCPU ? (int)i : VM_WHOLE_VM;
			part_in(x, k, i, &in);
			if (p->blob != STATE_PART_VM) {
				ret = p->load(vm, i, &in, err, errlen);
			} else if ((ret = p->load(vm, i, &in, why, sizeof(why)))) {
				state_fail(ret, err, errlen, WHAT ": %s", why);
			}
		}
	}
	return ret;
}

/* Parses the VM blob against every VM part's sections: the framing's checks. */
static int parse_vm(struct vm *vm, const void *data, size_t len, struct load_in *x, char *err,
		    size_t errlen)
{
	struct state_header h;
	int ret;

	vm_layout(&x->l);
	ret = state_parse(WHAT, STATE_KIND_VM, data, len, x->l.specs, x->l.n, x->found, &h, err,
			  errlen);
	if (ret)
		return ret;
	if (h.index != vm->nvcpus)
		return state_fail(-EINVAL, err, errlen,
				  WHAT ": section HEADER: the VM had %u vCPUs, this one has %u",
				  h.index, vm->nvcpus);
	return 0;
}

int vm_state_load(struct vm *vm, const void *data, size_t len, char *err, size_t errlen)
{
	struct load_in x = {0};
	int failed;
	int ret = parse_vm(vm, data, len, &x, err, errlen);

	return ret ? ret : run_load(vm, &x, &failed, err, errlen);
}

/* ---- The whole VM: its blob and every vCPU's, in order (vm_state.h) ---- */

int vm_save_whole(struct vm *vm, const struct state_form *f, struct vm_saved *out, int *failed,
		  char *err, size_t errlen)
{
	int ret;

	*failed = VM_WHOLE_VM;
	state_buf_init(&out->vm);
	out->nvcpus = 0;
	out->vcpu = calloc(vm->nvcpus ? vm->nvcpus : 1, sizeof(*out->vcpu));
	if (!out->vcpu)
		return state_fail(-ENOMEM, err, errlen, "%s", strerror(ENOMEM));
	out->nvcpus = vm->nvcpus;
	for (unsigned i = 0; i < vm->nvcpus; i++)
		state_buf_init(&out->vcpu[i]);
	/* The VM blob's parts, then each blob of its own, in the table's order. */
	ret = vm_state_save_form(vm, f, &out->vm, err, errlen);
	for (unsigned k = 0; !ret && k < NPARTS; k++) {
		const struct state_part *p = order[k];

		if (p->blob != STATE_PART_VCPU || !p->save)
			continue;
		for (unsigned i = 0; !ret && i < state_part_count(p, vm); i++) {
			*failed = (int)i;
			ret = p->save(vm, i, f, &out->vcpu[i], err, errlen);
		}
	}
	return ret;
}

void vm_saved_free(struct vm_saved *s)
{
	state_buf_free(&s->vm);
	for (unsigned i = 0; s->vcpu && i < s->nvcpus; i++)
		state_buf_free(&s->vcpu[i]);
	free(s->vcpu);
	s->vcpu = NULL;
	s->nvcpus = 0;
}

int vm_load_whole(struct vm *vm, const void *vm_blob, size_t vm_len, vm_vcpu_blob_fn vcpu_blob,
		  const void *opaque, int *failed, char *err, size_t errlen)
{
	struct load_in x = {.vcpu_blob = vcpu_blob, .opaque = opaque};
	int ret;

	/* A migration target and a restore both load here: the order is the table's. */
	*failed = VM_WHOLE_VM;
	ret = parse_vm(vm, vm_blob, vm_len, &x, err, errlen);
	if (ret)
		return ret;
	x.blob = calloc(vm->nvcpus ? vm->nvcpus : 1, sizeof(*x.blob));
	x.len = calloc(vm->nvcpus ? vm->nvcpus : 1, sizeof(*x.len));
	if (!x.blob || !x.len)
		ret = state_fail(-ENOMEM, err, errlen, "%s", strerror(ENOMEM));
	else
		ret = run_load(vm, &x, failed, err, errlen);
	free(x.blob);
	free(x.len);
	return ret;
}
