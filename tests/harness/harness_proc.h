/* SPDX-License-Identifier: Apache-2.0 */
/*
 * harness_proc.h - child processes for the migration harness (hx_: harness):
 * spawn one with its stdout on a pipe or in a file and its stderr in a file,
 * wait for it with a deadline, signal it, and reap it.
 *
 * Every child runs in its own process group and dies with the harness
 * (PR_SET_PDEATHSIG), so a harness killed by a test timeout leaves no VM
 * behind. The calling process must be single threaded while it spawns (the
 * death signal is tied to the thread that forks).
 *
 * Functions return 0 or -errno with a message in (err, errlen).
 */
#ifndef VMM_HARNESS_PROC_H
#define VMM_HARNESS_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct hx_proc {
	pid_t pid;     /* > 0 from spawn until reaped */
	bool exited;   /* reaped: status is valid */
	int status;    /* wait status */
	char name[32]; /* for messages: "source", "target", "vmm migrate" */
};

struct hx_spawn {
	char *const *argv;    /* NULL-terminated; argv[0] is looked up on PATH without a '/' */
	char *const *env;     /* "NAME=VALUE" added to the child's environment, or NULL */
	const char *out_path; /* stdout into this file (truncated), or NULL: a pipe, see *out_fd */
	const char *err_path; /* stderr into this file (truncated), or NULL: inherited */
};

/*
 * Starts s->argv. With s->out_path NULL, *out_fd is the read end of its stdout
 * pipe (close-on-exec); else *out_fd is -1. A program that cannot be executed
 * is an error here, not a child exiting 127.
 */
int hx_spawn(struct hx_proc *p, const char *name, const struct hx_spawn *s, int *out_fd, char *err,
	     size_t errlen);

/*
 * True while p runs; reaps it (p->exited, p->status) once it has exited. For
 * a pid that is not our child: true while the process exists.
 */
bool hx_running(struct hx_proc *p);

/* Waits up to timeout_ms for p to exit: 0, or -ETIMEDOUT with p still running. */
int hx_wait_exit(struct hx_proc *p, int timeout_ms);

/* Sends sig to p (not its group) while it runs. */
void hx_signal(struct hx_proc *p, int sig);

/*
 * Waits up to timeout_ms for p, then SIGKILLs its process group and reaps it.
 * Returns its exit code (see hx_exit_code), -1 for a process never started.
 */
int hx_reap(struct hx_proc *p, int timeout_ms);

/*
 * ms times VMM_TEST_TIMEOUT_SCALE (1 to 20, default 1): every bound of a
 * wait for a guest or a vmm. The emulated machine of scripts/nested-kvm.sh
 * runs everything several times slower than a host with hardware KVM, and
 * sets it; a host with hardware KVM leaves it unset.
 */
int hx_scaled_ms(double ms);

/* A wait status as a shell reports it: the exit status, or 128 + the signal. */
int hx_exit_code(int status);

/* "exit status 1", "killed by signal 9 (Killed)" */
void hx_describe(int status, char *buf, size_t len);

/* An argv under construction: copies of its strings, NULL-terminated. */
#define HX_ARGV_MAX 128

struct hx_argv {
	char *v[HX_ARGV_MAX + 1];
	int n;
	bool overflow; /* an argument did not fit (or no memory): do not run it */
};

void hx_argv_add(struct hx_argv *a, const char *s);
void hx_argv_addf(struct hx_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds every string of the NULL-terminated v (NULL: none). */
void hx_argv_addv(struct hx_argv *a, char *const *v);
/* Adds the words of s, split at spaces ("ip netns exec ns1"). */
void hx_argv_split(struct hx_argv *a, const char *s);
void hx_argv_free(struct hx_argv *a);

#endif /* VMM_HARNESS_PROC_H */
