/* SPDX-License-Identifier: Apache-2.0 */
/* The device tree handed to the guest: its nodes and properties, read back with libfdt. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <libfdt.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fdt_build.h"
#include "guest_mem.h"
#include "vmm_abi.h"

struct fixture {
	struct vm_config cfg;
	struct guest_mem mem;
	void *fdt;
};

static int setup_4g(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[CONFIG_ERR_MAX];

	assert_non_null(f);
	config_defaults(&f->cfg);
	assert_int_equal(config_set(&f->cfg, "vm.memory=4G", err, sizeof(err)), 0);
	assert_int_equal(config_set(&f->cfg, "vm.vcpus=3", err, sizeof(err)), 0);
	assert_int_equal(config_set(&f->cfg, "workload.kind=dirty", err, sizeof(err)), 0);
	assert_int_equal(config_set(&f->cfg, "workload.working_set=32M", err, sizeof(err)), 0);
	assert_int_equal(config_set(&f->cfg, "workload.dirty_rate=1000", err, sizeof(err)), 0);
	assert_int_equal(config_set(&f->cfg, "workload.passes=7", err, sizeof(err)), 0);
	assert_int_equal(config_set(&f->cfg, "firmware.cmdline=console=ttyS0 quiet", err,
				    sizeof(err)),
			 0);
	assert_int_equal(guest_mem_init(&f->mem, f->cfg.memory, f->cfg.memslot_size,
					MEM_BACKEND_ANON),
			 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	guest_mem_destroy(&f->mem);
	free(f->fdt);
	free(f);
	return 0;
}

static void *build(struct fixture *f)
{
	struct fdt_params p = {.cfg = &f->cfg, .mem = &f->mem, .tsc_khz = 2500000,
			       .free_start = 0x400000};
	size_t size = fdt_build_size(&p);

	f->fdt = calloc(1, size);
	assert_non_null(f->fdt);
	assert_int_equal(fdt_build(&p, f->fdt, size), 0);
	assert_int_equal(fdt_check_header(f->fdt), 0);
	return f->fdt;
}

/* Properties are only 4-byte aligned: read 64-bit cells with memcpy. */
static uint64_t be64_at(const void *p)
{
	fdt64_t v;

	memcpy(&v, p, sizeof(v));
	return fdt64_to_cpu(v);
}

static uint64_t prop_u64(const void *fdt, int node, const char *name)
{
	int len;
	const void *v = fdt_getprop(fdt, node, name, &len);

	assert_non_null(v);
	assert_int_equal(len, 8);
	return be64_at(v);
}

static void test_memory_nodes(void **state)
{
	struct fixture *f = *state;
	void *fdt = build(f);
	uint64_t total = 0;
	int n = 0, node;

	/*
	 * One node per contiguous RAM range, not per memslot (8 of them here):
	 * [0, 3 GiB) and [4 GiB, 5 GiB), named by gpa, reg = <gpa size>.
	 */
	static const uint64_t want[2][2] = {{0, 3ull << 30}, {4ull << 30, 1ull << 30}};

	fdt_for_each_subnode(node, fdt, 0) {
		const char *name = fdt_get_name(fdt, node, NULL);
		const uint8_t *reg;
		int len;

		if (strncmp(name, "memory@", 7))
			continue;
		assert_true(n < 2);
		reg = fdt_getprop(fdt, node, "reg", &len);
		assert_non_null(reg);
		assert_int_equal(len, 16);
		assert_int_equal(be64_at(reg), want[n][0]);
		assert_int_equal(be64_at(reg + 8), want[n][1]);
		assert_string_equal(fdt_getprop(fdt, node, "device_type", NULL), "memory");
		total += be64_at(reg + 8);
		n++;
	}
	assert_int_equal(f->mem.nslots, 8);
	assert_int_equal(n, 2);
	assert_int_equal(total, 4ull << 30);
	/* The part above 3 GiB sits above 4 GiB. */
	assert_true(fdt_path_offset(fdt, "/memory@100000000") >= 0);
	assert_true(fdt_path_offset(fdt, "/memory@c0000000") < 0);
}

