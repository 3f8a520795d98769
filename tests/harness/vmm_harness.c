/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vmm-harness: the migration harness (tests/harness/) for shell scripts.
 *
 *   vmm-harness migrate OPTIONS [-- VMM-MIGRATE-ARGS]   the common scenario
 *   vmm-harness port                       a free loopback TCP port
 *   vmm-harness wait-listen PORT SECONDS [PID]
 *   vmm-harness wait-line FILE REGEX SECONDS [COUNT]
 *   vmm-harness json FILE KEY              a value of a `vmm migrate --json` summary
 *
 * Exit status: 0 when everything held, 1 when something did not (the reason
 * on stderr), 2 for a bad command line.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "harness_console.h"
#include "harness_json.h"
#include "harness_net.h"
#include "harness_run.h"

#define PROG "vmm-harness"

static const char usage[] =
    "usage: " PROG " migrate --name NAME --ready REGEX [OPTIONS] [-- VMM-MIGRATE-ARGS...]\n"
    "       " PROG " port\n"
    "       " PROG " wait-listen PORT SECONDS [PID]\n"
    "       " PROG " wait-line FILE REGEX SECONDS [COUNT]\n"
    "       " PROG " json FILE KEY\n"
    "\n"
    "migrate: starts the source (vmm run [CONFIG] --set vm.name=NAME ...) and the\n"
    "target (vmm run --incoming HOST:PORT ...), waits until the target listens and\n"
    "a line of the source's console matches REGEX, runs\n"
    "`vmm migrate --to HOST:PORT --vm NAME VMM-MIGRATE-ARGS`, and checks that it\n"
    "exits 0, that every --expect holds of its --json summary, and that the source\n"
    "exits 0 saying \"migrated to HOST:PORT\"; then, with --target-done, that the\n"
    "target's guest prints a matching line, no CORRUPTION line, and exits 0 (with\n"
    "--target-lines N: prints N matching lines, then ends on SIGTERM: a guest that\n"
    "runs until stopped, so that no test needs the migration to end before the\n"
    "guest's last pass); with\n"
    "--target-serves, that the target runs on and serves the VM's API, and ends\n"
    "on SIGTERM. Files in DIR: src.out src.err dst.out dst.err mig.out mig.err.\n"
    "\n"
    "  --vmm PATH             the vmm binary (default $VMM)\n"
    "  --source-vmm PATH      another binary for the source and vmm migrate (a release)\n"
    "  --target-vmm PATH      another binary for the target\n"
    "  --dir DIR              where the files go (default $WORK)\n"
    "  --name NAME            the VM's name\n"
    "  --config FILE          the source's config file\n"
    "  --set KEY=VALUE        a --set for the source (repeatable)\n"
    "  --target-set KEY=VALUE a --set for the target (repeatable)\n"
    "  --source-env, --target-env, --migrate-env NAME=VALUE   environment (repeatable)\n"
    "  --source-wrap CMD, --target-wrap CMD   run it under CMD, e.g. 'ip netns exec ns1'\n"
    "  --host HOST            the target's address (default 127.0.0.1)\n"
    "  --port PORT            its port (default: a free loopback port)\n"
    "  --ready REGEX          the source's console line to wait for (extended regex)\n"
    "  --ready-timeout S      (default 60)\n"
    "  --migrate-timeout S    for vmm migrate to finish (default 60)\n"
    "  --expect KEY=VALUE     a field of the summary (repeatable; pass --json)\n"
    "  --target-done REGEX    the target's guest finishes, verified\n"
    "  --target-lines N       with --target-done: N lines of the target's console\n"
    "                         match it (a guest that runs on), then SIGTERM ends it\n"
    "  --target-serves        the VM lives on at the target\n"
    "  --target-timeout S     for the target to finish (default 120)\n";

static int fail(const char *what)
{
	fprintf(stderr, PROG ": %s\n", what);
	return 1;
}

static int seconds(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v < 0 || v > 86400) {
		fprintf(stderr, PROG ": bad number of seconds '%s'\n", s);
		exit(2);
	}
	return hx_scaled_ms(v * 1000);
}

struct migrate_cli {
	struct hx_run_opts o;
	struct hx_argv sets, tsets, senv, tenv, menv, expect;
	const char *ready, *target_done;
	int ready_ms, migrate_ms, target_ms, target_lines;
	bool serves;
};

