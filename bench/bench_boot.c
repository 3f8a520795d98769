/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_boot: time from `vmm run` process start to the guest's first
 * console byte and to exit, for the hello guest at several memory sizes,
 * and the VMM's peak RSS. Also reports the VMM-side part (`--timing`:
 * time until the first KVM_RUN), since guest code is emulated here.
 *
 * usage: bench_boot [--runs N] [--csv FILE] [--vmm PATH]
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct sample {
	double first_byte_ms, exit_ms, setup_ms, rss_mib;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int run_once(const char *vmm, const char *mem, struct sample *s)
{
	int out[2], err[2], status;
	char memset_arg[64], errbuf[4096] = {0};
	size_t errlen = 0;
	struct rusage ru;
	double t0;
	pid_t pid;

	if (pipe(out) || pipe(err))
		return -errno;
	snprintf(memset_arg, sizeof(memset_arg), "vm.memory=%s", mem);
	t0 = now_ms();
	pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		execl(vmm, vmm, "run", EXAMPLES_DIR "/demo.cfg", "--set", memset_arg, "--timing",
		      (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	s->first_byte_ms = -1;
	for (;;) {
		char buf[4096];
		struct pollfd p[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
		ssize_t n;

		if (poll(p, 2, 30000) <= 0)
			break;
		if (p[0].revents) {
			n = read(out[0], buf, sizeof(buf));
			if (n > 0 && s->first_byte_ms < 0)
				s->first_byte_ms = now_ms() - t0;
			if (n <= 0)
				p[0].fd = -1;
		}
		if (p[1].revents) {
			n = read(err[0], errbuf + errlen, sizeof(errbuf) - 1 - errlen);
			if (n > 0)
				errlen += (size_t)n;
		}
		if (p[0].revents & (POLLHUP | POLLERR) && !(p[0].revents & POLLIN))
			break;
	}
	wait4(pid, &status, 0, &ru);
	s->exit_ms = now_ms() - t0;
	close(out[0]);
	close(err[0]);
	s->rss_mib = ru.ru_maxrss / 1024.0;
	s->setup_ms = -1;
	char *t = strstr(errbuf, "first_run_ms=");
	if (t)
		s->setup_ms = atof(t + strlen("first_run_ms="));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench_boot: vmm run with %s failed: %s\n", mem, errbuf);
		return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	const char *sizes[] = {"256M", "4G", "64G"};
	const char *vmm = VMM_BINARY, *csv_path = NULL;
	int runs = 5;
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--vmm") && i + 1 < argc)
			vmm = argv[++i];
		else {
			fprintf(stderr, "usage: bench_boot [--runs N] [--csv FILE] [--vmm PATH]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > 100)
		runs = 5;
	if (csv_path && !(csv = fopen(csv_path, "w"))) {
		perror(csv_path);
		return 1;
	}
	if (csv)
		fprintf(csv, "memory,runs,vmm_setup_ms,first_byte_ms,exit_ms,peak_rss_mib\n");
	printf("hello guest, median of %d runs (setup = process start to first KVM_RUN)\n", runs);
	printf("%-8s %14s %15s %10s %14s\n", "memory", "vmm setup ms", "first byte ms", "exit ms",
	       "peak RSS MiB");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double fb[100], ex[100], su[100], rss[100];

		for (int r = 0; r < runs; r++) {
			struct sample s = {0};

			if (run_once(vmm, sizes[i], &s))
				return 1;
			fb[r] = s.first_byte_ms;
			ex[r] = s.exit_ms;
			su[r] = s.setup_ms;
			rss[r] = s.rss_mib;
		}
		double msu = median(su, runs), mfb = median(fb, runs), mex = median(ex, runs),
		       mrss = median(rss, runs);
		printf("%-8s %14.2f %15.2f %10.2f %14.1f\n", sizes[i], msu, mfb, mex, mrss);
		if (csv)
			fprintf(csv, "%s,%d,%.3f,%.3f,%.3f,%.1f\n", sizes[i], runs, msu, mfb, mex,
				mrss);
	}
	if (csv)
		fclose(csv);
	return 0;
}
