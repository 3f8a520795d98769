/* SPDX-License-Identifier: Apache-2.0 */
/*
 * harness_run.h - one two-process migration as a user runs it, the
 * scenario the integration tests and the benchmarks share:
 *
 *   hx_run_start()     source `vmm run [CONFIG] --set vm.name=NAME ...` and
 *                      target `vmm run --incoming HOST:PORT ...`; returns
 *                      once the target listens
 *   hx_wait_line()     on r->src_out: the guest is ready (a heartbeat line)
 *   hx_run_migrate()   `vmm migrate --to HOST:PORT --vm NAME ARGS...`, its
 *                      exit code and --json summary
 *   hx_run_switched_over()    the source ended saying "migrated to"
 *   hx_run_target_verified()  the guest finished on the target: its line,
 *                             exit 0, no CORRUPTION
 *   hx_run_target_lines()     or a guest that runs on verified some passes there
 *   hx_run_target_serves()    or the VM lives on at the target, serving its API
 *   hx_run_end()       stops whatever still runs
 *
 * Files, in opts.dir: STEM.err for every process, STEM.out too unless
 * opts.pipes (then stdout is only read, each line stamped as it arrives).
 * Stems: src, dst, mig by default; each further vmm command (hx_run_vmm)
 * gets its own.
 *
 * Every wait pumps the source's and the target's consoles (r->watch), so
 * a line printed at any time is kept, and every wait is bounded by the
 * caller's timeout. One thread drives a run. Functions return 0 or -errno
 * with a message in (err, errlen).
 */
#ifndef VMM_HARNESS_RUN_H
#define VMM_HARNESS_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "harness_console.h"
#include "harness_proc.h"

struct hx_run_opts {
	const char *vmm; /* the vmm binary */
	/*
	 * Another binary for one side (NULL: vmm): the compatibility test runs
	 * a release against the current tree. The source's also runs the vmm
	 * commands (hx_run_vmm: migrate, status), which talk to the source.
	 */
	const char *source_vmm, *target_vmm;
	const char *dir;			    /* where the files go */
	const char *src_stem, *dst_stem, *mig_stem; /* NULL: "src", "dst", "mig" */
	bool pipes;				    /* stdout on pipes instead of files */
	const char *name;			    /* vm.name; --vm of vmm migrate */
	const char *config;			    /* the source's config file, or NULL */
	char *const *source_args;		    /* more `vmm run` arguments, or NULL */
	char *const *target_args;		    /* more `vmm run --incoming` arguments */
	char *const *source_env;		    /* "NAME=VALUE" for the source, or NULL */
	char *const *target_env;
	char *const *migrate_env;	       /* for vmm migrate */
	const char *source_wrap, *target_wrap; /* a command prefix, "ip netns exec ns1" */
	const char *host;		       /* the target's address; NULL: 127.0.0.1 */
	const char *unix_path;		       /* or a UNIX socket: --incoming unix:PATH */
	int port;			       /* 0: a free loopback port */
	int listen_timeout_ms;		       /* for the target to listen; 0: 30 s */
};

/* One vmm command run to its end (`vmm migrate ...`). */
struct hx_cmd {
	struct hx_proc proc;
	struct hx_console out; /* its stdout */
	int code;	       /* exit code, shell style (137: killed at its deadline) */
	double ms;	       /* from spawn to exit */
	cJSON *json;	       /* stdout parsed, when it is one JSON value */
	char err_path[PATH_MAX];
};

struct hx_run {
	struct hx_run_opts o;
	char to[320]; /* HOST:PORT */
	int port;
	struct hx_proc src, dst;
	struct hx_console src_out, dst_out;
	struct hx_watch watch; /* src_out and dst_out */
	char src_err[PATH_MAX], dst_err[PATH_MAX];
	int cmds; /* vmm commands run so far, for their stems */
};

int hx_run_start(struct hx_run *r, const struct hx_run_opts *o, char *err, size_t errlen);

/*
 * Runs `vmm ARGS` with env to its end (at most timeout_ms, then SIGKILL and
 * -ETIMEDOUT), as stem (NULL: "cmd1", "cmd2"...). 0 when it ran, whatever
 * its exit code; free c with hx_cmd_free().
 */
int hx_run_vmm(struct hx_run *r, const char *stem, char *const *args, char *const *env,
	       int timeout_ms, struct hx_cmd *c, char *err, size_t errlen);

/* hx_run_vmm of `migrate --to HOST:PORT --vm NAME ARGS`, as opts.mig_stem, opts.migrate_env. */
int hx_run_migrate(struct hx_run *r, char *const *args, int timeout_ms, struct hx_cmd *c, char *err,
		   size_t errlen);

void hx_cmd_free(struct hx_cmd *c);

/* Waits up to timeout_ms for p (r->src or r->dst) to exit, pumping the consoles. */
int hx_run_wait_exit(struct hx_run *r, struct hx_proc *p, int timeout_ms, char *err, size_t errlen);

/* The source exits 0 within timeout_ms and its stderr says "migrated to HOST:PORT". */
int hx_run_switched_over(struct hx_run *r, int timeout_ms, char *err, size_t errlen);

/*
 * The target exits 0 within timeout_ms, a line of its console matches
 * done_regex (the guest's own verification passed), and none reports
 * CORRUPTION.
 */
int hx_run_target_verified(struct hx_run *r, const char *done_regex, int timeout_ms, char *err,
			   size_t errlen);

/*
 * For a guest that never finishes by itself: within timeout_ms `want` lines
 * of the target's console match regex (passes the guest verified there)
 * while none reports CORRUPTION and the target runs; then it ends on SIGTERM
 * (exit 143); a target that exited after the lines fails (-ESRCH). The test
 * lasts as long as those passes, however many the guest would run, and with
 * a guest that runs until stopped (workload.passes = 0) it never depends on
 * the migration ending before the guest's last pass.
 */
int hx_run_target_lines(struct hx_run *r, const char *regex, size_t want, int timeout_ms, char *err,
			size_t errlen);

/*
 * The target still runs and serves the VM's API: within timeout_ms it has
 * the VM's own socket under $VMM_RUN_DIR (when set) and `vmm migrate
 * --status --vm NAME --json` succeeds; then it ends on SIGTERM (exit 143).
 */
int hx_run_target_serves(struct hx_run *r, int timeout_ms, char *err, size_t errlen);

/* SIGTERMs the source and the target if they run, SIGKILLs after 10 s; frees. */
void hx_run_end(struct hx_run *r);

#endif /* VMM_HARNESS_RUN_H */
