/* SPDX-License-Identifier: Apache-2.0 */
/*
 * le.h - little-endian loads and stores of the wire's integers, at any
 * alignment. Byte by byte, so they are right on any host; compilers turn
 * them into one move on little-endian ones.
 */
#ifndef VMM_MIGRATION_LE_H
#define VMM_MIGRATION_LE_H

#include <stdint.h>

static inline void mig_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void mig_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void mig_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t mig_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t mig_get_le32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline uint64_t mig_get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#endif /* VMM_MIGRATION_LE_H */