static int parse_migrate(int argc, char **argv, struct migrate_cli *m)
{
	enum {
		O_VMM = 256,
		O_SVMM,
		O_TVMM,
		O_DIR,
		O_NAME,
		O_CONFIG,
		O_SET,
		O_TSET,
		O_SENV,
		O_TENV,
		O_MENV,
		O_SWRAP,
		O_TWRAP,
		O_HOST,
		O_PORT,
		O_READY,
		O_READY_T,
		O_MIG_T,
		O_EXPECT,
		O_DONE,
		O_SERVES,
		O_TGT_T,
		O_LINES
	};
	static const struct option opts[] = {
	    {"vmm", required_argument, NULL, O_VMM},
	    {"source-vmm", required_argument, NULL, O_SVMM},
	    {"target-vmm", required_argument, NULL, O_TVMM},
	    {"dir", required_argument, NULL, O_DIR},
	    {"name", required_argument, NULL, O_NAME},
	    {"config", required_argument, NULL, O_CONFIG},
	    {"set", required_argument, NULL, O_SET},
	    {"target-set", required_argument, NULL, O_TSET},
	    {"source-env", required_argument, NULL, O_SENV},
	    {"target-env", required_argument, NULL, O_TENV},
	    {"migrate-env", required_argument, NULL, O_MENV},
	    {"source-wrap", required_argument, NULL, O_SWRAP},
	    {"target-wrap", required_argument, NULL, O_TWRAP},
	    {"host", required_argument, NULL, O_HOST},
	    {"port", required_argument, NULL, O_PORT},
	    {"ready", required_argument, NULL, O_READY},
	    {"ready-timeout", required_argument, NULL, O_READY_T},
	    {"migrate-timeout", required_argument, NULL, O_MIG_T},
	    {"expect", required_argument, NULL, O_EXPECT},
	    {"target-done", required_argument, NULL, O_DONE},
	    {"target-serves", no_argument, NULL, O_SERVES},
	    {"target-timeout", required_argument, NULL, O_TGT_T},
	    {"target-lines", required_argument, NULL, O_LINES},
	    {NULL, 0, NULL, 0},
	};
	int c;

	m->o.vmm = getenv("VMM");
	m->o.dir = getenv("WORK");
	m->ready_ms = hx_scaled_ms(60000);
	m->migrate_ms = hx_scaled_ms(60000);
	m->target_ms = hx_scaled_ms(120000);
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case O_VMM:
			m->o.vmm = optarg;
			break;
		case O_SVMM:
			m->o.source_vmm = optarg;
			break;
		case O_TVMM:
			m->o.target_vmm = optarg;
			break;
		case O_DIR:
			m->o.dir = optarg;
			break;
		case O_NAME:
			m->o.name = optarg;
			break;
		case O_CONFIG:
			m->o.config = optarg;
			break;
		case O_SET:
			hx_argv_add(&m->sets, "--set");
			hx_argv_add(&m->sets, optarg);
			break;
		case O_TSET:
			hx_argv_add(&m->tsets, "--set");
			hx_argv_add(&m->tsets, optarg);
			break;
		case O_SENV:
			hx_argv_add(&m->senv, optarg);
			break;
		case O_TENV:
			hx_argv_add(&m->tenv, optarg);
			break;
		case O_MENV:
			hx_argv_add(&m->menv, optarg);
			break;
		case O_SWRAP:
			m->o.source_wrap = optarg;
			break;
		case O_TWRAP:
			m->o.target_wrap = optarg;
			break;
		case O_HOST:
			m->o.host = optarg;
			break;
		case O_PORT:
			m->o.port = atoi(optarg);
			break;
		case O_READY:
			m->ready = optarg;
			break;
		case O_READY_T:
			m->ready_ms = seconds(optarg);
			break;
		case O_MIG_T:
			m->migrate_ms = seconds(optarg);
			break;
		case O_EXPECT:
			hx_argv_add(&m->expect, optarg);
			break;
		case O_DONE:
			m->target_done = optarg;
			break;
		case O_SERVES:
			m->serves = true;
			break;
		case O_TGT_T:
			m->target_ms = seconds(optarg);
			break;
		case O_LINES:
			m->target_lines = atoi(optarg);
			if (m->target_lines < 1) {
				fprintf(stderr, PROG " migrate: bad --target-lines '%s'\n", optarg);
				return 2;
			}
			break;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!m->o.vmm || !m->o.dir || !m->o.name || !m->ready) {
		fprintf(stderr, PROG " migrate: needs --vmm (or $VMM), --dir (or $WORK), --name "
				     "and --ready\n");
		return 2;
	}
	if (m->o.port < 0 || m->o.port > 65535 || (m->target_done && m->serves)) {
		fprintf(stderr, PROG " migrate: bad --port, or both --target-done and "
				     "--target-serves\n");
		return 2;
	}
	if (m->target_lines && !m->target_done) {
		fprintf(stderr, PROG " migrate: --target-lines goes with --target-done\n");
		return 2;
	}
	m->o.source_args = m->sets.v;
	m->o.target_args = m->tsets.v;
	m->o.source_env = m->senv.v;
	m->o.target_env = m->tenv.v;
	m->o.migrate_env = m->menv.v;
	return 0;
}

