/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migrate_follow.c - starts or resumes a migration through the source's
 * API and follows it until it ends: the event stream, else polling.
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
#include "api_stream.h"
#include "cli.h"
#include "clock.h"
#include "migrate_follow.h"
#include "migrate_print.h"

#define POLL_INTERVAL_MS 100
#define MAX_POLL_ERRORS	 20   /* consecutive failed polls (2 s) before giving up */
#define PROGRESS_LINE_MS 1000 /* --progress off a terminal: one line a second */

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

/*
 * A poll error that means "the source went away", not "try again": nobody
 * listens on its socket any more, or it closed mid-request. Nothing here
 * looks at process ids: the source may run in another pid namespace (a
 * container), where its pid means nothing to us.
 */
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
	unsigned resumes0; /* `resumes` when the resume was accepted */
	uint64_t started_ns;
	uint64_t unknown_ns;	     /* when switchover-unknown was first seen, or 0 */
	uint64_t printed_ns;	     /* the last --progress line off a terminal, or 0 */
	struct migration_progress p; /* the last progress seen */
	char state[32];		     /* its "state" string */
	cJSON *last;		     /* its JSON object, NULL before the first */
};

static void clear_line(const struct follow *f)
{
	if (f->tty)
		migrate_print_clear();
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
			snprintf(f->state, sizeof(f->state), "%s",
				 migration_state_name(f->p.state));
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

/* The live line on a terminal; with --progress elsewhere, a line a second. */
static void show_progress(struct follow *f)
{
	if (f->tty) {
		migrate_print_progress(&f->p, f->state, true);
	} else if (f->c->progress &&
		   (!f->printed_ns || ms_since(f->printed_ns) >= PROGRESS_LINE_MS)) {
		f->printed_ns = now_ns();
		migrate_print_progress(&f->p, f->state, false);
	}
}

/*
 * After each report (or a quiet interval) with f->p the latest progress:
 * true when the following ends here.
 */
static bool judge(struct follow *f)
{
	/*
	 * Right after a resume the engine may still report the pause it is
	 * reconnecting from: give it the resume's connect timeout.
	 */
	if (f->resuming && f->p.state == MIGRATION_POSTCOPY_PAUSED &&
	    ms_since(f->started_ns) < f->c->exit_wait_ms && f->p.resumes == f->resumes0)
		return false;
	f->resuming = false;
	if (terminal(f->p.state))
		return true;
	/*
	 * A late COMMITTED may still settle it on its own: wait as long as
	 * the source waited for it, then hand over to the operator.
	 */
	if (f->p.state != MIGRATION_SWITCHOVER_UNKNOWN)
		f->unknown_ns = 0;
	else if (!f->unknown_ns)
		f->unknown_ns = now_ns();
	else if (ms_since(f->unknown_ns) >= f->c->exit_wait_ms)
		return true;
	show_progress(f);
	return false;
}

/* A progress object (a GET reply, or an event line stripped of its own members) as the latest. */
static int take_progress(struct follow *f, cJSON *j)
{
	if (api_progress_from_json(j, &f->p, f->state, sizeof(f->state)))
		return -EINVAL;
	cJSON_Delete(f->last);
	f->last = j;
	return 0;
}

/*
 * Polls GET /api/v1/vm/migrate until the end (judge()) or the source is
 * gone (f->lost). Returns 0, or 1 when following failed (the message is
 * printed).
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
			 * Nobody serves the source's socket: it exited. Whether that
			 * was its expected exit after completion, conclude() judges
			 * from the last state seen.
			 */
			if (source_gone_error(ret)) {
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
		/*
		 * "none" after the migration was seen: another VMM serves the
		 * path now (a target on this host renames its socket to the
		 * source's once the source is gone), so the source is gone.
		 */
		if (r.status == 200 && f->p.state != MIGRATION_NONE &&
		    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r.json, "state")) &&
		    !strcmp(cJSON_GetObjectItemCaseSensitive(r.json, "state")->valuestring,
			    "none")) {
			api_response_free(&r);
			f->lost = true;
			return 0;
		}
		if (r.status != 200 || !r.json || take_progress(f, r.json)) {
			clear_line(f);
			fprintf(stderr, "vmm migrate: GET /api/v1/vm/migrate: HTTP %d: %s\n",
				r.status, api_response_error(&r));
			api_response_free(&r);
			return 1;
		}
		r.json = NULL; /* f->last owns it */
		api_response_free(&r);
		if (judge(f))
			return 0;
		sleep_ms(POLL_INTERVAL_MS);
	}
}

