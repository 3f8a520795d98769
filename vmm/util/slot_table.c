/* SPDX-License-Identifier: Apache-2.0 */
/* slot_table.c - the shape of a described guest memory slot table (slot_table.h). */
#include "slot_table.h"

#include "le.h"

uint32_t slot_table_shape(const uint8_t *table, uint32_t n, size_t stride, uint64_t page_size,
			  uint64_t max_size, uint64_t *total)
{
	uint64_t end = 0;

	*total = 0;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *e = table + (size_t)i * stride;
		uint64_t gpa = le_get64(e), size = le_get64(e + 8);

		if (!size || size % page_size || gpa % page_size || gpa + size < gpa ||
		    size > max_size || (i > 0 && gpa < end))
			return i;
		end = gpa + size;
		*total += size;
	}
	return n;
}
