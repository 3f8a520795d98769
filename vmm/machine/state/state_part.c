/* SPDX-License-Identifier: Apache-2.0 */
/*
 * state_part.c - what every part shares (state_part.h): its instances,
 * each instance's component, and the version gate in front of its check.
 * The parts themselves live beside their components; their order in
 * vm_state.c.
 */
#include "state_part.h"

#include <errno.h>

unsigned state_part_count(const struct state_part *p, const struct vm *vm)
{
	return p->count ? p->count(vm) : 1;
}

uint16_t state_part_comp(const struct state_part *p, const struct vm *vm, unsigned i)
{
	return p->comp ? p->comp(vm, i) : p->comps[0];
}

int state_part_check(const struct state_part *p, struct vm *vm, unsigned i, uint16_t comp,
		     const struct state_part_in *in, char *err, size_t errlen)
{
	const struct state_comp_info *c = state_comp_get(comp);

	/*
	 * The parser refuses these in a framing 3 blob already; here, because
	 * a part is handed the version and must never be asked for one its
	 * component's row does not read, whoever parsed the blob. Version 0:
	 * the state says it inside (a vCPU blob's VERSIONS) or nowhere.
	 */
	if (!in->version)
		return p->check ? p->check(vm, i, in, err, errlen) : 0;
	if (!c)
		return state_fail(-EINVAL, err, errlen,
				  "%s state: component %u is unknown to this vmm", p->name, comp);
	if (in->version < c->oldest_read || in->version > c->newest)
		return state_fail(-EINVAL, err, errlen,
				  "%s state: %s state version %u, this vmm reads %u..%u", p->name,
				  c->name, in->version, c->oldest_read, c->newest);
	return p->check ? p->check(vm, i, in, err, errlen) : 0;
}
