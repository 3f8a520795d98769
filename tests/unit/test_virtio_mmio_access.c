/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_virtio_mmio_access.c - the virtio-mmio transport's edges: config
 * space reads of each size, in and out of range, and the device's config
 * changes; a QueueSel past the queues; odd-sized, unaligned, reserved and
 * write-only accesses; the kernel command line fragment. The registers'
 * rules are test_virtio_mmio.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "virtio_mmio_guest.h"

static uint32_t cfg(struct g *g, uint64_t off, uint32_t size, bool *ok)
{
	uint32_t v = 0xdeadbeef;

	*ok = virtio_mmio_read(&g->dev, VIRTIO_MMIO_CONFIG + off, size, &v);
	return v;
}

static void test_config_space(void **state)
{
	struct g *g = g_new();
	bool ok;

	(void)state;
	assert_int_equal(cfg(g, 0, 1, &ok), 0x52);
	assert_true(ok);
	assert_int_equal(cfg(g, 5, 1, &ok), 0x56);
	assert_int_equal(cfg(g, 6, 2, &ok), 0x0001);
	assert_true(ok);
	assert_int_equal(cfg(g, 8, 4, &ok), 0xddccbbaa);
	assert_true(ok);
	assert_int_equal(cfg(g, 3, 2, &ok), 0x3412); /* unaligned inside: served */
	assert_true(ok);
	assert_int_equal(cfg(g, 11, 1, &ok), 0xdd);
	/* Past the device's bytes, partly or wholly; sizes other than 1, 2, 4. */
	assert_int_equal(cfg(g, 12, 1, &ok), 0);
	assert_false(ok);
	assert_int_equal(cfg(g, 10, 4, &ok), 0);
	assert_false(ok);
	assert_int_equal(cfg(g, 11, 2, &ok), 0);
	assert_false(ok);
	assert_int_equal(cfg(g, 0xf00, 4, &ok), 0);
	assert_false(ok);
	assert_int_equal(cfg(g, UINT64_MAX - VIRTIO_MMIO_CONFIG, 1, &ok), 0);
	assert_false(ok);
	assert_int_equal(cfg(g, 0, 3, &ok), 0);
	assert_false(ok);
	assert_int_equal(cfg(g, 0, 8, &ok), 0);
	assert_false(ok);
	assert_int_equal(cfg(g, 0, 0, &ok), 0);
	assert_false(ok);
	/* Read-only. */
	for (uint32_t size = 1; size <= 4; size *= 2)
		assert_int_equal(
		    virtio_mmio_write(&g->dev, &g->mem, VIRTIO_MMIO_CONFIG, size, 0).ev,
		    VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(cfg(g, 0, 1, &ok), 0x52);

	/* The device changes a field: generation, and a config interrupt after DRIVER_OK. */
	assert_int_equal(virtio_mmio_set_config(&g->dev, 6, "\x00\x00", 2), 0);
	assert_int_equal(rd(g, VIRTIO_MMIO_CONFIG_GENERATION), 1);
	assert_int_equal(cfg(g, 6, 2, &ok), 0);
	assert_int_equal(virtio_mmio_set_config(&g->dev, 11, "\x01\x02", 2), -EINVAL);
	assert_int_equal(virtio_mmio_set_config(&g->dev, 13, "", 0), -EINVAL);
	assert_int_equal(rd(g, VIRTIO_MMIO_CONFIG_GENERATION), 1);
	g_init_all(g, G_VERSION_1);
	assert_int_equal(virtio_mmio_set_config(&g->dev, 6, "\x01\x00", 2), 1);
	assert_int_equal(rd(g, VIRTIO_MMIO_CONFIG_GENERATION), 2);
	assert_int_equal(rd(g, VIRTIO_MMIO_INTERRUPT_STATUS), VIRTIO_MMIO_INT_CONFIG);
	g_free(g);
}

static void test_queue_sel_out_of_range(void **state)
{
	static const uint32_t sels[] = {2, 8, 9, 0x10000, 0xffffffff};
	struct g *g = g_new();

	(void)state;
	g_negotiate(g, G_VERSION_1);
	for (size_t i = 0; i < sizeof(sels) / sizeof(sels[0]); i++) {
		assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_SEL, sels[i]), VIRTIO_MMIO_EV_NONE);
		assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_SEL), sels[i]);
		assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_NUM_MAX), 0);
		assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_NUM), 0);
		assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_READY), 0);
		assert_int_equal(rd(g, VIRTIO_MMIO_QUEUE_DESC_LOW), 0);
		assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NUM, 8), VIRTIO_MMIO_EV_IGNORED);
		assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_DESC_LOW, 0x1000), VIRTIO_MMIO_EV_IGNORED);
		assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_DEVICE_LOW, 0), VIRTIO_MMIO_EV_IGNORED);
		assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_READY, 1), VIRTIO_MMIO_EV_IGNORED);
		assert_int_equal(wr(g, VIRTIO_MMIO_QUEUE_NOTIFY, sels[i]), VIRTIO_MMIO_EV_IGNORED);
	}
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET, 0);
	/* The real queues saw none of it. */
	for (uint32_t i = 0; i < 2; i++) {
		assert_int_equal(g->dev.queues[i].size, 0);
		assert_int_equal(g->dev.queues[i].desc_gpa, 0);
	}
	g_free(g);
}

