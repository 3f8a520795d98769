/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_limits_lib.c - memcpy and loopback TCP baselines (see the header).
 */
#include "bench_limits_lib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_util.h"

double bench_memcpy_gbps(size_t sz, bool touched)
{
	char *src = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *dst = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double best = 0;

	if (src == MAP_FAILED || dst == MAP_FAILED) {
		if (src != MAP_FAILED)
			munmap(src, sz);
		if (dst != MAP_FAILED)
			munmap(dst, sz);
		return 0;
	}
	memset(src, 0x5a, sz);
	if (touched)
		memset(dst, 0, sz);
	for (int r = 0; r < (touched ? 3 : 1); r++) {
		double t0 = bench_now_ms(), g;

		memcpy(dst, src, sz);
		g = (double)sz / ((bench_now_ms() - t0) / 1e3) / 1e9;
		if (g > best)
			best = g;
	}
	munmap(src, sz);
	munmap(dst, sz);
	return best;
}

struct stream {
	int fd;
	size_t bytes;
};

static void *sender(void *arg)
{
	struct stream *s = arg;
	size_t chunk = 1 << 20, left = s->bytes;
	char *buf = malloc(chunk);

	if (buf) {
		memset(buf, 0x33, chunk);
		while (left) {
			ssize_t n = write(s->fd, buf, left < chunk ? left : chunk);

			if (n <= 0)
				break;
			left -= (size_t)n;
		}
		free(buf);
	}
	shutdown(s->fd, SHUT_WR);
	return NULL;
}

static void *receiver(void *arg)
{
	struct stream *s = arg;
	size_t chunk = 1 << 20;
	char *buf = malloc(chunk);

	if (!buf)
		return NULL;
	while (read(s->fd, buf, chunk) > 0) {
	}
	free(buf);
	return NULL;
}

double bench_tcp_gbps(int n, size_t total)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	struct stream tx[8], rx[8];
	pthread_t tt[8], rt[8];
	int lfd, opened = 0;
	double t0, ms = 0;

	if (n < 1 || n > 8)
		return 0;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return 0;
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 8) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al))
		goto out;
	for (; opened < n; opened++) {
		tx[opened].fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (tx[opened].fd < 0)
			goto out;
		if (connect(tx[opened].fd, (struct sockaddr *)&a, sizeof(a)) ||
		    (rx[opened].fd = accept(lfd, NULL, NULL)) < 0) {
			close(tx[opened].fd);
			goto out;
		}
		tx[opened].bytes = total / (size_t)n;
	}
	t0 = bench_now_ms();
	for (int i = 0; i < n; i++) {
		pthread_create(&rt[i], NULL, receiver, &rx[i]);
		pthread_create(&tt[i], NULL, sender, &tx[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(tt[i], NULL);
		pthread_join(rt[i], NULL);
	}
	ms = bench_now_ms() - t0;
out:
	for (int i = 0; i < opened; i++) {
		close(tx[i].fd);
		close(rx[i].fd);
	}
	close(lfd);
	return ms > 0 ? (double)total / (ms / 1e3) / 1e9 : 0;
}
