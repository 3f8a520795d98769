/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_migrate: end-to-end live migrations over loopback, as a user runs
 * them: `vmm run` (source), `vmm run --incoming 127.0.0.1:PORT` (target)
 * and `vmm migrate --to 127.0.0.1:PORT --vm NAME --json`, whose JSON summary
 * is what we report (total time, downtime, bytes on the wire, pages sent /
 * zero / skipped, passes). Cases: idle and dirty (64 MiB working set,
 * 2 vCPUs, endless passes) 1 GiB and 4 GiB guests, an idle 64 GiB sparse
 * guest, and the 1 GiB dirty guest with 1 vs 4 connections and zstd vs no
 * compression. A dirty guest must go on printing "dirty pass N ok" on the
 * target (3 more lines, no CORRUPTION) before it is ended with SIGTERM.
 *
 * The same run measures this host's memcpy bandwidth (into touched and into
 * never-touched memory) and loopback TCP throughput (1 and 4 streams), and
 * prints each migration's throughput as a fraction of both.
 *
 * usage: bench_migrate [--reps N] [--csv FILE] [--vmm PATH] [--quick]
 */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "bench_util.h"
#include "clock.h"
#include "harness_json.h"
#include "harness_run.h"

#define PROG "bench_migrate"

static const char *vmm_path = VMM_BINARY;
static char tmpdir[64];

/* ---- host baselines ---------------------------------------------------- */

static double memcpy_gbps(bool touched)
{
	size_t sz = 1ull << 30;
	char *src = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *dst = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double best = 0;

	if (src == MAP_FAILED || dst == MAP_FAILED)
		return 0;
	memset(src, 0x5a, sz);
	if (touched)
		memset(dst, 0, sz);
	for (int r = 0; r < (touched ? 3 : 1); r++) {
		double t0 = bench_now_ms(), g;

		memcpy(dst, src, sz);
		g = sz / ((bench_now_ms() - t0) / 1e3) / 1e9;
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

	if (!buf)
		return NULL;
	memset(buf, 0x33, chunk);
	while (left) {
		ssize_t n = write(s->fd, buf, left < chunk ? left : chunk);

		if (n <= 0)
			break;
		left -= (size_t)n;
	}
	free(buf);
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
	for (;;) {
		ssize_t n = read(s->fd, buf, chunk);

		if (n <= 0)
			break;
	}
	free(buf);
	return NULL;
}

/* Pushes `total` bytes over n loopback TCP connections; GB/s. */
static double tcp_gbps(int n, size_t total)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct stream tx[8], rx[8];
	pthread_t tt[8], rt[8];
	double t0, ms;

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 8) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al))
		return 0;
	for (int i = 0; i < n; i++) {
		tx[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(tx[i].fd, (struct sockaddr *)&a, sizeof(a)))
			return 0;
		rx[i].fd = accept(lfd, NULL, NULL);
		tx[i].bytes = total / (size_t)n;
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
	for (int i = 0; i < n; i++) {
		close(tx[i].fd);
		close(rx[i].fd);
	}
	close(lfd);
	return (double)total / (ms / 1e3) / 1e9;
}

/* ---- one migration ------------------------------------------------------ */

struct mcase {
	const char *label;
	const char *memory;
	bool dirty;
	unsigned connections; /* 0 = default */
	const char *compress; /* NULL = default */
	bool tls;	      /* [migration] tls_* on both sides */
};

/*
 * A throwaway CA and one certificate for 127.0.0.1 that both sides use
 * (made with the openssl tool); "--set" options naming them in tls_opts.
 */
static char tls_opts[3][PATH_MAX + 32];

static int make_tls_files(void)
{
	char cmd[4 * PATH_MAX];
	int n;

	n = snprintf(cmd, sizeof(cmd),
		     "cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
		     "-nodes -days 2 -subj /CN=bench-ca -keyout ca.key -out ca.pem 2>/dev/null && "
		     "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
		     "-subj /CN=bench-node -keyout node.key -out node.csr 2>/dev/null && "
		     "echo subjectAltName=IP:127.0.0.1 > node.ext && "
		     "openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
		     "-days 2 -extfile node.ext -out node.pem 2>/dev/null",
		     tmpdir);
	if (n < 0 || (size_t)n >= sizeof(cmd) || system(cmd) != 0) {
		fprintf(stderr, PROG ": cannot make TLS test certificates with openssl\n");
		return -1;
	}
	snprintf(tls_opts[0], sizeof(tls_opts[0]), "migration.tls_cert=%s/node.pem", tmpdir);
	snprintf(tls_opts[1], sizeof(tls_opts[1]), "migration.tls_key=%s/node.key", tmpdir);
	snprintf(tls_opts[2], sizeof(tls_opts[2]), "migration.tls_ca=%s/ca.pem", tmpdir);
	return 0;
}

