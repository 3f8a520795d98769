/* SPDX-License-Identifier: Apache-2.0 */
/* snap_id.c - snapshot ids: the codec's leaf, called by every other file of it. */
#include "snap_codec.h"

bool snap_id_is_zero(const struct snap_id *id)
{
	for (int i = 0; i < 16; i++)
		if (id->b[i])
			return false;
	return true;
}

void snap_id_hex(const struct snap_id *id, char out[33])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[id->b[i] >> 4];
		out[2 * i + 1] = hex[id->b[i] & 15];
	}
	out[32] = '\0';
}
