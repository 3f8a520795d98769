/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_snap_restore.c - what a restore checks before it touches a VM
 * (migration/snapshot/snap_restore.c, docs/snapshot-format.md "Restore"):
 * the snapshot against the restoring VM's vCPUs and the host's CPU
 * features (named by the machine's table), a chain of diff layers, and the memory file's header
 * against its state file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>

#include "guest_mem.h"
#include "snap_fixture.h"

static char err[512];

static void refused(int ret, const char *want)
{
	if (ret != -EPROTO || !strstr(err, want) || strchr(err, '\n'))
		fail_msg("want -EPROTO with \"%s\", got %d \"%s\"", want, ret, err);
	err[0] = '\0';
}

static struct fx base, layer1, layer2;
static struct snap_view vb, v1, v2;

static void decode(struct fx *f, struct snap_view *v)
{
	assert_true(fx_encode(f) > 0);
	assert_int_equal(snap_state_decode(f->file, f->len, NULL, v, err, sizeof(err)), 0);
}

/* The host of the fixture's snapshot: 2 vCPUs, every feature and more. */
static struct snap_cpu_word host_cpu[5];
static struct snap_host host(void)
{
	for (int i = 0; i < 4; i++)
		host_cpu[i] = fx_cpu[i];
	host_cpu[2].bits |= 0xffff0000;
	host_cpu[4] = (struct snap_cpu_word){0x80000001, 0, SNAP_CPU_EDX, 1u << 29};
	return (struct snap_host){.nvcpus = 2, .cpu = host_cpu, .ncpu = 5};
}

static void test_host_fits(void **state)
{
	struct snap_host h = host();

	(void)state;
	fx_init(&base, SNAP_INDEX_ZSTD);
	decode(&base, &vb);
	assert_int_equal(snap_restore_check(&vb, &h, err, sizeof(err)), 0);
}

/*
 * The snapshot's layout against the restoring VM's memory: the machine's
 * check (guest_mem_layout_check(), a migration target's too), fed as
 * persist's image_check_vm() feeds it.
 */
static int layout_check(const struct snap_view *v, const struct mig_slot_desc *ours, uint32_t n)
{
	struct memslot ms[3];
	struct guest_mem mem = {.slots = ms, .nslots = n};
	struct mem_slot_shape theirs[2];

	for (uint32_t i = 0; i < n; i++)
		ms[i] = (struct memslot){.id = i, .gpa = ours[i].gpa, .size = ours[i].size};
	for (uint32_t i = 0; i < v->h.nslots; i++) {
		struct snap_slot sl = snap_view_slot(v, i);

		theirs[i] = (struct mem_slot_shape){sl.gpa, sl.size};
	}
	return guest_mem_layout_check(&mem, theirs, v->h.nslots, "the snapshot", err, sizeof(err));
}

static void test_memory_layout(void **state)
{
	struct mig_slot_desc s[3] = {fx_slots[0], fx_slots[1], {8ull << 32, 4096}};

	(void)state;
	fx_init(&base, SNAP_INDEX_ZSTD);
	decode(&base, &vb);
	assert_int_equal(layout_check(&vb, fx_slots, 2), 0);
	/* More memory. */
	s[1].size += 4096;
	refused(layout_check(&vb, s, 2),
		"the snapshot has 3149824 bytes in 2 slots, this VM 3153920 bytes in 2");
	/* The same memory in three slots. */
	s[1].size -= 2 * 4096;
	refused(layout_check(&vb, s, 3), "in 2 slots, this VM 3149824 bytes in 3");
	/* The same sizes at another address. */
	s[1] = fx_slots[1];
	s[1].gpa += 2u << 20;
	refused(layout_check(&vb, s, 2),
		"slot 1 is [0x100000000, +0x101000) in the snapshot, [0x100200000, +0x101000) in "
		"this VM");
}

static void test_vcpus(void **state)
{
	struct snap_host h = host();

	(void)state;
	fx_init(&base, SNAP_INDEX_ZSTD);
	decode(&base, &vb);
	h.nvcpus = 4;
	refused(snap_restore_check(&vb, &h, err, sizeof(err)), "snapshot: 2 vCPUs, this VM has 4");
}

static void test_cpu_features(void **state)
{
	struct snap_host h = host();

	(void)state;
	fx_init(&base, SNAP_INDEX_ZSTD);
	decode(&base, &vb);
	/* No avx2 (7.0 ebx bit 5) and no bmi2 (bit 8). */
	host_cpu[2].bits &= ~(1u << 5 | 1u << 8);
	refused(snap_restore_check(&vb, &h, err, sizeof(err)),
		"snapshot: this host lacks 2 CPU features the guest uses: avx2 (0x7.0:ebx[5]), "
		"bmi2 (0x7.0:ebx[8])");
	/* A word the host does not have at all: each of its bits, named or not. */
	h = host();
	host_cpu[3] = host_cpu[4]; /* drops 0xd.1 eax: xsaveopt, xsavec, xsaves */
	h.ncpu = 4;
	refused(snap_restore_check(&vb, &h, err, sizeof(err)),
		"lacks 3 CPU features the guest uses: xsaveopt (0xd.1:eax[0]), xsavec "
		"(0xd.1:eax[1]), xsaves (0xd.1:eax[3])");
	/* An unnamed bit (27, osxsave) prints as its position. */
	h = host();
	host_cpu[0].bits &= ~(1u << 27 | 1u << 0);
	refused(snap_restore_check(&vb, &h, err, sizeof(err)),
		"lacks 2 CPU features the guest uses: pni (0x1.0:ecx[0]), 0x1.0:ecx[27]");
	fx_init(&base, SNAP_INDEX_ZSTD);
	{
		struct snap_cpu_word w[1] = {{0x40000001, 0, SNAP_CPU_EAX, 1u << 2}};

		snap_cpu_encode(base.cpu, w, 1);
		base.s[3].sec.len = SNAP_CPU_HDR_LEN + SNAP_CPU_WORD_LEN;
	}
	decode(&base, &vb);
	h = host();
	refused(snap_restore_check(&vb, &h, err, sizeof(err)),
		"lacks 1 CPU feature the guest uses: 0x40000001.0:eax[2]");
	/* A tiny message buffer cuts the line, never overruns it. */
	{
		char small[16];

		assert_int_equal(snap_restore_check(&vb, &h, small, sizeof(small)), -EPROTO);
		assert_int_equal(strlen(small), sizeof(small) - 1);
	}
}

/* base <- layer1 <- layer2, each decoded into its view. */
static void chain(void)
{
	fx_init(&base, SNAP_INDEX_ZSTD);
	decode(&base, &vb);
	fx_init(&layer1, SNAP_INDEX_ZSTD);
	fx_diff(&layer1, &base, 0x22);
	decode(&layer1, &v1);
	fx_init(&layer2, SNAP_INDEX_RAW);
	fx_diff(&layer2, &layer1, 0x33);
	decode(&layer2, &v2);
}

static void test_diff_chain(void **state)
{
	const struct snap_view *l[3] = {&vb, &v1, &v2};

	(void)state;
	chain();
	assert_int_equal(v2.h.generation, 2);
	assert_int_equal(snap_chain_check(l, 3, err, sizeof(err)), 0);
	assert_int_equal(snap_chain_check(l, 1, err, sizeof(err)), 0);
	assert_int_equal(snap_chain_check(l, 0, err, sizeof(err)), -EINVAL);
	/* A layer whose parent is not the layer below. */
	l[1] = &v2;
	l[2] = &v1;
	refused(snap_chain_check(l, 3, err, sizeof(err)),
		"snapshot layer 1 was taken on top of 22222222222222222222222222222222, not on "
		"layer 0 (11111111111111111111111111111111)");
	l[1] = &v2;
	refused(snap_chain_check(l, 2, err, sizeof(err)), "not on layer 0");
	/* A chain without its base. */
	l[0] = &v1;
	l[1] = &v2;
	refused(snap_chain_check(l, 2, err, sizeof(err)),
		"snapshot layer 0 is a diff layer: its parent 11111111111111111111111111111111 is "
		"missing");
	/* A full snapshot where a layer should be. */
	l[0] = &vb;
	l[1] = &vb;
	refused(snap_chain_check(l, 2, err, sizeof(err)), "is a full snapshot, not a diff layer");
}

static void test_diff_mismatch(void **state)
{
	const struct snap_view *l[2] = {&vb, &v1};
	struct mig_slot_desc s[2] = {fx_slots[0], fx_slots[1]};

	(void)state;
	/* The right parent id but a generation that skips. */
	chain();
	layer1.h.generation = 2;
	decode(&layer1, &v1);
	refused(snap_chain_check(l, 2, err, sizeof(err)),
		"generation 2 on a parent of generation 0");
	/* The same parent, another memory layout. */
	chain();
	s[1].gpa += 2u << 20;
	layer1.h.memory_file_len = snap_layout_encode(layer1.layout, s, 2);
	decode(&layer1, &v1);
	refused(snap_chain_check(l, 2, err, sizeof(err)),
		"its memory layout differs from its parent's");
	/* A diff layer's header must name a parent. */
	chain();
	memset(layer1.h.parent.b, 0, 16);
	assert_true(fx_encode(&layer1) > 0);
	refused(snap_state_decode(layer1.file, layer1.len, NULL, &v1, err, sizeof(err)),
		"diff layer with no parent id and generation 1");
}

static void test_memory_file(void **state)
{
	uint8_t b[SNAP_MEM_HEADER_LEN];
	struct snap_mem_header m = {.version_major = SNAP_VERSION_MAJOR}, d;

	(void)state;
	chain();
	m.id = vb.h.id;
	m.file_len = vb.h.memory_file_len;
	snap_mem_header_encode(b, &m);
	assert_memory_equal(b, "VMMSNM\r\n\x01\0\0\0", 12);
	assert_int_equal(snap_mem_header_decode(b, sizeof(b), &d, err, sizeof(err)), 0);
	assert_memory_equal(d.id.b, vb.h.id.b, 16);
	assert_int_equal(snap_mem_check(&vb, &d, vb.h.memory_file_len, err, sizeof(err)), 0);
	refused(snap_mem_check(&vb, &d, vb.h.memory_file_len - 4096, err, sizeof(err)),
		"snapshot memory: truncated: 5242880 bytes (its header says 5246976), the state "
		"expects 5246976");
	refused(snap_mem_check(&vb, &d, vb.h.memory_file_len + 1, err, sizeof(err)),
		"wrong length");
	refused(snap_mem_check(&v1, &d, vb.h.memory_file_len, err, sizeof(err)),
		"the file belongs to snapshot 11111111111111111111111111111111, the state to "
		"22222222222222222222222222222222");
	for (size_t i = 0; i < sizeof(b); i++) {
		b[i] ^= 4;
		assert_int_equal(snap_mem_header_decode(b, sizeof(b), &d, err, sizeof(err)),
				 -EPROTO);
		b[i] ^= 4;
	}
	refused(snap_mem_header_decode(b, 63, &d, err, sizeof(err)), "truncated: 63 bytes");
	b[40] ^= 1;
	refused(snap_mem_header_decode(b, sizeof(b), &d, err, sizeof(err)), "header CRC mismatch");
	b[40] ^= 1;
	b[8] = 2;
	refused(snap_mem_header_decode(b, sizeof(b), &d, err, sizeof(err)),
		"format version 2.0, this vmm reads 1.x");
	memcpy(b, "VMMSNS\r\n", 8);
	refused(snap_mem_header_decode(b, sizeof(b), &d, err, sizeof(err)), "bad magic");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host_fits),	cmocka_unit_test(test_memory_layout),
	    cmocka_unit_test(test_vcpus),	cmocka_unit_test(test_cpu_features),
	    cmocka_unit_test(test_diff_chain),	cmocka_unit_test(test_diff_mismatch),
	    cmocka_unit_test(test_memory_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
