/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_filter.h - a seccomp-BPF allowlist per kind of thread.
 *
 * Defence in depth: a guest that takes over a vCPU thread, or a peer that
 * takes over a migration thread, finds only the system calls that thread
 * needs. Each thread installs the filter of its kind at its start
 * (seccomp_thread_enter()); filters stack, so a thread runs under its own
 * list and under those of every thread above it (a kind's list therefore
 * includes those of the kinds its threads start; main's is the union).
 *
 * A call outside the list is trapped (SECCOMP_RET_TRAP): the SIGSYS
 * handler writes one line on stderr,
 *   vmm: seccomp: the vcpu thread made a forbidden system call: socket (41); stopping
 * and the process exits with SECCOMP_EXIT_STATUS. RET_TRAP rather than
 * RET_KILL_PROCESS because a kill leaves the operator with only an audit
 * record; a thread that cannot change signal handlers (the vCPU and engine
 * lists have no rt_sigaction, outside sanitizer builds) cannot take the
 * handler away.
 *
 * seccomp_filter_init() compiles every list once, at process start, into a
 * process-wide read-only table of BPF programs (and the syscall names the
 * handler prints, since it must be async-signal-safe), on a thread of its
 * own, so that the process goes on meanwhile (compiling costs milliseconds,
 * more than a lazy restore's own work); a thread that enters its filter
 * waits for its kind's program, which is built first when threads of that
 * kind start first (the vCPUs'). Installing is then two system calls and
 * cannot fail for lack of memory. Whether a thread
 * installs its filter travels in each caller's context (struct vm_config
 * seccomp): with it off, seccomp_thread_enter() does nothing.
 */
#ifndef VMM_UTIL_SECCOMP_FILTER_H
#define VMM_UTIL_SECCOMP_FILTER_H

#include <stdbool.h>
#include <stddef.h>

/* 128 + SIGSYS, what a shell reports for a process the kernel killed with SIGSYS. */
#define SECCOMP_EXIT_STATUS 159

enum seccomp_thread {
	SECCOMP_THREAD_MAIN,	  /* "main": the event loop, API server (from run_loop) */
	SECCOMP_THREAD_VCPU,	  /* "vcpu": KVM_RUN and the serial port (KVM_IRQ_LINE) */
	SECCOMP_THREAD_MIGRATION, /* "migration": the source's migration thread */
	SECCOMP_THREAD_URGENT,	  /* "urgent": source postcopy page requests */
	SECCOMP_THREAD_HARVEST,	  /* "harvest": dirty-log workers */
	SECCOMP_THREAD_SEND,	  /* "send": page-data sender workers */
	SECCOMP_THREAD_GATE,	  /* "gate": target listener */
	SECCOMP_THREAD_HANDSHAKE, /* "handshake": target per-connection TLS/hello */
	SECCOMP_THREAD_RECEIVE,	  /* "receive": target page-data receivers */
	SECCOMP_THREAD_FAULT,	  /* "fault": target userfaultfd reader */
	SECCOMP_THREAD_DROP,	  /* "drop": target postcopy pusher of received pages */
	SECCOMP_THREAD_CONTROL,	  /* "control": target postcopy control connection */
	SECCOMP_THREAD_CONSOLE,	  /* "console": console input from stdin to COM1 */
	SECCOMP_THREAD_SNAPSHOT,  /* "snapshot": writes a snapshot; its page workers (and a
				     restore's) */
	SECCOMP_THREAD_DEVICE,	  /* "device": a virtio device's I/O thread (disk file, tap) */
	SECCOMP_THREAD_COUNT,
};

/* "vcpu", "migration", ...; NULL out of range. */
const char *seccomp_thread_name(enum seccomp_thread kind);

/*
 * Installs the SIGSYS handler and starts compiling every kind's list on a
 * thread of its own. Call once from the front end, before any other thread
 * starts, when any VM of the process may use filters. -errno with a
 * message. A fork() waits for the compiling to end. It first sets glibc's
 * malloc arena limit and makes glibc read what it reads lazily from a
 * thread's free() (a file no filter lets a thread open): malloc_prime.h.
 */
int seccomp_filter_init(char *err, size_t errlen);

/*
 * When `on`, installs kind's filter on the calling thread (for good), once
 * it is compiled. -errno with a message (also when it could not be
 * compiled); 0 when off. Needs seccomp_filter_init().
 */
int seccomp_thread_enter(enum seccomp_thread kind, bool on, char *err, size_t errlen);

/*
 * The same for thread entry points that have nobody to report to: on
 * failure it writes "vmm: seccomp: cannot filter the KIND thread: WHY;
 * stopping" and exits with SECCOMP_EXIT_STATUS, as a forbidden call
 * would. A thread that must be filtered never runs without its filter.
 */
void seccomp_thread_enter_or_stop(enum seccomp_thread kind, bool on);

/*
 * fn runs in the SIGSYS handler before the exit (async-signal-safe code
 * only; every list allows TCSETS on stdin for it). NULL removes it.
 */
void seccomp_set_exit_hook(void (*fn)(void));

/* The number of system calls kind's list allows (docs, tests); waits for its compiling. */
unsigned seccomp_thread_allowed(enum seccomp_thread kind);

#endif /* VMM_UTIL_SECCOMP_FILTER_H */