static void test_odd_accesses(void **state)
{
	static const uint64_t regs[] = {VIRTIO_MMIO_MAGIC_VALUE, VIRTIO_MMIO_STATUS,
					VIRTIO_MMIO_QUEUE_NUM_MAX, VIRTIO_MMIO_CONFIG_GENERATION};
	struct g *g = g_new();
	uint32_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		for (uint32_t size = 0; size <= 8; size++) {
			if (size == 4)
				continue;
			v = 0xdeadbeef;
			assert_false(virtio_mmio_read(&g->dev, regs[i], size, &v));
			assert_int_equal(v, 0);
		}
		for (uint64_t skew = 1; skew < 4; skew++) {
			v = 0xdeadbeef;
			assert_false(virtio_mmio_read(&g->dev, regs[i] + skew, 4, &v));
			assert_int_equal(v, 0);
		}
	}
	/* A 1-byte status write is not a reset, nor a 2-byte one an ACKNOWLEDGE. */
	g_add_status(g, VIRTIO_STATUS_ACKNOWLEDGE);
	assert_int_equal(virtio_mmio_write(&g->dev, &g->mem, VIRTIO_MMIO_STATUS, 1, 0).ev,
			 VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(virtio_mmio_write(&g->dev, &g->mem, VIRTIO_MMIO_STATUS + 1, 4, 0).ev,
			 VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(virtio_mmio_write(&g->dev, &g->mem, VIRTIO_MMIO_STATUS, 8, 0).ev,
			 VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), VIRTIO_STATUS_ACKNOWLEDGE);
	/* Reserved offsets and write-only registers read 0; writes change nothing. */
	for (uint64_t off = 0; off < VIRTIO_MMIO_CONFIG; off += 4) {
		switch (off) {
		case 0x018:
		case 0x01c:
		case 0x028:
		case 0x02c:
		case 0x03c:
		case 0x040:
		case 0x048:
		case 0x04c:
		case 0x054:
		case 0x05c:
		case 0x068:
		case 0x0c0:
		case 0x0f8:
		case VIRTIO_MMIO_QUEUE_NOTIFY:
			assert_false(virtio_mmio_read(&g->dev, off, 4, &v));
			assert_int_equal(v, 0);
			if (off != VIRTIO_MMIO_QUEUE_NOTIFY)
				assert_int_equal(wr(g, off, 0xffffffff), VIRTIO_MMIO_EV_IGNORED);
			break;
		default:
			break;
		}
	}
	assert_int_equal(wr(g, VIRTIO_MMIO_SHM_SEL, 0), VIRTIO_MMIO_EV_IGNORED);
	assert_false(virtio_mmio_read(&g->dev, UINT64_MAX - 3, 4, &v));
	assert_int_equal(virtio_mmio_write(&g->dev, &g->mem, UINT64_MAX - 3, 4, 0).ev,
			 VIRTIO_MMIO_EV_IGNORED);
	assert_int_equal(rd(g, VIRTIO_MMIO_STATUS), VIRTIO_STATUS_ACKNOWLEDGE);
	g_free(g);
}

static void test_cmdline(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(virtio_mmio_cmdline(buf, sizeof(buf), 0x1000, 0xd0000000, 5), 34);
	assert_string_equal(buf, "virtio_mmio.device=4K@0xd0000000:5");
	virtio_mmio_cmdline(buf, sizeof(buf), 0x200, 0xd0001000, 12);
	assert_string_equal(buf, "virtio_mmio.device=512@0xd0001000:12");
	virtio_mmio_cmdline(buf, sizeof(buf), 0x1800, 0xd0000000, 5);
	assert_string_equal(buf, "virtio_mmio.device=6K@0xd0000000:5");
	virtio_mmio_cmdline(buf, sizeof(buf), 3ull << 20, 0x100000000ull, 23);
	assert_string_equal(buf, "virtio_mmio.device=3M@0x100000000:23");
	virtio_mmio_cmdline(buf, sizeof(buf), 5ull << 30, 0, 1);
	assert_string_equal(buf, "virtio_mmio.device=5G@0x0:1");
	virtio_mmio_cmdline(buf, sizeof(buf), 1500, 0xfebd0000, 7);
	assert_string_equal(buf, "virtio_mmio.device=1500@0xfebd0000:7");
	/* Exactly the room for the string and its NUL, then one byte less. */
	assert_int_equal(virtio_mmio_cmdline(buf, 35, 0x1000, 0xd0000000, 5), 34);
	assert_int_equal(virtio_mmio_cmdline(buf, 34, 0x1000, 0xd0000000, 5), -ENOSPC);
	assert_int_equal(virtio_mmio_cmdline(NULL, 0, 0x1000, 0xd0000000, 5), -ENOSPC);
	assert_int_equal(virtio_mmio_cmdline(buf, sizeof(buf), 0, 0xd0000000, 5), -EINVAL);
	assert_int_equal(virtio_mmio_cmdline(buf, sizeof(buf), 0x1000, 0xd0000000, 0), -EINVAL);
	assert_int_equal(virtio_mmio_cmdline(buf, sizeof(buf), 0x2000, UINT64_MAX - 0xfff, 5),
			 -EINVAL);
	assert_int_equal(virtio_mmio_cmdline(buf, sizeof(buf), 0x1000, UINT64_MAX - 0xfff, 5), 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_space),
	    cmocka_unit_test(test_queue_sel_out_of_range),
	    cmocka_unit_test(test_odd_accesses),
	    cmocka_unit_test(test_cmdline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
