// SPDX-License-Identifier: Apache-2.0
/*
 * workload_hello.c - the boot smoke test, and the idle workload.
 *
 * hello proves every vCPU ran: each secondary checks in on a shared
 * counter, and vCPU 0 only prints "done" once all of them did (or gives up
 * after a bounded wait and fails).
 */
#include "fw.h"

#define HELLO_WAIT_MS 2000u

static uint32_t checked_in;

void workload_hello(uint32_t index)
{
	const struct fw_params *p = &fw_params;
	uint64_t start, limit;
	uint32_t want = p->nr_vcpus - 1, got;

	if (index) {
		fw_log("vCPU %u online", index);
		__atomic_fetch_add(&checked_in, 1, __ATOMIC_RELEASE);
		halt_forever();
	}

	fw_log("hello from vCPU 0: %u vCPUs, %lu MiB RAM in %u memory regions", p->nr_vcpus,
	       p->mem_total >> 20, p->nr_mem_regions);
	fw_release_secondaries();

	start = rdtsc();
	limit = ms_to_tsc(HELLO_WAIT_MS);
	while ((got = __atomic_load_n(&checked_in, __ATOMIC_ACQUIRE)) < want) {
		if (rdtsc() - start > limit) {
			fw_log("only %u of %u secondary vCPUs checked in within %u ms", got, want,
			       HELLO_WAIT_MS);
			fw_exit(FW_EXIT_VCPU_MISSING);
		}
		cpu_relax();
	}
	fw_log("done");
	fw_exit(VMM_GUEST_EXIT_OK);
}

void workload_idle(uint32_t index)
{
	if (index == 0) {
		fw_log("idle");
		fw_release_secondaries();
	}
	halt_forever();
}
