/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fw_table.h - what the firmware-table builders (acpi_build.c, mptable.c)
 * share beyond le.h's little-endian stores: the 8-bit checksum both ACPI
 * and the MP specification use (all bytes of a table sum to 0). Pure; any
 * thread.
 */
#ifndef VMM_FW_TABLE_H
#define VMM_FW_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "le.h"

/* The byte that makes len bytes from p sum to 0 (its own place must hold 0). */
static inline uint8_t fw_checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + p[i]);
	return (uint8_t)-sum;
}

#endif /* VMM_FW_TABLE_H */
