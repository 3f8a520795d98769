/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migrate_follow.c - starts or resumes a migration through the source's
 * API and follows it until it ends and the source has exited.
 *
 * The follower decides nothing about what the migration may do: a cancel
 * is always asked of the server, which answers with the one policy
 * (runtime_refusal(), migration_cancel()). It only judges what it sees:
 * which states end the following, and whether the source going away was
 * the expected exit after switchover or a loss.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api_json.h"
#include "cli.h"
#include "clock.h"
#include "migrate_follow.h"
#include "migrate_print.h"

#define POLL_INTERVAL_MS 100
#define MAX_POLL_ERRORS	 20 /* consecutive failed polls (2 s) before giving up */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

int migrate_request(const struct migrate_cmd *c, const char *method, const char *uri,
		    const cJSON *body, struct api_response *resp, char *err, size_t errlen)
{
	return api_client_request(c->socket, method, uri, body, MIGRATE_REQUEST_TIMEOUT_MS, resp,
				  err, errlen);
}

/* ---- the source process ---- */

/* True while pid exists and is not a zombie waiting for its parent. */
static bool pid_alive(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;

	if (kill(pid, 0) && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true; /* no /proc: trust kill() */
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (p && (p = strrchr(buf, ')')) && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
		return false;
	return true;
}

static bool wait_pid_exit(pid_t pid, uint64_t timeout_ms)
{
	uint64_t t0 = now_ns();

	while (pid_alive(pid)) {
		if (ms_since(t0) >= timeout_ms)
			return false;
		sleep_ms(20);
	}
	return true;
}

/* A poll error that means "the source went away", not "try again". */
static bool source_gone_error(int ret)
{
	return ret == -ECONNREFUSED || ret == -ENOENT || ret == -ECONNRESET || ret == -EPIPE;
}

/* ---- following ---- */

struct follow {
	const struct migrate_cmd *c;
	bool resuming;	   /* a resume whose reconnection may not show yet */
	bool tty;	   /* stderr is a terminal: show the live line */
	bool cancel_sent;  /* Ctrl-C was handled once */
	bool lost;	   /* the source went away before reporting the end */
	pid_t pid;	   /* the source VMM */
	unsigned resumes0; /* `resumes` when the resume was accepted */
	uint64_t started_ns;
	uint64_t unknown_ns;	     /* when switchover-unknown was first seen, or 0 */
	struct migration_progress p; /* the last progress seen */
	char state[32];		     /* its "state" string */
	cJSON *last;		     /* its JSON object, NULL before the first */
};

static void clear_line(const struct follow *f)
{
	if (f->tty)
		migrate_print_clear();
}

/* The source's pid, from GET /api/v1/vm: the follower waits for it to exit. */
static int read_pid(struct follow *f)
{
	struct api_response r;
	const cJSON *jpid;
	char err[512];

	if (migrate_request(f->c, "GET", "/api/v1/vm", NULL, &r, err, sizeof(err))) {
		fprintf(stderr, "vmm migrate: %s\n", err);
		return -1;
	}
	jpid = cJSON_GetObjectItemCaseSensitive(r.json, "pid");
	if (r.status != 200 || !cJSON_IsNumber(jpid) || jpid->valuedouble < 1) {
		fprintf(stderr, "vmm migrate: GET /api/v1/vm: HTTP %d: %s\n", r.status,
			api_response_error(&r));
		api_response_free(&r);
		return -1;
	}
	f->pid = (pid_t)jpid->valuedouble;
	api_response_free(&r);
	return 0;
}

/* PUT .../migrate or .../migrate/resume; 0, or the exit status. */
static int start(struct follow *f, const cJSON *body)
{
	const char *uri = f->resuming ? "/api/v1/vm/migrate/resume" : "/api/v1/vm/migrate";
	struct api_response r;
	char err[512];
	int ret;

	if (migrate_request(f->c, "PUT", uri, body, &r, err, sizeof(err))) {
		fprintf(stderr, "vmm migrate: %s\n", err);
		return 1;
	}
	if (r.status != 202) {
		fprintf(stderr, "vmm migrate: %s\n", api_response_error(&r));
		ret = r.status == 400 ? EXIT_USAGE : 1;
		api_response_free(&r);
		return ret;
	}
	if (f->resuming) {
		if (!api_progress_from_json(r.json, &f->p, f->state, sizeof(f->state))) {
			f->resumes0 = f->p.resumes;
		} else {
			f->p.state = MIGRATION_POSTCOPY_PAUSED;
			snprintf(f->state, sizeof(f->state), "%s", api_state_name(f->p.state));
		}
	}
	api_response_free(&r);
	return 0;
}

/* First Ctrl-C: ask the server to cancel; it refuses when it must (postcopy). */
static void ask_cancel(struct follow *f)
{
	struct api_response r;
	char err[512];

	f->cancel_sent = true;
	signal(SIGINT, SIG_DFL); /* a second Ctrl-C kills us */
	clear_line(f);
	if (migrate_request(f->c, "PUT", "/api/v1/vm/migrate/cancel", NULL, &r, err, sizeof(err))) {
		fprintf(stderr, "vmm migrate: cannot ask for a cancel: %s\n", err);
		return;
	}
	if (r.status == 202)
		fprintf(stderr, "vmm migrate: cancelling...\n");
	else
		fprintf(stderr,
			"vmm migrate: %s; still following it, Ctrl-C again to stop watching\n",
			api_response_error(&r));
	api_response_free(&r);
}

static bool terminal(enum migration_state s)
{
	return s == MIGRATION_COMPLETED || s == MIGRATION_FAILED || s == MIGRATION_CANCELLED ||
	       s == MIGRATION_POSTCOPY_PAUSED;
}

/*
 * Polls until a terminal state or the source is gone (f->lost). Returns 0,
 * or 1 when following failed (the message is printed).
 */
static int poll_until_end(struct follow *f)
{
	struct api_response r;
	unsigned errors = 0;
	char err[512];
	int ret;

	for (;;) {
		if (interrupted && !f->cancel_sent)
			ask_cancel(f);
		ret =
		    migrate_request(f->c, "GET", "/api/v1/vm/migrate", NULL, &r, err, sizeof(err));
		if (ret) {
			/*
			 * Only completion lets the source go: in switchover it may
			 * have died before its COMMIT (the target then waits).
			 */
			bool late = f->p.state == MIGRATION_COMPLETED;

			/* the source exits right after completion: the pid decides */
			if (source_gone_error(ret) && (late || !pid_alive(f->pid))) {
				f->lost = true;
				return 0;
			}
			if (++errors >= MAX_POLL_ERRORS) {
				clear_line(f);
				fprintf(stderr, "vmm migrate: %s\n", err);
				return 1;
			}
			sleep_ms(POLL_INTERVAL_MS);
			continue;
		}
		errors = 0;
		if (r.status != 200 ||
		    api_progress_from_json(r.json, &f->p, f->state, sizeof(f->state))) {
			clear_line(f);
			fprintf(stderr, "vmm migrate: GET /api/v1/vm/migrate: HTTP %d: %s\n",
				r.status, api_response_error(&r));
			api_response_free(&r);
			return 1;
		}
		cJSON_Delete(f->last);
		f->last = r.json;
		r.json = NULL;
		api_response_free(&r);
		/*
		 * Right after a resume the engine may still report the pause it is
		 * reconnecting from: give it the resume's connect timeout.
		 */
		if (f->resuming && f->p.state == MIGRATION_POSTCOPY_PAUSED &&
		    ms_since(f->started_ns) < f->c->exit_wait_ms && f->p.resumes == f->resumes0) {
			sleep_ms(POLL_INTERVAL_MS);
			continue;
		}
		f->resuming = false;
		if (terminal(f->p.state))
			return 0;
		/*
		 * A late COMMITTED may still settle it on its own: wait as long as
		 * the source waited for it, then hand over to the operator.
		 */
		if (f->p.state != MIGRATION_SWITCHOVER_UNKNOWN)
			f->unknown_ns = 0;
		else if (!f->unknown_ns)
			f->unknown_ns = now_ns();
		else if (ms_since(f->unknown_ns) >= f->c->exit_wait_ms)
			return 0;
		if (f->tty)
			migrate_print_progress(&f->p, f->state);
		sleep_ms(POLL_INTERVAL_MS);
	}
}

static void print_last_json(const struct follow *f)
{
	if (f->c->json && f->last)
		migrate_print_json(f->last);
}

/* After the polling: judge how it ended; returns the exit status. */
static int conclude(struct follow *f)
{
	clear_line(f);
	if (f->lost && migration_state_needs_source(f->p.state)) {
		fprintf(stderr,
			"vmm migrate: the source VMM (pid %d) exited during %s, before it reported "
			"completion: the VM on the target may lack pages\n",
			(int)f->pid, f->state);
		return 1;
	}
	if (f->lost && f->p.state == MIGRATION_SWITCHOVER) {
		fprintf(
		    stderr,
		    "vmm migrate: the source VMM (pid %d) exited during switchover, before it "
		    "reported the outcome: check the target (`vmm migrate --status` there); if it "
		    "is switchover-unknown, the source can no longer commit\n",
		    (int)f->pid);
		return 1;
	}
	if (f->lost && f->p.state != MIGRATION_COMPLETED) {
		fprintf(stderr, "vmm migrate: the source VMM (pid %d) exited during %s\n",
			(int)f->pid, f->state);
		return 1;
	}
	if (!f->lost && f->p.state == MIGRATION_SWITCHOVER_UNKNOWN) {
		print_last_json(f);
		fprintf(stderr,
			"vmm migrate: switchover-unknown: %s\nvmm migrate: both sides keep the VM "
			"paused; settle it with `vmm migrate --recover%s%s`\n",
			f->p.error, f->c->to ? " --to " : "", f->c->to ? f->c->to : "");
		return EXIT_SWITCHOVER_UNKNOWN;
	}
	if (!f->lost && f->p.state == MIGRATION_POSTCOPY_PAUSED) {
		print_last_json(f);
		migrate_print_paused_hint(&f->p, f->c->to);
		return EXIT_POSTCOPY_PAUSED;
	}
	if (!f->lost && f->p.state != MIGRATION_COMPLETED) {
		print_last_json(f);
		fprintf(stderr, "vmm migrate: migration %s: %s\n", f->state,
			f->p.error[0] ? f->p.error : "no reason given");
		return 1;
	}
	if (!wait_pid_exit(f->pid, f->c->exit_wait_ms)) {
		fprintf(stderr,
			"vmm migrate: the migration %s but the source VMM (pid %d) has not exited "
			"after %llu ms\n",
			f->lost ? "reached switchover" : "completed", (int)f->pid,
			(unsigned long long)f->c->exit_wait_ms);
		return 1;
	}
	if (f->lost) {
		/* the last progress we saw was before completion: say so */
		f->p.state = MIGRATION_COMPLETED;
		snprintf(f->state, sizeof(f->state), "%s", api_state_name(f->p.state));
		if (f->last) {
			cJSON_DeleteItemFromObjectCaseSensitive(f->last, "state");
			cJSON_AddStringToObject(f->last, "state", f->state);
		}
		fprintf(stderr, "vmm migrate: the source exited after switchover; the figures "
				"below are from the last progress report\n");
	}
	if (f->c->json)
		print_last_json(f);
	else
		migrate_print_summary(&f->p, f->state);
	return 0;
}

int migrate_follow(const struct migrate_cmd *c, bool resume, const cJSON *body)
{
	struct follow f = {.c = c, .resuming = resume, .tty = isatty(STDERR_FILENO)};
	int status;

	memset(&f.p, 0, sizeof(f.p));
	f.p.state = MIGRATION_SETUP;
	snprintf(f.state, sizeof(f.state), "%s", api_state_name(f.p.state));
	if (read_pid(&f))
		return 1;
	status = start(&f, body);
	if (status)
		return status;
	f.started_ns = now_ns();
	signal(SIGINT, on_sigint);
	status = poll_until_end(&f);
	if (!status)
		status = conclude(&f);
	cJSON_Delete(f.last);
	return status;
}
