/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_form.c - a snapshot's state blobs and the form they are written
 * in (`vmm snapshot --format-version`, docs/compatibility.md): the choice
 * is the state layer's (state_versions.h), made before the VM pauses; the
 * page writer knows nothing of it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "persist.h"
#include "snapshot.h"
#include "state_buf.h"
#include "vm_state.h"

int persist_choose_form(struct vm *vm, const struct snapshot_params *p, struct state_form *f,
			char *err, size_t errlen)
{
	bool used[STATE_COMP_COUNT];
	char why[160];
	int ret;

	if (!p->format_version[0]) {
		state_form_current(f);
		return 0;
	}
	ret = state_form_release(p->format_version, f, why, sizeof(why));
	if (!ret)
		ret = state_form_check(f, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "format_version %s: %s", p->format_version, why);
		return ret;
	}
	vm_state_used(vm, used);
	for (size_t i = 0; i < STATE_COMP_COUNT; i++) {
		if (used[i] && !f->v[i]) {
			snprintf(err, errlen,
				 "format_version %s: release %s cannot express this VM's %s state",
				 p->format_version, p->format_version, state_comps[i].name);
			return -EPROTONOSUPPORT;
		}
	}
	return 0;
}

int persist_save_blobs(struct vm *vm, const struct state_form *form, struct persist_state_in *in,
		       char *err, size_t errlen)
{
	struct vm_saved sv;
	int failed, ret = vm_save_whole(vm, form, &sv, &failed, err, errlen);

	in->vcpu_blob = calloc(vm_nvcpus(vm) ? vm_nvcpus(vm) : 1, sizeof(*in->vcpu_blob));
	in->vcpu_len = calloc(vm_nvcpus(vm) ? vm_nvcpus(vm) : 1, sizeof(*in->vcpu_len));
	if (!ret && (!in->vcpu_blob || !in->vcpu_len))
		ret = -ENOMEM;
	/* The state file's sections take the blobs over: the state form is the machine's. */
	if (!ret) {
		in->vm_blob = sv.vm.data;
		in->vm_len = sv.vm.len;
		state_buf_init(&sv.vm);
		for (unsigned i = 0; i < vm_nvcpus(vm); i++) {
			in->vcpu_blob[i] = sv.vcpu[i].data;
			in->vcpu_len[i] = sv.vcpu[i].len;
			state_buf_init(&sv.vcpu[i]);
		}
	}
	vm_saved_free(&sv);
	return ret;
}
