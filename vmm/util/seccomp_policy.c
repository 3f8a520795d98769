/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_policy.c - the allowlists, as data. Lists are built from groups
 * (what every thread needs, socket I/O, thread creation, files...) so that
 * each kind reads as the jobs its thread does. ioctl is allowed by request
 * number only (the KVM and userfaultfd requests the code issues), as
 * Firecracker does. main's list is the union of all the others, since
 * every engine thread of a source starts under main's filter and a stacked
 * filter can only narrow. seccomp_filter.c compiles these tables.
 */
#include "seccomp_policy.h"

#include <linux/fs.h>
#include <linux/if_tun.h>
#include <linux/kvm.h>
#include <linux/sockios.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <termios.h>

/* ------------------------------------------------------------------ */
/* groups                                                              */
/* ------------------------------------------------------------------ */

/* clang-format off */
/*
 * Every thread: locks, memory (malloc and the sanitizers' allocators map
 * and unmap), clocks, signals to its own threads (vCPU kicks, SIGSTOP of
 * the stop-at test hook), a line on stderr, glibc's qsort (sysinfo, for
 * the size of RAM), thread exit (glibc and ASan unmap the stack and
 * the alternate signal stack) and mincore (is a guest page there, before a
 * vCPU's error report reads it: see vcpu.c).
 */
static const char *const g_base[] = {
	"futex", "exit", "exit_group", "rt_sigreturn", "rt_sigprocmask", "restart_syscall",
	"sched_yield", "nanosleep", "clock_nanosleep", "clock_gettime", "gettimeofday",
	"gettid", "getpid", "tgkill", "write", "mmap", "munmap", "madvise", "mprotect",
	"mremap", "brk", "sigaltstack", "sched_getaffinity", "sysinfo", "mincore", NULL,
};

/* Reading and writing connected sockets, plain or TLS (OpenSSL wants getrandom). */
static const char *const g_sock_io[] = {
	"read", "readv", "writev", "sendto", "sendmsg", "recvfrom", "recvmsg", "poll", "ppoll",
	"close", "shutdown", "getrandom", "fcntl", "getsockopt", "setsockopt", "getsockname",
	"getpeername", NULL,
};

/* Making connections. */
static const char *const g_sock_open[] = {
	"socket", "connect", "bind", "listen", "accept", "accept4", "socketpair", NULL,
};

/* Taking connections on a listening socket. */
static const char *const g_accept[] = {"accept", "accept4", NULL};

/* Starting threads (pthread_create: clone3, or clone on older kernels). */
static const char *const g_threads[] = {"clone", "clone3", "set_robust_list", "rseq", NULL};

/*
 * Reading files: the migration thread's /proc/swaps and boot id, OpenSSL's
 * CA directory while it verifies a peer; openat itself only read-only
 * (read_files in struct kind_desc).
 */
static const char *const g_read_files[] = {"fstat", "newfstatat", "lseek", "read", "close", NULL};

/*
 * Raising a thread to SCHED_FIFO for the switchover blackout and back
 * (sched_boost.h): the threads that run it, main (a target's load, an API
 * pause) and the source's migration thread, for themselves and for the
 * vCPU, harvest and send threads. Not the vCPU threads' own filter: a
 * guest that took over its vCPU thread must not get a real-time CPU hog.
 */
static const char *const g_snapshot[] = {
	"pread64", "pwrite64", "preadv", "pwritev", "ftruncate", "fsync", "fdatasync", "renameat",
	"renameat2", "unlinkat", "eventfd2", "getrandom", "mincore", "poll", "ppoll", NULL,
};

static const char *const g_sched[] = {"sched_getscheduler", "sched_getparam", "sched_setscheduler",
				       NULL};

/*
 * A virtio device's I/O thread: its disk file (positioned reads and
 * writes, FLUSH), its tap (one frame per read or write), the eventfds it
 * polls (kicks, its control fd) and writes (the irqfd).
 */
static const char *const g_device[] = {
	"read", "readv", "write", "writev", "pread64", "pwrite64", "preadv", "pwritev",
	"fdatasync", "poll", "ppoll", NULL,
};

/* Postcopy on the target. */
static const char *const g_uffd[] = {"userfaultfd", "eventfd2", NULL};

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

#ifdef VMM_SANITIZED
/*
 * ASan/UBSan builds (test builds), every list: LeakSanitizer's check at
 * exit stops the world with a cloned tracer that ptraces every thread and
 * lists /proc/self/task with the old getdents; an error report, from any
 * thread, reads /proc/self/maps and the binary to symbolize its stack.
 */
