/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fw_table.h - what the firmware-table builders (acpi_build.c, mptable.c)
 * share: little-endian stores into a byte buffer, and the 8-bit checksum
 * both ACPI and the MP specification use (all bytes of a table sum to 0).
 * Pure; any thread.
 */
#ifndef VMM_FW_TABLE_H
#define VMM_FW_TABLE_H

#include <stddef.h>
#include <stdint.h>

static inline void fw_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void fw_put32(uint8_t *p, uint32_t v)
{
	fw_put16(p, (uint16_t)v);
	fw_put16(p + 2, (uint16_t)(v >> 16));
}

static inline void fw_put64(uint8_t *p, uint64_t v)
{
	fw_put32(p, (uint32_t)v);
	fw_put32(p + 4, (uint32_t)(v >> 32));
}

/* The byte that makes len bytes from p sum to 0 (its own place must hold 0). */
static inline uint8_t fw_checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + p[i]);
	return (uint8_t)-sum;
}

#endif /* VMM_FW_TABLE_H */