/* The members an event line adds to the progress object (docs/api.md). */
static void strip_event_members(cJSON *j)
{
	static const char *const extra[] = {"type", "timestamp_ms", "vm_state", "dropped_progress"};

	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
		cJSON_DeleteItemFromObjectCaseSensitive(j, extra[i]);
}

/*
 * Follows GET /api/v1/vm/events until the end (judge()). Returns 0 when
 * the end was seen (the stream stays open in *st, for the caller to close
 * once the summary is out), 1 when following failed, or -1 when the
 * stream is not available or broke before the end: then the caller polls
 * (which also tells a source that is gone from one that is not).
 */
static int stream_until_end(struct follow *f, struct api_stream *st)
{
	struct api_response r;
	char err[512];
	cJSON *j;
	int ret;

	ret = api_stream_open(st, f->c->socket, "/api/v1/vm/events", MIGRATE_REQUEST_TIMEOUT_MS, &r,
			      err, sizeof(err));
	if (ret) {
		api_response_free(&r); /* 404 from an older server, 503: too many watch */
		return -1;
	}
	for (;;) {
		if (interrupted && !f->cancel_sent)
			ask_cancel(f);
		ret = api_stream_next(st, POLL_INTERVAL_MS, &j, err, sizeof(err));
		if (ret == -ETIMEDOUT || ret == -EINTR) {
			if (judge(f))
				return 0;
			continue;
		}
		if (ret) {
			/* closed after the final line: the source exited, as it should */
			if (f->p.state == MIGRATION_COMPLETED)
				return 0;
			api_stream_close(st);
			return -1;
		}
		strip_event_members(j);
		if (take_progress(f, j)) {
			cJSON_Delete(j);
			continue; /* not a progress line: not ours to judge */
		}
		if (judge(f))
			return 0;
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
			"vmm migrate: the source VMM exited during %s, before it reported "
			"completion: the VM on the target may lack pages\n",
			f->state);
		return 1;
	}
	if (f->lost && f->p.state == MIGRATION_SWITCHOVER) {
		fprintf(
		    stderr,
		    "vmm migrate: the source VMM exited during switchover, before it "
		    "reported the outcome: check the target (`vmm migrate --status` there); if it "
		    "is switchover-unknown, the source can no longer commit\n");
		return 1;
	}
	if (f->lost && f->p.state != MIGRATION_COMPLETED) {
		fprintf(stderr, "vmm migrate: the source VMM exited during %s\n", f->state);
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
	if (f->lost) {
		/* the last progress we saw was before completion: say so */
		f->p.state = MIGRATION_COMPLETED;
		snprintf(f->state, sizeof(f->state), "%s", migration_state_name(f->p.state));
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
	struct api_stream st = {.fd = -1};
	int status;

	memset(&f.p, 0, sizeof(f.p));
	f.p.state = MIGRATION_SETUP;
	snprintf(f.state, sizeof(f.state), "%s", migration_state_name(f.p.state));
	status = start(&f, body);
	if (status)
		return status;
	f.started_ns = now_ns();
	signal(SIGINT, on_sigint);
	status = stream_until_end(&f, &st);
	if (status < 0)
		status = poll_until_end(&f);
	if (!status)
		status = conclude(&f);
	/*
	 * Only now, with the summary out: a completed source waits for its
	 * watchers to close before it exits (it may be the pid 1 of the
	 * container this runs in).
	 */
	fflush(stdout);
	api_stream_close(&st);
	cJSON_Delete(f.last);
	return status;
}
