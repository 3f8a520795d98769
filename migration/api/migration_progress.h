/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migration_progress.h - part of the engine's public face (migration.h,
 * which includes it after the states and parameters it needs; include
 * migration.h, not this): the progress record both sides report, its one
 * list of fields and their JSON members, and the words its strings hold.
 */
#ifndef VMM_MIGRATION_PROGRESS_H
#define VMM_MIGRATION_PROGRESS_H

#ifndef VMM_MIGRATION_H
#error "include migration.h, which includes migration_progress.h"
#endif

#include <stdbool.h>
#include <stdint.h>

/* One change of the throttle's level (progress.throttle_log). */
struct migration_throttle_change {
	unsigned pct;	/* the new level, 0: off */
	unsigned vcpus; /* vCPUs it slows */
	unsigned pass;	/* the precopy pass it was decided after */
	uint64_t at_ms; /* since the migration started */
};
/* The last changes kept for the event stream (a change happens at most once a pass). */
#define MIGRATION_THROTTLE_LOG 16

/*
 * What the source's engine reports (docs/api.md, "the progress object", has
 * every field's meaning). Units are in the names. Read with
 * migration_get_progress(), which computes the live fields at the moment of
 * the call: they change within a pass, not only between passes.
 *
 * MIGRATION_PROGRESS is the one list of its fields: the struct below is
 * declared from it, and the front end's JSON in both directions
 * (frontend/api_progress.c) is expanded from it, so a field cannot be
 * added without its JSON member. A row names the JSON member (as an
 * identifier, stringified where it is used, as MIGRATION_PARAMS does), then
 * the field:
 *   U64(NAME, FIELD)        uint64_t, a JSON number
 *   UINT(NAME, FIELD)       unsigned, a JSON number
 *   BOOL(NAME, FIELD)       bool, true / false
 *   STR(NAME, FIELD, SIZE)  char[SIZE], NUL-terminated, a JSON string
 *   OWN(NAME, TYPE, FIELD, DIM)  TYPE FIELD DIM; in JSON by hand
 *                           (api_progress.c: the state's name, params, the
 *                           nullable members; NAME empty: not in JSON)
 * The JSON object is "state", the U64/UINT/BOOL/STR members in this order,
 * then "target_postcopy", "target_postcopy_reason", "dirty_rate_pages_per_s",
 * "converged" and "params".
 */
