/* SPDX-License-Identifier: Apache-2.0 */
/* migrate_print.c - the progress line, summary and hints of `vmm migrate`. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "migrate_print.h"

static double mib(uint64_t b)
{
	return (double)b / (1024.0 * 1024.0);
}

static const char *yes(bool b)
{
	return b ? "yes" : "no";
}

/* Stale pages not yet sent: what postcopy still has to deliver. */
static uint64_t postcopy_left(const struct migration_progress *p)
{
	uint64_t done = p->pages_requested + p->pages_pushed;

	return p->postcopy_pages > done ? p->postcopy_pages - done : 0;
}

void migrate_print_clear(void)
{
	fprintf(stderr, "\r\033[K");
}

/* "12.3 s", "850 ms", or "?" when the rate is not known yet. */
static void eta(char *buf, size_t len, uint64_t pages, uint64_t pages_per_s)
{
	double s;

	if (!pages_per_s) {
		snprintf(buf, len, "?");
		return;
	}
	s = (double)pages / (double)pages_per_s;
	if (s < 1.0)
		snprintf(buf, len, "%.0f ms", s * 1e3);
	else
		snprintf(buf, len, "%.1f s", s);
}

/* Percent of this pass (or of postcopy's stale pages) done. */
static unsigned percent(const struct migration_progress *p)
{
	if (!p->pass_pages)
		return 100;
	return (unsigned)(p->pass_done_pages * 100 / p->pass_pages);
}

/* The common tail: what went on the wire and how fast, in MiB and MiB/s. */
static void wire(char *buf, size_t len, const struct migration_progress *p)
{
	snprintf(buf, len, "sent %.1f MiB at %.1f MiB/s, %.1f s", mib(p->sent_bytes),
		 mib(p->throughput_bytes_per_s), (double)p->total_ms / 1e3);
}

static void progress_text(char *out, size_t len, const struct migration_progress *p,
			  const char *state)
{
	uint64_t left = p->pass_pages -
			(p->pass_done_pages < p->pass_pages ? p->pass_done_pages : p->pass_pages);
	char t[32], w[96], dirty[48];

	wire(w, sizeof(w), p);
	eta(t, sizeof(t), left, p->page_rate_pages_per_s);
	switch (p->state) {
	case MIGRATION_SETUP:
		snprintf(out, len, "setup: connecting and starting dirty logging, %.1f s",
			 (double)p->total_ms / 1e3);
		break;
	case MIGRATION_POSTCOPY_ACTIVE:
		snprintf(out, len,
			 "postcopy (the VM runs on the target): %u%% of %.1f MiB stale pages in, "
			 "ETA %s; %llu requested, %llu pushed; %s",
			 percent(p), mib(p->pass_pages * p->page_size_bytes), t,
			 (unsigned long long)p->pages_requested,
			 (unsigned long long)p->pages_pushed, w);
		break;
	case MIGRATION_POSTCOPY_PAUSED:
		snprintf(out, len,
			 "postcopy paused: %llu pages left, waiting for `vmm migrate --resume`; %s",
			 (unsigned long long)postcopy_left(p), w);
		break;
	case MIGRATION_SWITCHOVER:
		snprintf(out, len, "switchover (the VM is paused): %u%% of the last %.1f MiB; %s",
			 percent(p),
			 mib(p->remaining_bytes + p->pass_done_pages * p->page_size_bytes), w);
		break;
	case MIGRATION_SWITCHOVER_UNKNOWN:
		snprintf(out, len, "switchover outcome unknown: waiting for the target; %s", w);
		break;
	default:
		if (p->dirty_rate_known)
			snprintf(dirty, sizeof(dirty), "dirty %.1f MiB/s",
				 mib(p->dirty_rate_pages_per_s * p->page_size_bytes));
		else
			snprintf(dirty, sizeof(dirty), "dirty rate after this pass");
		snprintf(out, len,
			 "%s pass %u: %u%% of %.1f MiB, ETA %s; %s; %s; expected downtime %llu ms",
			 state, p->pass, percent(p), mib(p->pass_pages * p->page_size_bytes), t, w,
			 dirty, (unsigned long long)p->expected_downtime_ms);
		if (p->throttle_pct) {
			size_t n = strlen(out);

			snprintf(out + n, len - n, "; throttle %u%% of %u vCPU%s", p->throttle_pct,
				 p->throttle_vcpus, p->throttle_vcpus == 1 ? "" : "s");
		}
		break;
	}
}

