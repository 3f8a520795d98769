/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_observe.h - what a fault-matrix cell can see of its two processes:
 * each side's migration state through its API, operator commands (`vmm
 * migrate --resume/--recover`), and the guest's own lines on both consoles,
 * from which "who runs the VM" and "never both running" are judged.
 *
 * Internal to vmm-faults (fault_run.c is the only user).
 */
#ifndef VMM_FAULTS_OBSERVE_H
#define VMM_FAULTS_OBSERVE_H

#include <limits.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "fault_run.h"
#include "harness_run.h"

/*
 * Who may run the guest after a cell: nobody, the source, the target, or
 * the target in postcopy-paused (it runs until it touches a missing page:
 * it may print passes or not, the source must not).
 */
enum fx_owner { FX_OWNER_NONE, FX_OWNER_SOURCE, FX_OWNER_TARGET, FX_OWNER_TARGET_PAUSED };

struct fx_ctx {
	const struct fx_env *env;
	const struct fx_cell *cell;
	char dir[1024], run_dir[1040]; /* short enough for the paths under them */
	char src_sock[1100];	       /* the source's API socket */
	struct hx_run r;	       /* src, dst and their consoles */
	bool started;
	struct hx_proc mig; /* `vmm migrate` in the background */
	char to[320];	    /* where the source migrates: the target, or the record proxy */
	/* record faults' recproxy.py; the trickle's and valid-hello's flood.py */
	struct hx_proc proxy, flood[2];
	char mig_out[PATH_MAX], mig_err[PATH_MAX];
	regex_t pass_re; /* a line of the guest's own verification */
	char log[2048];	 /* what the cell did, for the detail line */
};

/* Appends a short note to ctx->log ("; "-separated). */
void fx_note(struct fx_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The migration state of a side ("precopy", "switchover-unknown", ...) from
 * `vmm migrate --status --json` on its API socket. 0; -ESRCH when the
 * process is gone; -EAGAIN when it is stopped (it could not answer); -EIO
 * when the status call failed.
 */
int fx_state(struct fx_ctx *x, bool target, char *state, size_t len);

/* The target's API socket now: "<name>.sock.incoming" while it is there, else "<name>.sock". */
void fx_target_socket(struct fx_ctx *x, char *path, size_t len);

/* `vmm ARGS` to its end (at most timeout_ms): its exit code, or -1; stdout into out. */
int fx_vmm(struct fx_ctx *x, const char *stem, char *const *args, int timeout_ms, char *out,
	   size_t outlen);

/* Pumps both consoles for ms milliseconds. */
void fx_pump(struct fx_ctx *x, int ms);

/*
 * The window after a cell settled: the owner's guest prints at least two
 * more verified passes (bounded wait), the other side none; with no owner,
 * neither prints for a few seconds. 0, or -1 with why in (why, len).
 */
int fx_window(struct fx_ctx *x, enum fx_owner owner, char *why, size_t len);

/*
 * Never both running, over the whole cell: no source pass line numbered at
 * or past the target's first, and none read more than a second after the
 * target's first; no CORRUPTION on either console. 0, or -1 with why.
 */
int fx_never_both(struct fx_ctx *x, char *why, size_t len);

/* The last line of the vmm command `stem`'s stderr (DIR/STEM.err), in buf. */
const char *fx_last_err_line(struct fx_ctx *x, const char *stem, char *buf, size_t len);

/* The source's stderr contains s. */
bool fx_src_err_has(struct fx_ctx *x, const char *s);
/* Whether the file at path holds s now. */
bool fx_file_has(const char *path, const char *s);

#endif /* VMM_FAULTS_OBSERVE_H */
