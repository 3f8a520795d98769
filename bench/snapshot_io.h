/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot_io.h - bench_snapshot's measures of the host around vmm: the
 * file system's own sequential write rate for a number of bytes, what a
 * process start costs, and one HTTP PUT on a Unix socket (a restore into a
 * waiting vmm).
 */
#ifndef VMM_BENCH_SNAPSHOT_IO_H
#define VMM_BENCH_SNAPSHOT_IO_H

#include <stdint.h>

/*
 * MB/s (1e6 bytes) of writing `bytes` into a fresh file in dir with 16 MiB
 * pwrites from memory already touched, as the page cache takes them (no
 * sync: what a snapshot's pause covers); -1 on error. The file is removed.
 */
double sio_fs_seq_mbs(const char *dir, uint64_t bytes);

/* Median ms of `prog --version` from fork to its exit, over n runs; -1 on error. */
double sio_process_start_ms(const char *prog, int n);

/* A loopback TCP port nobody listens on now (bound once, then let go); 0 on error. */
int sio_free_port(void);

/*
 * PUT `body` (JSON) to `path` on the HTTP server at Unix socket `sock`;
 * the status in *code and the reply's body in reply. 0, or -1.
 */
int sio_unix_put(const char *sock, const char *path, const char *body, int *code, char *reply,
		 size_t len);

#endif /* VMM_BENCH_SNAPSHOT_IO_H */
