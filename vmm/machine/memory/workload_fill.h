/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workload_fill.h - seeds the dirty workload's working set at boot.
 *
 * At boot setup (main thread, before any vCPU thread exists, so no lock),
 * only for a VM that boots: an incoming migration skips it and receives the
 * source's RAM instead.
 */
#ifndef VMM_WORKLOAD_FILL_H
#define VMM_WORKLOAD_FILL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Writes vmm_fill_word(gpa) into every 8-byte word of `buf`, which holds
 * guest RAM starting at `gpa` (8-byte aligned); `len` is a multiple of 8.
 */
void workload_fill_random(uint64_t *buf, uint64_t gpa, size_t len);

#endif /* VMM_WORKLOAD_FILL_H */
