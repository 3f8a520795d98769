// SPDX-License-Identifier: Apache-2.0
/*
 * test_virtio_cmdline.c - host unit test of the firmware's virtio_cmdline.c
 * (the virtio_mmio.device= words of the kernel command line), compiled for
 * the host with the same source the firmware uses, as test_net_proto.c is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "virtio_cmdline.h"

/* The only word of `s`: 1 with *d, or -1. */
static int one(const char *s, struct virtio_cmdline_dev *d)
{
	const char *pos = s;
	int r = virtio_cmdline_next(&pos, d);

	assert_int_equal(virtio_cmdline_next(&pos, d), 0);
	return r;
}

static void test_qemu_and_vmm(void **state)
{
	const char *pos = "vmm.workload=net ip=10.0.0.2 virtio_mmio.device=512@0xfeb00e00:12 "
			  "virtio_mmio.device=4K@0xd0000000:5\tconsole=ttyS0 "
			  "virtio_mmio.device=1500@0xfebd0000:7:3";
	struct virtio_cmdline_dev d;

	(void)state;
	assert_int_equal(virtio_cmdline_next(&pos, &d), 1);
	assert_int_equal(d.base, 0xfeb00e00u);
	assert_int_equal(d.size, 512);
	assert_int_equal(d.irq, 12);
	assert_int_equal(d.len, strlen("virtio_mmio.device=512@0xfeb00e00:12"));
	assert_memory_equal(d.word, "virtio_mmio.device=512@", 23);
	assert_int_equal(virtio_cmdline_next(&pos, &d), 1);
	assert_int_equal(d.base, 0xd0000000u);
	assert_int_equal(d.size, 4096);
	assert_int_equal(d.irq, 5);
	assert_int_equal(virtio_cmdline_next(&pos, &d), 1);
	assert_int_equal(d.base, 0xfebd0000u);
	assert_int_equal(d.size, 1500);
	assert_int_equal(d.irq, 7);
	assert_int_equal(virtio_cmdline_next(&pos, &d), 0);
	assert_int_equal(virtio_cmdline_next(&pos, &d), 0);
}

static void test_numbers(void **state)
{
	struct virtio_cmdline_dev d;

	(void)state;
	assert_int_equal(one("virtio_mmio.device=3M@0x100000000:23", &d), 1);
	assert_int_equal(d.size, 3u << 20);
	assert_int_equal(d.base, 0x100000000ull);
	assert_int_equal(one("virtio_mmio.device=5g@0:1", &d), 1);
	assert_int_equal(d.size, 5ull << 30);
	assert_int_equal(one("virtio_mmio.device=0x200@010:5:-1", &d), 1);
	assert_int_equal(d.size, 0x200);
	assert_int_equal(d.base, 8); /* octal, as %lli */
	assert_int_equal(one("virtio_mmio.device=15E@0:5", &d), 1);
	assert_int_equal(d.size, 15ull << 60);
	assert_int_equal(one("virtio_mmio.device=18446744073709551615@0:5", &d), 1);
	assert_int_equal(d.size, UINT64_MAX);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
	    "virtio_mmio.device=",
	    "virtio_mmio.device=512",
	    "virtio_mmio.device=512@0xfeb00000",
	    "virtio_mmio.device=512@0xfeb00000:",
	    "virtio_mmio.device=512@0xfeb00000:0",  /* irq 0: Linux refuses it too */
	    "virtio_mmio.device=512@0xfeb00000:5:", /* an id without digits */
	    "virtio_mmio.device=512@0xfeb00000:5x",
	    "virtio_mmio.device=512@0x:5",
	    "virtio_mmio.device=@0xfeb00000:5",
	    "virtio_mmio.device=512@0xfeb00000:4294967296",
	    "virtio_mmio.device=18446744073709551616@0:5",
	    "virtio_mmio.device=16E@0:5",
	    "virtio_mmio.device=512Q@0:5",
	};
	struct virtio_cmdline_dev d;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *pos = bad[i];

		assert_int_equal(virtio_cmdline_next(&pos, &d), -1);
		assert_ptr_equal(d.word, bad[i]);
		assert_int_equal(d.len, strlen(bad[i]));
		assert_int_equal(virtio_cmdline_next(&pos, &d), 0);
	}
}

static void test_other_words(void **state)
{
	struct virtio_cmdline_dev d;
	const char *pos;

	(void)state;
	pos = "";
	assert_int_equal(virtio_cmdline_next(&pos, &d), 0);
	pos = "   ";
	assert_int_equal(virtio_cmdline_next(&pos, &d), 0);
	pos = "virtio_mmio.devic=512@0:5 xvirtio_mmio.device=512@0:5 virtio_mmio.device";
	assert_int_equal(virtio_cmdline_next(&pos, &d), 0);
	/* A malformed word does not hide the next one. */
	pos = "virtio_mmio.device=x virtio_mmio.device=512@0xfeb00000:5 ";
	assert_int_equal(virtio_cmdline_next(&pos, &d), -1);
	assert_int_equal(virtio_cmdline_next(&pos, &d), 1);
	assert_int_equal(d.base, 0xfeb00000u);
	assert_int_equal(virtio_cmdline_next(&pos, &d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_qemu_and_vmm),
	    cmocka_unit_test(test_numbers),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_other_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
