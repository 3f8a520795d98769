/* SPDX-License-Identifier: Apache-2.0 */
/*
 * frontend_seccomp.c - the front end's seccomp lists and the process's
 * policy, as data (contracts in frontend_seccomp.h). main's list is the
 * union of all the others, since every engine thread of a source starts
 * under main's filter and a stacked filter can only narrow.
 */
#include "frontend_seccomp.h"

#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "machine_seccomp.h"
#include "migration_seccomp.h"

/* clang-format off */
/*
 * main: the event loop and the API server (libevent), TLS files read when
 * a migration starts, the API socket moved on a target, a target's VM
 * created and loaded, the end of the process.
 */
static const char *const g_main[] = {
	"openat", "open", "fstat", "newfstatat", "statx", "lseek", "pread64", "pwrite64",
	"readlink", "readlinkat", "getdents64", "access", "faccessat", "faccessat2", "unlink",
	"unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat", "chmod", "fchmod",
	"umask", "ftruncate", "fallocate", "memfd_create", "dup", "dup2", "dup3", "pipe2",
	"epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "select", "pselect6",
	"rt_sigaction", "kill", "rt_sigtimedwait", "getrusage", "sysinfo", "uname", "prlimit64",
	"getuid", "geteuid", "getgid", "getegid", "getcwd", "wait4", "mincore", NULL,
};

/* main: libevent's FIONREAD, stdio's TCGETS; the console's raw mode set and restored. */
static const unsigned long i_main[] = {TCGETS, TCSETS, TCSETSW, FIONBIO, FIONREAD, 0};

/*
 * The console input thread: COM1's RX interrupt when a byte arrives, and
 * the terminal put back in its mode when the user detaches.
 */
static const unsigned long i_console[] = {KVM_IRQ_LINE, TCGETS, TCSETS, TCSETSW, 0};

/*
 * main starts every other kind (with_all: a source's engine, a target's
 * gate and VM), and runs the machine's VM setup and the engine's work on
 * its own thread.
 */
const struct seccomp_kind seccomp_kind_main = {.name = "main",
	.groups = {seccomp_calls_base, seccomp_calls_sock_io, seccomp_calls_sock_open,
		   seccomp_calls_threads, g_main, seccomp_calls_sched, seccomp_calls_device},
	.ioctls = {i_main}, .with = {&seccomp_part_vm_setup, &seccomp_part_engine_main},
	.with_all = true};

/* Reads the terminal (or a pipe) and hands the bytes to COM1; the quit eventfd. */
const struct seccomp_kind seccomp_kind_console = {.name = "console",
	.groups = {seccomp_calls_base, (const char *const[]){"read", "poll", "ppoll", NULL}},
	.ioctls = {i_console}};

/* The vCPUs', then what a restored or booted VM's first threads are, then the rest. */
static const struct seccomp_kind *const kinds[] = {
	SECCOMP_THREAD_VCPU,    SECCOMP_THREAD_SNAPSHOT,  SECCOMP_THREAD_DEVICE,
	SECCOMP_THREAD_CONSOLE, SECCOMP_THREAD_MAIN,      SECCOMP_THREAD_MIGRATION,
	SECCOMP_THREAD_URGENT,  SECCOMP_THREAD_HARVEST,   SECCOMP_THREAD_SEND,
	SECCOMP_THREAD_GATE,    SECCOMP_THREAD_HANDSHAKE, SECCOMP_THREAD_RECEIVE,
	SECCOMP_THREAD_FAULT,   SECCOMP_THREAD_DROP,      SECCOMP_THREAD_CONTROL,
};
/* clang-format on */

/*
 * Every list: the terminal on stdin put back in its mode (TCSETS) by the
 * SIGSYS exit hook (console_input.c), since a fatal signal, and its
 * handler, can come in any thread. TCSETS changes terminal modes only.
 */
const struct seccomp_policy vmm_seccomp_policy = {
    .kinds = kinds, .count = sizeof(kinds) / sizeof(kinds[0]), .every_ioctl = TCSETS};

int vmm_seccomp_init(char *err, size_t errlen)
{
	return seccomp_filter_init(&vmm_seccomp_policy, err, errlen);
}