/* The scenario's steps, in order; the first that fails ends it. */
static int run_migrate(struct migrate_cli *m, char **margs)
{
	struct hx_run r;
	struct hx_cmd c = {0};
	char err[PATH_MAX + 1024];
	int ret;

	ret = hx_run_start(&r, &m->o, err, sizeof(err));
	if (!ret) {
		printf(PROG ": the target listens at %s\n", r.to);
		ret = hx_wait_line(&r.watch, &r.src_out, m->ready, 1, 0, m->ready_ms, err,
				   sizeof(err));
	}
	if (!ret)
		ret = hx_run_migrate(&r, margs, m->migrate_ms, &c, err, sizeof(err));
	if (!ret) {
		printf(PROG ": vmm migrate exited %d after %.0f ms\n", c.code, c.ms);
		if (c.code) {
			snprintf(err, sizeof(err), "vmm migrate exited %d, not 0 (see %s)", c.code,
				 c.err_path);
			ret = -EIO;
		}
	}
	for (int i = 0; !ret && i < m->expect.n; i++) {
		if (!c.json) {
			snprintf(err, sizeof(err),
				 "--expect: vmm migrate printed no JSON (pass "
				 "--json to it)");
			ret = -EINVAL;
		} else {
			ret = hx_json_expect(c.json, m->expect.v[i], err, sizeof(err));
		}
	}
	if (!ret)
		ret = hx_run_switched_over(&r, 10000, err, sizeof(err));
	if (!ret && m->target_done && m->target_lines)
		ret = hx_run_target_lines(&r, m->target_done, (size_t)m->target_lines, m->target_ms,
					  err, sizeof(err));
	else if (!ret && m->target_done)
		ret = hx_run_target_verified(&r, m->target_done, m->target_ms, err, sizeof(err));
	if (!ret && m->serves)
		ret = hx_run_target_serves(&r, m->target_ms, err, sizeof(err));
	hx_cmd_free(&c);
	hx_run_end(&r);
	if (ret)
		return fail(err);
	printf(PROG ": %s migrated to %s%s\n", m->o.name, r.to,
	       m->target_done ? ", verified there"
	       : m->serves    ? ", served there"
			      : "");
	return 0;
}

static int cmd_migrate(int argc, char **argv)
{
	struct migrate_cli m;
	int ret;

	memset(&m, 0, sizeof(m));
	ret = parse_migrate(argc, argv, &m);
	if (!ret)
		ret = run_migrate(&m, argv + optind);
	hx_argv_free(&m.sets);
	hx_argv_free(&m.tsets);
	hx_argv_free(&m.senv);
	hx_argv_free(&m.tenv);
	hx_argv_free(&m.menv);
	hx_argv_free(&m.expect);
	return ret;
}

/* The file may not exist yet: its writer's shell opens it as the process starts. */
static int cmd_wait_line(int argc, char **argv)
{
	struct hx_console c;
	char err[512];
	long count = argc > 5 ? atol(argv[5]) : 1;
	int ms = seconds(argv[4]), ret;

	while (hx_console_file(&c, argv[2], argv[2], NULL, err, sizeof(err))) {
		if (ms <= 0)
			return fail(err);
		sleep_ms(100);
		ms -= 100;
	}
	ret =
	    hx_wait_line(NULL, &c, argv[3], count > 0 ? (size_t)count : 1, 0, ms, err, sizeof(err));
	hx_console_close(&c);
	return ret ? fail(err) : 0;
}

static int cmd_wait_listen(int argc, char **argv)
{
	struct hx_proc p = {.pid = argc > 4 ? atoi(argv[4]) : 0};
	char err[256];

	snprintf(p.name, sizeof(p.name), "process %d", (int)p.pid);
	if (hx_wait_listen(p.pid > 0 ? &p : NULL, atoi(argv[2]), seconds(argv[3]), err,
			   sizeof(err)))
		return fail(err);
	return 0;
}

static int cmd_json(char **argv)
{
	struct hx_console c;
	char err[512], val[512];
	cJSON *j;
	bool ok;

	if (hx_console_file(&c, argv[2], argv[2], NULL, err, sizeof(err)))
		return fail(err);
	hx_console_pump(&c);
	j = cJSON_Parse(c.text ? c.text : "");
	hx_console_close(&c);
	if (!j) {
		snprintf(err, sizeof(err), "%s is not JSON", argv[2]);
		return fail(err);
	}
	ok = hx_json_text(j, argv[3], val, sizeof(val));
	cJSON_Delete(j);
	if (!ok) {
		snprintf(err, sizeof(err), "%s has no \"%s\"", argv[2], argv[3]);
		return fail(err);
	}
	printf("%s\n", val);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "migrate"))
		return cmd_migrate(argc - 1, argv + 1);
	if (!strcmp(cmd, "port") && argc == 2) {
		int port = hx_free_port();

		if (port < 0)
			return fail(strerror(-port));
		printf("%d\n", port);
		return 0;
	}
	if (!strcmp(cmd, "wait-listen") && (argc == 4 || argc == 5))
		return cmd_wait_listen(argc, argv);
	if (!strcmp(cmd, "wait-line") && (argc == 5 || argc == 6))
		return cmd_wait_line(argc, argv);
	if (!strcmp(cmd, "json") && argc == 4)
		return cmd_json(argv);
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		fputs(usage, stdout);
		return 0;
	}
	fputs(usage, stderr);
	return 2;
}
