/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shard.h - the range of the memslot shard, a constant of the wire.
 *
 * The shard rule (protocol.h): page p of slot s travels only on data
 * connection (s + p / shard_pages) % connections. VM_DESC carries
 * shard_pages, and a target refuses one outside this range (a power of
 * two, in pages). The source's --clear-chunk is the same number, so the
 * engine's parameter table (migration_params.h) takes its range from here:
 * the wire is below the engine and must not include the engine's face.
 *
 * Only preprocessor constants: included by protocol.h and, by a relative
 * path, by migration/api/migration_params.h (whose users see no wire
 * header otherwise).
 */
#ifndef VMM_MIGRATION_SHARD_H
#define VMM_MIGRATION_SHARD_H

#define MIG_SHARD_PAGES_MIN 64u
#define MIG_SHARD_PAGES_MAX 65536u

#endif /* VMM_MIGRATION_SHARD_H */
