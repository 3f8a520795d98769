/* SPDX-License-Identifier: Apache-2.0 */
#include "fault_inject.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What is applied now, for cleanup from exit or a signal (one cell at a time). */
#define MAX_LIMITS 4
static int active_table_port;
static struct fx_limit *active_limits[MAX_LIMITS];

int fx_run_cmd(char *const argv[], const char *log)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#define MAX_CONNS 1024

/*
 * The port's established connections that belong to one of pids[0..n), as
 * "local peer" (`ss -t -n -p -H`); their count or -errno.
 */
static int list_conns(int port, const int *pids, int npids, char (*out)[136], int max)
{
	char filt[160], line[1024], local[64], peer[64], tag[32];
	int n = 0;
	FILE *f;

	snprintf(filt, sizeof(filt),
		 "ss -t -n -p -H state established '( sport = :%d or dport = :%d )'", port, port);
	f = popen(filt, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		bool ours = false;

		for (int i = 0; i < npids && !ours; i++) {
			snprintf(tag, sizeof(tag), "pid=%d,", pids[i]);
			ours = strstr(line, tag) != NULL;
		}
		if (ours && n < max && sscanf(line, "%*s %*s %63s %63s", local, peer) == 2)
			snprintf(out[n++], sizeof(out[0]), "%s %s", local, peer);
	}
	pclose(f);
	return n;
}

int fx_reset_port(int port, const int *pids, int npids, int *killed, char *err, size_t errlen)
{
	static char before[MAX_CONNS][136], after[MAX_CONNS][136];
	char filt[96];
	char *argv[] = {"ss", "-K", "-t", "-n", "state", "connected", filt, NULL};
	int nb = list_conns(port, pids, npids, before, MAX_CONNS), na, left = 0, ret;

	snprintf(filt, sizeof(filt), "( sport = :%d or dport = :%d )", port, port);
	ret = fx_run_cmd(argv, NULL);
	/*
	 * Only the migration's own connections must be gone: a flood on the port
	 * (the trickle fault) reconnects at once, and its connections still in
	 * the listener's backlog cannot be killed.
	 */
	na = list_conns(port, pids, npids, after, MAX_CONNS);
	for (int i = 0; i < na; i++)
		for (int j = 0; j < nb; j++)
			if (!strcmp(after[i], before[j])) {
				left++;
				break;
			}
	*killed = nb;
	if (ret || nb < 0 || na < 0 || left > 0) {
		snprintf(err, errlen, "ss -K on port %d: exit %d, %d of %d connections left", port,
			 ret, left, nb);
		return -EIO;
	}
	return 0;
}

int fx_blackhole_on(int port, char *err, size_t errlen)
{
	char path[64], *args[] = {"nft", "-f", path, NULL};
	FILE *f;
	int ret;

	fx_blackhole_off(port); /* a table left by a killed earlier run */
	active_table_port = port;
	/*
	 * One `nft -f` for the table, its chain and both rules: on an emulated
	 * host each process start costs a good part of a second, time in which
	 * a fast pass could finish before the fault lands.
	 */
	snprintf(path, sizeof(path), "/tmp/vmmfaults_%d.nft", port);
	f = fopen(path, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	fprintf(f,
		"table inet vmmfaults_%d {\n"
		"\tchain out {\n"
		"\t\ttype filter hook output priority 0;\n"
		"\t\ttcp dport %d drop\n"
		"\t\ttcp sport %d drop\n"
		"\t}\n"
		"}\n",
		port, port, port);
	fclose(f);
	ret = fx_run_cmd(args, NULL);
	unlink(path);
	if (ret) {
		snprintf(err, errlen, "nft: exit %d adding the DROP rules for port %d", ret, port);
		fx_blackhole_off(port);
		return -EIO;
	}
	return 0;
}

void fx_blackhole_off(int port)
{
	char table[32];
	char *del[] = {"nft", "delete", "table", "inet", table, NULL};

	snprintf(table, sizeof(table), "vmmfaults_%d", port);
	fx_run_cmd(del, NULL);
	if (active_table_port == port)
		active_table_port = 0;
}

/* The lowest fd number pid does not have open. */
static int lowest_free_fd(pid_t pid)
{
	char path[64];
	unsigned char used[4096] = {0};
	struct dirent *d;
	DIR *dir;
	int low = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		long fd = strtol(d->d_name, NULL, 10);

		if (d->d_name[0] != '.' && fd >= 0 && fd < (long)sizeof(used))
			used[fd] = 1;
	}
	closedir(dir);
	while (low < (int)sizeof(used) && used[low])
		low++;
	return low;
}

int fx_fd_limit(pid_t pid, struct fx_limit *l, char *err, size_t errlen)
{
	struct rlimit nl;
	int low = lowest_free_fd(pid);

	memset(l, 0, sizeof(*l));
	if (low < 0) {
		snprintf(err, errlen, "/proc/%d/fd: %s", (int)pid, strerror(-low));
		return low;
	}
	nl.rlim_cur = nl.rlim_max = (rlim_t)low;
	if (prlimit(pid, RLIMIT_NOFILE, &nl, &l->old)) {
		int e = errno;

		snprintf(err, errlen, "prlimit(%d, RLIMIT_NOFILE, %d): %s", (int)pid, low,
			 strerror(e));
		return -e;
	}
	l->pid = pid;
	l->lowered_to = low;
	for (int i = 0; i < MAX_LIMITS; i++)
		if (!active_limits[i]) {
			active_limits[i] = l;
			break;
		}
	return 0;
}

void fx_fd_restore(struct fx_limit *l)
{
	if (l->pid > 0)
		prlimit(l->pid, RLIMIT_NOFILE, &l->old, NULL); /* fails only once it is gone */
	l->pid = 0;
	for (int i = 0; i < MAX_LIMITS; i++)
		if (active_limits[i] == l)
			active_limits[i] = NULL;
}

void fx_probe_tools(char *why_reset, size_t l1, char *why_blackhole, size_t l2)
{
	char *ss[] = {"ss", "-V", NULL};
	char *nft[] = {"nft", "list", "tables", NULL};

	snprintf(why_reset, l1, "%s", fx_run_cmd(ss, NULL) ? "ss (iproute2) not found" : "");
	snprintf(why_blackhole, l2, "%s",
		 fx_run_cmd(nft, NULL) ? "nft not usable (install nftables; needs CAP_NET_ADMIN)"
				       : "");
}

void fx_inject_cleanup(void)
{
	if (active_table_port)
		fx_blackhole_off(active_table_port);
	for (int i = 0; i < MAX_LIMITS; i++)
		if (active_limits[i])
			fx_fd_restore(active_limits[i]);
}

static void on_signal(int sig)
{
	/* Not async-signal-safe in general (fork in fx_run_cmd), but the program ends here. */
	fx_inject_cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

void fx_inject_install_cleanup(void)
{
	atexit(fx_inject_cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
}

char fx_proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')) || p[1] != ' ')
		return 0;
	return p[2];
}
