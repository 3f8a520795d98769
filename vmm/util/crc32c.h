/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of the snapshot format's
 * header, section table and sections (docs/snapshot-format.md). The
 * iSCSI/ext4/Btrfs CRC: reflected polynomial 0x82F63B78, initial value and
 * final XOR 0xFFFFFFFF, so crc32c(0, "123456789", 9) == 0xE3069283.
 *
 * The CPU's crc32 instruction where it has one (several GB/s: a restore
 * checks every byte of a state file it reads through), else a table, one
 * byte per step; guest pages are not checksummed.
 */
#ifndef VMM_UTIL_CRC32C_H
#define VMM_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/*
 * The CRC of len bytes at p, continued from crc: pass 0 to start, and a
 * previous result to go on (crc32c(crc32c(0, a, n), b, m) is the CRC of a
 * then b). p may be NULL when len is 0.
 */
uint32_t crc32c(uint32_t crc, const void *p, size_t len);

#endif /* VMM_UTIL_CRC32C_H */
