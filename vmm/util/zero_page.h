/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zero_page.h - whether a 4 KiB page holds only zeros: the test that lets
 * a migration send a marker and a snapshot leave a hole instead of the
 * data. Four words an iteration: the loop is memory bound either way.
 */
#ifndef VMM_UTIL_ZERO_PAGE_H
#define VMM_UTIL_ZERO_PAGE_H

#include <stdbool.h>
#include <stdint.h>

static inline bool page_is_zero(const void *page)
{
	const uint64_t *w = (const uint64_t *)page;

	for (unsigned i = 0; i < 4096 / 8; i += 4)
		if (w[i] | w[i + 1] | w[i + 2] | w[i + 3])
			return false;
	return true;
}

#endif /* VMM_UTIL_ZERO_PAGE_H */
