/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_trickle: what trickling and idle connections on a target's port
 * cost each way a migration starts or settles. For each path and each
 * flood size N it runs one fault-matrix cell (vmm-faults --cell C --flood
 * N: N connections sending a byte of a hello a second and N sending
 * nothing, all reconnecting when dropped, from the cell's trigger to its
 * end) and reads the settle time the cell's detail line reports:
 *
 *   fresh       trickle:setup             vmm migrate, start to exit
 *   recover     trickle:sw-after-state    `vmm migrate --recover` after a reset
 *   resume      trickle:postcopy-early    `vmm migrate --resume` after a reset
 *   late-commit stop-source:sw-after-state the source stalled past the
 *                                          target's wait for COMMIT: from its
 *                                          continuing to `vmm migrate`'s exit
 *   fresh-vh    valid-hello:setup         the same paths past N connections
 *   recover-vh  valid-hello:sw-after-state that each send a valid hello and
 *   resume-vh   valid-hello:postcopy-early nothing more (the later two with
 *                                          the migration's own session id)
 *
 * N = 0 is the same run without a flood, the baseline of the same run; the
 * table gives each path's worst minus its baseline (the goal: under 2 s).
 * A cell whose outcome is not the matrix's expectation prints FAIL and its
 * detail; the benchmark asserts nothing.
 *
 * usage: bench_trickle [--floods N,N,...] [--paths P,P,...] [--quick] [--csv FILE]
 *                      [--work DIR] [--faults PATH] [--vmm PATH] [--config PATH]
 *                      [--scripts DIR]
 */
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_FLOODS 8

struct path {
	const char *name, *cell;
	const char *re; /* the settle time in the cell's detail line */
};

static const struct path paths[] = {
    {"fresh", "trickle:setup", "vmm migrate exit 0 in ([0-9.]+) s"},
    {"recover", "trickle:sw-after-state", "--recover: exit 0 in ([0-9.]+) s"},
    {"resume", "trickle:postcopy-early", "--resume: exit 0 in ([0-9.]+) s"},
    {"late-commit", "stop-source:sw-after-state", "vmm migrate exit 0 in ([0-9.]+) s"},
    {"fresh-vh", "valid-hello:setup", "vmm migrate exit 0 in ([0-9.]+) s"},
    {"recover-vh", "valid-hello:sw-after-state", "--recover: exit 0 in ([0-9.]+) s"},
    {"resume-vh", "valid-hello:postcopy-early", "--resume: exit 0 in ([0-9.]+) s"},
};
#define NPATHS ((int)(sizeof(paths) / sizeof(paths[0])))

struct opts {
	const char *faults, *vmm, *config, *scripts, *work, *csv;
	const char *paths; /* comma-separated names, NULL: all */
	int floods[MAX_FLOODS], nfloods;
};

/* Whether path `name` is among the comma-separated `list` (NULL: all are). */
static bool chosen(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	return !list;
}

struct cell_result {
	bool pass;
	double settle_s, cell_s; /* settle_s < 0: not found */
	char detail[1024];
};

static const char usage[] =
    "usage: bench_trickle [--floods N,N,...] [--paths P,P,...] [--quick] [--csv FILE] [--work "
    "DIR]\n"
    "                     [--faults PATH] [--vmm PATH] [--config PATH] [--scripts DIR]\n"
    "  --floods   flood sizes (default 0,1,8,64: N trickling + N idle connections, or\n"
    "             N valid hellos for the -vh paths)\n"
    "  --paths    only these paths (fresh, recover, resume, late-commit, fresh-vh,\n"
    "             recover-vh, resume-vh)\n"
    "  --quick    --floods 0,8\n";

static int parse_floods(const char *s, struct opts *o)
{
	char *end;

	o->nfloods = 0;
	while (*s && o->nfloods < MAX_FLOODS) {
		long v = strtol(s, &end, 10);

		if (end == s || v < 0 || v > 512)
			return -1;
		o->floods[o->nfloods++] = (int)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return o->nfloods ? 0 : -1;
}

/* One cell: vmm-faults' table row for it, parsed. */
static int run_cell(const struct opts *o, const struct path *p, int flood, int port,
		    struct cell_result *r)
{
	char cmd[4096], line[4096], work[1024];
	regex_t re;
	regmatch_t m[2];
	FILE *f;
	int status;

	memset(r, 0, sizeof(*r));
	r->settle_s = -1;
	snprintf(work, sizeof(work), "%s/%s-%d", o->work, p->name, flood);
	snprintf(cmd, sizeof(cmd),
		 "'%s' --cell %s --flood %d --work '%s' --vmm '%s' --config '%s' --scripts '%s' "
		 "--port-base %d 2>'%s.err'",
		 o->faults, p->cell, flood, work, o->vmm, o->config, o->scripts, port, work);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	if (regcomp(&re, p->re, REG_EXTENDED)) {
		pclose(f);
		return -EINVAL;
	}
	while (fgets(line, sizeof(line), f)) {
		char *cells[8] = {0}, *save = NULL, *tok;
		int n = 0;

		if (strncmp(line, "| ", 2) || strstr(line, "| fault "))
			continue;
		for (tok = strtok_r(line, "|", &save); tok && n < 8;
		     tok = strtok_r(NULL, "|", &save))
			cells[n++] = tok;
		if (n < 7)
			continue;
		r->pass = strstr(cells[5], "PASS") != NULL;
		sscanf(cells[6], " (%lf s)", &r->cell_s);
		snprintf(r->detail, sizeof(r->detail), "%s", cells[6]);
		r->detail[strcspn(r->detail, "\n")] = '\0';
		if (!regexec(&re, cells[6], 2, m, 0))
			r->settle_s = atof(cells[6] + m[1].rm_so);
	}
	regfree(&re);
	status = pclose(f);
	(void)status; /* a FAIL row says more than the exit code */
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
	    .faults = VMM_FAULTS_BINARY,
	    .vmm = VMM_BINARY,
	    .config = EXAMPLES_DIR "/dirty.cfg",
	    .scripts = SCRIPTS_DIR,
	    .work = "/tmp/bench_trickle",
	    .floods = {0, 1, 8, 64},
	    .nfloods = 4,
	};
	struct cell_result res[NPATHS][MAX_FLOODS];
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--quick")) {
			parse_floods("0,8", &o);
			continue;
		}
		if (!v || strncmp(a, "--", 2)) {
			fputs(usage, stderr);
			return 2;
		}
		i++;
		if (!strcmp(a, "--floods")) {
			if (parse_floods(v, &o)) {
				fprintf(stderr, "bench_trickle: --floods %s: a list of 0..512\n",
					v);
				return 2;
			}
		} else if (!strcmp(a, "--csv"))
			o.csv = v;
		else if (!strcmp(a, "--work"))
			o.work = v;
		else if (!strcmp(a, "--paths"))
			o.paths = v;
		else if (!strcmp(a, "--faults"))
			o.faults = v;
		else if (!strcmp(a, "--vmm"))
			o.vmm = v;
		else if (!strcmp(a, "--config"))
			o.config = v;
		else if (!strcmp(a, "--scripts"))
			o.scripts = v;
		else {
			fputs(usage, stderr);
			return 2;
		}
	}
	/* Each name given is a path: a typo would run nothing and print an empty table. */
	for (const char *n = o.paths; n; n = strchr(n, ','), n = n ? n + 1 : NULL) {
		size_t len = strcspn(n, ",");
		bool known = false;

		for (int p = 0; p < NPATHS; p++)
			known |= strlen(paths[p].name) == len && !strncmp(paths[p].name, n, len);
		if (!known) {
			fprintf(stderr, "bench_trickle: --paths: no path '%.*s'\n%s", (int)len, n,
				usage);
			return 2;
		}
	}
	if (o.csv) {
		csv = fopen(o.csv, "w");
		if (!csv) {
			fprintf(stderr, "bench_trickle: %s: %s\n", o.csv, strerror(errno));
			return 1;
		}
		fprintf(csv, "path,cell,flood,ok,settle_s,cell_s\n");
	}
	mkdir(o.work, 0755);
	printf("bench_trickle: each path with N trickling + N idle connections on the target's "
	       "port, or N valid hellos (-vh), vmm-faults --flood N\n");
	for (int p = 0; p < NPATHS; p++)
		for (int k = 0; k < o.nfloods && chosen(o.paths, paths[p].name); k++) {
			struct cell_result *r = &res[p][k];
			int ret = run_cell(&o, &paths[p], o.floods[k], 24000 + 100 * p + k, r);

			if (ret)
				snprintf(r->detail, sizeof(r->detail),
					 "could not run vmm-faults: %s", strerror(-ret));
			printf("  %-11s N=%-3d %s settle %.1f s (cell %.0f s)%s%s\n", paths[p].name,
			       o.floods[k], r->pass ? "PASS" : "FAIL", r->settle_s, r->cell_s,
			       r->pass ? "" : ": ", r->pass ? "" : r->detail);
			fflush(stdout);
			if (csv)
				fprintf(csv, "%s,%s,%d,%d,%.2f,%.1f\n", paths[p].name,
					paths[p].cell, o.floods[k], r->pass, r->settle_s,
					r->cell_s);
		}
	printf("\n| path | cell |");
	for (int k = 0; k < o.nfloods; k++)
		printf(" N=%d |", o.floods[k]);
	printf(" worst - N=%d |\n|---|---|", o.floods[0]);
	for (int k = 0; k < o.nfloods; k++)
		printf("---|");
	printf("---|\n");
	for (int p = 0; p < NPATHS; p++) {
		double worst = -1;
		bool all = true;

		if (!chosen(o.paths, paths[p].name))
			continue;
		printf("| %s | %s |", paths[p].name, paths[p].cell);
		for (int k = 0; k < o.nfloods; k++) {
			struct cell_result *r = &res[p][k];

			all &= r->pass && r->settle_s >= 0;
			if (r->pass && r->settle_s >= 0) {
				printf(" %.1f s |", r->settle_s);
				if (k > 0 && r->settle_s > worst)
					worst = r->settle_s;
			} else {
				printf(" FAIL |");
			}
		}
		if (all && worst >= 0)
			printf(" %+.1f s |\n", worst - res[p][0].settle_s);
		else
			printf(" - |\n");
	}
	if (csv)
		fclose(csv);
	return 0;
}
