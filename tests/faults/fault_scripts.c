/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The matrix's helper scripts (tests/integration/recproxy.py and flood.py,
 * found under env->scripts) for the record, trickle and valid-hello
 * faults: started with the cell's other processes, reaped by its finish.
 */
#include "fault_scripts.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fault_cells.h"
#include "harness_net.h"

/* A python3 script of env->scripts, its stdout into dir/<out>. */
static int spawn_script(struct fx_ctx *x, struct hx_proc *p, const char *name, char *const *args,
			const char *out, char *err, size_t errlen)
{
	char script[PATH_MAX], out_path[PATH_MAX + 64];
	struct hx_argv a = {0};
	struct hx_spawn s;
	int fd, ret;

	snprintf(script, sizeof(script), "%s/%s", x->env->scripts, name);
	snprintf(out_path, sizeof(out_path), "%s/%s", x->dir, out);
	hx_argv_add(&a, "python3");
	hx_argv_add(&a, script);
	for (int i = 0; args[i]; i++)
		hx_argv_add(&a, args[i]);
	s = (struct hx_spawn){a.v, NULL, out_path, out_path};
	ret = hx_spawn(p, name, &s, &fd, err, errlen);
	hx_argv_free(&a);
	return ret;
}

int fx_start_proxy(struct fx_ctx *x, int port, char *err, size_t errlen)
{
	/* The reader's cells lose the record alone: the connection goes on (fault_reader.h). */
	const char *then = x->cell->fault == FX_READER_RESUME ? "hold" : "cut";
	char pport[16], tport[16],
	    *args[] = {pport,	 tport,	       "--drop", (char *)x->cell->trig.drop,
		       "--then", (char *)then, NULL};
	char path[PATH_MAX + 64], listening[32];
	struct hx_console c;
	int p = hx_free_port(), ret;

	if (p < 0) {
		snprintf(err, errlen, "no free port for the proxy");
		return p;
	}
	snprintf(pport, sizeof(pport), "%d", p);
	snprintf(tport, sizeof(tport), "%d", port);
	ret = spawn_script(x, &x->proxy, "recproxy.py", args, "proxy.out", err, errlen);
	snprintf(path, sizeof(path), "%s/proxy.out", x->dir);
	snprintf(listening, sizeof(listening), "^listening %d$", p); /* not an older run's line */
	if (!ret)
		ret = hx_console_file(&c, "proxy", path, &x->proxy, err, errlen);
	if (!ret) {
		/* Python's start on a loaded (or emulated) host can take seconds. */
		ret = hx_wait_line(&x->r.watch, &c, listening, 1, 0, hx_scaled_ms(30000), err,
				   errlen);
		hx_console_close(&c);
	}
	snprintf(x->to, sizeof(x->to), "127.0.0.1:%d", p);
	return ret;
}

int fx_start_flood(struct fx_ctx *x, int port, int trickling, int idle, char *err, size_t errlen)
{
	char p[16], nt[16], ni[16], *targs[] = {"127.0.0.1", p, nt, "600", "1", NULL},
				    *iargs[] = {"127.0.0.1", p, ni, "600", NULL};
	char path[PATH_MAX + 64], open_re[32];
	struct hx_console c;
	int ret;

	snprintf(p, sizeof(p), "%d", port);
	snprintf(nt, sizeof(nt), "%d", trickling);
	snprintf(ni, sizeof(ni), "%d", idle);
	/* Both even with 0 connections: a baseline then pays the same Python start-up. */
	ret = spawn_script(x, &x->flood[0], "flood.py", targs, "trickle.out", err, errlen);
	if (!ret)
		ret = spawn_script(x, &x->flood[1], "flood.py", iargs, "idle.out", err, errlen);
	/*
	 * The tricklers all open at once (the idle ones may not: they evict each
	 * other from a full gate). Python's start on an emulated host takes seconds.
	 */
	snprintf(path, sizeof(path), "%s/trickle.out", x->dir);
	snprintf(open_re, sizeof(open_re), "^open %d$", trickling);
	if (!ret)
		ret = hx_console_file(&c, "trickle", path, &x->flood[0], err, errlen);
	if (!ret) {
		ret =
		    hx_wait_line(&x->r.watch, &c, open_re, 1, 0, hx_scaled_ms(30000), err, errlen);
		hx_console_close(&c);
	}
	return ret;
}

