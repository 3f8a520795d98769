/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_swap.h - whether this host swaps. Without swap, a page of anonymous
 * or memfd guest RAM that is not resident was never written, so a reader
 * of guest RAM (a migration's first pass, a snapshot) may skip it.
 */
#ifndef VMM_UTIL_HOST_SWAP_H
#define VMM_UTIL_HOST_SWAP_H

#include <stdbool.h>

/* True when /proc/swaps lists a device, or cannot be read (assume the worst). */
bool host_has_swap(void);

#endif /* VMM_UTIL_HOST_SWAP_H */
