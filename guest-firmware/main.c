// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - per-vCPU entry of the device tree boot: the parameters, then the
 * workload (run.c).
 *
 * All vCPUs start at once. vCPU 0 alone parses the device tree (the guest
 * is emulated, so parsing it n times would only cost time) and prints the
 * workload's first line; then it releases the others, which keeps the
 * console output in a deterministic order.
 *
 * The top of the firmware's C (start.S jumps here): it calls the files
 * below it and none of them calls back. What the lower files need from the
 * boot (fw_exit, the secondaries' gate) is lib.c's, the dispatch to the
 * workloads run.c's (shared with pvh.c's boot).
 */
#include "fw.h"

/*
 * The ABI version in guest RAM as initialised data: lets a memory dump be
 * identified, and gives the RW PT_LOAD file bytes before its .bss.
 */
volatile uint32_t fw_abi_version = VMM_ABI_VERSION;

__attribute__((noreturn)) void fw_main(const void *fdt, uint64_t index);

void fw_main(const void *fdt, uint64_t index)
{
	fw_exceptions_init((uint32_t)index);
	if (index == 0) {
		if (fw_parse_params(fdt))
			fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
	} else {
		fw_wait_released();
		if (index >= fw_params.nr_vcpus) {
			fw_log("vCPU %lu started but the device tree lists %u vCPUs", index,
			       fw_params.nr_vcpus);
			fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
		}
	}

	fw_run((uint32_t)index);
}
