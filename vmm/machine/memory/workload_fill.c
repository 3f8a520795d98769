// SPDX-License-Identifier: Apache-2.0
/*
 * workload_fill.c - `[workload] fill = random`: the working set holds
 * deterministic pseudo-random words before the guest runs, so its pages do
 * not compress and a migration moves real bytes. The words come from
 * vmm_fill_word() (vmm_abi.h), which the firmware recomputes to check pass 1.
 *
 * With `fill = zero` (the default) nothing here runs and the working set
 * stays untouched anonymous memory, so the default boot costs nothing.
 */
#include "workload_fill.h"

#include "vmm_abi.h"

void workload_fill_random(uint64_t *buf, uint64_t gpa, size_t len)
{
	size_t n = len / 8;

	/* Each word is independent of the others: the compiler may unroll/vectorise. */
	for (size_t i = 0; i < n; i++)
		buf[i] = vmm_fill_word(gpa + i * 8);
}
