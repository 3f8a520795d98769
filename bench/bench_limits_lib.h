/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_limits_lib.h - this host's limits that a migration is compared with:
 * memcpy bandwidth and loopback TCP throughput. Used by bench_limits (which
 * reports them, with zstd speeds) and bench_migrate (which prints each
 * migration's wire rate as a fraction of them, measured in the same run).
 * Called from the benchmark's main thread; each call allocates, measures and
 * frees everything it uses (bench_tcp_gbps starts and joins its own threads).
 */
#ifndef VMM_BENCH_LIMITS_LIB_H
#define VMM_BENCH_LIMITS_LIB_H

#include <stdbool.h>
#include <stddef.h>

/*
 * memcpy of `size` bytes between two fresh anonymous mappings, GB/s (1e9).
 * touched: the destination was written first (best of 3 copies); otherwise
 * every destination page faults in during the one copy, as a migration
 * target's never-touched guest RAM does. 0 if the memory cannot be mapped.
 */
double bench_memcpy_gbps(size_t size, bool touched);

/*
 * Pushes `total` bytes over `streams` (1..8) loopback TCP connections, one
 * sender and one receiver thread each; GB/s. 0 on a socket error.
 */
double bench_tcp_gbps(int streams, size_t total);

#endif /* VMM_BENCH_LIMITS_LIB_H */