void migrate_print_progress(const struct migration_progress *p, const char *state, bool live)
{
	char line[512];

	progress_text(line, sizeof(line), p, state);
	if (live)
		fprintf(stderr, "\r\033[K%s", line);
	else
		fprintf(stderr, "vmm migrate: %s\n", line);
	fflush(stderr);
}

void migrate_print_status(const struct migration_progress *p, const char *state)
{
	char line[512];

	if (p->state == MIGRATION_COMPLETED || p->state == MIGRATION_FAILED ||
	    p->state == MIGRATION_CANCELLED) {
		migrate_print_summary(p, state);
		return;
	}
	/* Under way: what the progress line says, not a summary of an end not yet reached. */
	progress_text(line, sizeof(line), p, state);
	printf("migration %s to %s, running for %.1f s\n  %s\n", state, p->params.to,
	       (double)p->total_ms / 1e3, line);
}

/* --converge throttle was asked for, or the throttle acted. */
static bool throttle_asked(const struct migration_progress *p)
{
	return p->params.converge == MIGRATION_CONVERGE_THROTTLE || p->throttle_changes;
}

/* Why the migration took the mode it did, for the summary. */
static void print_mode(const struct migration_progress *p)
{
	const char *why = p->switchover_reason;
	const struct migration_params *q = &p->params;

	printf("  mode:        %s", p->mode_used[0] ? p->mode_used : MIGRATION_USED_PRECOPY);
	if (!strcmp(why, MIGRATION_WHY_CONVERGED))
		printf(" (converged: the expected downtime fit the %llu ms limit after %u passes)",
		       (unsigned long long)q->downtime_ms, p->pass);
	else if (!strcmp(why, MIGRATION_WHY_LIMITS))
		printf(" (did not converge within %u passes / %llu ms: switched over anyway, "
		       "--no-converge switchover)",
		       q->max_passes, (unsigned long long)q->max_time_ms);
	else if (!strcmp(why, MIGRATION_WHY_REQUESTED))
		printf(" (requested with --mode postcopy, after %u precopy passes)", p->pass);
	else if (!strcmp(why, MIGRATION_WHY_NOT_CONVERGING))
		printf(" (--mode auto: precopy was not converging after %u passes)", p->pass);
	else if (!strcmp(why, MIGRATION_WHY_STALLED))
		printf(" (did not converge: passes stopped shrinking the rest, switched over at "
		       "pass %u, as small as any; --no-converge switchover)",
		       p->pass);
	if (p->target_postcopy == 0)
		printf("; the target cannot do postcopy: %s", p->target_postcopy_reason);
	putchar('\n');
}

/* The postcopy part of the summary. */
static void print_postcopy(const struct migration_progress *p)
{
	if (p->bitmap_raw_bytes || p->bitmap_bytes)
		printf("  bitmap:      %.1f KiB raw, %.1f KiB compressed, sent in %llu us\n",
		       p->bitmap_raw_bytes / 1024.0, p->bitmap_bytes / 1024.0,
		       (unsigned long long)p->bitmap_send_us);
	else
		printf("  bitmap:      not sent (every page stale on the target)\n");
	printf("  postcopy:    %llu pages stale at switchover, %llu requested, %llu pushed\n",
	       (unsigned long long)p->postcopy_pages, (unsigned long long)p->pages_requested,
	       (unsigned long long)p->pages_pushed);
	if (p->all_arrived_ms)
		printf("  all arrived: %llu ms after switchover\n",
		       (unsigned long long)p->all_arrived_ms);
	else
		printf("  all arrived: not yet (%llu pages left)\n",
		       (unsigned long long)postcopy_left(p));
	printf("  faults:      %llu, latency p50 %llu us, p99 %llu us, max %llu us\n",
	       (unsigned long long)p->faults, (unsigned long long)p->fault_p50_us,
	       (unsigned long long)p->fault_p99_us, (unsigned long long)p->fault_max_us);
	printf("  resumes:     %u\n", p->resumes);
}

