/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vmm-faults: the fault matrix as a program (docs/fault-matrix.md). Runs
 * each selected cell (fault_cells.c) with a real source and target and
 * prints expected vs observed as a table; exits 1 on any mismatch.
 *
 *   vmm-faults [--quick | --cell FAULT:PHASE ...] [--work DIR] [--vmm PATH]
 *              [--config PATH] [--timeout-ms T] [--port-base P] [--flood N] [--verbose]
 *   vmm-faults --list
 *   vmm-faults --names [--quick [--rotate N] | --cell FAULT:PHASE ...]
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fault_cells.h"
#include "fault_inject.h"
#include "fault_run.h"

#define MAX_SELECT 128

static const char usage[] =
    "usage: vmm-faults [--quick | --cell FAULT:PHASE ...] [OPTIONS]\n"
    "       vmm-faults --list\n"
    "       vmm-faults --names [--quick [--rotate N] | --cell FAULT:PHASE ...]\n"
    "\n"
    "Runs the migration fault matrix: each fault at each phase, with a real source\n"
    "and target running the dirty guest, and prints expected vs observed outcomes.\n"
    "Exits 0 when every cell that ran matched, 1 on any mismatch, 2 on bad usage.\n"
    "\n"
    "  --quick              the CI subset\n"
    "  --cell FAULT:PHASE   this cell (repeatable; --list shows the names)\n"
    "  --list               print the matrix's expectations and exit\n"
    "  --names              print the names of the cells the other options select, one\n"
    "                       a line, and exit (ctest makes one test of each)\n"
    "  --work DIR           per-cell files (default /tmp/vmm-faults)\n"
    "  --vmm PATH           the vmm binary (default build/vmm/vmm)\n"
    "  --config PATH        the dirty guest (default examples/dirty.cfg)\n"
    "  --scripts DIR        recproxy.py and flood.py (default tests/integration)\n"
    "  --rotate N           with --quick: N more cells, a different N each hour\n"
    "  --timeout-ms T       vmm migrate --timeout-ms (default 1500); stalls last 3T+2.5s\n"
    "  --port-base P        the target of cell i listens on P+i (default 23000)\n"
    "  --flood N            every cell floods the target's port from its trigger with N\n"
    "                       trickling and N idle connections (0: none), the valid-hello\n"
    "                       cells with N valid hellos; the detail line times each settle\n"
    "                       (default: only trickle cells, 8+64, and valid-hello, 64)\n"
    "  --verbose            what each cell does, on stderr\n"
    "  --force              run needs-commit cells with a vmm lacking the protocol too\n";

/* Whether this vmm has the switchover commit protocol (`vmm migrate --recover`). */
static bool have_commit(const char *vmm, const char *work)
{
	char log[4096], buf[8192];
	char *argv[] = {(char *)vmm, "migrate", "--help", NULL};
	FILE *f;
	size_t n;

	snprintf(log, sizeof(log), "%s/migrate-help.txt", work);
	unlink(log);
	fx_run_cmd(argv, log);
	f = fopen(log, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, "--recover") != NULL;
}

/* The steps called before the commit protocol landed; the rest came with it. */
static bool early_step(const char *step)
{
	return !strcmp(step, "source-setup") || !strcmp(step, "source-second-pass");
}

static void print_head(void)
{
	printf("| %-13s | %-15s | %-20s | %-17s | %-17s | %-6s | %s\n", "fault", "phase", "trigger",
	       "expected", "observed", "result", "detail");
	printf("|---------------|-----------------|----------------------|-------------------|---"
	       "----------------|--------|-------\n");
}

static const char *trigger_name(const struct fx_cell *c, char *buf, size_t len)
{
	if (c->fault == FX_READER_RESUME)
		snprintf(buf, len, "%s, proxy", c->trig.step);
	else if (c->trig.drop)
		snprintf(buf, len, "drop %s", c->trig.drop);
	else if (c->trig.before_migrate)
		snprintf(buf, len, "before migrate");
	else
		snprintf(buf, len, "%s", c->trig.step);
	return buf;
}

static void print_row(const struct fx_cell *c, const char *observed, const char *result,
		      const char *detail)
{
	char trig[64];

	printf("| %-13s | %-15s | %-20s | %-17s | %-17s | %-6s | %s\n", fx_fault_name(c->fault),
	       fx_phase_name(c->phase), trigger_name(c, trig, sizeof(trig)),
	       fx_outcome_name(c->expect), observed, result, detail);
	fflush(stdout);
}

/*
 * --quick --rotate N: N of the other cells as well, a different N each hour
 * (slot: hours since the epoch), so hourly runs cover the whole matrix in
 * ceil(others / N) hours; the table lists every cell that ran.
 */
