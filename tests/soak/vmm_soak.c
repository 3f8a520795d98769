/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vmm-soak: one dirtying 2-vCPU guest migrated back and forth between two
 * "hosts" (two vmm processes on this machine, each host with its own port,
 * run dir and TLS certificate), N hops, alternating precopy and postcopy,
 * TLS on, every hop checked (soak_hop.h), and per hop the fd, thread and
 * RSS counts of the VMM that runs the guest afterwards. A table, a summary
 * line with the ranges and whether they stayed flat; exit 0 only when every
 * hop passed and the counts are flat. docs/soak.md shows a 100-hop run.
 *
 * usage: vmm-soak [--hops N] [--work DIR] [--vmm PATH] [--config FILE]
 *                 [--port-base P] [--csv FILE] [--keep-going] [--no-digest]
 *                 [--rss-slack-mib M] [--fd-slack N] [--thread-slack N]
 *                 [--timeout-s S]
 *
 * Exit status: 0 pass, 1 a failed hop or counts not flat, 2 bad usage,
 * 77 no /dev/kvm with VMM_TESTS_NO_KVM=1 (without it, no /dev/kvm fails).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "harness_net.h"
#include "soak_hop.h"
#include "soak_pki.h"
#include "soak_report.h"

#define PROG "vmm-soak"

static const char usage[] =
    "usage: " PROG " [OPTIONS]\n"
    "Migrates one dirtying 2-vCPU guest back and forth between two local vmm\n"
    "\"hosts\" N times (odd hops precopy, even hops postcopy, TLS on), checks\n"
    "every hop and prints the fd, thread and RSS counts of the VMM running the\n"
    "guest after each.\n"
    "\n"
    "  --hops N            hops (default 10)\n"
    "  --work DIR          logs, certificates and run dirs (default: a new /tmp/vmm-soak.*)\n"
    "  --vmm PATH          the vmm binary (default: the one built with this program)\n"
    "  --config FILE       the guest (default: examples/dirty.cfg)\n"
    "  --port-base P       the hosts' ports: the first two free from P (default 22000)\n"
    "  --csv FILE          the per-hop rows as CSV too\n"
    "  --keep-going        after a failed hop, go on from the side that runs the guest\n"
    "  --no-digest         no VMM_TEST_DIGEST=1 memory digest check on precopy hops\n"
    "  --rss-slack-mib M   RSS range still counted flat (default 32)\n"
    "  --fd-slack N        fd range still counted flat (default 0)\n"
    "  --thread-slack N    thread range still counted flat (default 0)\n"
    "  --timeout-s S       bound of each wait for a process or the guest (default 120)\n";

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, PROG ": bad %s '%s'\n%s", what, arg, usage);
	exit(2);
}

static long number(const char *what, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		bad(what, s);
	return v;
}

/* True when 127.0.0.1:port can be bound now (as the target will, with SO_REUSEADDR). */
static bool port_free(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	bool ok;

	if (fd < 0)
		return false;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ok = !bind(fd, (struct sockaddr *)&a, sizeof(a)) && !hx_listening(NULL, port);
	close(fd);
	return ok;
}

