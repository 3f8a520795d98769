/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_filter.c - the allowlists, compiled once with libseccomp into
 * BPF programs, and the SIGSYS handler that names a forbidden call.
 *
 * Lists are built from groups (what every thread needs, socket I/O, thread
 * creation, files...) so that each kind reads as the jobs its thread does.
 * ioctl is allowed by request number only (the KVM and userfaultfd
 * requests the code issues), as Firecracker does. main's list is the
 * union of all the others, since every engine thread of a source starts
 * under main's filter and a stacked filter can only narrow.
 */
#include "seccomp_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <termios.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define VMM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VMM_SANITIZED 1
#endif
#endif

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
static const char *const g_sched[] = {"sched_getscheduler", "sched_getparam", "sched_setscheduler",
				       NULL};

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
static const char *const g_sanitizer[] = {
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
 * main: creating and loading VMs (a restored COM1 re-asserts its IRQ);
 * libevent's FIONREAD, stdio's TCGETS; the console's raw mode set and
 * restored.
 */
static const unsigned long i_main[] = {
	KVM_CREATE_VM, KVM_GET_API_VERSION, KVM_CHECK_EXTENSION, KVM_GET_VCPU_MMAP_SIZE,
	KVM_CREATE_VCPU, KVM_GET_SUPPORTED_CPUID, KVM_SET_CPUID2, KVM_SET_SIGNAL_MASK,
	KVM_SET_IDENTITY_MAP_ADDR, KVM_SET_TSS_ADDR, KVM_CREATE_IRQCHIP, KVM_CREATE_PIT2,
	KVM_GET_TSC_KHZ, KVM_SET_USER_MEMORY_REGION, KVM_SET_REGS, KVM_SET_SREGS, KVM_SET_FPU,
	KVM_SET_XSAVE, KVM_SET_XCRS, KVM_SET_DEBUGREGS, KVM_SET_LAPIC, KVM_SET_MSRS,
	KVM_SET_VCPU_EVENTS, KVM_SET_MP_STATE, KVM_SET_CLOCK, KVM_SET_IRQCHIP, KVM_SET_PIT2,
	KVM_IRQ_LINE, TCGETS, TCSETS, TCSETSW, FIONBIO, FIONREAD, 0,
};
/* clang-format on */

#define K(kind) (1u << (kind))

struct kind_desc {
	const char *name;
	const char *const *groups[8];
	const unsigned long *ioctls[4];
	bool read_files; /* g_read_files, and openat without write access or O_CREAT */
	/*
	 * The kinds of the threads this kind's threads start: they begin
	 * under this filter, so it allows all they do (compile()).
	 */
	unsigned starts;
};

/* clang-format off */
static const struct kind_desc kinds[SECCOMP_THREAD_COUNT] = {
	/* main starts every other kind: a source's engine, a target's gate and VM. */
	[SECCOMP_THREAD_MAIN] = {.name = "main",
		.groups = {g_base, g_sock_io, g_sock_open, g_threads, g_uffd, g_main, g_sched},
		.ioctls = {i_main, i_save, i_uffd}, .starts = ~K(SECCOMP_THREAD_MAIN)},
	[SECCOMP_THREAD_VCPU] = {.name = "vcpu",
		.groups = {g_base, (const char *const[]){"rt_sigtimedwait", NULL}},
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
	[SECCOMP_THREAD_GATE] = {.name = "gate", .groups = {g_base, g_sock_io, g_threads, g_accept},
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
	[SECCOMP_THREAD_CONSOLE] = {.name = "console",
		.groups = {g_base, (const char *const[]){"read", "poll", "ppoll", NULL}},
		.ioctls = {i_console}},
	[SECCOMP_THREAD_CONTROL] = {.name = "control",
		.groups = {g_base, g_sock_io, g_threads, g_accept, g_read_files},
		.ioctls = {i_uffd}, .read_files = true, .starts = K(SECCOMP_THREAD_RECEIVE)},
};
/* clang-format on */

/* ------------------------------------------------------------------ */
/* the process-wide table, written once by seccomp_filter_init()       */
/* ------------------------------------------------------------------ */

#define NAME_SLOTS 512
#define NAME_LEN   24

static struct {
	bool ready;
	struct sock_fprog prog[SECCOMP_THREAD_COUNT];
	unsigned allowed[SECCOMP_THREAD_COUNT];
	char names[NAME_SLOTS][NAME_LEN]; /* for the SIGSYS handler */
} table;

/* The kind of the calling thread's innermost filter, for the handler; -1 = none. */
static _Thread_local int thread_kind = -1;

const char *seccomp_thread_name(enum seccomp_thread kind)
{
	return kind >= 0 && kind < SECCOMP_THREAD_COUNT ? kinds[kind].name : NULL;
}

unsigned seccomp_thread_allowed(enum seccomp_thread kind)
{
	return kind >= 0 && kind < SECCOMP_THREAD_COUNT ? table.allowed[kind] : 0;
}

/* ------------------------------------------------------------------ */
/* SIGSYS                                                              */
/* ------------------------------------------------------------------ */

static size_t put(char *buf, size_t at, const char *s)
{
	while (*s && at < 255)
		buf[at++] = *s++;
	return at;
}

/* v in base 10 or 16 (with "0x"). */
static size_t put_uint(char *buf, size_t at, unsigned long v, unsigned base)
{
	char digits[24];
	int n = 0;

	if (base == 16)
		at = put(buf, at, "0x");
	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && n < (int)sizeof(digits));
	while (n && at < 255)
		buf[at++] = digits[--n];
	return at;
}

/* Async-signal-safe: no stdio, no allocation; the names were resolved at init. */
static void (*volatile exit_hook)(void);

void seccomp_set_exit_hook(void (*fn)(void))
{
	exit_hook = fn;
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	int nr = si->si_syscall;
	int kind = thread_kind;
	char line[256];
	size_t n = 0;

	(void)sig;
	n = put(line, n, "vmm: seccomp: the ");
	n = put(line, n, kind >= 0 && kind < SECCOMP_THREAD_COUNT ? kinds[kind].name : "unknown");
	n = put(line, n, " thread made a forbidden system call: ");
	n = put(line, n,
		nr >= 0 && nr < NAME_SLOTS && table.names[nr][0] ? table.names[nr] : "unknown");
	n = put(line, n, " (");
	n = put_uint(line, n, (unsigned)nr, 10);
#if defined(__x86_64__)
	/* An ioctl is allowed by request: say which one was not. */
	if (nr == __NR_ioctl) {
		n = put(line, n, ", request ");
		n = put_uint(line, n, (unsigned long)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RSI],
			     16);
	}
#else
	(void)uc;
#endif
	n = put(line, n, "); stopping\n");
	if (write(STDERR_FILENO, line, n) < 0) {
		/* nothing left to try: the exit status still says it */
	}
	if (exit_hook)
		exit_hook(); /* e.g. the terminal's mode put back */
	_exit(SECCOMP_EXIT_STATUS);
}

/* ------------------------------------------------------------------ */
/* compiling                                                           */
/* ------------------------------------------------------------------ */

/* Argument `arg`, masked, equals v (libseccomp's SCMP_A* without their partial initialisers). */
static struct scmp_arg_cmp arg_eq(unsigned arg, uint64_t mask, uint64_t v)
{
	return (struct scmp_arg_cmp){
	    .arg = arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = mask, .datum_b = v};
}

/*
 * seen[nr]: SEEN_ARGS once allowed for some arguments, SEEN_ALL once for
 * any; each call counts once (groups overlap, and main adds every kind).
 */
enum { SEEN_NONE, SEEN_ARGS, SEEN_ALL };

static void count_args(int nr, unsigned char *seen, unsigned *count)
{
	*count += seen[nr] == SEEN_NONE;
	if (seen[nr] == SEEN_NONE)
		seen[nr] = SEEN_ARGS;
}

static int add_call(scmp_filter_ctx ctx, int nr, unsigned char *seen, unsigned *count)
{
	int ret;

	if (nr < 0 || nr >= NAME_SLOTS)
		return nr == __NR_SCMP_ERROR ? 0 : -EINVAL; /* a call this arch lacks */
	if (seen[nr] == SEEN_ALL)
		return 0;
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
	if (ret)
		return ret;
	*count += seen[nr] == SEEN_NONE;
	seen[nr] = SEEN_ALL;
	return 0;
}

/* compile() of one filter at a time (seccomp_filters_init, before any thread). */
static bool tcsets_rule_added;

static int add_kind(scmp_filter_ctx ctx, enum seccomp_thread kind, unsigned char *seen,
		    unsigned *count)
{
	const struct kind_desc *k = &kinds[kind];
	int ret;

	/*
	 * Every list lets a thread narrow its filter: a thread created by a
	 * filtered one installs its own kind's on top. Both only take rights away.
	 */
	ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
			       arg_eq(0, ~0ull, PR_SET_NO_NEW_PRIVS));
	if (!ret || ret == -EEXIST)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(seccomp), 1,
				       arg_eq(0, ~0ull, SECCOMP_SET_MODE_FILTER));
	if (ret && ret != -EEXIST)
		return ret;
	count_args(__NR_prctl, seen, count);
	count_args(__NR_seccomp, seen, count);
	/*
	 * Every list: the terminal on stdin put back in its mode (TCSETS), since
	 * a fatal signal, and its handler, can come in any
	 * thread (console_input.c).
	 */
	/*
	 * Once per filter, and on the request alone: libseccomp 2.5 leaks the
	 * tree of a rule that also compares the fd next to the request-only
	 * ioctl rules (LeakSanitizer). TCSETS changes terminal modes only.
	 */
	if (!tcsets_rule_added) {
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				       arg_eq(1, 0xffffffffu, TCSETS & 0xffffffffu));
		if (ret && ret != -EEXIST)
			return ret;
		tcsets_rule_added = true;
	}
	count_args(__NR_ioctl, seen, count);

	for (int g = 0; g < (int)(sizeof(k->groups) / sizeof(k->groups[0])) && k->groups[g]; g++) {
		for (const char *const *s = k->groups[g]; *s; s++) {
			ret = add_call(ctx, seccomp_syscall_resolve_name(*s), seen, count);
			if (ret)
				return ret;
		}
	}
	if (k->read_files) {
		ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
				       arg_eq(2, O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY));
		if (ret && ret != -EEXIST)
			return ret;
		count_args(__NR_openat, seen, count);
	}
	for (int g = 0; g < 4 && k->ioctls[g]; g++) {
		for (const unsigned long *r = k->ioctls[g]; *r; r++) {
			/* The kernel reads the request as an unsigned int. */
			ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
					       arg_eq(1, 0xffffffffu, *r & 0xffffffffu));
			if (ret && ret != -EEXIST)
				return ret;
			count_args(__NR_ioctl, seen, count);
		}
	}
	return 0;
}