#define MIGRATION_PROGRESS(U64, UINT, BOOL, STR, OWN)                                              \
	OWN(state, enum migration_state, state, ) /* its name: migration_state_name() */           \
	UINT(pass, pass)                                                                           \
	/* the VM and the parameters in effect */                                                  \
	U64(ram_bytes, ram_bytes)		       /* guest RAM */                             \
	U64(page_size_bytes, page_size_bytes)	       /* the unit of transfer */                  \
	OWN(params, struct migration_params, params, ) /* an object; none before a migration */    \
	/* live: at the moment of the read */                                                      \
	U64(total_ms, total_ms)		    /* start to now, or to the end once final */           \
	U64(sent_bytes, sent_bytes)	    /* written to every connection, all phases */          \
	U64(precopy_bytes, precopy_bytes)   /* of which before the VM ran on the target */         \
	U64(postcopy_bytes, postcopy_bytes) /* of which after (pushed and requested pages) */      \
	/* pages still to send in this pass, times the page size */                                \
	U64(remaining_bytes, remaining_bytes)                                                      \
	U64(pass_pages, pass_pages)	      /* this pass's pages to send (its harvest) */        \
	U64(pass_done_pages, pass_done_pages) /* of which sent (data, zero or skipped) so far */   \
	/* wire rate, this pass so far (or overall at the end) */                                  \
	U64(throughput_bytes_per_s, throughput_bytes_per_s)                                        \
	/* pages sent per second, this pass so far */                                              \
	U64(page_rate_pages_per_s, page_rate_pages_per_s)                                          \
	/* pages dirtied per second, last harvest; null while dirty_rate_known is false */         \
	OWN(dirty_rate_pages_per_s, uint64_t, dirty_rate_pages_per_s, )                            \
	OWN(, bool, dirty_rate_known, ) /* false until the second harvest */                       \
	/* remaining pages over the page rate: 0 once final */                                     \
	U64(expected_downtime_ms, expected_downtime_ms)                                            \
	U64(pages_sent, pages_sent)	  /* pages with data */                                    \
	U64(zero_pages, zero_pages)	  /* pages sent as a zero marker */                        \
	U64(skipped_pages, skipped_pages) /* never touched, not read (not resident) */             \
	U64(downtime_ms, downtime_ms)	  /* downtime_us / 1000 */                                 \
	/* pause to the target's resume, microseconds (see mig_ack) */                             \
	U64(downtime_us, downtime_us)                                                              \
	/* pause to the ACK reaching the source (upper bound) */                                   \
	U64(downtime_ack_us, downtime_ack_us)                                                      \
	/* where the downtime went, microseconds */                                                \
	U64(blackout_pause_us, blackout_pause_us) /* kicking all vCPUs out of the guest */         \
	U64(blackout_send_us, blackout_send_us)	  /* final pages, after the final harvest */       \
	/* device/VM/vCPU state (precopy: during send), END */                                     \
	U64(blackout_state_us, blackout_state_us)                                                  \
	U64(blackout_ack_us, blackout_ack_us)	  /* waiting for the target's ACK */               \
	U64(target_restore_us, target_restore_us) /* target: loading the state (from its ACK) */   \
	/*                                                                                         \
	 * The source's waits for the target between the pause and COMMITTED                       \
	 * (spin_wait.h): records awaited (round trips), of which already                          \
	 * there, arrived while polling, or needing a sleeping wait (a wake-up                     \
	 * on the critical path); the polling's time.                                              \
	 */                                                                                        \
	UINT(blackout_round_trips, blackout_round_trips)                                           \
	UINT(blackout_ready, blackout_ready)                                                       \
	UINT(blackout_polled, blackout_polled)                                                     \
	UINT(blackout_sleeps, blackout_sleeps)                                                     \
	U64(blackout_polling_us, blackout_polling_us)                                              \
	U64(setup_ms, setup_ms)			/* connect + enable dirty logging */               \
	U64(harvest_last_us, harvest_last_us)	/* last harvest, all slots */                      \
	U64(harvest_final_us, harvest_final_us) /* blackout harvest */                             \
	U64(harvest_total_us, harvest_total_us)                                                    \
	UINT(harvest_threads, harvest_threads)                                                     \
	BOOL(manual_protect, manual_protect) /* KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2 in use */        \
	BOOL(initially_set, initially_set)   /* KVM_DIRTY_LOG_INITIALLY_SET in use */              \
	/* under half of RAM resident: first pass = resident pages */                              \
	BOOL(sparse_guest, sparse_guest)                                                           \
	/*                                                                                         \
	 * A precopy switchover's: 1 the expected downtime fit the limit, 0 it                     \
	 * went over the limits (no_converge = switchover); -1 does not apply                      \
	 * (no switchover yet, or postcopy): null.                                                 \
	 */                                                                                        \
	OWN(converged, int, converged, )                                                           \
	STR(mode_used, mode_used, 16) /* MIGRATION_USED_* below */                                 \
	/* why the switchover came when it did: MIGRATION_WHY_* below, "" before */                \
	STR(switchover_reason, switchover_reason, 24)                                              \
	/* The target's CAPS answer to VM_DESC: -1 not yet known (null), 0 no, 1 yes. */           \
	OWN(target_postcopy, int, target_postcopy, )                                               \
	/* why not (0: ""), at most 256 bytes */                                                   \
	OWN(target_postcopy_reason, char, target_postcopy_reason, [257])                           \
	/* --converge throttle */                                                                  \
	/* the level now: share of each slice a slowed vCPU sleeps */                              \
	UINT(throttle_pct, throttle_pct)                                                           \
	UINT(throttle_vcpus, throttle_vcpus) /* vCPUs it slows now */                              \
	/* level changes so far, the last one back to 0 included */                                \
	UINT(throttle_changes, throttle_changes)                                                   \
	UINT(throttle_peak_pct, throttle_peak_pct) /* the highest level this migration set */      \
	/* live: time the vCPUs slept for it, summed, this migration */                            \
	U64(throttle_slept_ms, throttle_slept_ms)                                                  \
	/* the last changes, change c (1-based) at [(c - 1) % MIGRATION_THROTTLE_LOG] */           \
	OWN(, struct migration_throttle_change, throttle_log, [MIGRATION_THROTTLE_LOG])            \
	/* postcopy */                                                                             \
	U64(bitmap_raw_bytes, bitmap_raw_bytes) /* final dirty bitmap, uncompressed */             \
	U64(bitmap_bytes, bitmap_bytes)		/* as sent, zstd */                                \
	U64(bitmap_send_us, bitmap_send_us)	/* sending it */                                   \
	U64(postcopy_pages, postcopy_pages)	/* pages stale on the target at switchover */      \
	U64(pages_requested, pages_requested)	/* served on the urgent connection */              \
	U64(pages_pushed, pages_pushed)		/* sent in the background */                       \
	U64(all_arrived_ms, all_arrived_ms)	/* switchover to the target's DONE */              \
	U64(fault_p50_us, fault_p50_us)		/* target: fault to page in place */               \
	U64(fault_p99_us, fault_p99_us)                                                            \
	U64(fault_max_us, fault_max_us)                                                            \
	U64(faults, faults)			 /* target: userfaultfd faults */                  \
	UINT(resumes, resumes)			 /* postcopy reconnections */                      \
	UINT(recover_attempts, recover_attempts) /* failed migration_recover() attempts */         \
	STR(error, error, 256)

