// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - per-vCPU entry: parameters, workload dispatch, VM exit.
 *
 * All vCPUs start at once. vCPU 0 alone parses the device tree (the guest
 * is emulated, so parsing it n times would only cost time) and prints the
 * workload's first line; then it releases the others, which keeps the
 * console output in a deterministic order.
 */
#include "fw.h"

static int params_ready;

/*
 * The ABI version in guest RAM as initialised data: lets a memory dump be
 * identified, and gives the RW PT_LOAD file bytes before its .bss.
 */
volatile uint32_t fw_abi_version = VMM_ABI_VERSION;

__attribute__((noreturn)) void fw_main(const void *fdt, uint64_t index);

void fw_exit(uint32_t status)
{
	outl(VMM_EXIT_PORT, status);
	halt_forever(); /* the host stops the VM on the OUT; just in case */
}

void fw_release_secondaries(void)
{
	__atomic_store_n(&params_ready, 1, __ATOMIC_RELEASE);
}

static void wait_for_params(void)
{
	while (!__atomic_load_n(&params_ready, __ATOMIC_ACQUIRE))
		cpu_relax();
}

void fw_main(const void *fdt, uint64_t index)
{
	fw_exceptions_init((uint32_t)index);
	if (index == 0) {
		if (fw_parse_params(fdt))
			fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
	} else {
		wait_for_params();
		if (index >= fw_params.nr_vcpus) {
			fw_log("vCPU %lu started but the device tree lists %u vCPUs", index,
			       fw_params.nr_vcpus);
			fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
		}
	}

	fw_run((uint32_t)index);
}

/* Also the end of pvh.c's boot, where the parameters come from PVH instead. */
void fw_run(uint32_t index)
{
	const char *w = fw_params.workload;

	if (!fw_strcmp(w, "hello"))
		workload_hello(index);
	if (!fw_strcmp(w, "idle"))
		workload_idle(index);
	if (!fw_strcmp(w, "dirty"))
		workload_dirty(index);
	if (!fw_strcmp(w, "echo"))
		workload_echo(index);
	if (!fw_strcmp(w, "fault"))
		workload_fault(index);
	if (!fw_strcmp(w, "blk"))
		workload_blk(index);
	if (!fw_strcmp(w, "net"))
		workload_net(index);
	fw_log("unknown workload \"%s\" (expected hello, idle, dirty, echo, fault, blk or net)", w);
	fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
}
