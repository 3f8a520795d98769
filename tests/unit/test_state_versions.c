/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_state_versions.c - the state component table and the choice of a
 * form (state_versions.h), without KVM: what a 0.4.0 source writes for a
 * 0.3.0 target and for one of its own kind, what it refuses (naming the
 * component) for a peer that lacks one, and that both framings load as far
 * as every check before the first ioctl (a VM with fds -1, as fuzz_state).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/kvm.h>
#include <string.h>

#include "serial.h"
#include "state_buf.h"
#include "state_versions.h"
#include "vm_struct.h" /* white-box: builds or inspects a VM by hand */
#include "vm_state.h"
#include "vm_state_blob.h"

static char err[256];

static void all_used(bool used[STATE_COMP_COUNT], bool v)
{
	for (size_t i = 0; i < STATE_COMP_COUNT; i++)
		used[i] = v;
}

/* Ids are dense from 1, names unique, each row's versions in order. */
static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < STATE_COMP_COUNT; i++) {
		const struct state_comp_info *c = &state_comps[i];

		assert_int_equal(c->id, i + 1);
		assert_ptr_equal(state_comp_get(c->id), c);
		assert_true(c->oldest_read >= 1 && c->oldest_read <= c->newest);
		assert_true(c->oldest_write >= c->oldest_read && c->oldest_write <= c->newest);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(c->name, state_comps[j].name);
	}
	assert_null(state_comp_get(0));
	assert_null(state_comp_get(STATE_COMP_END));
	assert_string_equal(state_releases[0], "0.3.0");
	assert_string_equal(state_releases[state_nreleases - 1], VMM_VERSION);
}

/* 0.3.0's form: framing 2, every component at 1; an unknown release is named. */
static void test_release_forms(void **state)
{
	struct state_form f, cur;
	struct state_reads r;

	(void)state;
	assert_int_equal(state_form_release("0.3.0", &f, err, sizeof(err)), 0);
	assert_int_equal(f.framing, 2);
	for (size_t i = 0; i < STATE_COMP_COUNT; i++)
		assert_int_equal(f.v[i], 1);
	assert_int_equal(state_form_check(&f, err, sizeof(err)), 0);
	assert_int_equal(state_form_release(VMM_VERSION, &f, err, sizeof(err)), 0);
	state_form_current(&cur);
	assert_memory_equal(&f, &cur, sizeof(f));
	assert_int_equal(cur.framing, STATE_FRAMING_NEWEST);
	assert_int_equal(state_form_release("0.2.0", &f, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "release 0.2.0 is not one this vmm knows (it knows 0.3.0, "));
	assert_int_equal(state_reads_release("0.3.0", &r, err, sizeof(err)), 0);
	assert_int_equal(r.framing_oldest, 2);
	assert_int_equal(r.framing_newest, 2);
	/* Framing 2 cannot say a version: only 1 is expressible there. */
	f.framing = 2;
	f.v[STATE_COMP_SERIAL - 1] = 2;
	assert_int_equal(state_form_check(&f, err, sizeof(err)), -EPROTONOSUPPORT);
	assert_non_null(strstr(err, "serial state version 2"));
}

/* Against a target of its own kind: the newest form; of 0.3.0's: 0.3.0's. */
static void test_negotiate(void **state)
{
	struct state_reads r;
	struct state_form f, want;
	bool used[STATE_COMP_COUNT];

	(void)state;
	all_used(used, true);
	state_reads_current(&r);
	assert_int_equal(state_form_negotiate(&r, used, &f, err, sizeof(err)), 0);
	state_form_current(&want);
	assert_memory_equal(&f, &want, sizeof(f));
	assert_int_equal(state_reads_release("0.3.0", &r, err, sizeof(err)), 0);
	assert_int_equal(state_form_negotiate(&r, used, &f, err, sizeof(err)), 0);
	assert_int_equal(state_form_release("0.3.0", &want, err, sizeof(err)), 0);
	assert_memory_equal(&f, &want, sizeof(f));
}