#define MIGRATION_PROGRESS_DECL_U64(name, f)		uint64_t f;
#define MIGRATION_PROGRESS_DECL_UINT(name, f)		unsigned f;
#define MIGRATION_PROGRESS_DECL_BOOL(name, f)		bool f;
#define MIGRATION_PROGRESS_DECL_STR(name, f, size)	char f[size];
#define MIGRATION_PROGRESS_DECL_OWN(name, type, f, dim) type f dim;
struct migration_progress {
	MIGRATION_PROGRESS(MIGRATION_PROGRESS_DECL_U64, MIGRATION_PROGRESS_DECL_UINT,
			   MIGRATION_PROGRESS_DECL_BOOL, MIGRATION_PROGRESS_DECL_STR,
			   MIGRATION_PROGRESS_DECL_OWN)
};
#undef MIGRATION_PROGRESS_DECL_U64
#undef MIGRATION_PROGRESS_DECL_UINT
#undef MIGRATION_PROGRESS_DECL_BOOL
#undef MIGRATION_PROGRESS_DECL_STR
#undef MIGRATION_PROGRESS_DECL_OWN

/* switchover_reason values (docs/api.md). */
#define MIGRATION_WHY_CONVERGED	     "converged" /* expected downtime within the limit */
#define MIGRATION_WHY_LIMITS	     "limits"	 /* max passes or time, switched over anyway */
#define MIGRATION_WHY_REQUESTED	     "postcopy-requested" /* mode postcopy, after postcopy_after */
#define MIGRATION_WHY_NOT_CONVERGING "not-converging"	  /* auto: precopy would not converge */
#define MIGRATION_WHY_STALLED	     "stalled" /* passes stopped shrinking: the least rest */

/* mode_used values (docs/api.md): how the migration went. */
#define MIGRATION_USED_PRECOPY	"precopy"  /* stop-and-copy (also before any switchover) */
#define MIGRATION_USED_POSTCOPY "postcopy" /* the VM ran on the target before every page */
#define MIGRATION_USED_LOCAL	"local"	   /* RAM handed over as a memfd (params.local) */

#endif /* VMM_MIGRATION_PROGRESS_H */
