/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seccomp_filter.c - the lists of a policy's kinds (seccomp_policy.h),
 * compiled once with libseccomp into BPF programs, and installed per
 * thread. The kinds are the caller's: nothing here knows what any thread
 * does. The SIGSYS handler that names a forbidden call, and what it needs
 * at hand, is seccomp_report.c's.
 *
 * A stacked filter can only narrow, so a kind's program also allows what
 * the kinds of the threads it starts do (add_tree()).
 */
#include "malloc_prime.h"
#include "seccomp_filter.h"
#include "seccomp_policy.h"
#include "seccomp_report.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* the process-wide table, written once by seccomp_filter_init()       */
/* ------------------------------------------------------------------ */

/*
 * The lists, compiled on a thread of their own (seccomp_filter_init()) in
 * the order threads first need them, so that the process goes on meanwhile
 * (a restored VM's creation, its state's load): compiling them all costs
 * milliseconds, more than the rest of a lazy restore. A kind's program is
 * written once, before its state turns ready under `lock`; readers wait for
 * that (kind_wait()), and read it after. Index i is policy->kinds[i]: the
 * build thread compiles them in the policy's order (the caller puts the
 * kinds whose threads start first, the vCPUs', first).
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool started, finished;
	const struct seccomp_policy *policy; /* written once, before the build starts */
	int state[SECCOMP_POLICY_MAX_KINDS]; /* 0: being built, 1: ready, -errno: failed */
	struct sock_fprog prog[SECCOMP_POLICY_MAX_KINDS];
	unsigned allowed[SECCOMP_POLICY_MAX_KINDS];
} table = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

const char *seccomp_thread_name(const struct seccomp_kind *kind)
{
	return kind ? kind->name : NULL;
}

/* kind's index in the policy; -1 when there is none or kind is not in it. */
static int kind_index(const struct seccomp_kind *kind)
{
	const struct seccomp_policy *p = table.policy;

	for (unsigned i = 0; kind && p && i < p->count; i++)
		if (p->kinds[i] == kind)
			return (int)i;
	return -1;
}

/*
 * 0 once the program of kind i is built, or why it could not be (or
 * -EINVAL: no build started).
 */
static int kind_wait(int i)
{
	int ret;

	pthread_mutex_lock(&table.lock);
	while (table.started && !table.state[i])
		pthread_cond_wait(&table.cond, &table.lock);
	ret = !table.started ? -EINVAL : table.state[i] < 0 ? table.state[i] : 0;
	pthread_mutex_unlock(&table.lock);
	return ret;
}

