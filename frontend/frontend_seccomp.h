/* SPDX-License-Identifier: Apache-2.0 */
/*
 * frontend_seccomp.h - the front end's part of the seccomp policy
 * (vmm/util/seccomp_policy.h), and the process's whole policy: the front
 * end is the one layer that knows every other, so it gathers the kinds of
 * the machine (machine_seccomp.h), of the engine (migration_seccomp.h)
 * and its own into the table util compiles.
 */
#ifndef VMM_FRONTEND_SECCOMP_H
#define VMM_FRONTEND_SECCOMP_H

#include <stddef.h>

#include "seccomp_policy.h"

/*
 * The event loop: API server, signals, starting and freeing migrations
 * and snapshots (run_loop()). Its threads start every other kind.
 */
extern const struct seccomp_kind seccomp_kind_main;
/* Console input, stdin to COM1 (console_input.c). */
extern const struct seccomp_kind seccomp_kind_console;

#define SECCOMP_THREAD_MAIN    (&seccomp_kind_main)
#define SECCOMP_THREAD_CONSOLE (&seccomp_kind_console)

/* Every kind of the process, in the order to compile them. */
extern const struct seccomp_policy vmm_seccomp_policy;

/*
 * seccomp_filter_init() of vmm_seccomp_policy: once, before any other
 * thread starts (cli_run()). -errno with a message.
 */
int vmm_seccomp_init(char *err, size_t errlen);

#endif /* VMM_FRONTEND_SECCOMP_H */
