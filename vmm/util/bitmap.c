/* SPDX-License-Identifier: Apache-2.0 */
#include "bitmap.h"

#include <stdlib.h>
#include <string.h>

uint64_t bitmap_count(const uint64_t *map, uint64_t words)
{
	uint64_t n = 0;

	for (uint64_t w = 0; w < words; w++)
		n += bits_count(map[w]);
	return n;
}

bool bitmap_tail_clean(const uint64_t *map, uint64_t nbits)
{
	return !(nbits % 64) || !(map[nbits / 64] >> (nbits % 64));
}

void bitmap_fill(uint64_t *map, uint64_t nbits)
{
	uint64_t words = bitmap_words(nbits);

	if (!words)
		return;
	memset(map, 0xff, words * 8);
	if (nbits % 64)
		map[words - 1] = (1ull << (nbits % 64)) - 1;
}

uint64_t **bitmap_array_new(uint32_t n, const uint64_t *words)
{
	uint64_t **maps = calloc(n ? n : 1, sizeof(*maps));

	if (!maps)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		maps[i] = calloc(words[i] ? words[i] : 1, 8);
		if (!maps[i]) {
			bitmap_array_free(maps, i);
			return NULL;
		}
	}
	return maps;
}

void bitmap_array_free(uint64_t **maps, uint32_t n)
{
	for (uint32_t i = 0; maps && i < n; i++)
		free(maps[i]);
	free(maps);
}
