/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slot_table.h - the shape of a guest memory slot table as the untrusted
 * bytes of a peer or a file describe it: a migration's VM_DESC
 * (migration/wire/codec_var.c) and a snapshot's LAYOUT section
 * (migration/snapshot/snap_sections.c). Both decoders check it here, once;
 * whether the table is also the receiving VM's own layout is the
 * machine's question (guest_mem_layout_check()), asked later.
 *
 * Here, below both codecs, because the wire and the snapshot format are
 * siblings that call nothing in each other and share only this library:
 * the format's constants (page size, largest slot) come from their caller.
 * Pure, any thread.
 */
#ifndef VMM_SLOT_TABLE_H
#define VMM_SLOT_TABLE_H

#include <stddef.h>
#include <stdint.h>

/*
 * A table of n entries, each `stride` (>= 16) bytes that begin with the
 * slot's gpa and size, little-endian u64s in that order. The shape every
 * vmm builds: each slot non-empty, a multiple of page_size long, page
 * aligned, at most max_size, not wrapping past 2^64, and starting at or
 * above the end of the one before (ascending and disjoint).
 *
 * Returns n when the whole table has that shape, with *total the sum of
 * its sizes; else the index of the first slot that does not (*total then
 * is the sum of the slots before it). The caller names the slot in its
 * own message.
 */
uint32_t slot_table_shape(const uint8_t *table, uint32_t n, size_t stride, uint64_t page_size,
			  uint64_t max_size, uint64_t *total);

#endif /* VMM_SLOT_TABLE_H */