const char *const seccomp_sanitizer_calls[] = {
	"ptrace", "prctl", "wait4", "waitid", "getppid", "openat", "open", "close", "getdents",
	"getdents64", "read", "readlink", "stat", "lstat", "fstat", "newfstatat", "kill",
	"rt_sigaction", NULL,
};
#endif

/* ioctl requests, by group. */
/* KVM_IRQ_LINE: COM1's interrupt, raised by the vCPU that touches the UART. */
static const unsigned long i_vcpu_run[] = {KVM_RUN, KVM_GET_REGS, KVM_TRANSLATE, KVM_IRQ_LINE, 0};
/*
 * The console input thread: COM1's RX interrupt when a byte arrives, and
 * the terminal put back in its mode when the user detaches.
 */
static const unsigned long i_console[] = {KVM_IRQ_LINE, TCGETS, TCSETS, TCSETSW, 0};
static const unsigned long i_dirty[] = {KVM_GET_DIRTY_LOG, KVM_CLEAR_DIRTY_LOG, 0};
/* The source's migration thread: dirty logging and saving the VM's state. */
static const unsigned long i_save[] = {
	KVM_SET_USER_MEMORY_REGION, KVM_ENABLE_CAP, KVM_CHECK_EXTENSION, KVM_GET_MSR_INDEX_LIST,
	KVM_GET_MP_STATE, KVM_GET_REGS, KVM_GET_SREGS, KVM_GET_XSAVE, KVM_GET_FPU, KVM_GET_XCRS,
	KVM_GET_DEBUGREGS, KVM_GET_LAPIC, KVM_GET_MSRS, KVM_GET_VCPU_EVENTS, KVM_GET_CLOCK,
	KVM_GET_IRQCHIP, KVM_GET_PIT2, KVM_GET_DIRTY_LOG, KVM_CLEAR_DIRTY_LOG, 0,
};
/* Linux 6.1's /dev/userfaultfd ioctl, for build hosts with older headers. */
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif
/*
 * Postcopy: the userfaultfd, or /dev/userfaultfd where the syscall is off
 * (the target's main thread opens it when it answers VM_DESC with CAPS).
 */
static const unsigned long i_uffd[] = {
	UFFDIO_API, UFFDIO_REGISTER, UFFDIO_UNREGISTER, UFFDIO_COPY, UFFDIO_ZEROPAGE, UFFDIO_WAKE,
	USERFAULTFD_IOC_NEW, 0,
};
/*
 * main: creating and loading VMs (a restored COM1 re-asserts its IRQ; a
 * --restore-wait process creates its VM on the loop, its filter on);
 * libevent's FIONREAD, stdio's TCGETS; the console's raw mode set and
 * restored.
 */
static const unsigned long i_main[] = {
	KVM_CREATE_VM, KVM_GET_API_VERSION, KVM_CHECK_EXTENSION, KVM_GET_VCPU_MMAP_SIZE,
	KVM_CREATE_VCPU, KVM_GET_SUPPORTED_CPUID, KVM_SET_CPUID2, KVM_SET_SIGNAL_MASK,
	KVM_SET_IDENTITY_MAP_ADDR, KVM_SET_TSS_ADDR, KVM_CREATE_IRQCHIP, KVM_CREATE_PIT2,
	KVM_GET_TSC_KHZ, KVM_SET_TSC_KHZ, KVM_SET_USER_MEMORY_REGION, KVM_SET_REGS, KVM_SET_SREGS,
	KVM_SET_FPU, KVM_SET_XSAVE, KVM_SET_XCRS, KVM_SET_DEBUGREGS, KVM_SET_LAPIC, KVM_SET_MSRS,
	KVM_SET_VCPU_EVENTS, KVM_SET_MP_STATE, KVM_SET_CLOCK, KVM_SET_IRQCHIP, KVM_SET_PIT2,
	KVM_IRQ_LINE, TCGETS, TCSETS, TCSETSW, FIONBIO, FIONREAD, KVM_IOEVENTFD, KVM_IRQFD,
	TUNSETIFF, SIOCGIFFLAGS, SIOCSIFFLAGS, BLKGETSIZE64, 0,
};
/* clang-format on */

