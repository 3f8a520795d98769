/* SPDX-License-Identifier: Apache-2.0 */
#include "harness_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"

static int open_out(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return fd < 0 ? -errno : fd;
}

/*
 * In the child, between fork and exec: only async-signal-safe calls. Any
 * failure is written as an errno to `report` (close-on-exec, so a
 * successful exec sends the parent EOF instead).
 */
static void child(const struct hx_spawn *s, char **envp, int out, int errfd, int report,
		  pid_t parent)
{
	int e;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) /* the harness died before prctl */
		_exit(127);
	if (dup2(out, 1) < 0 || (errfd >= 0 && dup2(errfd, 2) < 0))
		goto fail;
	/*
	 * No console input: a VM's stdin is /dev/null, never the harness's
	 * terminal (a child in its own process group that put the terminal in
	 * raw mode would be stopped by SIGTTOU, and would eat its input).
	 */
	e = open("/dev/null", O_RDONLY);
	if (e < 0 || (e != 0 && (dup2(e, 0) < 0 || close(e) < 0)))
		goto fail;
	signal(SIGPIPE, SIG_DFL);
	execvpe(s->argv[0], s->argv, envp);
fail:
	e = errno;
	if (write(report, &e, sizeof(e)) < 0) {
		/* nothing left to tell anyone */
	}
	_exit(127);
}

/* The harness's environment with `add` ("NAME=VALUE") set over it; built before fork. */
static char **make_env(char *const *add)
{
	extern char **environ;
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n])
		n++;
	for (char *const *a = add; a && *a; a++)
		k++;
	envp = calloc(n + k + 1, sizeof(*envp));
	if (!envp)
		return NULL;
	memcpy(envp, environ, n * sizeof(*envp));
	for (char *const *a = add; a && *a; a++) {
		size_t name = strcspn(*a, "="), i;

		for (i = 0; i < n; i++)
			if (!strncmp(envp[i], *a, name) && envp[i][name] == '=')
				break;
		envp[i] = *a;
		if (i == n)
			n++;
	}
	return envp;
}

int hx_spawn(struct hx_proc *p, const char *name, const struct hx_spawn *s, int *out_fd, char *err,
	     size_t errlen)
{
	int out[2] = {-1, -1}, errfd = -1, report[2] = {-1, -1}, e = 0, ret;
	pid_t parent = getpid();
	char **envp;
	ssize_t n;

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	*out_fd = -1;
	envp = make_env(s->env);
	if (!envp) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	if (s->out_path) {
		ret = open_out(s->out_path, err, errlen);
		if (ret < 0)
			goto out;
		out[1] = ret;
	} else if (pipe2(out, O_CLOEXEC)) {
		ret = -errno;
		snprintf(err, errlen, "%s: pipe: %s", name, strerror(errno));
		goto out;
	}
	if (s->err_path && (errfd = open_out(s->err_path, err, errlen)) < 0) {
		ret = errfd;
		goto out;
	}
	if (pipe2(report, O_CLOEXEC)) {
		ret = -errno;
		snprintf(err, errlen, "%s: pipe: %s", name, strerror(errno));
		goto out;
	}
	p->pid = fork();
	if (p->pid == 0)
		child(s, envp, out[1], errfd, report[1], parent);
	if (p->pid < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: fork: %s", name, strerror(errno));
		p->pid = 0;
		goto out;
	}
	/* Also in the parent, so a signal sent right after spawn reaches the group. */
	setpgid(p->pid, p->pid);
	close(report[1]);
	report[1] = -1;
	do
		n = read(report[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n == sizeof(e)) {
		waitpid(p->pid, &p->status, 0);
		p->pid = 0;
		ret = -e;
		snprintf(err, errlen, "%s: cannot run %s: %s", name, s->argv[0], strerror(e));
		goto out;
	}
	ret = 0;
	if (!s->out_path) {
		*out_fd = out[0];
		out[0] = -1;
	}
out:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (report[i] >= 0)
			close(report[i]);
	}
	if (errfd >= 0)
		close(errfd);
	free(envp);
	return ret;
}

bool hx_running(struct hx_proc *p)
{
	pid_t w;

	if (p->pid <= 0)
		return false;
	w = waitpid(p->pid, &p->status, WNOHANG);
	if (w < 0 && errno == ECHILD) /* a process someone else started: alive while it exists */
		return !kill(p->pid, 0) || errno == EPERM;
	if (w == p->pid) {
		p->exited = true;
		p->pid = 0;
		return false;
	}
	return true;
}

int hx_wait_exit(struct hx_proc *p, int timeout_ms)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
	unsigned nap = 1;

	while (hx_running(p)) {
		if (now_ns() >= end)
			return -ETIMEDOUT;
		sleep_ms(nap);
		if (nap < 20) /* quick for short-lived commands, light for long waits */
			nap *= 2;
	}
	return 0;
}

void hx_signal(struct hx_proc *p, int sig)
{
	if (hx_running(p))
		kill(p->pid, sig);
}

int hx_reap(struct hx_proc *p, int timeout_ms)
{
	if (!p->exited && p->pid <= 0)
		return -1;
	if (hx_wait_exit(p, timeout_ms)) {
		kill(-p->pid, SIGKILL);
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &p->status, 0);
		p->exited = true;
		p->pid = 0;
	}
	return hx_exit_code(p->status);
}

int hx_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

void hx_describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "wait status 0x%x", status);
}

void hx_argv_add(struct hx_argv *a, const char *s)
{
	char *c;

	if (a->n >= HX_ARGV_MAX || !(c = strdup(s))) {
		a->overflow = true;
		return;
	}
	a->v[a->n++] = c;
	a->v[a->n] = NULL;
}

void hx_argv_addf(struct hx_argv *a, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		a->overflow = true;
	else
		hx_argv_add(a, buf);
}

void hx_argv_addv(struct hx_argv *a, char *const *v)
{
	for (; v && *v; v++)
		hx_argv_add(a, *v);
}

void hx_argv_split(struct hx_argv *a, const char *s)
{
	while (s && *s) {
		size_t n = strcspn(s, " ");

		if (n)
			hx_argv_addf(a, "%.*s", (int)n, s);
		s += n;
		s += strspn(s, " ");
	}
}

void hx_argv_free(struct hx_argv *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	memset(a, 0, sizeof(*a));
}

int hx_scaled_ms(double ms)
{
	const char *s = getenv("VMM_TEST_TIMEOUT_SCALE");
	double f = s ? strtod(s, NULL) : 1;

	if (!(f >= 1 && f <= 20))
		f = 1;
	return (int)(ms * f);
}
