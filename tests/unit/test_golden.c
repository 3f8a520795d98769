/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_golden.c - what release 0.3.0 wrote, read by the current code
 * without KVM (docs/compatibility.md, "Goldens"; scripts/goldens.sh made
 * tests/data/golden/0.3.0 with the 0.3.0 binary):
 *
 * - stream.main, the source's side of a 0.3.0 migration's main connection:
 *   the hello, then every record checked against the current record table
 *   and decoded with the current codec, and the VM and vCPU state blobs
 *   validated by the current loaders up to their first ioctl (a VM with fds
 *   -1, so each must end in EBADF: every check before it passed);
 * - snapshot.state, a 0.3.0 snapshot's state file: its header, section
 *   table, CRCs and sections (snap_state_decode()), its page index, and its
 *   state blobs, the same way.
 *
 * A change to a record, a section or a blob that 0.3.0's bytes no longer
 * fit, without a version that keeps reading them, fails here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "rec_table.h"
#include "snap_codec.h"
#include "vcpu_state.h"
#include "vm_struct.h" /* white-box: builds or inspects a VM by hand */
#include "vm_state.h"

#define GOLDEN TEST_DATA_DIR "/golden/0.3.0/"

static char err[256];

static uint8_t *slurp(const char *name, size_t *len)
{
	FILE *f = fopen(name, "rb");
	uint8_t *p;
	long n;

	if (!f)
		fail_msg("%s: cannot open (scripts/goldens.sh makes it)", name);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	p = malloc((size_t)n);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return p;
}

/* The loaders' checks all pass: the first ioctl (on fd -1) is what fails. */
static void vm_blob_ok(const uint8_t *blob, size_t len, uint32_t nvcpus)
{
	static struct vm vm;
	int ret;

	memset(&vm, 0, sizeof(vm));
	vm.kvm_fd = vm.vm_fd = -1;
	vm.nvcpus = nvcpus;
	err[0] = '\0';
	ret = vm_state_load(&vm, blob, len, err, sizeof(err));
	if (ret != -EBADF)
		fail_msg("0.3.0's VM blob: %d: %s", ret, err);
}

static void vcpu_blob_ok(const uint8_t *blob, size_t len, uint32_t index)
{
	static struct vcpu vcpu;
	int ret;

	memset(&vcpu, 0, sizeof(vcpu));
	vcpu.fd = -1;
	vcpu.index = index;
	err[0] = '\0';
	ret = vcpu_state_load(&vcpu, blob, len, err, sizeof(err));
	if (ret != -EBADF)
		fail_msg("0.3.0's vCPU %u blob: %d: %s", index, ret, err);
}

static void test_stream(void **state)
{
	size_t len, off = MIG_HELLO_LEN;
	uint8_t *p = slurp(GOLDEN "stream.main", &len);
	struct mig_hello h;
	struct mig_vm_desc_view desc = {0};
	unsigned seen[64] = {0}, vcpus = 0;

	(void)state;
	assert_true(len >= MIG_HELLO_LEN);
	assert_int_equal(mig_hello_decode(p, &h, err, sizeof(err)), 0);
	assert_int_equal(h.version_major, 6);
	assert_int_equal(h.version_minor, 0);
	assert_int_equal(h.role, MIG_ROLE_MAIN);
	while (off < len) {
		struct mig_rec_hdr rh;
		const uint8_t *b;

		assert_true(len - off >= MIG_REC_HDR_LEN);
		mig_rec_hdr_decode(p + off, &rh);
		if (mig_rec_check(&rh, MIG_ROLE_MAIN, MIG_DIR_S2T, 0, err, sizeof(err)))
			fail_msg("record at %zu: %s", off, err);
		off += MIG_REC_HDR_LEN;
		assert_true(len - off >= rh.len);
		b = p + off;
		if (rh.type < 64)
			seen[rh.type]++;
		switch (rh.type) {
		case MIG_REC_VM_DESC:
			if (mig_vm_desc_decode(b, rh.len, NULL, &desc, err, sizeof(err)))
				fail_msg("%s", err);
			break;
		case MIG_REC_VM_STATE:
			assert_int_equal(seen[MIG_REC_VM_DESC], 1);
			vm_blob_ok(b, rh.len, desc.d.nvcpus);
			break;
		case MIG_REC_VCPU_STATE: {
			struct mig_vcpu_state_hdr vh;
			uint32_t blen;

			if (mig_vcpu_state_hdr_decode(b, rh.len, &vh, &blen, err, sizeof(err)))
				fail_msg("%s", err);
			vcpu_blob_ok(b + MIG_VCPU_STATE_HDR_LEN, blen, vh.index);
			vcpus++;
			break;
		}
		case MIG_REC_END: {
			struct mig_end_view ev;

			if (mig_end_decode(b, rh.len, &ev, err, sizeof(err)))
				fail_msg("%s", err);
			break;
		}
		default:
			break; /* fixed-size and proof records: the table checked their sizes */
		}
		off += rh.len;
	}
	assert_int_equal(off, len);
	assert_int_equal(seen[MIG_REC_VM_DESC], 1);
	assert_int_equal(seen[MIG_REC_VM_STATE], 1);
	assert_int_equal(vcpus, desc.d.nvcpus);
	assert_int_equal(seen[MIG_REC_END], 1);
	assert_int_equal(seen[MIG_REC_COMMIT], 1);
	free(p);
}

static void test_snapshot(void **state)
{
	size_t len;
	uint8_t *p = slurp(GOLDEN "snapshot.state", &len);
	struct snap_view v;
	uint64_t present = 0;

	(void)state;
	if (snap_state_decode(p, len, NULL, &v, err, sizeof(err)))
		fail_msg("0.3.0's snapshot: %s", err);
	assert_int_equal(v.h.version_major, 1);
	assert_true(v.h.nvcpus >= 1);
	for (uint32_t s = 0; s < v.h.nslots; s++) {
		struct snap_slot sl = snap_view_slot(&v, s);
		uint64_t nwords = (sl.size / 4096 + 63) / 64;
		uint64_t *words = calloc(nwords, 8);

		assert_non_null(words);
		if (snap_index_bitmap(&v, s, words, nwords, err, sizeof(err)))
			fail_msg("slot %u: %s", s, err);
		for (uint64_t w = 0; w < nwords; w++)
			present += (uint64_t)__builtin_popcountll(words[w]);
		free(words);
	}
	assert_true(present > 0); /* the firmware's pages at least */
	vm_blob_ok(v.vm_state, v.vm_state_len, v.h.nvcpus);
	for (uint32_t i = 0; i < v.h.nvcpus; i++) {
		const uint8_t *blob;
		uint32_t blen;

		snap_view_vcpu(&v, i, &blob, &blen);
		vcpu_blob_ok(blob, blen, i);
	}
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stream),
	    cmocka_unit_test(test_snapshot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
