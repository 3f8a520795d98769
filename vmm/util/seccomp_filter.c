/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_filter.c - the allowlists of seccomp_policy.c, compiled once with
 * libseccomp into BPF programs, and the SIGSYS handler that names a
 * forbidden call.
 *
 * A stacked filter can only narrow, so a kind's program also allows what
 * the kinds of the threads it starts do (add_tree()).
 */
#include "malloc_prime.h"
#include "seccomp_filter.h"
#include "seccomp_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/filter.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <malloc.h>
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

/* ------------------------------------------------------------------ */
/* the process-wide table, written once by seccomp_filter_init()       */
/* ------------------------------------------------------------------ */

#define NAME_SLOTS 512
#define NAME_LEN   24

/*
 * The lists, compiled on a thread of their own (seccomp_filter_init()) in
 * the order threads first need them, so that the process goes on meanwhile
 * (a restored VM's creation, its state's load): compiling them all costs
 * milliseconds, more than the rest of a lazy restore. A kind's program is
 * written once, before its state turns ready under `lock`; readers wait for
 * that (kind_wait()), and read it after.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool started, finished;
	int state[SECCOMP_THREAD_COUNT]; /* 0: being built, 1: ready, -errno: failed */
	struct sock_fprog prog[SECCOMP_THREAD_COUNT];
	unsigned allowed[SECCOMP_THREAD_COUNT];
	bool names_ready;		  /* atomic: names written (the last step) */
	char names[NAME_SLOTS][NAME_LEN]; /* for the SIGSYS handler */
} table = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* The vCPUs', then what a restored or booted VM's first threads are, then the rest. */
static const enum seccomp_thread build_order[SECCOMP_THREAD_COUNT] = {
    SECCOMP_THREAD_VCPU,    SECCOMP_THREAD_SNAPSHOT,  SECCOMP_THREAD_DEVICE,
    SECCOMP_THREAD_CONSOLE, SECCOMP_THREAD_MAIN,      SECCOMP_THREAD_MIGRATION,
    SECCOMP_THREAD_URGENT,  SECCOMP_THREAD_HARVEST,   SECCOMP_THREAD_SEND,
    SECCOMP_THREAD_GATE,    SECCOMP_THREAD_HANDSHAKE, SECCOMP_THREAD_RECEIVE,
    SECCOMP_THREAD_FAULT,   SECCOMP_THREAD_DROP,      SECCOMP_THREAD_CONTROL,
};

/* The kind of the calling thread's innermost filter, for the handler; -1 = none. */
static _Thread_local int thread_kind = -1;

const char *seccomp_thread_name(enum seccomp_thread kind)
{
	return kind >= 0 && kind < SECCOMP_THREAD_COUNT ? seccomp_kinds[kind].name : NULL;
}

/* 0 once kind's program is built, or why it could not be (or -EINVAL: no build started). */
static int kind_wait(enum seccomp_thread kind)
{
	int ret;

	pthread_mutex_lock(&table.lock);
	while (table.started && !table.state[kind])
		pthread_cond_wait(&table.cond, &table.lock);
	ret = !table.started ? -EINVAL : table.state[kind] < 0 ? table.state[kind] : 0;
	pthread_mutex_unlock(&table.lock);
	return ret;
}

unsigned seccomp_thread_allowed(enum seccomp_thread kind)
{
	if (kind < 0 || kind >= SECCOMP_THREAD_COUNT || kind_wait(kind))
		return 0;
	return table.allowed[kind];
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
	/*
	 * The names come last in the build (build_main()): a call trapped
	 * before they are in waits for them, spinning (no system call here is
	 * sure to be allowed), for at most about a second.
	 */
	for (unsigned long spin = 0;
	     !__atomic_load_n(&table.names_ready, __ATOMIC_ACQUIRE) && spin < (1ul << 30); spin++) {
#if defined(__x86_64__)
		__builtin_ia32_pause();
#endif
	}
	n = put(line, n, "vmm: seccomp: the ");
	n = put(line, n,
		kind >= 0 && kind < SECCOMP_THREAD_COUNT ? seccomp_kinds[kind].name : "unknown");
	n = put(line, n, " thread made a forbidden system call: ");
	n = put(line, n,
		nr >= 0 && nr < NAME_SLOTS &&
			__atomic_load_n(&table.names_ready, __ATOMIC_ACQUIRE) && table.names[nr][0]
		    ? table.names[nr]
		    : "unknown");
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
	const struct kind_desc *k = &seccomp_kinds[kind];
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
		if (k != (int)kind && (seccomp_kinds[kind].starts & K(k)))
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
	for (const char *const *s = seccomp_sanitizer_calls; !ret && *s; s++)
		ret = add_call(ctx, seccomp_syscall_resolve_name(*s), seen, &count);

#endif
	if (!ret)
		ret = export_prog(ctx, &table.prog[kind]);
	seccomp_release(ctx);
	table.allowed[kind] = count;
	return ret;
}

