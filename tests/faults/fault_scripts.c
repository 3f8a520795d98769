/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The matrix's helper scripts (tests/integration/recproxy.py and flood.py,
 * found under env->scripts) for the record and trickle faults: started
 * with the cell's other processes, reaped by its finish.
 */
#include "fault_scripts.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "harness_net.h"

/* Waits up to ms for a line of path that contains `what` (looks once with 0). */
static bool file_has(struct fx_ctx *x, const char *path, const char *what, int ms)
{
	uint64_t t0 = now_ns();

	do {
		char line[512];
		FILE *f = fopen(path, "r");
		bool found = false;

		while (f && !found && fgets(line, sizeof(line), f))
			found = strstr(line, what) != NULL;
		if (f)
			fclose(f);
		if (found)
			return true;
		fx_pump(x, 50);
	} while ((now_ns() - t0) / 1000000 < (uint64_t)ms);
	return false;
}

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
	char pport[16], tport[16],
	    *args[] = {pport, tport, "--drop", (char *)x->cell->trig.drop, "--then", "cut", NULL};
	char path[PATH_MAX + 64], listening[32];
	int p = hx_free_port(), ret;

	if (p < 0) {
		snprintf(err, errlen, "no free port for the proxy");
		return p;
	}
	snprintf(pport, sizeof(pport), "%d", p);
	snprintf(tport, sizeof(tport), "%d", port);
	ret = spawn_script(x, &x->proxy, "recproxy.py", args, "proxy.out", err, errlen);
	snprintf(path, sizeof(path), "%s/proxy.out", x->dir);
	snprintf(listening, sizeof(listening), "listening %d", p); /* not an older run's line */
	if (!ret && !file_has(x, path, listening, 10000)) {
		snprintf(err, errlen, "recproxy.py did not start (see proxy.out)");
		ret = -EIO;
	}
	snprintf(x->to, sizeof(x->to), "127.0.0.1:%d", p);
	return ret;
}

int fx_start_flood(struct fx_ctx *x, int port, char *err, size_t errlen)
{
	char p[16], *trickle[] = {"127.0.0.1", p, "8", "600", "1", NULL},
		    *idle[] = {"127.0.0.1", p, "64", "600", NULL};
	int ret;

	snprintf(p, sizeof(p), "%d", port);
	ret = spawn_script(x, &x->flood[0], "flood.py", trickle, "trickle.out", err, errlen);
	if (!ret)
		ret = spawn_script(x, &x->flood[1], "flood.py", idle, "idle.out", err, errlen);
	return ret;
}

bool fx_proxy_dropped(struct fx_ctx *x)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/proxy.out", x->dir);
	return file_has(x, path, "dropped", 0);
}
