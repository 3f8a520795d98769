/* SPDX-License-Identifier: Apache-2.0 */
/*
 * netgap.h - what the files of bench_netgap share (bench_netgap.c says what
 * the benchmark measures):
 *
 *   bench_netgap.c  the description, main, usage and options; the tables'
 *                   and CSV's helpers both parts use (struct series);
 *   netgap_side.c   the host side (shell commands, the network namespace,
 *                   taps, cleanup at exit and on signals) and one migration
 *                   of the guest by either VMM (struct side: vmm through the
 *                   harness, QEMU over QMP; start, migrate, end, the
 *                   corruption check);
 *   netgap_ping.c   part ping: one run with `ping` as the client, and the
 *                   part's table and CSV section (ng_part_ping);
 *   netgap_blk.c    part blk: one run with the guest's disk workload, and
 *                   the part's table and CSV section (ng_part_blk).
 *
 * Threads and ownership: the benchmark is single-threaded. The globals below
 * are plain variables with no locking: main sets ng_opt and ng_tmpdir before
 * the first run; the namespace's names (ng_ns, ng_ns_wrap) are set once by
 * ng_ns_setup; ng_run_seq, ng_failed_runs and ng_ping_pid change only
 * between and within runs, on that one thread. ng_cleanup (atexit, also
 * after SIGINT/SIGTERM/SIGHUP through ng_on_signal and exit) reads them. A
 * struct side belongs to the run that started it: ng_side_start fills it,
 * ng_side_end releases its processes, sockets and files; the harness keeps
 * pointers into it (stems) until then. A struct series is owned by its
 * part's table function. Functions that can fail return 0 or -errno with a
 * message in (err, errlen).
 */
#ifndef VMM_BENCH_NETGAP_H
#define VMM_BENCH_NETGAP_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "harness_run.h"
#include "qemu_mig.h"

#define PROG		 "bench_netgap"
#define MAXREPS		 32
#define MEM		 "256M"
#define DOWNTIME_MS	 300
#define BRIDGE_ADDR	 "10.99.0.1/24"
#define GUEST_IP	 "10.99.0.2"
#define GUEST_MAC	 "52:54:00:99:00:02"
#define NET_HEARTBEAT_MS 500
#define NET_UP		 "net: mac [0-9a-f:]+ ip [0-9.]+ up"
#define BLK_PASS	 "blk: pass [0-9]+ ok"
#define BLK_WARMUP	 2   /* passes before the window (the first write fills the file) */
#define BLK_PASS_MIB	 2.0 /* 256 blocks of 4 KiB written, and read back */
#define DISK_BYTES	 (4 << 20)
#define WINDOW_MS	 3000.0 /* part blk: the windows before and after the migration */
#define GOAL_GAP_MS	 20.0

/* Bounds of every wait (the emulated KVM of the build hosts is 20-100x slower). */
#define BOOT_TIMEOUT_MS	      (180 * 1000) /* spawn to the guest's first line */
#define PING_READY_REPLIES    200	   /* and WINDOW_MS of them, before migrating */
#define PING_READY_TIMEOUT_MS (60 * 1000)
#define MIGRATE_TIMEOUT_MS    (300 * 1000)
#define PING_AFTER_MS	      2000	  /* the client goes on this long after the migration */
#define ANSWER_TIMEOUT_MS     (30 * 1000) /* for the target's guest's first reply */
#define BLK_AFTER_TIMEOUT_MS  (120 * 1000)
#define LISTEN_TIMEOUT_MS     (60 * 1000)

enum part { P_PING, P_BLK };
extern const char *const ng_part_names[]; /* "ping", "blk" */

/* What the command line chose (main sets it before the first run). */
struct ng_opts {
	const char *vmm_bin, *qemu_bin, *firmware;
	bool keep_files; /* --work DIR: the runs' files stay */
};
extern struct ng_opts ng_opt;

extern char ng_tmpdir[64];	       /* the runs' files; "" once ng_cleanup removed it */
extern char ng_ns[32], ng_ns_wrap[64]; /* the namespace; "ip netns exec NS" */
extern int ng_failed_runs;
extern int ng_run_seq;	  /* numbers each run's taps and files */
extern pid_t ng_ping_pid; /* the client while it runs */

/* ---- the host side (netgap_side.c) ------------------------------------------------------- */

/* Runs the formatted shell command: its exit status (-1: could not run it). */
int ng_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ng_cleanup(void);
void ng_on_signal(int sig);
int ng_ns_setup(char *err, size_t errlen);
int ng_tap_add(const char *tap, char *err, size_t errlen);
void ng_tap_del(const char *tap);
/* hx_watch_until's condition for "just pump the consoles for a while". */
int ng_never(void *arg);