/* What the peer lacks is refused when the VM uses it, naming it; else left out. */
static void test_negotiate_refusals(void **state)
{
	struct state_reads r;
	struct state_form f;
	bool used[STATE_COMP_COUNT];

	(void)state;
	all_used(used, true);
	state_reads_current(&r);
	r.oldest[STATE_COMP_VIRTIO_NET - 1] = r.newest[STATE_COMP_VIRTIO_NET - 1] = 0;
	assert_int_equal(state_form_negotiate(&r, used, &f, err, sizeof(err)), -EPROTONOSUPPORT);
	assert_string_equal(err, "virtio-net state: the peer's vmm has no such component");
	used[STATE_COMP_VIRTIO_NET - 1] = false;
	assert_int_equal(state_form_negotiate(&r, used, &f, err, sizeof(err)), 0);
	assert_int_equal(f.v[STATE_COMP_VIRTIO_NET - 1], 0);
	/* A peer that reads only a later vCPU version than this build writes. */
	state_reads_current(&r);
	r.oldest[STATE_COMP_VCPU - 1] = r.newest[STATE_COMP_VCPU - 1] = 7;
	assert_int_equal(state_form_negotiate(&r, used, &f, err, sizeof(err)), -EPROTONOSUPPORT);
	assert_string_equal(err, "vcpu state: the peer reads versions 7..7, this vmm writes 1..1");
	/* A framing with nothing in common. */
	state_reads_current(&r);
	r.framing_oldest = r.framing_newest = 9;
	assert_int_equal(state_form_negotiate(&r, used, &f, err, sizeof(err)), -EPROTONOSUPPORT);
	assert_non_null(strstr(err, "the state framing: the peer reads versions 9..9"));
	/* A peer that reads a newer version than this build writes gets ours. */
	state_reads_current(&r);
	r.newest[STATE_COMP_SERIAL - 1] = 5;
	assert_int_equal(state_form_negotiate(&r, used, &f, err, sizeof(err)), 0);
	assert_int_equal(f.v[STATE_COMP_SERIAL - 1], state_comps[STATE_COMP_SERIAL - 1].newest);
}

/* A VM blob as vm_state_save writes it, in framing 2 or 3 (serial at sv). */
static void vm_blob(struct state_buf *b, unsigned framing, uint16_t serial_v)
{
	const uint32_t *types = vm_blob_types();
	struct state_version_ent ents[VM_BLOB_NSECTIONS];

	for (unsigned i = 0; i < VM_BLOB_NSECTIONS; i++)
		ents[i] = (struct state_version_ent){types[i], STATE_COMP_VM, 1};
	ents[4].comp = STATE_COMP_CLOCK;
	ents[5].comp = STATE_COMP_SERIAL;
	ents[5].version = serial_v;
	state_buf_put_header_versions(b, STATE_KIND_VM, 1, framing, ents, VM_BLOB_NSECTIONS);
	vm_blob_sections(b, ""); /* the fuzz seed's, with nothing typed */
}

static int load(unsigned framing, uint16_t serial_v)
{
	static struct vm vm;
	struct state_buf b;
	int ret;

	memset(&vm, 0, sizeof(vm));
	vm.kvm_fd = vm.vm_fd = -1;
	vm.nvcpus = 1;
	state_buf_init(&b);
	vm_blob(&b, framing, serial_v);
	assert_int_equal(b.error, 0);
	err[0] = '\0';
	ret = vm_state_load(&vm, b.data, b.len, err, sizeof(err));
	state_buf_free(&b);
	return ret;
}

/*
 * Both framings pass every check and reach KVM (the first ioctl fails on
 * fd -1, EBADF); a version this build does not read, and a framing 3 blob
 * whose VERSIONS entry is missing, are refused before it.
 */
static void test_load_framings(void **state)
{
	(void)state;
	if (load(2, 1) != -EBADF)
		fail_msg("framing 2: %s", err);
	assert_int_equal(load(3, 1), -EBADF);
	assert_int_equal(load(3, 2), -EINVAL);
	assert_non_null(strstr(err, "section SERIAL: serial state version 2, this vmm reads 1..1"));
	assert_int_equal(load(4, 1), -EINVAL);
	assert_non_null(strstr(err, "format version 4.0, this vmm reads 2.x..3.x"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),	  cmocka_unit_test(test_release_forms),
	    cmocka_unit_test(test_negotiate),	  cmocka_unit_test(test_negotiate_refusals),
	    cmocka_unit_test(test_load_framings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
