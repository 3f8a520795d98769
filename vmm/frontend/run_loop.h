/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_loop.h - one `vmm run` process once its command line is read: boot
 * the VM from its config, or receive it from a migration source; serve its
 * control API; run the event loop until the VM ends; release it all.
 *
 * All functions are called by cli_run.c, in this order, on the main
 * thread, which is the event-loop thread: every callback below (the VM's
 * end, SIGINT/SIGTERM, the linger of a migrated-away source, the target's
 * takeover of the API path, the API's requests) runs there. The vCPU and
 * engine threads never touch struct run_ctx.
 *
 *   run_boot() or run_incoming()   0, or -errno with the message in err
 *   run_loop()                     only after a 0: returns the exit status
 *   run_release()                  always, even after a failed start
 */
#ifndef VMM_RUN_LOOP_H
#define VMM_RUN_LOOP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

struct console_input;
struct event;
struct vm_config;

struct run_ctx {
	struct runtime rt;	 /* the VM, its migrations, its API, the event base */
	struct event *ev_source; /* target: polls for the source's end, until it is gone */
	struct event *linger;	 /* migrated away: waiting for the summary to be read */
	char api_path[PATH_MAX]; /* the VM's usual API socket path */
	uint64_t first_byte_ns;	 /* the guest's first console byte (--timing) */
	uint64_t end_ns;	 /* when a migrated-away VM ended */
	bool outcome_unknown;	 /* target: paused until the source's decision or recover */
	/* Console input (console_input.h): from the VM's start here until its end. */
	int console_mode;	       /* enum console_input_mode, from this host's config */
	struct console_input *console; /* NULL: none, or not running here yet */
	struct event *ev_console_quit; /* Ctrl-A x */
};

/*
 * ctx->rt.base and ctx->rt.hooks must be set. Creates and boots the VM of
 * `cfg`, starts its API and its vCPUs.
 */
int run_boot(struct run_ctx *ctx, struct vm_config *cfg, int console_fd, char *err, size_t errlen);

/*
 * Same preconditions. Receives a migrating VM on `addr` ("host:port"):
 * its API serves at "<path>.incoming" until the source is gone; once the
 * VM is loaded it says PREPARED and resumes the VM only on the source's
 * COMMIT. Without a decision it returns 0 with the VM paused and the
 * outcome unknown: the event loop then waits for the decision (a late one,
 * the source's recover, or the operator's, through the API).
 */
int run_incoming(struct run_ctx *ctx, const char *addr, struct vm_config *cfg, int console_fd,
		 char *err, size_t errlen);

/* Runs the event loop until the VM ends, joins it; returns the exit status. */
int run_loop(struct run_ctx *ctx);

/*
 * Stops the API, then frees the migrations and the VM (in that order: a
 * last status request may still read the progress); the event base stays
 * the caller's.
 */
void run_release(struct run_ctx *ctx);

#endif /* VMM_RUN_LOOP_H */