int fx_trickle(struct fx_ctx *x, int port, int trickling, int idle, char *err, size_t errlen)
{
	int ret;

	if (x->env->flood >= 0)
		trickling = idle = x->env->flood;
	ret = fx_start_flood(x, port, trickling, idle, err, errlen);
	if (ret)
		return ret;
	fx_note(x, "%d trickling and %d idle connections", trickling, idle);
	fx_pump(x, 3000); /* they fill the port's slots and evict each other */
	return 0;
}

/* Waits (bounded) for "open N" in the flood output dir/out: all its connections open at once. */
static int wait_open(struct fx_ctx *x, struct hx_proc *p, const char *out, int n, char *err,
		     size_t errlen)
{
	char path[PATH_MAX + 64], open_re[32];
	struct hx_console c;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", x->dir, out);
	snprintf(open_re, sizeof(open_re), "^open %d$", n);
	ret = hx_console_file(&c, out, path, p, err, errlen);
	if (!ret) {
		/* Python's start (and TLS, and learning the version) on an emulated host: seconds.
		 */
		ret =
		    hx_wait_line(&x->r.watch, &c, open_re, 1, 0, hx_scaled_ms(60000), err, errlen);
		hx_console_close(&c);
	}
	return ret;
}

/*
 * n connections of flood.py --hello ROLE into x->flood[i], their lines in
 * dir/out. Before a fresh migration they come from 127.0.0.2, a third
 * party's address: from the source's own they would turn its slots over
 * faster than a source with a running VM may reach its description on a
 * loaded host (docs/migration-protocol.md, "Not covered").
 */
static int hellos(struct fx_ctx *x, int i, int port, int n, const char *role, const char *out,
		  char *err, size_t errlen)
{
	char p[16], nn[16];
	char *args[] = {"127.0.0.1",  p,	nn,	     "600", "--hello",
			(char *)role, "--from", "127.0.0.2", NULL};
	int ret;

	if (!x->cell->trig.before_migrate)
		args[6] = NULL; /* recover, resume: the source's own address, its session's slots */
	snprintf(p, sizeof(p), "%d", port);
	snprintf(nn, sizeof(nn), "%d", n);
	ret = spawn_script(x, &x->flood[i], "flood.py", args, out, err, errlen);
	return ret ? ret : wait_open(x, &x->flood[i], out, n, err, errlen);
}

int fx_start_valid_hello(struct fx_ctx *x, int port, char *err, size_t errlen)
{
	int n = x->env->flood >= 0 ? x->env->flood : 64, ret;
	const char *a = "main", *b = "data";

	if (!x->cell->trig.before_migrate) {
		a = x->cell->trig.postcopy ? "main-resume:" FX_SESSION : "recover:" FX_SESSION;
		b = x->cell->trig.postcopy ? "data:" FX_SESSION : NULL;
	}
	ret = hellos(x, 0, port, b ? n / 2 : n, a, "hello-a.out", err, errlen);
	if (!ret && b)
		ret = hellos(x, 1, port, n - n / 2, b, "hello-b.out", err, errlen);
	if (ret)
		return ret;
	fx_note(x, "%d valid-hello connections (%s%s%s)", n, a, b ? ", " : "", b ? b : "");
	fx_pump(x, 3000); /* they fill the port's slots and evict each other */
	return 0;
}

bool fx_proxy_dropped(struct fx_ctx *x)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/proxy.out", x->dir);
	return fx_file_has(path, "dropped");
}