/* Writes the program through a memfd: libseccomp 2.5 exports only to an fd. */
static int export_prog(scmp_filter_ctx ctx, struct sock_fprog *out)
{
	int fd = memfd_create("vmm-seccomp", MFD_CLOEXEC);
	off_t len;
	void *buf;
	int ret;

	if (fd < 0)
		return -errno;
	ret = seccomp_export_bpf(ctx, fd);
	len = ret ? 0 : lseek(fd, 0, SEEK_CUR);
	if (!ret && (len <= 0 || len % sizeof(struct sock_filter)))
		ret = -EINVAL;
	buf = ret ? NULL : malloc((size_t)len);
	if (!ret && !buf)
		ret = -ENOMEM;
	if (!ret && pread(fd, buf, (size_t)len, 0) != len)
		ret = -EIO;
	close(fd);
	if (ret) {
		free(buf);
		return ret;
	}
	out->filter = buf;
	out->len = (unsigned short)(len / sizeof(struct sock_filter));
	return 0;
}

/* kind's list and those of the kinds it starts, and theirs. */
static int add_tree(scmp_filter_ctx ctx, enum seccomp_thread kind, unsigned char *seen,
		    unsigned *count)
{
	int ret = add_kind(ctx, kind, seen, count);

	for (int k = 0; !ret && k < SECCOMP_THREAD_COUNT; k++)
		if (k != (int)kind && (kinds[kind].starts & K(k)))
			ret = add_tree(ctx, (enum seccomp_thread)k, seen, count);
	return ret;
}

