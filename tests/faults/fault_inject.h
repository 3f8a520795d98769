/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_inject.h - the faults of the matrix, applied to a running source
 * and target and lifted again:
 *
 *   kill        SIGKILL (nothing to lift)
 *   stop        SIGSTOP, lifted by SIGCONT
 *   reset       `ss -K` of every TCP connection to or from the migration
 *               port (the kernel resets both ends; needs
 *               CONFIG_INET_DIAG_DESTROY), nothing to lift
 *   blackhole   an nftables table `inet vmmfaults_PORT` dropping the port's
 *               packets both ways (output hook: loopback packets pass it
 *               once per direction), lifted by deleting the table
 *   fd          RLIMIT_NOFILE (soft and hard) of the process lowered to its
 *               lowest free descriptor, so the next socket/open/accept fails
 *               with EMFILE; lifted by restoring the old limits
 *
 * Whatever is applied is remembered process-wide, and fx_inject_cleanup()
 * (called after each cell, at exit and on SIGINT/SIGTERM/SIGHUP) removes the nftables
 * table and restores limits even when a cell fails half-way.
 * Functions return 0 or -errno with a message in (err, errlen).
 */
#ifndef VMM_FAULTS_INJECT_H
#define VMM_FAULTS_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

struct fx_limit {
	pid_t pid; /* 0: not lowered */
	struct rlimit old;
	int lowered_to;
};

/*
 * `ss -K` of the port's connections; the ones of pids[0..npids) (the source
 * and the target) must be gone after it. *killed: how many of those there were.
 */
int fx_reset_port(int port, const int *pids, int npids, int *killed, char *err, size_t errlen);

/* The DROP table for port; fx_blackhole_off() deletes it (no error if absent). */
int fx_blackhole_on(int port, char *err, size_t errlen);
void fx_blackhole_off(int port);

/* Lowers pid's RLIMIT_NOFILE to its lowest free fd, into *l. */
int fx_fd_limit(pid_t pid, struct fx_limit *l, char *err, size_t errlen);
void fx_fd_restore(struct fx_limit *l);

/* Whether the tools work here: "" when they do, else why not (for the table's notes). */
void fx_probe_tools(char *why_reset, size_t l1, char *why_blackhole, size_t l2);

/* Undoes whatever is still applied (tables, limits); safe to call any time, twice. */
void fx_inject_cleanup(void);

/* Installs fx_inject_cleanup() at exit and on SIGINT/SIGTERM/SIGHUP. */
void fx_inject_install_cleanup(void);

/* 'R', 'S', 'T' (stopped), ... from /proc/PID/stat; 0 when the process is gone. */
char fx_proc_state(pid_t pid);

/* Runs argv (no shell) to its end, stdout/stderr to log (or /dev/null); its exit code. */
int fx_run_cmd(char *const argv[], const char *log);

#endif /* VMM_FAULTS_INJECT_H */