void migrate_print_summary(const struct migration_progress *p, const char *state)
{
	printf("migration %s in %llu ms (setup %llu ms), downtime %.3f ms\n", state,
	       (unsigned long long)p->total_ms, (unsigned long long)p->setup_ms,
	       p->downtime_us ? p->downtime_us / 1000.0 : (double)p->downtime_ms);
	if (p->downtime_us)
		printf("  blackout:    %llu us (ACK received at %llu us): pause %llu, send %llu, "
		       "state %llu, ack %llu (target restore %llu)\n",
		       (unsigned long long)p->downtime_us, (unsigned long long)p->downtime_ack_us,
		       (unsigned long long)p->blackout_pause_us,
		       (unsigned long long)p->blackout_send_us,
		       (unsigned long long)p->blackout_state_us,
		       (unsigned long long)p->blackout_ack_us,
		       (unsigned long long)p->target_restore_us);
	print_mode(p);
	printf("  on the wire: %.1f MiB (%llu bytes: %.1f MiB precopy, %.1f MiB postcopy), "
	       "%.1f MiB/s on average\n",
	       mib(p->sent_bytes), (unsigned long long)p->sent_bytes, mib(p->precopy_bytes),
	       mib(p->postcopy_bytes), mib(p->throughput_bytes_per_s));
	printf("  guest:       %.1f MiB of RAM in %llu-byte pages\n", mib(p->ram_bytes),
	       (unsigned long long)p->page_size_bytes);
	printf("  pages:       %llu data, %llu zero, %llu skipped\n",
	       (unsigned long long)p->pages_sent, (unsigned long long)p->zero_pages,
	       (unsigned long long)p->skipped_pages);
	printf("  passes:      %u\n", p->pass);
	if (throttle_asked(p))
		printf("  throttle:    %u change%s, vCPUs slept %llu ms for it in all (now %u%%)\n",
		       p->throttle_changes, p->throttle_changes == 1 ? "" : "s",
		       (unsigned long long)p->throttle_slept_ms, p->throttle_pct);
	printf("  harvest:     last %llu us, final %llu us, total %llu us, %u threads\n",
	       (unsigned long long)p->harvest_last_us, (unsigned long long)p->harvest_final_us,
	       (unsigned long long)p->harvest_total_us, p->harvest_threads);
	printf("  dirty log:   manual protect %s, initially set %s%s\n", yes(p->manual_protect),
	       yes(p->initially_set),
	       p->sparse_guest ? " (sparse guest: first pass = resident pages)" : "");
	if (!strcmp(p->mode_used, MIGRATION_USED_POSTCOPY))
		print_postcopy(p);
	if (p->error[0])
		printf("  error:       %s\n", p->error);
}

void migrate_print_json(const cJSON *j)
{
	char *text = cJSON_PrintUnformatted(j);

	if (text) {
		puts(text);
		free(text);
	}
}

void migrate_print_paused_hint(const struct migration_progress *p, const char *to)
{
	fprintf(stderr, "vmm migrate: migration %s: %s\n",
		migration_state_name(MIGRATION_POSTCOPY_PAUSED),
		p->error[0] ? p->error : "no reason given");
	fprintf(stderr, "vmm migrate: postcopy paused: run vmm migrate --resume --to HOST:PORT to "
			"finish");
	if (to)
		fprintf(stderr, " (the target's address: %s)", to);
	fputc('\n', stderr);
	fprintf(stderr, "vmm migrate: the VM runs on the target, or waits there for the pages "
			"only this source holds: keep this source running until the resume\n");
}
