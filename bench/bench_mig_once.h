/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_mig_once.h - one end-to-end migration through the migration
 * harness (tests/harness/), shared by bench_migrate and bench_tail. One
 * thread; bm_init() first. Files go to the benchmark's temp dir.
 */
#ifndef VMM_BENCH_MIG_ONCE_H
#define VMM_BENCH_MIG_ONCE_H

#include <stdbool.h>
#include <stdio.h>

#include "harness_console.h"

/* What a case's inspect hook sees, before the run's processes end. */
struct bm_view {
	const struct hx_console *src, *dst; /* guest consoles, each line stamped (ms) */
	double mig_start_ms, mig_end_ms;    /* `vmm migrate` spawned / exited (same clock) */
};

struct bm_case {
	const char *label;
	const char *memory;
	bool dirty;
	unsigned connections; /* 0 = default */
	const char *compress; /* NULL = default */
	bool tls;	      /* [migration] tls_* on both sides (bm_make_tls_files first) */
	const char *hot;      /* the dirty workload's working set; NULL: 64M */
	const char *fill; /* [workload] fill ("random": pages that do not compress); NULL: zero */
	bool prealloc;	  /* the target starts with [vm] prealloc and the VM's vm.memory */
	bool memfd;	  /* [vm] memory_backend = memfd */
	bool local;	  /* memfd, the target on a UNIX socket, `vmm migrate --local` */
};

/* More for one migration (bench_latency); zero fields keep the defaults. */
struct bm_extra {
	char *const *source_args;  /* more `vmm run` arguments ("--set", "K=V"), NULL-ended */
	char *const *migrate_args; /* more `vmm migrate` arguments, NULL-ended */
	const char *ready_regex;   /* the source is ready after ready_count lines of it */
	unsigned ready_count;	   /* (NULL: one heartbeat line) */
	const char *after_regex;   /* the target went on: after_count lines of it */
	unsigned after_count;	   /* (NULL: 3 "dirty pass" lines) */
	/* called after a good migration, before the processes end */
	void (*inspect)(void *arg, const struct bm_view *v);
	void *inspect_arg;
};

/* What the --json summary said (ms and us as named), and the CLI's own time. */
struct bm_result {
	double total_ms, downtime_ms, cli_ms, bytes, pages, zero, skipped, passes, setup_ms,
	    harvest_final_us, blackout_send_us, blackout_state_us, blackout_ack_us,
	    blackout_pause_us, target_restore_us, blackout_round_trips, blackout_sleeps;
	bool ok;
};

/* The vmm binary, the temp dir (also $VMM_RUN_DIR), the program name for messages. */
void bm_init(const char *vmm, const char *dir, const char *prog);
/*
 * What every migration benchmark does first: the CSV (when csv_path) and a
 * temp dir (bench_open_outputs), then bm_init() with them; at exit, on
 * SIGINT and SIGTERM `at_exit` (may be NULL) runs and the temp dir goes;
 * SIGPIPE is ignored. 0, or 1 after a message.
 */
int bm_start(const char *prog, const char *vmm, const char *csv_path, FILE **csv,
	     void (*at_exit)(void));
/* A throwaway CA and a certificate for 127.0.0.1 in the temp dir (the openssl tool). */
int bm_make_tls_files(void);
/*
 * Boots the case's source, waits for its guest, migrates it (run numbers
 * the files), checks that a dirty guest goes on verifying on the target.
 * 0 with *r filled, or -1 (the reason on stderr).
 */
int bm_migrate_once(const struct bm_case *mc, int run, struct bm_result *r);
/* The same with x's additions (x may be NULL). */
int bm_migrate_ex(const struct bm_case *mc, const struct bm_extra *x, int run, struct bm_result *r);

#endif /* VMM_BENCH_MIG_ONCE_H */
