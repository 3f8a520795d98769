/* SPDX-License-Identifier: Apache-2.0 */
/*
 * le.h - little-endian loads and stores of integers at any alignment,
 * for everything vmm lays out byte by byte: the migration wire's records,
 * the guest's ACPI and MP tables, migrated device state. Byte by byte, so
 * they are right on any host; compilers turn them into one move on
 * little-endian ones.
 */
#ifndef VMM_LE_H
#define VMM_LE_H

#include <stdint.h>

static inline void le_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void le_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void le_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t le_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t le_get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline uint64_t le_get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#endif /* VMM_LE_H */