static int compile(enum seccomp_thread kind)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	unsigned char seen[NAME_SLOTS] = {SEEN_NONE};
	unsigned count = 0;
	int ret;

	if (!ctx)
		return -ENOMEM;
	tcsets_rule_added = false;
	ret = add_tree(ctx, kind, seen, &count);
#ifdef VMM_SANITIZED
	/* Any thread may be the one whose error the sanitizer reports. */
	for (const char *const *s = g_sanitizer; !ret && *s; s++)
		ret = add_call(ctx, seccomp_syscall_resolve_name(*s), seen, &count);

#endif
	if (!ret)
		ret = export_prog(ctx, &table.prog[kind]);
	seccomp_release(ctx);
	table.allowed[kind] = count;
	return ret;
}

int seccomp_filter_init(char *err, size_t errlen)
{
	struct sigaction sa;
	int ret;

	if (table.ready)
		return 0;
	for (int nr = 0; nr < NAME_SLOTS; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

		if (name)
			snprintf(table.names[nr], NAME_LEN, "%s", name);
		free(name);
	}
	for (int k = 0; k < SECCOMP_THREAD_COUNT; k++) {
		ret = compile((enum seccomp_thread)k);
		if (ret) {
			snprintf(err, errlen, "seccomp: building the %s thread's filter: %s",
				 kinds[k].name, strerror(-ret));
			return ret;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0) {
		ret = -errno;
		snprintf(err, errlen, "seccomp: installing the SIGSYS handler: %s",
			 strerror(errno));
		return ret;
	}
	table.ready = true;
	return 0;
}

int seccomp_thread_enter(enum seccomp_thread kind, bool on, char *err, size_t errlen)
{
	if (!on)
		return 0;
	if (kind < 0 || kind >= SECCOMP_THREAD_COUNT || !table.ready) {
		snprintf(err, errlen, "seccomp: no filter for thread kind %d (not initialised)",
			 (int)kind);
		return -EINVAL;
	}
	/* Without privileges the kernel takes a filter only under no_new_privs. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &table.prog[kind]) < 0) {
		int e = errno;

		snprintf(err, errlen, "seccomp: installing the %s thread's filter: %s",
			 kinds[kind].name, strerror(e));
		return -e;
	}
	thread_kind = (int)kind;
	return 0;
}

void seccomp_thread_enter_or_stop(enum seccomp_thread kind, bool on)
{
	char err[160], line[256];
	int n;

	if (!seccomp_thread_enter(kind, on, err, sizeof(err)))
		return;
	n = snprintf(line, sizeof(line), "vmm: %s; stopping\n", err);
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* the exit status below still says it */
	}
	_exit(SECCOMP_EXIT_STATUS);
}
