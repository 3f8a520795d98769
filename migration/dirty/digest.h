/* SPDX-License-Identifier: Apache-2.0 */
/*
 * digest.h - a test-only 64-bit digest of all guest RAM, so a test can
 * prove the target ends up with the memory the source had at switchover.
 * Enabled on the source by VMM_TEST_DIGEST=1; it reads every page (also
 * untouched ones), which is why it is never on by default.
 */
#ifndef VMM_MIGRATION_DIGEST_H
#define VMM_MIGRATION_DIGEST_H

#include <stdint.h>

struct guest_mem;

uint64_t memory_digest(const struct guest_mem *mem);

#endif