/* mkdir DIR (mode 0700, as vmm wants its run dir); an existing dir is tightened. */
static int make_dir(const char *path)
{
	if (mkdir(path, 0700) && errno != EEXIST) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (chmod(path, 0700)) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Boots the guest on host A and waits until it runs and verifies. */
static int boot(struct soak *s, const char *config, struct soak_counts *c)
{
	char name[128], err[PATH_MAX + 256];
	char *args[] = {(char *)config, "--set", name, "--set", "vm.vcpus=2", "--set",
			"workload.kind=dirty", "--set", "workload.passes=0",
			/* a line after every pass, at most 4 a second: hops need not wait long */
			"--set", "workload.heartbeat_ms=250", NULL};
	struct soak_node *n = &s->nodes[0];
	bool stable;

	snprintf(name, sizeof(name), "vm.name=%s", s->env.name);
	s->cur = 0;
	/* the first hop is precopy */
	if (soak_node_start(n, &s->env, &s->hosts[0], "boot-A", args, s->env.digest, err,
			    sizeof(err)) ||
	    soak_node_wait_socket(n, s->env.name, s->timeout_ms, err, sizeof(err)) ||
	    hx_wait_line(NULL, &n->out, SOAK_BEAT, (size_t)s->beats, 0, s->timeout_ms, err,
			 sizeof(err)) ||
	    soak_node_counts(n, 10000, c, &stable, err, sizeof(err))) {
		fprintf(stderr, PROG ": booting the guest: %s (see %s)\n", err, n->err_path);
		return -1;
	}
	if (hx_console_corruption(&n->out)) {
		fprintf(stderr, PROG ": the booted guest reports: %s\n",
			hx_console_corruption(&n->out));
		return -1;
	}
	return 0;
}

static bool kvm_usable(void)
{
	return !access("/dev/kvm", R_OK | W_OK);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"hops", required_argument, NULL, 'n'},
	    {"work", required_argument, NULL, 'w'},
	    {"vmm", required_argument, NULL, 'v'},
	    {"config", required_argument, NULL, 'c'},
	    {"port-base", required_argument, NULL, 'p'},
	    {"csv", required_argument, NULL, 'C'},
	    {"keep-going", no_argument, NULL, 'k'},
	    {"no-digest", no_argument, NULL, 'D'},
	    {"rss-slack-mib", required_argument, NULL, 'R'},
	    {"fd-slack", required_argument, NULL, 'F'},
	    {"thread-slack", required_argument, NULL, 'T'},
	    {"timeout-s", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	static struct soak s;
	struct soak_report rep = {.slack = {0, 0, 32 * 1024}};
	char work_tmpl[] = "/tmp/vmm-soak.XXXXXX", run_prefix[PATH_MAX + 32], err[PATH_MAX + 256];
	const char *work = NULL, *config = EXAMPLES_DIR "/dirty.cfg", *csv = NULL;
	struct soak_counts boot_counts;
	int hops = 10, port_base = 22000, c, port, done, step;
	bool keep_going = false, pass;

	s.env = (struct soak_env){.vmm = VMM_BINARY, .name = "soakvm", .digest = true};
	s.beats = 2;
	s.timeout_ms = 120000;
	s.migrate_timeout_ms = 300000;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			hops = (int)number("--hops", optarg, 1, 100000);
			break;
		case 'w':
			work = optarg;
			break;
		case 'v':
			s.env.vmm = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case 'p':
			port_base = (int)number("--port-base", optarg, 1024, 65000);
			break;
		case 'C':
			csv = optarg;
			break;
		case 'k':
			keep_going = true;
			break;
		case 'D':
			s.env.digest = false;
			break;
		case 'R':
			rep.slack.rss_kb = number("--rss-slack-mib", optarg, 0, 1 << 20) * 1024;
			break;
		case 'F':
			rep.slack.fds = number("--fd-slack", optarg, 0, 1 << 20);
			break;
		case 'T':
			rep.slack.threads = number("--thread-slack", optarg, 0, 1 << 20);
			break;
		case 't':
			s.timeout_ms = (int)number("--timeout-s", optarg, 1, 86400) * 1000;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind != argc)
		bad("argument", argv[optind]);

	/* Like the other guest tests: no KVM fails, unless the builder opted out. */
	if (!kvm_usable()) {
		const char *no_kvm = getenv("VMM_TESTS_NO_KVM");

		if (no_kvm && !strcmp(no_kvm, "1")) {
			printf("SKIP: /dev/kvm not usable and VMM_TESTS_NO_KVM=1\n");
			return 77;
		}
		fprintf(stderr, PROG ": /dev/kvm is missing or not accessible (set "
				     "VMM_TESTS_NO_KVM=1 to skip guest tests)\n");
		return 1;
	}

	if (!work && !(work = mkdtemp(work_tmpl))) {
		fprintf(stderr, PROG ": mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	if (make_dir(work))
		return 1;
	s.env.dir = work;
	port = port_base;
	for (int i = 0; i < 2; i++) {
		struct soak_host *h = &s.hosts[i];

		snprintf(h->label, sizeof(h->label), "%c", 'A' + i);
		/* The letter itself, not h->label: GCC -O0 sees two members of s and warns
		 * (-Wrestrict). */
		snprintf(h->run_dir, sizeof(h->run_dir), "%s/run-%c", work, 'A' + i);
		if (make_dir(h->run_dir))
			return 1;
		while (port < port_base + 100 && !port_free(port))
			port++;
		if (port >= port_base + 100) {
			fprintf(stderr, PROG ": no free port in %d..%d\n", port_base,
				port_base + 99);
			return 1;
		}
		h->port = port++;
	}
	snprintf(run_prefix, sizeof(run_prefix), "VMM_RUN_DIR=%s/run-", work);
	s.run_prefix = run_prefix;
	if (soak_pki_make(work, s.hosts, 2, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	if (csv && !(rep.csv = fopen(csv, "w"))) {
		fprintf(stderr, PROG ": %s: %s\n", csv, strerror(errno));
		return 1;
	}
	printf("vmm-soak: %d hops of %s between host A (127.0.0.1:%d) and host B "
	       "(127.0.0.1:%d), TLS on, digest %s; logs in %s\n",
	       hops, config, s.hosts[0].port, s.hosts[1].port, s.env.digest ? "on" : "off", work);
	fflush(stdout);

	if (boot(&s, config, &boot_counts)) {
		soak_node_stop(&s.nodes[0], 10000);
		return 1;
	}
	soak_report_start(&rep, &boot_counts);
	/*
	 * Hops alternate precopy (step 0, 2, ...) and postcopy. A step is taken when the VM
	 * moved: after a failed hop that left it on the source (--keep-going),
	 * the next hop tries the same mode again, the one the source's digest
	 * hook was set up for.
	 */
	for (done = 0, step = 0; done < hops; done++) {
		struct soak_row row;
		int from = s.cur;
		int ret = soak_hop(&s, done + 1, step % 2 == 1, step % 2 == 0, &row);

		soak_report_row(&rep, &row);
		if (!ret) {
			step++;
			continue;
		}
		if (!keep_going || soak_hop_recover(&s)) {
			done++;
			break;
		}
		if (s.cur != from)
			step++;
	}
	pass = soak_report_end(&rep, hops);
	for (int i = 0; i < 2; i++)
		soak_node_stop(&s.nodes[i], 10000);
	if (rep.csv)
		fclose(rep.csv);
	return pass ? 0 : 1;
}
