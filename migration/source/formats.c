/* SPDX-License-Identifier: Apache-2.0 */
/*
 * formats.c - the source's choice of state form (protocol 6.1): from the
 * target's CAPS, what it reads; the newest form both sides know is the one
 * the state records are written in (session_io.c). A CAPS without the
 * formats block comes from a 6.0 target, release 0.3.0, whose reads are
 * that release's row of the state component table (state_versions.h).
 * What this VM needs and the target cannot read is refused here, while
 * the guest runs and before any page: the VM stays where it is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "phases.h"
#include "state_versions.h"
#include "vm_state.h"

/* The one release that speaks protocol 6.0 (docs/compatibility.md). */
#define PROTOCOL_6_0_RELEASE "0.3.0"

static void reads_from_caps(const struct mig_caps_formats *f, struct state_reads *r)
{
	memset(r, 0, sizeof(*r));
	r->framing_oldest = f->framing_oldest;
	r->framing_newest = f->framing_newest;
	/* Components this build does not know are the target's business. */
	for (uint32_t i = 0; i < f->ncomp; i++) {
		if (!state_comp_get(f->comp[i].id))
			continue;
		r->oldest[f->comp[i].id - 1] = f->comp[i].oldest;
		r->newest[f->comp[i].id - 1] = f->comp[i].newest;
	}
}

int source_choose_form(struct migration *m, const struct mig_caps_view *v)
{
	struct state_reads r;
	bool used[STATE_COMP_COUNT];
	char why[200];
	int ret;

	if (v->has_formats) {
		m->target_minor = v->formats.protocol_minor;
		reads_from_caps(&v->formats, &r);
	} else {
		m->target_minor = 0;
		ret = state_reads_release(PROTOCOL_6_0_RELEASE, &r, why, sizeof(why));
		if (ret) {
			migration_fail(m, ret, "the target speaks protocol 6.0: %s", why);
			return ret;
		}
	}
	vm_state_used(m->vm, used);
	ret = state_form_negotiate(&r, used, &m->form, why, sizeof(why));
	if (ret) {
		migration_fail(m, ret, "the target's vmm (protocol %u.%u) cannot take this VM: %s",
			       MIG_VERSION_MAJOR, m->target_minor, why);
		return ret;
	}
	return 0;
}