/* Appends the TLS "--set" options. */
static void add_tls(struct hx_argv *a)
{
	for (int i = 0; i < 3; i++) {
		hx_argv_add(a, "--set");
		hx_argv_add(a, tls_opts[i]);
	}
}

struct result {
	double total_ms, downtime_ms, cli_ms, bytes, pages, zero, skipped, passes, setup_ms,
	    harvest_final_us, blackout_send_us, blackout_state_us, blackout_ack_us;
	bool ok;
};

static int migrate_once(const struct mcase *mc, int run, struct result *r)
{
	char mem[64], kind[64], vcpus[64], tsock[128], conn[16], src[32], dst[32], mig[32],
	    err[PATH_MAX + 256];
	struct hx_argv sargs = {0}, targs = {0}, margs = {0};
	struct hx_run hr;
	struct hx_cmd c = {0};
	int ret = -1;
	cJSON *j;

	memset(r, 0, sizeof(*r));
	snprintf(mem, sizeof(mem), "vm.memory=%s", mc->memory);
	snprintf(kind, sizeof(kind), "workload.kind=%s", mc->dirty ? "dirty" : "idle");
	snprintf(vcpus, sizeof(vcpus), "vm.vcpus=%u", mc->dirty ? 2 : 1);
	snprintf(tsock, sizeof(tsock), "%s/target-%d.sock", tmpdir, run);
	snprintf(src, sizeof(src), "source-%d", run);
	snprintf(dst, sizeof(dst), "target-%d", run);
	snprintf(mig, sizeof(mig), "migrate-%d", run);

	char *sets[] = {"--set", mem,
			"--set", kind,
			"--set", vcpus,
			"--set", "workload.working_set=64M",
			"--set", "workload.passes=0",
			"--set", "workload.heartbeat_ms=100",
			NULL};

	hx_argv_addv(&sargs, sets);
	hx_argv_add(&targs, "--api-socket");
	hx_argv_add(&targs, tsock);
	if (mc->tls) {
		add_tls(&targs);
		add_tls(&sargs);
	}
	hx_argv_add(&margs, "--json");
	if (mc->connections) {
		snprintf(conn, sizeof(conn), "%u", mc->connections);
		hx_argv_add(&margs, "--connections");
		hx_argv_add(&margs, conn);
	}
	if (mc->compress) {
		hx_argv_add(&margs, "--compress");
		hx_argv_add(&margs, mc->compress);
	}

	struct hx_run_opts o = {
	    .vmm = vmm_path,
	    .dir = tmpdir,
	    .src_stem = src,
	    .dst_stem = dst,
	    .mig_stem = mig,
	    .pipes = true,
	    .name = "bm",
	    .config = EXAMPLES_DIR "/dirty.cfg",
	    .source_args = sargs.v,
	    .target_args = targs.v,
	};

	if (hx_run_start(&hr, &o, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: %s\n", mc->label, err);
		goto out;
	}
	/* first heartbeat: the guest is up and (for dirty) has written its set once;
	 * heartbeats show the pass all vCPUs completed, so numbers can skip */
	if (hx_wait_line(&hr.watch, &hr.src_out, mc->dirty ? "dirty pass" : "idle", 1, 0, 60000,
			 err, sizeof(err))) {
		fprintf(stderr, PROG ": %s: source guest did not start (see %s)\n", mc->label,
			hr.src_err);
		goto out;
	}
	if (hx_run_migrate(&hr, margs.v, 300000, &c, err, sizeof(err)) || c.code || !c.json) {
		fprintf(stderr, PROG ": %s: vmm migrate failed (status 0x%x): %s (see %s)\n",
			mc->label, c.proc.status, c.out.text ? c.out.text : err, c.err_path);
		goto out;
	}
	j = c.json;
	r->cli_ms = c.ms;
	r->total_ms = hx_json_num(j, "total_ms");
	r->downtime_ms = hx_json_num(j, "downtime_us") / 1e3;
	r->bytes = hx_json_num(j, "bytes_sent");
	r->pages = hx_json_num(j, "pages_sent");
	r->zero = hx_json_num(j, "zero_pages");
	r->skipped = hx_json_num(j, "skipped_pages");
	r->passes = hx_json_num(j, "pass");
	r->setup_ms = hx_json_num(j, "setup_ms");
	r->harvest_final_us = hx_json_num(j, "harvest_us_final");
	r->blackout_send_us = hx_json_num(j, "blackout_send_us");
	r->blackout_state_us = hx_json_num(j, "blackout_state_us");
	r->blackout_ack_us = hx_json_num(j, "blackout_ack_us");

	/* the guest must go on, correct, on the target */
	if (mc->dirty) {
		bool corrupt;

		ret = hx_wait_line(&hr.watch, &hr.dst_out, "dirty pass", 3, 0, 20000, err,
				   sizeof(err));
		corrupt = hx_console_corruption(&hr.dst_out) != NULL;
		if (ret || corrupt) {
			fprintf(stderr,
				PROG ": %s: target guest did not continue cleanly%s (see %s)\n",
				mc->label, corrupt ? " (CORRUPTION)" : "", hr.dst_err);
			ret = -1;
			goto out;
		}
	} else {
		sleep_ms(100);
		if (!hx_running(&hr.dst)) {
			fprintf(stderr, PROG ": %s: target exited (see %s)\n", mc->label,
				hr.dst_err);
			goto out;
		}
	}
	r->ok = true;
	ret = 0;
out:
	/* after a good migration the source exits by itself */
	if (!ret)
		hx_run_wait_exit(&hr, &hr.src, 10000, err, sizeof(err));
	hx_cmd_free(&c);
	hx_run_end(&hr);
	unlink(tsock);
	unlink(hr.src_err);
	unlink(hr.dst_err);
	unlink(c.err_path);
	hx_argv_free(&sargs);
	hx_argv_free(&targs);
	hx_argv_free(&margs);
	return ret;
}

static void cleanup_tmpdir(void)
{
	bench_rm_tree(tmpdir);
}

int main(int argc, char **argv)
{
	static const struct mcase all[] = {
	    {"1G idle", "1G", false, 0, NULL, false},
	    {"1G dirty", "1G", true, 0, NULL, false},
	    {"4G idle", "4G", false, 0, NULL, false},
	    {"4G dirty", "4G", true, 0, NULL, false},
	    {"64G idle", "64G", false, 0, NULL, false},
	    {"1G dirty c1 none", "1G", true, 1, "none", false},
	    {"1G dirty c1 zstd", "1G", true, 1, "zstd", false},
	    {"1G dirty c4 none", "1G", true, 4, "none", false},
	    {"1G dirty c4 zstd", "1G", true, 4, "zstd", false},
	    {"1G dirty c4 none tls", "1G", true, 4, "none", true},
	    {"1G dirty c4 zstd tls", "1G", true, 4, "zstd", true},
	};
	const char *csv_path = NULL;
	int reps = 3, ncases = (int)(sizeof(all) / sizeof(all[0])), run = 0, failures = 0;
	bool quick = false;
	FILE *csv = NULL;
	double med[16][13];
	bool have[16] = {false};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--vmm") && i + 1 < argc)
			vmm_path = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else {
			fprintf(stderr,
				"usage: " PROG " [--reps N] [--csv FILE] [--vmm PATH] [--quick]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 50)
		reps = 3;
	if (quick)
		ncases = 2;
	if (csv_path && !(csv = fopen(csv_path, "w"))) {
		perror(csv_path);
		return 1;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bench_migrate.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("VMM_RUN_DIR", tmpdir, 1);
	atexit(cleanup_tmpdir);
	if (make_tls_files())
		return 1;
	signal(SIGPIPE, SIG_IGN);

	double mc_touched = memcpy_gbps(true), mc_fresh = memcpy_gbps(false);
	double tcp1 = tcp_gbps(1, 1ull << 30), tcp4 = tcp_gbps(4, 1ull << 30);

	printf("host: memcpy 1 GiB %.1f GB/s into touched memory, %.2f GB/s into never-touched;\n"
	       "      loopback TCP 1 GiB: %.2f GB/s one stream, %.2f GB/s four streams\n\n",
	       mc_touched, mc_fresh, tcp1, tcp4);
	printf("migrations over 127.0.0.1, median of %d (dirty: 64 MiB working set, 2 vCPUs);\n"
	       "wire = bytes on the wire / total; RAM = guest pages carried (sent+zero) / total;\n"
	       "%%tcp, %%memcpy = wire rate as a fraction of one TCP stream / touched memcpy\n\n",
	       reps);
	printf("%-20s %8s %9s %8s %9s %6s %9s %8s %9s %7s %7s %7s %6s\n", "case", "total ms",
	       "downtime", "cli ms", "wire MiB", "passes", "pages", "zero", "skipped", "wire GB/s",
	       "%tcp", "%memcpy", "RAM GB/s");
	if (csv)
		fprintf(csv,
			"case,memory,dirty,connections,compress,reps,ok,total_ms,downtime_ms,"
			"cli_ms,bytes_sent,passes,pages_sent,zero_pages,skipped_pages,setup_ms,"
			"harvest_final_us,blackout_send_us,blackout_state_us,blackout_ack_us,"
			"wire_gbps,frac_tcp,frac_memcpy,memcpy_gbps,memcpy_fresh_gbps,"
			"tcp1_gbps,tcp4_gbps\n");
	for (int c = 0; c < ncases; c++) {
		const struct mcase *mc = &all[c];
		double v[13][50];
		int ok = 0;

		for (int r = 0; r < reps; r++) {
			struct result res;

			if (migrate_once(mc, run++, &res)) {
				failures++;
				continue;
			}
			double a[13] = {res.total_ms,
					res.downtime_ms,
					res.cli_ms,
					res.bytes,
					res.passes,
					res.pages,
					res.zero,
					res.skipped,
					res.setup_ms,
					res.harvest_final_us,
					res.blackout_send_us,
					res.blackout_state_us,
					res.blackout_ack_us};

			for (int k = 0; k < 13; k++)
				v[k][ok] = a[k];
			ok++;
		}
		if (!ok) {
			printf("%-20s  all %d runs failed\n", mc->label, reps);
			continue;
		}
		double m[13];

		for (int k = 0; k < 13; k++)
			m[k] = med[c][k] = bench_median(v[k], ok);
		have[c] = true;
		double wire = m[0] > 0 ? m[3] / (m[0] / 1e3) / 1e9 : 0;
		double ram = m[0] > 0 ? (m[5] + m[6]) * 4096 / (m[0] / 1e3) / 1e9 : 0;

		printf(
		    "%-20s %8.1f %7.2fms %8.1f %9.1f %6.0f %9.0f %8.0f %9.0f %7.3f %6.1f%% %6.2f%% "
		    "%6.2f%s\n",
		    mc->label, m[0], m[1], m[2], m[3] / 1048576, m[4], m[5], m[6], m[7], wire,
		    100 * wire / tcp1, 100 * wire / mc_touched, ram,
		    ok < reps ? " (some runs failed)" : "");
		fflush(stdout);
		if (csv)
			fprintf(csv,
				"%s,%s,%d,%u,%s,%d,%d,%.1f,%.3f,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,"
				"%.0f,%.0f,%.0f,%.0f,%.4f,%.4f,%.4f,%.2f,%.2f,%.2f,%.2f\n",
				mc->label, mc->memory, mc->dirty, mc->connections,
				mc->compress ? mc->compress : "default", reps, ok, m[0], m[1], m[2],
				m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10], m[11], m[12], wire,
				wire / tcp1, wire / mc_touched, mc_touched, mc_fresh, tcp1, tcp4);
	}
	printf("\nwhere the time went (medians): setup ms, final harvest us, and the blackout:\n"
	       "final pages sent us, state us, waiting for the target's ack us\n\n");
	printf("%-20s %8s %9s %9s %9s %9s %9s\n", "case", "setup ms", "downtime", "harvest", "send",
	       "state", "ack");
	for (int c = 0; c < ncases; c++)
		if (have[c])
			printf("%-20s %8.0f %9.0f %9.0f %9.0f %9.0f %9.0f\n", all[c].label,
			       med[c][8], med[c][1] * 1e3, med[c][9], med[c][10], med[c][11],
			       med[c][12]);
	if (csv)
		fclose(csv);
	return failures ? 1 : 0;
}
