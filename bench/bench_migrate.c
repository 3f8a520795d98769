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

#include "bench_proc.h"
#include "bench_util.h"

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

/* ---- child processes ---------------------------------------------------- */

struct child {
	pid_t pid;
	int out;        /* stdout pipe, -1 when closed */
	char buf[1 << 16];
	size_t len;     /* bytes in buf (kept: the whole console up to 64 KiB) */
	size_t scanned; /* lines before this offset were counted */
	unsigned matches;
	bool corruption;
};

/*
 * Reads the child's stdout until `want` new lines containing `pat` have been
 * seen (counting from the last call) or timeout; also flags CORRUPTION.
 * Returns 0 when found.
 */
static int wait_lines(struct child *c, const char *pat, unsigned want, int timeout_ms)
{
	double end = bench_now_ms() + timeout_ms;

	c->matches = 0;
	for (;;) {
		char *nl;

		while ((nl = memchr(c->buf + c->scanned, '\n', c->len - c->scanned))) {
			*nl = 0;
			if (strstr(c->buf + c->scanned, pat))
				c->matches++;
			if (strstr(c->buf + c->scanned, "CORRUPTION"))
				c->corruption = true;
			*nl = '\n';
			c->scanned = (size_t)(nl - c->buf) + 1;
		}
		if (c->matches >= want)
			return 0;
		if (c->len == sizeof(c->buf)) { /* full: keep the unscanned tail */
			memmove(c->buf, c->buf + c->scanned, c->len - c->scanned);
			c->len -= c->scanned;
			c->scanned = 0;
		}
		double left = end - bench_now_ms();
		struct pollfd p = {c->out, POLLIN, 0};

		if (left <= 0 || c->out < 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		ssize_t n = read(c->out, c->buf + c->len, sizeof(c->buf) - c->len);

		if (n <= 0) {
			close(c->out);
			c->out = -1;
			return -1;
		}
		c->len += (size_t)n;
	}
}

/* Waits up to timeout_ms for the child; then SIGKILLs it. Returns its wait status. */
/* ---- one migration ------------------------------------------------------ */

struct mcase {
	const char *label;
	const char *memory;
	bool dirty;
	unsigned connections; /* 0 = default */
	const char *compress; /* NULL = default */
	bool tls;             /* [migration] tls_* on both sides */
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

/* Appends the TLS "--set" options to a NULL-terminated argv with room for 6 more. */
static void add_tls(char **argv)
{
	int n = 0;

	while (argv[n])
		n++;
	for (int i = 0; i < 3; i++) {
		argv[n++] = "--set";
		argv[n++] = tls_opts[i];
	}
	argv[n] = NULL;
}

struct result {
	double total_ms, downtime_ms, cli_ms, bytes, pages, zero, skipped, passes, setup_ms,
		harvest_final_us, blackout_send_us, blackout_state_us, blackout_ack_us;
	bool ok;
};

static int migrate_once(const struct mcase *mc, int run, struct result *r)
{
	char port_s[32], to[64], mem[64], kind[64], vcpus[64], tsock[128], serr[128], terr[128],
		conn[16], body[8192] = {0};
	struct child src = {.out = -1}, tgt = {.out = -1};
	int port = bench_free_port(), mfd = -1, ret = -1, status;
	size_t blen = 0;
	pid_t mpid;
	double t0;
	cJSON *j = NULL;

	memset(r, 0, sizeof(*r));
	if (port < 0)
		return -1;
	snprintf(port_s, sizeof(port_s), "127.0.0.1:%d", port);
	snprintf(to, sizeof(to), "%s", port_s);
	snprintf(mem, sizeof(mem), "vm.memory=%s", mc->memory);
	snprintf(kind, sizeof(kind), "workload.kind=%s", mc->dirty ? "dirty" : "idle");
	snprintf(vcpus, sizeof(vcpus), "vm.vcpus=%u", mc->dirty ? 2 : 1);
	snprintf(tsock, sizeof(tsock), "%s/target-%d.sock", tmpdir, run);
	snprintf(serr, sizeof(serr), "%s/source-%d.err", tmpdir, run);
	snprintf(terr, sizeof(terr), "%s/target-%d.err", tmpdir, run);

	char *targv[16] = {(char *)vmm_path, "run", "--incoming", port_s, "--api-socket", tsock,
			   NULL};
	char *sargv[32] = {(char *)vmm_path, "run", EXAMPLES_DIR "/dirty.cfg", "--set", "vm.name=bm",
			   "--set", mem, "--set", kind, "--set", vcpus, "--set",
			   "workload.working_set=64M", "--set", "workload.passes=0", "--set",
			   "workload.heartbeat_ms=100", NULL};

	if (mc->tls) {
		add_tls(targv);
		add_tls(sargv);
	}

	tgt.pid = bench_spawn(targv, &tgt.out, terr);
	src.pid = bench_spawn(sargv, &src.out, serr);
	if (tgt.pid < 0 || src.pid < 0)
		goto out;
	/* first heartbeat: the guest is up and (for dirty) has written its set once;
	 * heartbeats show the pass all vCPUs completed, so numbers can skip */
	if (wait_lines(&src, mc->dirty ? "dirty pass" : "idle", 1, 60000)) {
		fprintf(stderr, PROG ": %s: source guest did not start (see %s)\n", mc->label, serr);
		goto out;
	}

	char *margv[16] = {(char *)vmm_path, "migrate", "--to", to, "--vm", "bm", "--json"};
	int na = 7;

	if (mc->connections) {
		snprintf(conn, sizeof(conn), "%u", mc->connections);
		margv[na++] = "--connections";
		margv[na++] = conn;
	}
	if (mc->compress) {
		margv[na++] = "--compress";
		margv[na++] = (char *)mc->compress;
	}
	margv[na] = NULL;
	char merr[128];

	snprintf(merr, sizeof(merr), "%s/migrate-%d.err", tmpdir, run);
	t0 = bench_now_ms();
	mpid = bench_spawn(margv, &mfd, merr);
	if (mpid < 0)
		goto out;
	for (;;) {
		ssize_t n = read(mfd, body + blen, sizeof(body) - 1 - blen);

		if (n <= 0)
			break;
		blen += (size_t)n;
	}
	close(mfd);
	waitpid(mpid, &status, 0);
	r->cli_ms = bench_now_ms() - t0;
	j = cJSON_Parse(body);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !j) {
		fprintf(stderr, PROG ": %s: vmm migrate failed (status 0x%x): %s (see %s)\n",
			mc->label, status, body, merr);
		goto out;
	}
	r->total_ms = bench_jnum(j, "total_ms");
	r->downtime_ms = bench_jnum(j, "downtime_us") / 1e3;
	r->bytes = bench_jnum(j, "bytes_sent");
	r->pages = bench_jnum(j, "pages_sent");
	r->zero = bench_jnum(j, "zero_pages");
	r->skipped = bench_jnum(j, "skipped_pages");
	r->passes = bench_jnum(j, "pass");
	r->setup_ms = bench_jnum(j, "setup_ms");
	r->harvest_final_us = bench_jnum(j, "harvest_us_final");
	r->blackout_send_us = bench_jnum(j, "blackout_send_us");
	r->blackout_state_us = bench_jnum(j, "blackout_state_us");
	r->blackout_ack_us = bench_jnum(j, "blackout_ack_us");

	/* the guest must go on, correct, on the target */
	if (mc->dirty) {
		if (wait_lines(&tgt, "dirty pass", 3, 20000) || tgt.corruption) {
			fprintf(stderr, PROG ": %s: target guest did not continue cleanly%s (see %s)\n",
				mc->label, tgt.corruption ? " (CORRUPTION)" : "", terr);
			goto out;
		}
	} else {
		usleep(100000);
		if (waitpid(tgt.pid, &status, WNOHANG) != 0) {
			fprintf(stderr, PROG ": %s: target exited (see %s)\n", mc->label, terr);
			tgt.pid = 0;
			goto out;
		}
	}
	r->ok = true;
	ret = 0;
out:
	cJSON_Delete(j);
	if (tgt.pid > 0)
		kill(tgt.pid, SIGTERM);
	bench_reap(&tgt.pid, &tgt.out, 10000);
	if (src.pid > 0 && ret)
		kill(src.pid, SIGTERM); /* failed: the VM is still on the source */
	bench_reap(&src.pid, &src.out, 10000);
	unlink(tsock);
	unlink(serr);
	unlink(terr);
	unlink(merr);
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
		fprintf(csv, "case,memory,dirty,connections,compress,reps,ok,total_ms,downtime_ms,"
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
			double a[13] = {res.total_ms,         res.downtime_ms,
					res.cli_ms,           res.bytes,
					res.passes,           res.pages,
					res.zero,             res.skipped,
					res.setup_ms,         res.harvest_final_us,
					res.blackout_send_us, res.blackout_state_us,
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

		printf("%-20s %8.1f %7.2fms %8.1f %9.1f %6.0f %9.0f %8.0f %9.0f %7.3f %6.1f%% %6.2f%% "
		       "%6.2f%s\n",
		       mc->label, m[0], m[1], m[2], m[3] / 1048576, m[4], m[5], m[6], m[7], wire,
		       100 * wire / tcp1, 100 * wire / mc_touched, ram,
		       ok < reps ? " (some runs failed)" : "");
		fflush(stdout);
		if (csv)
			fprintf(csv, "%s,%s,%d,%u,%s,%d,%d,%.1f,%.3f,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,"
				     "%.0f,%.0f,%.0f,%.0f,%.4f,%.4f,%.4f,%.2f,%.2f,%.2f,%.2f\n",
				mc->label, mc->memory, mc->dirty, mc->connections,
				mc->compress ? mc->compress : "default", reps, ok, m[0], m[1], m[2],
				m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10], m[11], m[12], wire,
				wire / tcp1, wire / mc_touched, mc_touched, mc_fresh, tcp1, tcp4);
	}
	printf("\nwhere the time went (medians): setup ms, final harvest us, and the blackout:\n"
	       "final pages sent us, state us, waiting for the target's ack us\n\n");
	printf("%-20s %8s %9s %9s %9s %9s %9s\n", "case", "setup ms", "downtime", "harvest",
	       "send", "state", "ack");
	for (int c = 0; c < ncases; c++)
		if (have[c])
			printf("%-20s %8.0f %9.0f %9.0f %9.0f %9.0f %9.0f\n", all[c].label, med[c][8],
			       med[c][1] * 1e3, med[c][9], med[c][10], med[c][11], med[c][12]);
	if (csv)
		fclose(csv);
	return failures ? 1 : 0;
}