/* clang-format off */
const struct kind_desc seccomp_kinds[SECCOMP_THREAD_COUNT] = {
	/* main starts every other kind: a source's engine, a target's gate and VM. */
	[SECCOMP_THREAD_MAIN] = {.name = "main",
		.groups = {g_base, g_sock_io, g_sock_open, g_threads, g_uffd, g_main, g_sched,
			   g_device},
		.ioctls = {i_main, i_save, i_uffd}, .starts = ~K(SECCOMP_THREAD_MAIN)},
	/*
	 * timer_*: the throttle's slice timer (vcpu_throttle.c), which only
	 * kicks the thread itself; made before the filter, under its starter's.
	 */
	[SECCOMP_THREAD_VCPU] = {.name = "vcpu",
		.groups = {g_base, (const char *const[]){"rt_sigtimedwait", "timer_create",
			   "timer_settime", "timer_delete", NULL}},
		.ioctls = {i_vcpu_run}},
	[SECCOMP_THREAD_MIGRATION] = {.name = "migration",
		.groups = {g_base, g_sock_io, g_sock_open, g_threads,
			   (const char *const[]){"mincore", "eventfd2", NULL}, g_read_files, g_sched},
		.ioctls = {i_save}, .read_files = true,
		.starts = K(SECCOMP_THREAD_HARVEST) | K(SECCOMP_THREAD_SEND) | K(SECCOMP_THREAD_URGENT)},
	[SECCOMP_THREAD_URGENT] = {.name = "urgent", .groups = {g_base, g_sock_io}},
	[SECCOMP_THREAD_HARVEST] = {.name = "harvest",
		.groups = {g_base, (const char *const[]){"mincore", NULL}}, .ioctls = {i_dirty}},
	[SECCOMP_THREAD_SEND] = {.name = "send",
		.groups = {g_base, g_sock_io, (const char *const[]){"mincore", NULL}},
		.ioctls = {i_dirty}},
	/* geteuid: a UNIX peer must be this uid (or root) to hand a VM over. */
	[SECCOMP_THREAD_GATE] = {.name = "gate",
		.groups = {g_base, g_sock_io, g_threads, g_accept, (const char *const[]){"geteuid", NULL}},
		.starts = K(SECCOMP_THREAD_HANDSHAKE)},
	/* TLS: verifying a peer's chain may read the CA directory. */
	[SECCOMP_THREAD_HANDSHAKE] = {.name = "handshake",
		.groups = {g_base, g_sock_io, g_read_files}, .read_files = true},
	[SECCOMP_THREAD_RECEIVE] = {.name = "receive", .groups = {g_base, g_sock_io},
		.ioctls = {i_uffd}},
	[SECCOMP_THREAD_FAULT] = {.name = "fault", .groups = {g_base, g_sock_io}, .ioctls = {i_uffd}},
	[SECCOMP_THREAD_DROP] = {.name = "drop", .groups = {g_base, g_sock_io}, .ioctls = {i_uffd}},
	/* Postcopy resume: takes the source's new connections (TLS), restarts receivers. */
	/* Reads the terminal (or a pipe) and hands the bytes to COM1; the quit eventfd. */
	/*
	 * The snapshot thread: state ioctls, the files the front end opened for
	 * it (it creates none: renames and removes in its directory), its page
	 * workers; a restore's page workers only read, and a lazy restore's
	 * fault and prefetch threads place pages with userfaultfd. Read-only opens: glibc's
	 * free() reads /proc/sys/vm/overcommit_memory when it first shrinks a
	 * thread's heap.
	 */
	[SECCOMP_THREAD_SNAPSHOT] = {.name = "snapshot",
		.groups = {g_base, g_threads, g_read_files, g_snapshot, g_sched},
		.ioctls = {i_save, i_uffd}, .read_files = true,
		.starts = K(SECCOMP_THREAD_SNAPSHOT) | K(SECCOMP_THREAD_HARVEST)},
	[SECCOMP_THREAD_DEVICE] = {.name = "device", .groups = {g_base, g_device}},
	[SECCOMP_THREAD_CONSOLE] = {.name = "console",
		.groups = {g_base, (const char *const[]){"read", "poll", "ppoll", NULL}},
		.ioctls = {i_console}},
	[SECCOMP_THREAD_CONTROL] = {.name = "control",
		.groups = {g_base, g_sock_io, g_threads, g_accept, g_read_files},
		.ioctls = {i_uffd}, .read_files = true, .starts = K(SECCOMP_THREAD_RECEIVE)},
};
/* clang-format on */
