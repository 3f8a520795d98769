/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_netgap: what the guest's clients see of a live migration, vmm
 * against QEMU microvm, the same firmware guest (vmm-firmware.elf; QEMU
 * boots it through its PVH entry) with the same device on the same host,
 * interleaved (per rep and mode: vmm, then QEMU) so host noise hits both.
 * Both: 256 MiB, 1 vCPU, the same MAC, a 300 ms downtime limit, no
 * bandwidth limit, migrated over the loopback; postcopy after the first
 * full pass (vmm's default --postcopy-after 1; QEMU's migrate-start-postcopy
 * at dirty-sync-count 2, as qemu_mig.c does).
 *
 * Part ping: the firmware's net workload (answers ARP and ICMP echo at
 * 10.99.0.2) on a virtio-net device on a tap. The bench makes a network
 * namespace of its own with a bridge br0 (10.99.0.1/24) and, per run, two
 * fresh taps on it, the source's and the target's; every VMM process and
 * the client run in the namespace. `ping -D -n -i 0.005` runs from when
 * the source's guest answers until 2 s after the migration completed (up
 * to 30 s when the target has not answered by then). From the ping log:
 * replies, requests, replies lost, the largest gap between two consecutive
 * replies (what the client saw of the migration) and the largest gap
 * before the migration started (the host's own noise, same run); and the
 * downtime as each VMM reports it (vmm's --json downtime_us, QEMU's
 * query-migrate downtime). A run whose target's guest never answers after
 * the migration counts as failed. The goal (the issue's): the largest gap
 * under 20 ms with the firmware responder, and below QEMU's in the same run.
 *
 * Part blk: the firmware's blk workload (a pass writes 256 blocks of
 * 4 KiB, flushes, reads them back and verifies them; a console line per
 * pass) on a 4 MiB disk file in the temp dir, which the target opens too
 * (vmm: [disk] path, pread/pwrite and fdatasync on FLUSH; QEMU:
 * virtio-blk-device on a raw -drive with its default cache=writeback, the
 * same page-cache semantics). Each pass line is stamped on the host as it
 * is read; the guest's progress is interpolated between them and its
 * throughput (2 MiB per pass: written + read) given for the 3 s before the
 * migration, during it (the migration's start to its end as the host sees
 * them) and the 3 s after; plus the longest interval between two passes
 * that overlaps the migration.
 *
 * No assertions: a table per part (median and range over the reps) and the
 * vmm/QEMU ratios of the same run; with --csv every run, a section per
 * part. Needs root (the namespace, the taps), ip (iproute2), ping
 * (iputils-ping). Without QEMU it runs the vmm side only and says so.
 *
 * Files (consoles, stderr, ping logs, QMP sockets) go to a temp dir, removed
 * at the end unless a run failed, or to --work DIR, which stays.
 *
 * usage: bench_netgap [--reps N] [--quick] [--part ping|blk|all] [--csv FILE]
 *                     [--vmm PATH] [--qemu PATH] [--firmware PATH] [--work DIR]
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "bench_util.h"
#include "netgap.h"

struct ng_opts ng_opt = {
    .vmm_bin = VMM_BINARY, .qemu_bin = "qemu-system-x86_64", .firmware = VMM_FIRMWARE};
char ng_tmpdir[64];
int ng_failed_runs;
int ng_run_seq;

#define die(...) bench_die(PROG, ng_tmpdir, __VA_ARGS__)

/* ---- tables ------------------------------------------------------------------------- */

void ng_series_add(struct series *s, int rep, bool ok, bool pc_used, const double *vals, int nvals,
		   double compared)
{
	s->runs++;
	s->by_rep[rep] = ok ? compared : NAN;
	if (!ok)
		return;
	s->ok++;
	s->pc_used += pc_used;
	for (int k = 0; k < nvals; k++)
		s->v[k][s->n] = vals[k];
	s->n++;
}

double ng_med(const struct series *s, int k)
{
	double c[MAXREPS];
	int n = 0;

	for (int i = 0; i < s->n; i++)
		if (!isnan(s->v[k][i]))
			c[n++] = s->v[k][i];
	return n ? bench_median(c, n) : NAN;
}

/* "median (min-max)" of value k, or "-". */
static const char *cell(char *buf, size_t len, const struct series *s, int k, const char *fmt)
{
	double c[MAXREPS];
	char f[64];
	int n = 0;

	for (int i = 0; i < s->n; i++)
		if (!isnan(s->v[k][i]))
			c[n++] = s->v[k][i];
	if (!n)
		return "-";
	if (n == 1) {
		snprintf(buf, len, fmt, c[0]);
		return buf;
	}
	snprintf(f, sizeof(f), "%s (%s-%s)", fmt, fmt, fmt);
	snprintf(buf, len, f, bench_median(c, n), bench_min(c, n), bench_max(c, n));
	return buf;
}

void ng_csv_num(FILE *f, double v, const char *fmt)
{
	fputc(',', f);
	if (!isnan(v))
		fprintf(f, fmt, v);
}

static void csv_blackout_head(FILE *f)
{
	for (int i = 0; i < NBLACKOUT; i++)
		fprintf(f, ",%s", ng_blackout_keys[i]);
	fputc('\n', f);
}

static void csv_blackout(FILE *f, const struct mig *m, bool ok)
{
	for (int i = 0; i < NBLACKOUT; i++)
		ng_csv_num(f, ok ? m->blackout_us[i] : NAN, "%.0f");
}

const char *ng_blackout_text(char *buf, size_t len, const struct mig *m)
{
	if (isnan(m->blackout_us[0]))
		return "";
	snprintf(buf, len,
		 " (pause %.1f, send %.1f, state %.1f, commit %.1f; target restore %.1f ms; "
		 "%.0f round trips, %.0f slept)",
		 m->blackout_us[0] / 1e3, m->blackout_us[1] / 1e3, m->blackout_us[2] / 1e3,
		 m->blackout_us[3] / 1e3, m->blackout_us[4] / 1e3, m->blackout_us[5],
		 m->blackout_us[6]);
	return buf;
}

void ng_runs(FILE *csv, const char *csv_cols, int reps, bool have_qemu, struct series s[2][2],
	     ng_run_fn *run)
{
	if (csv) {
		fputs(csv_cols, csv);
		csv_blackout_head(csv);
	}
	for (int rep = 1; rep <= reps; rep++)
		for (int pc = 0; pc < 2; pc++)
			for (int q = 0; q < (have_qemu ? 2 : 1); q++)
				run(csv, q, pc, rep, &s[pc][q]);
}

void ng_table(const char *head, struct series s[2][2], bool have_qemu, int ncells, const int *keys,
	      const char *const *fmts)
{
	char b[64];

	fputs(head, stdout);
	for (int pc = 0; pc < 2; pc++)
		for (int q = 0; q < (have_qemu ? 2 : 1); q++) {
			const struct series *x = &s[pc][q];

			printf("| %s | %s | %d/%d | ", pc ? "postcopy" : "precopy",
			       q ? "QEMU" : "vmm", x->ok, x->runs);
			for (int i = 0; i < ncells; i++)
				printf("%s | ", cell(b, sizeof(b), x, keys[i], fmts[i]));
			if (pc)
				printf("%d/%d |\n", x->pc_used, x->ok);
			else
				printf("- |\n");
		}
}

void ng_run_label(bool qemu, bool postcopy, int rep)
{
	fprintf(stderr, "  %s %-8s run %d: ", qemu ? "qemu" : "vmm ",
		postcopy ? "postcopy" : "precopy", rep);
}

const char *ng_precopy_note(bool postcopy, const struct mig *m)
{
	return postcopy && !m->postcopy_used ? " (completed as precopy)" : "";
}

void ng_csv_row_begin(FILE *f, const char *part, bool qemu, bool postcopy, int rep, bool ok,
		      bool known, const struct mig *m)
{
	fprintf(f, "%s,%s,%s,%d,%d,%s", part, postcopy ? "postcopy" : "precopy",
		qemu ? "qemu" : "vmm", rep, ok,
		!known		   ? ""
		: m->postcopy_used ? "postcopy"
				   : "precopy");
}

void ng_csv_row_end(FILE *f, const struct mig *m, bool ok)
{
	csv_blackout(f, m, ok);
	fputc('\n', f);
	fflush(f);
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
		"usage: " PROG " [--reps N] [--quick] [--part ping|blk|all] [--csv FILE]\n"
		"                    [--vmm PATH] [--qemu PATH] [--firmware PATH] [--work DIR]\n"
		"  --reps N   interleaved runs per mode and VMM (default 3; --quick: 1)\n"
		"  --work DIR the runs' files there, kept (default: a temp dir, removed\n"
		"             unless a run failed); UNIX sockets: a local file system\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *part = "all", *csv_path = NULL, *work = NULL;
	char err[256];
	int reps = 3;
	bool have_qemu, ping, blk;
	struct stat st;
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--quick")) {
			reps = 1;
			continue;
		}
		if (!v)
			usage();
		if (!strcmp(argv[i], "--reps")) {
			char *end;

			reps = (int)strtol(v, &end, 10);
			if (*end || reps < 1 || reps > MAXREPS) {
				fprintf(stderr, PROG ": --reps: '%s' is not a number in 1..%d\n", v,
					MAXREPS);
				return 2;
			}
		} else if (!strcmp(argv[i], "--part"))
			part = v;
		else if (!strcmp(argv[i], "--csv"))
			csv_path = v;
		else if (!strcmp(argv[i], "--vmm"))
			ng_opt.vmm_bin = v;
		else if (!strcmp(argv[i], "--qemu"))
			ng_opt.qemu_bin = v;
		else if (!strcmp(argv[i], "--firmware"))
			ng_opt.firmware = v;
		else if (!strcmp(argv[i], "--work"))
			work = v;
		else
			usage();
		i++;
	}
	ping = !strcmp(part, "ping") || !strcmp(part, "all");
	blk = !strcmp(part, "blk") || !strcmp(part, "all");
	if (!ping && !blk)
		usage();
	if (geteuid() != 0) {
		fprintf(stderr, PROG ": needs root: it makes a network namespace and taps "
				     "(and vmm needs /dev/kvm)\n");
		return 1;
	}
	if (stat(ng_opt.vmm_bin, &st) || stat(ng_opt.firmware, &st)) {
		fprintf(stderr,
			PROG ": %s or %s is missing: build the vmm and vmm-firmware targets\n",
			ng_opt.vmm_bin, ng_opt.firmware);
		return 1;
	}
	if (ping && (!bench_on_path("ip") || !bench_on_path("ping"))) {
		fprintf(stderr, PROG ": part ping needs ip (iproute2) and ping (iputils-ping): "
				     "scripts/install-deps.sh\n");
		return 1;
	}
	have_qemu = bench_on_path(ng_opt.qemu_bin);
	if (!have_qemu)
		printf(PROG ": %s is not installed (apt-get install qemu-system-x86): the vmm side "
			    "only, no comparison\n",
		       ng_opt.qemu_bin);
	if (work) {
		/* socket paths (sun_path, 108 bytes) are DIR + a name of up to ~40 */
		if (strlen(work) >= sizeof(ng_tmpdir) || (mkdir(work, 0755) && errno != EEXIST)) {
			fprintf(stderr, PROG ": --work %s: %s\n", work,
				strlen(work) >= sizeof(ng_tmpdir) ? "longer than 63 characters"
								  : strerror(errno));
			return 1;
		}
		snprintf(ng_tmpdir, sizeof(ng_tmpdir), "%s", work);
		setenv("VMM_RUN_DIR", ng_tmpdir, 1);
		ng_opt.keep_files = true;
		if (csv_path && !(csv = fopen(csv_path, "w"))) {
			perror(csv_path);
			return 1;
		}
	} else if (bench_open_outputs(PROG, csv_path, &csv, ng_tmpdir, sizeof(ng_tmpdir))) {
		return 1;
	}
	atexit(ng_cleanup);
	signal(SIGINT, ng_on_signal);
	signal(SIGTERM, ng_on_signal);
	signal(SIGHUP, ng_on_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("bench_netgap: the firmware guest (" MEM ", 1 vCPU) under vmm and QEMU microvm "
	       "(PVH, virtio-mmio), migrated over the loopback, downtime limit %d ms, postcopy "
	       "after the first pass\n",
	       DOWNTIME_MS);
	if (ping) {
		if (ng_ns_setup(err, sizeof(err)))
			die("%s", err);
		ng_part_ping(csv, reps, have_qemu);
	}
	if (blk) {
		if (csv && ping)
			fprintf(csv, "\n\n"); /* a section of its own (gnuplot: a data block) */
		ng_part_blk(csv, reps, have_qemu);
	}
	if (csv)
		fclose(csv);
	return 0; /* atexit: the namespace and the temp dir go */
}
