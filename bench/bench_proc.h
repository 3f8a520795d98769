/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_proc.h - child processes for the end-to-end benchmarks (vmm run,
 * vmm run --incoming, vmm migrate): spawn with stdout on a pipe, reap with
 * a deadline, a free loopback port, JSON numbers, temp dir removal.
 */
#ifndef VMM_BENCH_PROC_H
#define VMM_BENCH_PROC_H

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

/* Runs argv with stdout on a pipe (*out_fd) and stderr in errfile; its own process group. */
static inline pid_t bench_spawn(char *const argv[], int *out_fd, const char *errfile)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		int e = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(p[1], 1);
		if (e >= 0)
			dup2(e, 2);
		setpgid(0, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	*out_fd = p[0];
	return pid;
}

/* Waits for *pid (SIGKILL after timeout_ms), closes *out; returns the wait status. */
static inline int bench_reap(pid_t *pid, int *out, int timeout_ms)
{
	int status = -1;
	double end = bench_now_ms() + timeout_ms;

	if (*pid <= 0)
		return -1;
	while (waitpid(*pid, &status, WNOHANG) == 0) {
		if (bench_now_ms() > end) {
			kill(*pid, SIGKILL);
			waitpid(*pid, &status, 0);
			break;
		}
		usleep(2000);
	}
	*pid = 0;
	if (*out >= 0)
		close(*out);
	*out = -1;
	return status;
}

static inline int bench_free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &al))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static inline double bench_jnum(cJSON *j, const char *k)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static inline void bench_rm_tree(const char *dir)
{
	char cmd[128];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd)) {
			/* best effort: a leftover temp dir is harmless */
		}
	}
}

#endif /* VMM_BENCH_PROC_H */
