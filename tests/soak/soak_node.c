/* SPDX-License-Identifier: Apache-2.0 */
#include "soak_node.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "harness_net.h"

int soak_node_start(struct soak_node *n, const struct soak_env *e, const struct soak_host *h,
		    const char *stem, char *const *args, bool digest, char *err, size_t errlen)
{
	char run_dir[PATH_MAX + 16];
	char *env[] = {run_dir, digest ? "VMM_TEST_DIGEST=1" : NULL, NULL};
	struct hx_argv a = {0};
	struct hx_spawn s;
	int fd, ret;

	memset(n, 0, sizeof(*n));
	n->host = h;
	n->digest = digest;
	snprintf(run_dir, sizeof(run_dir), "VMM_RUN_DIR=%s", h->run_dir);
	snprintf(n->out_path, sizeof(n->out_path), "%s/%s.out", e->dir, stem);
	snprintf(n->err_path, sizeof(n->err_path), "%s/%s.err", e->dir, stem);
	hx_argv_add(&a, e->vmm);
	hx_argv_add(&a, "run");
	hx_argv_addv(&a, args);
	hx_argv_add(&a, "--set");
	hx_argv_addf(&a, "migration.tls_cert=%s", h->tls_cert);
	hx_argv_add(&a, "--set");
	hx_argv_addf(&a, "migration.tls_key=%s", h->tls_key);
	hx_argv_add(&a, "--set");
	hx_argv_addf(&a, "migration.tls_ca=%s", h->tls_ca);
	if (a.overflow) {
		hx_argv_free(&a);
		snprintf(err, errlen, "%s: too many arguments", stem);
		return -E2BIG;
	}
	s = (struct hx_spawn){a.v, env, n->out_path, n->err_path};
	ret = hx_spawn(&n->proc, stem, &s, &fd, err, errlen);
	hx_argv_free(&a);
	if (!ret)
		ret = hx_console_file(&n->out, stem, n->out_path, &n->proc, err, errlen);
	if (!ret)
		ret = hx_console_file(&n->err, stem, n->err_path, &n->proc, err, errlen);
	return ret;
}

int soak_node_wait_listen(struct soak_node *n, int timeout_ms, char *err, size_t errlen)
{
	int ret = hx_wait_listen(&n->proc, n->host->port, timeout_ms, err, errlen);

	if (ret)
		snprintf(err + strlen(err), errlen - strlen(err), " (see %s)", n->err_path);
	return ret;
}

struct socket_wait {
	struct soak_node *n;
	char sock[PATH_MAX + 64], incoming[PATH_MAX + 80];
};

static int socket_taken_over(void *arg)
{
	struct socket_wait *w = arg;
	struct stat st;

	if (!hx_running(&w->n->proc))
		return -ESRCH;
	return !stat(w->sock, &st) && S_ISSOCK(st.st_mode) && lstat(w->incoming, &st);
}

int soak_node_wait_socket(struct soak_node *n, const char *name, int timeout_ms, char *err,
			  size_t errlen)
{
	struct socket_wait w = {n, "", ""};
	struct hx_watch watch = {{&n->out, &n->err}, 2};
	int ret;

	snprintf(w.sock, sizeof(w.sock), "%s/%s.sock", n->host->run_dir, name);
	snprintf(w.incoming, sizeof(w.incoming), "%s.incoming", w.sock);
	ret = hx_watch_until(&watch, socket_taken_over, &w, timeout_ms);
	if (ret == -ESRCH)
		snprintf(err, errlen, "%s exited before it served %s (see %s)", n->proc.name,
			 w.sock, n->err_path);
	else if (ret)
		snprintf(err, errlen, "%s does not serve %s (alone) after %g s (see %s)",
			 n->proc.name, w.sock, timeout_ms / 1e3, n->err_path);
	return ret;
}

void soak_node_pump(struct soak_node *n)
{
	hx_console_pump(&n->out);
	hx_console_pump(&n->err);
}

bool soak_node_running(struct soak_node *n)
{
	return hx_running(&n->proc);
}

/* The number after `key` in /proc/PID/status ("Threads:\t3"), or -1. */
static long status_field(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

int soak_counts_read(pid_t pid, struct soak_counts *c)
{
	char path[64], text[4096];
	struct dirent *d;
	FILE *f;
	DIR *dir;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	c->fds = 0;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			c->fds++;
	closedir(dir);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	c->threads = status_field(text, "\nThreads:");
	c->rss_kb = status_field(text, "\nVmRSS:");
	return c->threads > 0 && c->rss_kb >= 0 ? 0 : -EIO;
}

int soak_node_counts(struct soak_node *n, int timeout_ms, struct soak_counts *c, bool *stable,
		     char *err, size_t errlen)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
	struct soak_counts prev = {-1, -1, -1};
	int ret;

	*stable = false;
	for (;;) {
		if (!soak_node_running(n)) {
			snprintf(err, errlen, "%s exited (see %s)", n->proc.name, n->err_path);
			return -ESRCH;
		}
		ret = soak_counts_read(n->proc.pid, c);
		if (ret) {
			snprintf(err, errlen, "cannot read /proc/%d: %s", (int)n->proc.pid,
				 strerror(-ret));
			return ret;
		}
		if (c->fds == prev.fds && c->threads == prev.threads) {
			*stable = true;
			return 0;
		}
		if (now_ns() >= end)
			return 0;
		prev = *c;
		soak_node_pump(n);
		sleep_ms(300);
	}
}

void soak_node_close(struct soak_node *n)
{
	hx_console_close(&n->out);
	hx_console_close(&n->err);
}

void soak_node_stop(struct soak_node *n, int timeout_ms)
{
	if (!n->host)
		return;
	hx_signal(&n->proc, SIGTERM);
	hx_reap(&n->proc, timeout_ms);
	soak_node_close(n);
	n->host = NULL;
}
