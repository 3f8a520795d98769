/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_linux: the project's Linux test guest (guest-linux/) under vmm and
 * under QEMU's microvm machine, the same kernel, initramfs and command line
 * in one run, interleaved (vmm, QEMU, vmm, QEMU, ...) so host noise hits both.
 *
 * Part boot: 128 MiB, 1 vCPU; time from spawning the VMM to the guest's
 * first console line and to the init marker line (host CLOCK_MONOTONIC when
 * the line is read from the VMM's stdout pipe).
 *
 * Part migrate: 512 MiB, 1 vCPU (--vcpus: QEMU's microvm brings up only
 * the first CPU of this kernel on these hosts, so more are vmm only), the
 * guest's memverify workload over a 256 MiB (--ws-mib; 16 with --quick)
 * incompressible working set in transparent huge pages, rewritten in
 * random order; once it has
 * printed two heartbeats, a precopy and a postcopy migration over loopback:
 * vmm with `vmm migrate --json`, QEMU with QMP `migrate` (postcopy: the
 * postcopy-ram capability, `migrate-start-postcopy` after the first pass,
 * as vmm's default --postcopy-after 1). Both with the same 300 ms downtime
 * limit and no bandwidth limit. Reported: total time, downtime, bytes on the
 * wire, and for vmm's postcopy the fault latency (QEMU 7.2 reports no fault
 * latency; its postcopy request count is shown). After each migration the
 * guest must print a heartbeat on the target without a CORRUPTION line.
 *
 * No assertions: it prints a table per part (median and range of --reps
 * runs, and vmm/QEMU ratios) and, with --csv, every run.
 *
 * usage: bench_linux [--reps N] [--quick] [--part boot|migrate|all] [--ws-mib N] [--vcpus N]
 *                    [--csv FILE] [--vmm PATH] [--qemu PATH] [--kernel PATH] [--initrd PATH]
 */
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "bench_linux.h"
#include "bench_util.h"
#include "harness_json.h"
#include "harness_net.h"
#include "harness_run.h"
#include "qmp_client.h"

#define PROG "bench_linux"

struct bl_opts bl = {
    .vmm = VMM_BINARY,
    .qemu = "qemu-system-x86_64",
    .kernel = VMM_LINUX_KERNEL,
    .initrd = VMM_LINUX_INITRD,
    .reps = 3,
    .ws_mib = 256,
    .vcpus = 1,
};

static char tmpdir[64];

#define die(...) bench_die(PROG, tmpdir, __VA_ARGS__)

/* ---- one VMM process with its console on a pipe -------------------------- */

struct guest {
	struct hx_proc proc;
	struct hx_console out;
	struct hx_watch watch;
	double t0; /* spawn */
};

static int guest_spawn(struct guest *g, const char *name, struct hx_argv *a, const char *errfile,
		       char *err, size_t errlen)
{
	struct hx_spawn s = {.argv = a->v, .err_path = errfile};
	int fd, r;

	memset(g, 0, sizeof(*g));
	if (a->overflow) {
		snprintf(err, errlen, "%s: too many arguments", name);
		return -E2BIG;
	}
	g->t0 = bench_now_ms();
	r = hx_spawn(&g->proc, name, &s, &fd, err, errlen);
	if (r)
		return r;
	r = hx_console_pipe(&g->out, name, fd, err, errlen);
	if (r)
		return r;
	hx_watch_add(&g->watch, &g->out);
	return 0;
}

/* Milliseconds from spawn to the first line matching regex (waiting up to timeout_s). */
static double guest_line_ms(struct guest *g, const char *regex, int timeout_s)
{
	char err[256];
	size_t i;

	if (hx_wait_line(&g->watch, &g->out, regex, 1, 0, timeout_s * 1000, err, sizeof(err)))
		return -1;
	for (i = 0; i < g->out.nlines; i++) {
		regex_t re;
		bool m;

		regcomp(&re, regex, REG_EXTENDED | REG_NOSUB);
		m = regexec(&re, hx_console_line(&g->out, i), 0, NULL, 0) == 0;
		regfree(&re);
		if (m)
			return g->out.lines[i].t_ms - g->t0;
	}
	return -1;
}

static void guest_end(struct guest *g)
{
	hx_signal(&g->proc, SIGKILL);
	hx_reap(&g->proc, 5000);
	hx_console_close(&g->out);
}

/* ---- the two command lines ---------------------------------------------- */

void bl_vmm_args(struct hx_argv *a, const char *name, const char *mem, int vcpus,
		 const char *workload)
{
	hx_argv_add(a, bl.vmm);
	hx_argv_add(a, "run");
	hx_argv_add(a, BL_CONFIG);
	hx_argv_addf(a, "--set=vm.name=%s", name);
	hx_argv_addf(a, "--set=vm.memory=%s", mem);
	hx_argv_addf(a, "--set=vm.vcpus=%d", vcpus);
	hx_argv_addf(a, "--set=firmware.path=%s", bl.kernel);
	hx_argv_addf(a, "--set=firmware.cmdline=" BL_CMDLINE "%s", workload);
	hx_argv_add(a, "--initrd");
	hx_argv_add(a, bl.initrd);
	hx_argv_add(a, "--set=console.input=none");
}

void bl_qemu_args(struct hx_argv *a, const char *mem, int vcpus, const char *workload,
		  const char *qmp_path, int incoming_port)
{
	hx_argv_add(a, bl.qemu);
	hx_argv_split(a, "-M microvm -enable-kvm " BL_QEMU_CPU
			 " -nodefaults -no-user-config -nographic -serial stdio -no-reboot");
	hx_argv_add(a, "-m");
	hx_argv_add(a, mem);
	hx_argv_add(a, "-smp");
	hx_argv_addf(a, "%d", vcpus);
	hx_argv_add(a, "-kernel");
	hx_argv_add(a, bl.kernel);
	hx_argv_add(a, "-initrd");
	hx_argv_add(a, bl.initrd);
	hx_argv_add(a, "-append");
	hx_argv_addf(a, BL_CMDLINE "%s", workload);
	if (qmp_path) {
		hx_argv_add(a, "-qmp");
		hx_argv_addf(a, "unix:%s,server=on,wait=off", qmp_path);
	}
	if (incoming_port) {
		hx_argv_add(a, "-incoming");
		hx_argv_addf(a, "tcp:127.0.0.1:%d", incoming_port);
	}
}

/* ---- part boot ------------------------------------------------------------ */

static int boot_once(bool qemu, int rep, double *first, double *init)
{
	struct hx_argv a = {0};
	struct guest g;
	char err[512], name[32], errfile[128];
	int r;

	snprintf(name, sizeof(name), "%s-boot%d", qemu ? "qemu" : "vmm", rep);
	snprintf(errfile, sizeof(errfile), "%s/%s.err", tmpdir, name);
	if (qemu)
		bl_qemu_args(&a, "128M", 1, "", NULL, 0);
	else
		bl_vmm_args(&a, name, "128M", 1, "");
	r = guest_spawn(&g, name, &a, errfile, err, sizeof(err));
	hx_argv_free(&a);
	if (r) {
		fprintf(stderr, PROG ": %s\n", err);
		return r;
	}
	*first = guest_line_ms(&g, ".", 120);
	*init = guest_line_ms(&g, BL_INIT_MARKER, 300);
	guest_end(&g);
	if (*first < 0 || *init < 0) {
		fprintf(stderr, PROG ": %s: no %s within the timeout (see %s)\n", name,
			*first < 0 ? "console line" : "init marker", errfile);
		return -ETIMEDOUT;
	}
	return 0;
}

static void part_boot(FILE *csv, bool have_qemu)
{
	double f[2][64], in[2][64];
	int n[2] = {0, 0};

	printf("\n== boot: 128 MiB, 1 vCPU, %d interleaved runs each\n", bl.reps);
	for (int rep = 0; rep < bl.reps; rep++) {
		for (int q = 0; q < (have_qemu ? 2 : 1); q++) {
			double first, init;

			if (boot_once(q, rep, &first, &init))
				continue;
			f[q][n[q]] = first;
			in[q][n[q]++] = init;
			fprintf(stderr, "  %s run %d: first line %.0f ms, init %.0f ms\n",
				q ? "qemu" : "vmm ", rep + 1, first, init);
			if (csv)
				fprintf(csv, "boot,%s,%d,%.1f,%.1f\n", q ? "qemu" : "vmm", rep + 1,
					first, init);
		}
	}
	printf("| VMM | runs | first console line ms (median, min-max) | init ms (median, min-max) "
	       "|\n");
	printf("|---|---|---|---|\n");
	for (int q = 0; q < 2; q++) {
		if (!n[q])
			continue;
		double lo_f = bench_min(f[q], n[q]), lo_i = bench_min(in[q], n[q]);
		double hi_f = bench_max(f[q], n[q]), hi_i = bench_max(in[q], n[q]);

		printf("| %s | %d | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) |\n",
		       q ? "QEMU microvm" : "vmm", n[q], bench_median(f[q], n[q]), lo_f, hi_f,
		       bench_median(in[q], n[q]), lo_i, hi_i);
	}
	if (n[0] && n[1])
		printf("vmm/QEMU time to init: %.2f\n",
		       bench_median(in[0], n[0]) / bench_median(in[1], n[1]));
}

/* ---- main ------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
		"usage: " PROG " [--reps N] [--quick] [--part boot|migrate|all] [--ws-mib N]\n"
		"                   [--vcpus N] [--csv FILE] [--vmm PATH] [--qemu PATH] [--kernel "
		"PATH] [--initrd PATH]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *part = "all", *csv_path = NULL;
	struct stat st;
	bool have_qemu;
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--quick")) {
			bl.reps = 1;
			bl.ws_mib = 16;
			bl.quick = true;
			continue;
		}
		if (!v)
			usage();
		if (!strcmp(argv[i], "--reps"))
			bl.reps = atoi(v);
		else if (!strcmp(argv[i], "--ws-mib"))
			bl.ws_mib = atoi(v);
		else if (!strcmp(argv[i], "--vcpus"))
			bl.vcpus = atoi(v);
		else if (!strcmp(argv[i], "--part"))
			part = v;
		else if (!strcmp(argv[i], "--csv"))
			csv_path = v;
		else if (!strcmp(argv[i], "--vmm"))
			bl.vmm = v;
		else if (!strcmp(argv[i], "--qemu"))
			bl.qemu = v;
		else if (!strcmp(argv[i], "--kernel"))
			bl.kernel = v;
		else if (!strcmp(argv[i], "--initrd"))
			bl.initrd = v;
		else
			usage();
		i++;
	}
	if (bl.reps < 1 || bl.reps > 64)
		die("--reps must be 1..64");
	if (bl.ws_mib < 1 || bl.ws_mib > 384)
		die("--ws-mib must be 1..384 (the guest has 512 MiB)");
	if (bl.vcpus < 1 || bl.vcpus > 8)
		die("--vcpus must be 1..8 (the test kernel's NR_CPUS)");
	if (stat(bl.kernel, &st) || stat(bl.initrd, &st))
		die("the test kernel %s or its initramfs %s is missing: build the linux-guest "
		    "target "
		    "(needs Debian's linux-source-6.1: scripts/install-deps.sh)",
		    bl.kernel, bl.initrd);
	have_qemu = bench_on_path(bl.qemu);
	if (!have_qemu)
		fprintf(stderr,
			PROG ": %s is not installed (apt-get install qemu-system-x86): vmm only\n",
			bl.qemu);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bench_linux.XXXXXX");
	if (!mkdtemp(tmpdir))
		die("mkdtemp: %s", strerror(errno));
	setenv("VMM_RUN_DIR", tmpdir, 1);
	if (csv_path) {
		csv = fopen(csv_path, "w");
		if (!csv)
			die("%s: %s", csv_path, strerror(errno));
		fprintf(csv, "part,vmm,run,a,b,c,d,e\n");
	}
	if (!strcmp(part, "boot") || !strcmp(part, "all"))
		part_boot(csv, have_qemu);
	if (!strcmp(part, "migrate") || !strcmp(part, "all"))
		bl_part_migrate(csv, have_qemu, tmpdir);
	if (csv)
		fclose(csv);
	bench_rm_tree(tmpdir);
	return 0;
}