static void test_cpus_and_serial(void **state)
{
	struct fixture *f = *state;
	void *fdt = build(f);
	int cpus = fdt_path_offset(fdt, "/cpus"), n = 0, node;
	const fdt32_t *khz;

	assert_true(cpus >= 0);
	khz = fdt_getprop(fdt, cpus, "vmm,tsc-khz", NULL);
	assert_non_null(khz);
	assert_int_equal(fdt32_to_cpu(*khz), 2500000);
	fdt_for_each_subnode(node, fdt, cpus) {
		const fdt32_t *reg = fdt_getprop(fdt, node, "reg", NULL);

		assert_non_null(reg);
		assert_int_equal(fdt32_to_cpu(*reg), n);
		n++;
	}
	assert_int_equal(n, 3);
	node = fdt_path_offset(fdt, "/serial@3f8");
	assert_true(node >= 0);
	assert_string_equal(fdt_getprop(fdt, node, "compatible", NULL), "ns16550a");
}

static void test_chosen(void **state)
{
	struct fixture *f = *state;
	void *fdt = build(f);
	int c = fdt_path_offset(fdt, "/chosen");
	const fdt32_t *abi;

	assert_true(c >= 0);
	abi = fdt_getprop(fdt, c, "vmm,abi-version", NULL);
	assert_non_null(abi);
	assert_int_equal(fdt32_to_cpu(*abi), VMM_ABI_VERSION);
	assert_string_equal(fdt_getprop(fdt, c, "vmm,workload", NULL), "dirty");
	assert_string_equal(fdt_getprop(fdt, c, "bootargs", NULL), "console=ttyS0 quiet");
	assert_string_equal(fdt_getprop(fdt, c, "stdout-path", NULL), "/serial@3f8");
	assert_int_equal(prop_u64(fdt, c, "vmm,working-set"), 32u << 20);
	assert_int_equal(prop_u64(fdt, c, "vmm,dirty-rate"), 1000);
	assert_int_equal(prop_u64(fdt, c, "vmm,passes"), 7);
	assert_int_equal(prop_u64(fdt, c, "vmm,heartbeat-ms"), 1000);
	assert_int_equal(prop_u64(fdt, c, "vmm,free-start"), 0x400000);
	/* the defaults */
	assert_string_equal(fdt_getprop(fdt, c, "vmm,fill", NULL), "zero");
	assert_string_equal(fdt_getprop(fdt, c, "vmm,order", NULL), "seq");
	assert_int_equal(fdt32_to_cpu(*(const fdt32_t *)fdt_getprop(fdt, c, "vmm,latency", NULL)),
			 0);
}

static void test_chosen_workload_shape(void **state)
{
	struct fixture *f = *state;
	char err[256];
	void *fdt;
	int c;

	assert_int_equal(config_set(&f->cfg, "workload.fill=random", err, sizeof(err)), 0);
	assert_int_equal(config_set(&f->cfg, "workload.order=random", err, sizeof(err)), 0);
	assert_int_equal(config_set(&f->cfg, "workload.latency=true", err, sizeof(err)), 0);
	fdt = build(f);
	c = fdt_path_offset(fdt, "/chosen");
	assert_true(c >= 0);
	assert_string_equal(fdt_getprop(fdt, c, "vmm,fill", NULL), "random");
	assert_string_equal(fdt_getprop(fdt, c, "vmm,order", NULL), "random");
	assert_int_equal(fdt32_to_cpu(*(const fdt32_t *)fdt_getprop(fdt, c, "vmm,latency", NULL)),
			 1);
}

static void test_too_small_buffer(void **state)
{
	struct fixture *f = *state;
	struct fdt_params p = {.cfg = &f->cfg, .mem = &f->mem, .tsc_khz = 1, .free_start = 0};
	char buf[256];

	assert_int_equal(fdt_build(&p, buf, sizeof(buf)), -ENOSPC);
}

static void test_many_slots_fit(void **state)
{
	struct fixture *f = *state;
	char err[CONFIG_ERR_MAX];

	/* 64 GiB in 2 MiB slots: 32768 would exceed KVM; 16 GiB in 2 MiB is 8192 nodes. */
	guest_mem_destroy(&f->mem);
	assert_int_equal(config_set(&f->cfg, "vm.memory=16G", err, sizeof(err)), 0);
	assert_int_equal(guest_mem_init(&f->mem, 16ull << 30, 2u << 20, MEM_BACKEND_ANON), 0);
	assert_int_equal(f->mem.nslots, 8192);
	build(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_memory_nodes, setup_4g, teardown),
		cmocka_unit_test_setup_teardown(test_cpus_and_serial, setup_4g, teardown),
		cmocka_unit_test_setup_teardown(test_chosen, setup_4g, teardown),
		cmocka_unit_test_setup_teardown(test_chosen_workload_shape, setup_4g, teardown),
		cmocka_unit_test_setup_teardown(test_too_small_buffer, setup_4g, teardown),
		cmocka_unit_test_setup_teardown(test_many_slots_fit, setup_4g, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
