/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot_io.c - bench_snapshot's measures of the host around vmm
 * (snapshot_io.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "snapshot_io.h"

#define SEQ_CHUNK (16u << 20)
#define SEQ_SRC	  (64u << 20) /* touched once, written over and over */

double sio_fs_seq_mbs(const char *dir, uint64_t bytes)
{
	char path[600];
	uint8_t *src = malloc(SEQ_SRC);
	double t0, ms;
	int fd;

	snprintf(path, sizeof(path), "%s/fs-seq.tmp", dir);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (!src || fd < 0 || !bytes) {
		free(src);
		if (fd >= 0)
			close(fd);
		unlink(path);
		return -1;
	}
	memset(src, 0x5a, SEQ_SRC);
	t0 = bench_now_ms();
	for (uint64_t off = 0; off < bytes;) {
		uint64_t n = bytes - off < SEQ_CHUNK ? bytes - off : SEQ_CHUNK;
		ssize_t w = pwrite(fd, src + off % SEQ_SRC, n, (off_t)off);

		if (w <= 0) {
			ms = -1;
			goto out;
		}
		off += (uint64_t)w;
	}
	ms = bench_now_ms() - t0;
out:
	close(fd);
	unlink(path);
	free(src);
	return ms > 0 ? bytes / 1e3 / ms : -1;
}

double sio_process_start_ms(const char *prog, int n)
{
	double v[64];
	int got = 0;

	for (int i = 0; i < n && i < 64; i++) {
		double t0 = bench_now_ms();
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			int null = open("/dev/null", O_WRONLY);

			if (null >= 0)
				dup2(null, STDOUT_FILENO);
			execl(prog, prog, "--version", (char *)NULL);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			continue;
		v[got++] = bench_now_ms() - t0;
	}
	return got ? bench_median(v, got) : -1;
}

int sio_free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

int sio_unix_put(const char *sock, const char *path, const char *body, int *code, char *reply,
		 size_t len)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char req[1024], buf[8192];
	size_t got = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n;
	char *b;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	n = snprintf(req, sizeof(req),
		     "PUT %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		     path, strlen(body), body);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    write(fd, req, (size_t)n) != n) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (ssize_t r;
	     got + 1 < sizeof(buf) && (r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0;)
		got += (size_t)r;
	close(fd);
	buf[got] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", code) != 1)
		return -1;
	b = strstr(buf, "\r\n\r\n");
	snprintf(reply, len, "%s", b ? b + 4 : "");
	return 0;
}