unsigned seccomp_thread_allowed(const struct seccomp_kind *kind)
{
	int i = kind_index(kind);

	if (i < 0 || kind_wait(i))
		return 0;
	return table.allowed[i];
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

	if (nr < 0 || nr >= SECCOMP_NR_SLOTS)
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

/* compile() of one filter at a time (on the build thread). */
static bool every_rule_added;

static int add_kind(scmp_filter_ctx ctx, const struct seccomp_kind *k, unsigned char *seen,
		    unsigned *count)
{
	unsigned long every = table.policy->every_ioctl;
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
	 * Every list: the policy's every_ioctl (the front end's: TCSETS, the
	 * terminal on stdin put back in its mode, since a fatal signal, and
	 * its handler, can come in any thread). Once per filter, and on the
	 * request alone: libseccomp 2.5 leaks the tree of a rule that also
	 * compares the fd next to the request-only ioctl rules (LeakSanitizer).
	 */
	if (every) {
		if (!every_rule_added) {
			ret = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
					       arg_eq(1, 0xffffffffu, every & 0xffffffffu));
			if (ret && ret != -EEXIST)
				return ret;
			every_rule_added = true;
		}
		count_args(__NR_ioctl, seen, count);
	}

	for (int g = 0; g < SECCOMP_KIND_GROUPS && k->groups[g]; g++) {
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
	for (int g = 0; g < SECCOMP_KIND_IOCTLS && k->ioctls[g]; g++) {
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

/*
 * kind's list and those in its `with` (the kinds it starts, the parts of
 * lower layers it runs), and theirs; with_all: every other kind of the
 * policy. A loop of `with` is refused (-ELOOP) rather than followed.
 */
static int add_tree(scmp_filter_ctx ctx, const struct seccomp_kind *kind, unsigned char *seen,
		    unsigned *count, int depth)
{
	const struct seccomp_policy *p = table.policy;
	int ret;

	if (depth > 8)
		return -ELOOP;
	ret = add_kind(ctx, kind, seen, count);
	for (int w = 0; !ret && w < SECCOMP_KIND_WITH && kind->with[w]; w++)
		if (kind->with[w] != kind)
			ret = add_tree(ctx, kind->with[w], seen, count, depth + 1);
	for (unsigned i = 0; !ret && kind->with_all && i < p->count; i++)
		if (p->kinds[i] != kind && !p->kinds[i]->with_all)
			ret = add_tree(ctx, p->kinds[i], seen, count, depth + 1);
	return ret;
}

/* The program of the policy's kind i, and the count of the calls it allows. */
static int compile(int i)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	unsigned char seen[SECCOMP_NR_SLOTS] = {SEEN_NONE};
	unsigned count = 0;
	int ret;

	if (!ctx)
		return -ENOMEM;
	every_rule_added = false;
	ret = add_tree(ctx, table.policy->kinds[i], seen, &count, 0);
#ifdef VMM_SANITIZED
	/* Any thread may be the one whose error the sanitizer reports. */
	for (const char *const *s = seccomp_sanitizer_calls; !ret && *s; s++)
		ret = add_call(ctx, seccomp_syscall_resolve_name(*s), seen, &count);

#endif
	if (!ret)
		ret = export_prog(ctx, &table.prog[i]);
	seccomp_release(ctx);
	table.allowed[i] = count;
	return ret;
}

/* The build thread: each kind in the policy's order, then the names the handler prints. */
static void *build_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < (int)table.policy->count; i++) {
		int ret = compile(i);

		pthread_mutex_lock(&table.lock);
		table.state[i] = ret ? ret : 1;
		pthread_cond_broadcast(&table.cond);
		pthread_mutex_unlock(&table.lock);
	}
	seccomp_report_resolve_names();
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

int seccomp_filter_init(const struct seccomp_policy *policy, char *err, size_t errlen)
{
	int ret;

	if (table.started)
		return 0;
	if (!policy || !policy->count || policy->count > SECCOMP_POLICY_MAX_KINDS) {
		snprintf(err, errlen, "seccomp: a policy of %u kinds (1..%d)",
			 policy ? policy->count : 0, SECCOMP_POLICY_MAX_KINDS);
		return -EINVAL;
	}
	table.policy = policy;
	/*
	 * Before any thread is filtered (the build thread included): glibc's
	 * arena limit and its one lazy file read, from a thread of its own.
	 */
	size_malloc_arenas();
	malloc_prime_lazy_reads();
	ret = seccomp_report_install();
	if (ret) {
		snprintf(err, errlen, "seccomp: installing the SIGSYS handler: %s", strerror(-ret));
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

int seccomp_thread_enter(const struct seccomp_kind *kind, bool on, char *err, size_t errlen)
{
	int i, ret;

	if (!on)
		return 0;
	i = kind_index(kind);
	if (i < 0 || kind_wait(i) == -EINVAL) {
		snprintf(err, errlen, "seccomp: no filter for the %s thread (not initialised)",
			 kind ? kind->name : "unknown");
		return -EINVAL;
	}
	ret = kind_wait(i);
	if (ret) {
		snprintf(err, errlen, "seccomp: building the %s thread's filter: %s", kind->name,
			 strerror(-ret));
		return ret;
	}
	/* Without privileges the kernel takes a filter only under no_new_privs. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &table.prog[i]) < 0) {
		int e = errno;

		snprintf(err, errlen, "seccomp: installing the %s thread's filter: %s", kind->name,
			 strerror(e));
		return -e;
	}
	seccomp_report_thread_kind(kind);
	return 0;
}

void seccomp_thread_enter_or_stop(const struct seccomp_kind *kind, bool on)
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