/* The build thread: each kind in build_order, then the names the handler prints. */
static void *build_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < SECCOMP_THREAD_COUNT; i++) {
		int ret = compile(build_order[i]);

		pthread_mutex_lock(&table.lock);
		table.state[build_order[i]] = ret ? ret : 1;
		pthread_cond_broadcast(&table.cond);
		pthread_mutex_unlock(&table.lock);
	}
	for (int nr = 0; nr < NAME_SLOTS; nr++) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);

		if (name)
			snprintf(table.names[nr], NAME_LEN, "%s", name);
		free(name);
	}
	__atomic_store_n(&table.names_ready, true, __ATOMIC_RELEASE);
	pthread_mutex_lock(&table.lock);
	table.finished = true;
	pthread_cond_broadcast(&table.cond);
	pthread_mutex_unlock(&table.lock);
	return NULL;
}

/* fork() while the build runs: the child would have no build thread; wait for it first. */
static void build_before_fork(void)
{
	pthread_mutex_lock(&table.lock);
	while (table.started && !table.finished)
		pthread_cond_wait(&table.cond, &table.lock);
	pthread_mutex_unlock(&table.lock);
}

/*
 * glibc sizes its malloc arenas lazily: the first thread that needs a new
 * arena once there are more than 8 reads /sys/devices/system/cpu/online for
 * the limit. Under a filter without openat (the postcopy fault thread, whose
 * first malloc comes with its first TLS page request) that read stopped the
 * VMM. The limit is set here instead, to glibc's own default (8 arenas per
 * online CPU), before any thread enters a filter.
 */
static void size_malloc_arenas(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus > 0)
		mallopt(M_ARENA_MAX, (int)(cpus < 1024 ? cpus : 1024) * 8);
}

int seccomp_filter_init(char *err, size_t errlen)
{
	struct sigaction sa;
	int ret;

	if (table.started)
		return 0;
	/*
	 * Before any thread is filtered (the build thread included): glibc's
	 * arena limit and its one lazy file read, from a thread of its own.
	 */
	size_malloc_arenas();
	malloc_prime_lazy_reads();
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
	ret = -pthread_atfork(build_before_fork, NULL, NULL);
	if (!ret) {
		table.started = true;
		ret = -pthread_create(&table.thread, NULL, build_main, NULL);
		table.started = !ret;
	}
	if (ret) {
		snprintf(err, errlen, "seccomp: starting to build the filters: %s", strerror(-ret));
		return ret;
	}
	pthread_detach(table.thread);
	return 0;
}

int seccomp_thread_enter(enum seccomp_thread kind, bool on, char *err, size_t errlen)
{
	int ret;

	if (!on)
		return 0;
	if (kind < 0 || kind >= SECCOMP_THREAD_COUNT || kind_wait(kind) == -EINVAL) {
		snprintf(err, errlen, "seccomp: no filter for thread kind %d (not initialised)",
			 (int)kind);
		return -EINVAL;
	}
	ret = kind_wait(kind);
	if (ret) {
		snprintf(err, errlen, "seccomp: building the %s thread's filter: %s",
			 seccomp_kinds[kind].name, strerror(-ret));
		return ret;
	}
	/* Without privileges the kernel takes a filter only under no_new_privs. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &table.prog[kind]) < 0) {
		int e = errno;

		snprintf(err, errlen, "seccomp: installing the %s thread's filter: %s",
			 seccomp_kinds[kind].name, strerror(e));
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
