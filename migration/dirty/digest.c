/* SPDX-License-Identifier: Apache-2.0 */
#include "digest.h"

#include "guest_mem.h"

uint64_t memory_digest(const struct guest_mem *mem)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	if (!VMM_TEST_HOOKS)
		return 0; /* not in this build: no digest */
	for (uint32_t i = 0; i < mem->nslots; i++) {
		const struct memslot *s = &mem->slots[i];
		const uint64_t *w = (const uint64_t *)s->hva;

		h ^= s->gpa;
		for (uint64_t j = 0; j < s->size / 8; j++)
			h = (h ^ w[j]) * 0x100000001b3ull + (j | 1);
	}
	return h | 1; /* never 0: 0 means "no digest" on the wire */
}