static int add_rotation(const struct fx_cell **sel, int nsel, int n, time_t now, bool quiet)
{
	int others = 0, slot, k = 0;

	for (int i = 0; i < fx_ncells; i++)
		others += !fx_cells[i].quick;
	if (!others)
		return nsel;
	slot = (int)((now / 3600) % ((others + n - 1) / n));
	for (int i = 0; i < fx_ncells && nsel < MAX_SELECT; i++) {
		if (fx_cells[i].quick)
			continue;
		if (k / n == slot)
			sel[nsel++] = &fx_cells[i];
		k++;
	}
	if (!quiet)
		printf("vmm-faults: rotation slot %d of %d: %d more cells this hour\n", slot,
		       (others + n - 1) / n, n);
	return nsel;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"quick", no_argument, NULL, 'q'},
	    {"cell", required_argument, NULL, 'c'},
	    {"list", no_argument, NULL, 'l'},
	    {"names", no_argument, NULL, 'n'},
	    {"work", required_argument, NULL, 'w'},
	    {"vmm", required_argument, NULL, 'v'},
	    {"config", required_argument, NULL, 'f'},
	    {"timeout-ms", required_argument, NULL, 't'},
	    {"port-base", required_argument, NULL, 'p'},
	    {"scripts", required_argument, NULL, 'S'},
	    {"rotate", required_argument, NULL, 'r'},
	    {"verbose", no_argument, NULL, 'V'},
	    {"flood", required_argument, NULL, 'N'},
	    {"force", no_argument, NULL, 'F'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct fx_env env = {.vmm = "build/vmm/vmm",
			     .work = "/tmp/vmm-faults",
			     .config = "examples/dirty.cfg",
			     .timeout_ms = 1500,
			     .scripts = "tests/integration",
			     .flood = -1};
	const struct fx_cell *sel[MAX_SELECT];
	char why_reset[128], why_bh[128], stamp[64];
	int nsel = 0, port_base = 23000, ran = 0, failed = 0, skipped = 0, rotate = 0, opt;
	bool quick = false, list = false, names = false, force = false, commit, retried = false;
	int platform = 0;
	time_t now = time(NULL);

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'q':
			quick = true;
			break;
		case 'c':
			if (nsel == MAX_SELECT || !(sel[nsel] = fx_cell_find(optarg))) {
				fprintf(stderr, "vmm-faults: no cell %s (see --list)\n", optarg);
				return 2;
			}
			nsel++;
			break;
		case 'l':
			list = true;
			break;
		case 'n':
			names = true;
			break;
		case 'w':
			env.work = optarg;
			break;
		case 'v':
			env.vmm = optarg;
			break;
		case 'f':
			env.config = optarg;
			break;
		case 't':
			env.timeout_ms = atoi(optarg);
			break;
		case 'p':
			port_base = atoi(optarg);
			break;
		case 'S':
			env.scripts = optarg;
			break;
		case 'r':
			rotate = atoi(optarg);
			break;
		case 'N':
			env.flood = atoi(optarg);
			if (env.flood < 0 || env.flood > 512) {
				fprintf(stderr, "vmm-faults: --flood %s: not 0..512\n", optarg);
				return 2;
			}
			break;
		case 'V':
			env.verbose = true;
			break;
		case 'F':
			force = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc || env.timeout_ms < 100 || port_base < 1024 ||
	    port_base + fx_ncells > 65535) {
		fputs(usage, stderr);
		return 2;
	}
	if (fx_cells_check(why_reset, sizeof(why_reset))) {
		fprintf(stderr, "vmm-faults: %s\n", why_reset);
		return 2;
	}
	if (list) {
		print_head();
		for (int i = 0; i < fx_ncells; i++)
			print_row(&fx_cells[i], fx_cells[i].needs_commit ? "(needs commit)" : "",
				  fx_cells[i].quick ? "quick" : "", fx_cells[i].why);
		return 0;
	}
	if (!nsel)
		for (int i = 0; i < fx_ncells; i++)
			if (!quick || fx_cells[i].quick)
				sel[nsel++] = &fx_cells[i];
	if (quick && rotate > 0)
		nsel = add_rotation(sel, nsel, rotate, now, names);
	if (names) {
		for (int i = 0; i < nsel; i++)
			printf("%s:%s\n", fx_fault_name(sel[i]->fault),
			       fx_phase_name(sel[i]->phase));
		return 0;
	}

	fx_inject_install_cleanup();
	mkdir(env.work, 0755);
	commit = have_commit(env.vmm, env.work);
	fx_probe_tools(why_reset, sizeof(why_reset), why_bh, sizeof(why_bh));
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	printf("vmm-faults: %d cells, T = %d ms, %s, switchover commit protocol: %s\n", nsel,
	       env.timeout_ms, stamp, commit ? "yes" : "no (those cells: needs-commit)");
	print_head();
	for (int i = 0; i < nsel; i++) {
		const struct fx_cell *c = sel[i];
		struct fx_result res;
		char detail[2700];
		const char *skip = NULL;

		if (c->needs_commit && !commit && !force)
			skip = "needs-commit";
		else if (!commit && !force && c->trig.side != FX_NO_STEP &&
			 !early_step(c->trig.step))
			skip = "needs-commit (its step came with the protocol)";
		else if ((c->fault == FX_RESET || c->fault == FX_TRICKLE) && why_reset[0])
			skip = why_reset;
		else if (c->fault == FX_BLACKHOLE && why_bh[0])
			skip = why_bh;
		if (skip) {
			print_row(c, "-", "skip", skip);
			skipped++;
			continue;
		}
		if (env.verbose)
			fprintf(stderr, "vmm-faults: %s:%s\n", fx_fault_name(c->fault),
				fx_phase_name(c->phase));
		fx_cell_run(&env, c, port_base + (int)(c - fx_cells), &res);
		if (!res.pass && res.platform && !retried) {
			/* A guest killed by the platform says nothing of vmm: once more. */
			snprintf(detail, sizeof(detail),
				 "(%.0f s) a guest died by a bare triple "
				 "fault (the platform's): run again | %s",
				 res.secs, res.detail);
			print_row(c, fx_outcome_name(res.observed), "RERUN", detail);
			platform++;
			retried = true;
			i--;
			continue;
		}
		retried = false;
		snprintf(detail, sizeof(detail), "(%.0f s) %s", res.secs, res.detail);
		print_row(c, fx_outcome_name(res.observed), res.pass ? "PASS" : "FAIL", detail);
		ran++;
		failed += !res.pass;
	}
	printf("vmm-faults: %d ran, %d failed, %d skipped, %d run again after a platform triple "
	       "fault\n",
	       ran, failed, skipped, platform);
	return failed ? 1 : 0;
}
