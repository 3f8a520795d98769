/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_mig_once.c - one end-to-end migration as a user runs it, for the
 * benchmarks that repeat it (bench_migrate: cases; bench_tail: the same
 * case many times, quiet and under load): `vmm run` (source),
 * `vmm run --incoming` (target), `vmm migrate --json`, the summary's
 * numbers, and the guest going on, verified, on the target.
 */
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench_mig_once.h"
#include "bench_util.h"
#include "clock.h"
#include "harness_json.h"
#include "harness_run.h"

static char tls_opts[3][PATH_MAX + 32];
static const char *vmm_path, *tmpdir, *prog;

void bm_init(const char *vmm, const char *dir, const char *program)
{
	vmm_path = vmm;
	tmpdir = dir;
	prog = program;
}

/*
 * A throwaway CA and one certificate for 127.0.0.1 that both sides use
 * (made with the openssl tool); "--set" options naming them in tls_opts.
 */

int bm_make_tls_files(void)
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
		fprintf(stderr, "%s: cannot make TLS test certificates with openssl\n", prog);
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

static char start_dir[64];
static void (*start_at_exit)(void);

static void start_cleanup(void)
{
	if (start_at_exit)
		start_at_exit();
	bench_rm_tree(start_dir);
}

static void start_on_signal(int sig)
{
	(void)sig;
	exit(130); /* atexit: start_cleanup */
}

int bm_start(const char *program, const char *vmm, const char *csv_path, FILE **csv,
	     void (*at_exit)(void))
{
	if (bench_open_outputs(program, csv_path, csv, start_dir, sizeof(start_dir)))
		return 1;
	start_at_exit = at_exit;
	atexit(start_cleanup);
	signal(SIGINT, start_on_signal);
	signal(SIGTERM, start_on_signal);
	signal(SIGPIPE, SIG_IGN);
	bm_init(vmm, start_dir, program);
	return 0;
}

int bm_migrate_once(const struct bm_case *mc, int run, struct bm_result *r)
{
	return bm_migrate_ex(mc, NULL, run, r);
}

