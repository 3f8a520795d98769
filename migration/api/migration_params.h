/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migration_params.h - every tunable of an outgoing migration, once.
 *
 * MIGRATION_PARAMS(X) is the one list: the struct's fields, the defaults and
 * range checks (migration_params_defaults/check), the API's JSON in and out,
 * the `vmm migrate` options and their help, and `vmm migrate --list-params`
 * (which lint.openapi compares with docs/openapi.json) are all made from it.
 * lint.param_table fails when a C file outside this one lists parameters by
 * hand. Adding a parameter is one row here plus its use in the engine.
 *
 * A row: X(NAME, FIELD, KIND, DEFAULT, MIN, MAX, FLAG, ARG, HELP, NAMES)
 *   NAME     the API's JSON member
 *   FIELD    the struct migration_params member
 *   KIND     MP_U64 / MP_UINT (an integer), MP_SIZE (an integer; the CLI
 *            takes K/M/G), MP_POW2 (a power of two), MP_BOOL (a flag),
 *            MP_COMPRESS ("none" | "zstd[:LEVEL]", the level is the
 *            number), MP_ENUM (one of the row's names, *_NAMES below)
 *   DEFAULT  the value when not given (harvest_threads: 0 = the online CPUs)
 *   MIN, MAX the accepted range, inclusive (enums: the names' indexes)
 *   FLAG     the long option of `vmm migrate`, without "--"
 *   ARG      its argument in --help ("" for a flag)
 *   HELP     one line for --help; the range and default are appended
 *   NAMES    MP_ENUM: its value names as a brace list, indexed by value
 *            (MIGRATION_*_NAMES below); MIGRATION_NO_NAMES for the other kinds
 */
#ifndef VMM_MIGRATION_PARAMS_H
#define VMM_MIGRATION_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/*
 * The shard range is the wire's (VM_DESC's shard_pages): by a relative
 * path, so that this header's users (the front end) see no other wire
 * header.
 */
#include "../wire/shard.h"

#define MIGRATION_MAX_CONNECTIONS     16
#define MIGRATION_MAX_HARVEST_THREADS 64
/* --clear-chunk, the memslot shard (VM_DESC's shard_pages): a power of two, pages. */
#define MIGRATION_CLEAR_CHUNK_MIN    MIG_SHARD_PAGES_MIN
#define MIGRATION_CLEAR_CHUNK_MAX    MIG_SHARD_PAGES_MAX
#define MIGRATION_ZSTD_LEVEL_MAX     19
#define MIGRATION_ZSTD_LEVEL_DEFAULT 1 /* what "zstd" alone means */
/* The largest integer a JSON number holds exactly. */
#define MIGRATION_PARAM_U64_MAX (1ULL << 53)

enum migration_param_kind { MP_U64, MP_UINT, MP_SIZE, MP_POW2, MP_BOOL, MP_COMPRESS, MP_ENUM };

/*
 * Names of the enum-valued parameters, indexed by the enum's value
 * (migration.h; a static assertion in params.c keeps the counts equal).
 */
#define MIGRATION_MODE_NAMES                                                                       \
	{                                                                                          \
		"precopy", "postcopy", "auto"                                                      \
	}
#define MIGRATION_NO_CONVERGE_NAMES                                                                \
	{                                                                                          \
		"switchover", "fail", "at-limits"                                                  \
	}
#define MIGRATION_CONVERGE_NAMES                                                                   \
	{                                                                                          \
		"none", "throttle"                                                                 \
	}
#define MIGRATION_NO_NAMES                                                                         \
	{                                                                                          \
		NULL                                                                               \
	}

#define MIGRATION_PARAMS(X)                                                                        \
	X(downtime_ms, downtime_ms, MP_U64, 300, 1, 600000, "downtime-ms", "N",                    \
	  "allowed downtime, ms", MIGRATION_NO_NAMES)                                              \
	X(max_bandwidth, max_bandwidth, MP_SIZE, 0, 0, MIGRATION_PARAM_U64_MAX, "max-bandwidth",   \
	  "SIZE", "bytes/s on the wire, e.g. 1G or 200M (0: unlimited)", MIGRATION_NO_NAMES)       \
	X(connections, connections, MP_UINT, 4, 1, MIGRATION_MAX_CONNECTIONS, "connections", "N",  \
	  "page-data connections", MIGRATION_NO_NAMES)                                             \
	X(compress, compress_level, MP_COMPRESS, MIGRATION_ZSTD_LEVEL_DEFAULT, 0,                  \
	  MIGRATION_ZSTD_LEVEL_MAX, "compress", "zstd[:LEVEL]|none",                               \
	  "page compression, LEVEL 1..19 (0: none)", MIGRATION_NO_NAMES)                           \
	X(harvest_threads, harvest_threads, MP_UINT, 0, 1, MIGRATION_MAX_HARVEST_THREADS,          \
	  "harvest-threads", "N", "dirty-log harvest threads (default: the online CPUs)",          \
	  MIGRATION_NO_NAMES)                                                                      \
	X(clear_chunk_pages, clear_chunk_pages, MP_POW2, 512, MIGRATION_CLEAR_CHUNK_MIN,           \
	  MIGRATION_CLEAR_CHUNK_MAX, "clear-chunk", "PAGES",                                       \
	  "dirty-bit clear granularity, a power of two", MIGRATION_NO_NAMES)                       \
	X(max_passes, max_passes, MP_UINT, 30, 1, 10000, "max-passes", "N",                        \
	  "precopy passes before giving up converging", MIGRATION_NO_NAMES)                        \
	X(max_time_ms, max_time_ms, MP_U64, 60000, 1, 86400000, "max-time-ms", "N",                \
	  "precopy time before giving up converging, ms", MIGRATION_NO_NAMES)                      \
	X(no_converge, no_converge, MP_ENUM, MIGRATION_NO_CONVERGE_SWITCHOVER, 0, 2,               \
	  "no-converge", "switchover|fail|at-limits",                                              \
	  "what to do then: stop-and-copy anyway (switchover: as soon as passes stop shrinking "   \
	  "the rest, at the pass with the least; at-limits: at the limits), or give up",           \
	  MIGRATION_NO_CONVERGE_NAMES)                                                             \
	X(converge, converge, MP_ENUM, MIGRATION_CONVERGE_NONE, 0, 1, "converge", "none|throttle", \
	  "throttle: after a pass that does not converge, slow the vCPUs that run, the more the "  \
	  "dirty rate outgrows the link",                                                          \
	  MIGRATION_CONVERGE_NAMES)                                                                \
	X(throttle_max_pct, throttle_max_pct, MP_UINT, 99, 1, 99, "throttle-max-pct", "N",         \
	  "--converge throttle: the largest share of each 10 ms a vCPU sleeps, %",                 \
	  MIGRATION_NO_NAMES)                                                                      \
	X(mode, mode, MP_ENUM, MIGRATION_MODE_AUTO, 0, 2, "mode", "precopy|postcopy|auto",         \
	  "precopy: stop-and-copy; postcopy: run on the target after --postcopy-after passes "     \
	  "and fetch the rest on demand; auto: postcopy when precopy does not converge",           \
	  MIGRATION_MODE_NAMES)                                                                    \
	X(postcopy_after, postcopy_after, MP_UINT, 1, 0, 1000, "postcopy-after", "N",              \
	  "full precopy passes before a postcopy switchover", MIGRATION_NO_NAMES)                  \
	X(no_final_bitmap, no_final_bitmap, MP_BOOL, 0, 0, 1, "no-final-bitmap", "",               \
	  "postcopy baseline: no final dirty bitmap, the target fetches every page",               \
	  MIGRATION_NO_NAMES)                                                                      \
	X(timeout_ms, timeout_ms, MP_U64, 10000, 1, 3600000, "timeout-ms", "N",                    \
	  "connect/ack timeout; also the wait for a switchover-unknown or a resume, ms",           \
	  MIGRATION_NO_NAMES)                                                                      \
	X(blackout_poll_us, blackout_poll_us, MP_U64, 2000, 0, 1000000, "blackout-poll-us", "N",   \
	  "in the switchover, how long a wait for the target polls before it sleeps (at most the " \
	  "downtime limit; 0: never; a 1-CPU host never polls), us",                               \
	  MIGRATION_NO_NAMES)                                                                      \
	X(local, local, MP_BOOL, 0, 0, 1, "local", "",                                             \
	  "local upgrade: hand guest RAM (memfd) to a vmm on this host over --to unix:PATH; "      \
	  "only device and vCPU state cross",                                                      \
	  MIGRATION_NO_NAMES)

/* One row of the table, as data (migration_param_table). */
struct migration_param {
	const char *name;
	enum migration_param_kind kind;
	size_t offset, size; /* of the field in struct migration_params */
	uint64_t def, min, max;
	const char *flag, *arg, *help;
	const char *const *names; /* MP_ENUM: max + 1 names */
};

extern const struct migration_param migration_param_table[];
extern const size_t migration_param_count;

#endif /* VMM_MIGRATION_PARAMS_H */