/* ---- one migration of the guest, by either VMM (netgap_side.c) ------------------------- */

/* A source and a target of one run, vmm (through the harness) or QEMU (QMP). */
struct side {
	bool qemu, postcopy;
	enum part part;
	char name[48];
	char stems[3][64];   /* vmm: the harness keeps pointers to these for the whole run */
	struct hx_run r;     /* vmm */
	struct qvm src, dst; /* QEMU */
	struct hx_watch qw;  /* QEMU's two consoles */
	int port;	     /* QEMU's -incoming */
	/* both */
	struct hx_watch *watch;
	struct hx_console *src_out, *dst_out;
	struct hx_proc *src_proc, *dst_proc;
};

/*
 * vmm's --json parts of the downtime (docs/api.md), in this order, then the
 * counts of its waits for the target (round trips, of which slept); QEMU
 * reports none.
 */
extern const char *const ng_blackout_keys[];
#define NBLACKOUT 7

/* What a migration reported. */
struct mig {
	double t0, t1; /* CLOCK_MONOTONIC ms: the migration started / completed (host's view) */
	double downtime_ms, total_ms;
	double blackout_us[NBLACKOUT]; /* NaN: not reported (the last two are counts) */
	bool postcopy_used;
};

int ng_side_start(struct side *s, bool qemu, enum part part, bool postcopy, int rep,
		  const char *tap_s, const char *tap_d, const char *disk, char *err, size_t errlen);
int ng_side_migrate(struct side *s, struct mig *m, char *err, size_t errlen);
/* The guest runs on the target after the migration. */
bool ng_side_target_runs(struct side *s);
void ng_side_end(struct side *s);
/* CORRUPTION on either console (the blk guest's verification failed): -EIO. */
int ng_no_corruption(struct side *s, char *err, size_t errlen);

/* ---- the parts (netgap_ping.c, netgap_blk.c) -------------------------------------------- */

/* Runs the part: a run per rep, mode and VMM; its table on stdout, with csv its section. */
void ng_part_ping(FILE *csv, int reps, bool have_qemu);
void ng_part_blk(FILE *csv, int reps, bool have_qemu);

/* ---- tables and CSV (bench_netgap.c) ---------------------------------------------------- */

/* Per part, mode and VMM: the values of the good runs, and per rep (NaN: failed). */
struct series {
	int runs, ok, pc_used;
	double v[6][MAXREPS];
	int n;
	double by_rep[MAXREPS]; /* the compared value (ping: largest gap) */
};

/* One run of a part: adds it to *s, prints its line on stderr and, with csv, its CSV row. */
typedef void ng_run_fn(FILE *csv, bool qemu, bool postcopy, int rep, struct series *s);

/* With csv, its head (csv_cols, then vmm's downtime parts); then every run, interleaved. */
void ng_runs(FILE *csv, const char *csv_cols, int reps, bool have_qemu, struct series s[2][2],
	     ng_run_fn *run);
void ng_series_add(struct series *s, int rep, bool ok, bool pc_used, const double *vals, int nvals,
		   double compared);
double ng_med(const struct series *s, int k);
/* head, then a row per mode and VMM: runs ok, value keys[i] as fmts[i], postcopy used. */
void ng_table(const char *head, struct series s[2][2], bool have_qemu, int ncells, const int *keys,
	      const char *const *fmts);
/* The start of a run's line on stderr: "  vmm  precopy  run 1: ". */
void ng_run_label(bool qemu, bool postcopy, int rep);
/* " (completed as precopy)" for a postcopy run that did not need it, or "". */
const char *ng_precopy_note(bool postcopy, const struct mig *m);
/* vmm's downtime in parts, for the per-run line ("" for QEMU). */
const char *ng_blackout_text(char *buf, size_t len, const struct mig *m);
/* A run's CSV row: "part,mode,vmm,run,ok,mode_used" (mode_used "" unless known) ... */
void ng_csv_row_begin(FILE *f, const char *part, bool qemu, bool postcopy, int rep, bool ok,
		      bool known, const struct mig *m);
void ng_csv_num(FILE *f, double v, const char *fmt);
/* ... and its end: vmm's downtime parts (empty unless ok), the newline, a flush. */
void ng_csv_row_end(FILE *f, const struct mig *m, bool ok);

#endif /* VMM_BENCH_NETGAP_H */
