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

void migrate_print_progress(const struct migration_progress *p, const char *state)
{
	switch (p->state) {
	case MIGRATION_POSTCOPY_ACTIVE:
		fprintf(stderr, "\r\033[Kpostcopy: %llu pages left, requested %llu, pushed %llu",
			(unsigned long long)postcopy_left(p),
			(unsigned long long)p->pages_requested,
			(unsigned long long)p->pages_pushed);
		break;
	case MIGRATION_POSTCOPY_PAUSED:
		fprintf(stderr, "\r\033[Kpostcopy paused: %llu pages left, waiting for the resume",
			(unsigned long long)postcopy_left(p));
		break;
	case MIGRATION_SETUP:
		fprintf(stderr, "\r\033[Ksetting up the migration...");
		break;
	default:
		fprintf(stderr,
			"\r\033[K%s pass %u: sent %.1f MiB, %.1f MiB remaining, %.1f MB/s, "
			"dirty %llu pages/s, expected downtime %llu ms",
			state, p->pass, mib(p->bytes_sent), mib(p->bytes_remaining),
			(double)p->throughput_bps / 1e6, (unsigned long long)p->dirty_rate_pps,
			(unsigned long long)p->expected_downtime_ms);
		break;
	}
	fflush(stderr);
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
	printf("  on the wire: %.1f MiB (%llu bytes)\n", mib(p->bytes_sent),
	       (unsigned long long)p->bytes_sent);
	printf("  pages:       %llu data, %llu zero, %llu skipped\n",
	       (unsigned long long)p->pages_sent, (unsigned long long)p->zero_pages,
	       (unsigned long long)p->skipped_pages);
	printf("  passes:      %u (%s), converged: %s\n", p->pass,
	       p->mode_used[0] ? p->mode_used : "precopy", yes(p->converged));
	printf("  harvest:     last %llu us, final %llu us, total %llu us, %u threads\n",
	       (unsigned long long)p->harvest_us_last, (unsigned long long)p->harvest_us_final,
	       (unsigned long long)p->harvest_us_total, p->harvest_threads);
	printf("  dirty log:   manual protect %s, initially set %s%s\n", yes(p->manual_protect),
	       yes(p->initially_set),
	       p->sparse_guest ? " (sparse guest: first pass = resident pages)" : "");
	if (!strcmp(p->mode_used, api_mode_name(MIGRATION_MODE_POSTCOPY)))
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
		api_state_name(MIGRATION_POSTCOPY_PAUSED),
		p->error[0] ? p->error : "no reason given");
	fprintf(stderr, "vmm migrate: postcopy paused: run vmm migrate --resume --to HOST:PORT to "
			"finish");
	if (to)
		fprintf(stderr, " (the target's address: %s)", to);
	fputc('\n', stderr);
}