int bm_migrate_ex(const struct bm_case *mc, const struct bm_extra *xp, int run, struct bm_result *r)
{
	static const struct bm_extra none;
	const struct bm_extra *x = xp ? xp : &none;
	char mem[64], hot[64], fill[64], kind[64], vcpus[64], tsock[128], usock[128], conn[16],
	    src[32], dst[32], mig[32], err[PATH_MAX + 256];
	struct hx_argv sargs = {0}, targs = {0}, margs = {0};
	struct hx_run hr;
	struct hx_cmd c = {0};
	struct bm_view view = {0};
	const char *ready = x->ready_regex ? x->ready_regex : mc->dirty ? "dirty pass" : "idle";
	int ret = -1;
	cJSON *j;

	memset(r, 0, sizeof(*r));
	snprintf(mem, sizeof(mem), "vm.memory=%s", mc->memory);
	snprintf(hot, sizeof(hot), "workload.working_set=%s", mc->hot ? mc->hot : "64M");
	snprintf(kind, sizeof(kind), "workload.kind=%s", mc->dirty ? "dirty" : "idle");
	snprintf(vcpus, sizeof(vcpus), "vm.vcpus=%u", mc->dirty ? 2 : 1);
	snprintf(tsock, sizeof(tsock), "%s/target-%d.sock", tmpdir, run);
	snprintf(src, sizeof(src), "source-%d", run);
	snprintf(dst, sizeof(dst), "target-%d", run);
	snprintf(mig, sizeof(mig), "migrate-%d", run);

	char *sets[] = {"--set", mem,
			"--set", kind,
			"--set", vcpus,
			"--set", hot,
			"--set", "workload.passes=0",
			"--set", "workload.min_pass_ms=0",
			"--set", "workload.heartbeat_ms=100",
			NULL};

	hx_argv_addv(&sargs, sets);
	if (mc->fill) {
		snprintf(fill, sizeof(fill), "workload.fill=%s", mc->fill);
		hx_argv_add(&sargs, "--set");
		hx_argv_add(&sargs, fill);
	}
	if (mc->memfd || mc->local) {
		hx_argv_add(&sargs, "--set");
		hx_argv_add(&sargs, "vm.memory_backend=memfd");
	}
	if (x->source_args)
		hx_argv_addv(&sargs, x->source_args);
	hx_argv_add(&targs, "--api-socket");
	hx_argv_add(&targs, tsock);
	if (mc->prealloc) {
		/* Resident before it listens: the populate is not in the migration's time. */
		hx_argv_add(&targs, "--set");
		hx_argv_add(&targs, "vm.prealloc=true");
		hx_argv_add(&targs, "--set");
		hx_argv_add(&targs, mem);
	}
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
	if (mc->local)
		hx_argv_add(&margs, "--local");
	if (x->migrate_args)
		hx_argv_addv(&margs, x->migrate_args);
	snprintf(usock, sizeof(usock), "%s/upgrade-%d.sock", tmpdir, run);

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
	    .unix_path = mc->local ? usock : NULL,
	};

	if (hx_run_start(&hr, &o, err, sizeof(err))) {
		fprintf(stderr, "%s: %s: %s\n", prog, mc->label, err);
		goto out;
	}
	/* first heartbeat: the guest is up and (for dirty) has written its set once;
	 * heartbeats show the pass all vCPUs completed, so numbers can skip */
	if (hx_wait_line(&hr.watch, &hr.src_out, ready,
			 x->ready_regex && x->ready_count ? x->ready_count : 1, 0,
			 x->ready_regex ? 180000 : 60000, err, sizeof(err))) {
		fprintf(stderr, "%s: %s: source guest did not start (see %s)\n", prog, mc->label,
			hr.src_err);
		goto out;
	}
	view.mig_start_ms = (double)now_ns() / 1e6;
	if (hx_run_migrate(&hr, margs.v, 300000, &c, err, sizeof(err)) || c.code || !c.json) {
		fprintf(stderr, "%s: %s: vmm migrate failed (status 0x%x): %s (see %s)\n", prog,
			mc->label, c.proc.status, c.out.text ? c.out.text : err, c.err_path);
		goto out;
	}
	view.mig_end_ms = (double)now_ns() / 1e6;
	j = c.json;
	r->cli_ms = c.ms;
	r->total_ms = hx_json_num(j, "total_ms");
	r->downtime_ms = hx_json_num(j, "downtime_us") / 1e3;
	r->blackout_pause_us = hx_json_num(j, "blackout_pause_us");
	r->target_restore_us = hx_json_num(j, "target_restore_us");
	r->bytes = hx_json_num(j, "sent_bytes");
	r->pages = hx_json_num(j, "pages_sent");
	r->zero = hx_json_num(j, "zero_pages");
	r->skipped = hx_json_num(j, "skipped_pages");
	r->passes = hx_json_num(j, "pass");
	r->setup_ms = hx_json_num(j, "setup_ms");
	r->harvest_final_us = hx_json_num(j, "harvest_final_us");
	r->blackout_send_us = hx_json_num(j, "blackout_send_us");
	r->blackout_state_us = hx_json_num(j, "blackout_state_us");
	r->blackout_ack_us = hx_json_num(j, "blackout_ack_us");
	r->blackout_round_trips = hx_json_num(j, "blackout_round_trips");
	r->blackout_sleeps = hx_json_num(j, "blackout_sleeps");

	/* the guest must go on, correct, on the target */
	if (mc->dirty) {
		bool corrupt;

		ret = hx_wait_line(&hr.watch, &hr.dst_out,
				   x->after_regex ? x->after_regex : "dirty pass",
				   x->after_regex && x->after_count ? x->after_count : 3, 0,
				   x->after_regex ? 120000 : 20000, err, sizeof(err));
		corrupt = hx_console_corruption(&hr.dst_out) != NULL;
		if (ret || corrupt) {
			fprintf(stderr,
				"%s: %s: target guest did not continue cleanly%s (see %s)\n", prog,
				mc->label, corrupt ? " (CORRUPTION)" : "", hr.dst_err);
			ret = -1;
			goto out;
		}
	} else {
		sleep_ms(100);
		if (!hx_running(&hr.dst)) {
			fprintf(stderr, "%s: %s: target exited (see %s)\n", prog, mc->label,
				hr.dst_err);
			goto out;
		}
	}
	if (x->inspect) {
		view.src = &hr.src_out;
		view.dst = &hr.dst_out;
		x->inspect(x->inspect_arg, &view);
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
	unlink(usock); /* the target removes it; not if it died */
	unlink(hr.src_err);
	unlink(hr.dst_err);
	unlink(c.err_path);
	hx_argv_free(&sargs);
	hx_argv_free(&targs);
	hx_argv_free(&margs);
	return ret;
}
