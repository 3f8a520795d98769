/* SPDX-License-Identifier: Apache-2.0 */
/*
 * postcopy.h - the target's postcopy modules, top down: arm at POSTCOPY,
 * the BITMAP rounds, ready (every stale page dropped), started (the guest
 * runs here while missing pages arrive), stop. The sequence:
 * docs/architecture.md, "Postcopy"; threads and locks: "Threads and locks:
 * target".
 */
#ifndef VMM_MIGRATION_POSTCOPY_H
#define VMM_MIGRATION_POSTCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct incoming;
struct mig_bitmap_end;
struct migration_progress;

/* postcopy.c */

/*
 * Main-connection records of a postcopy switchover, read whole by the main
 * thread (the record table bounded len): POSTCOPY, BITMAP, BITMAP_END.
 */
int postcopy_incoming_record(struct incoming *in, uint32_t type, const void *p, uint32_t len,
			     char *err, size_t errlen);
/* After END and the state load: waits until every stale page is dropped. */
int postcopy_incoming_ready(struct incoming *in, char *err, size_t errlen);
/* At the ACK: the guest runs from now on. */
void postcopy_incoming_started(struct incoming *in);
/* True once the source is gone after POSTCOPY_DONE. */
bool postcopy_incoming_finished(struct incoming *in);
/* Stops every postcopy thread (the order: postcopy.c). Idempotent. */
void postcopy_incoming_stop(struct incoming *in);
/* After postcopy_incoming_stop(): frees what the postcopy modules own. */
void postcopy_incoming_free(struct incoming *in);
void postcopy_incoming_progress(struct incoming *in, struct migration_progress *out);

/*
 * pc_control.c: the control thread. Waits on pc_state's wake_fd (and, once
 * the vCPUs run, on the main connection): completes the migration when the
 * last page is in place, resumes after a lost connection, notices the
 * source leaving. Ends at stopping.
 */
int pc_control_start(struct incoming *in);
void pc_control_join(struct incoming *in);
bool pc_control_finished(struct incoming *in);
void pc_control_free(struct incoming *in);

/*
 * pc_drop.c: BITMAP / BITMAP_END on the main thread, and the dropper
 * thread that drops each slot's stale pages as its bitmap arrives.
 */
int pc_drop_start(struct incoming *in);
/* A BITMAP payload: decoded, checked against the slot, expanded into `missing`, queued. */
int pc_drop_bitmap(struct incoming *in, const void *p, uint32_t len, char *err, size_t errlen);
/* A decoded BITMAP_END: the preliminary round is dropped and ARMED sent, or the queue closed. */
int pc_drop_bitmap_end(struct incoming *in, const struct mig_bitmap_end *be, char *err,
		       size_t errlen);
/* The main thread, after END: the final BITMAP_END came and every stale page is dropped. */
int pc_drop_finish(struct incoming *in, char *err, size_t errlen);
/* Closes the queue and joins the dropper (idempotent). */
void pc_drop_stop(struct incoming *in);
void pc_drop_free(struct incoming *in);

/*
 * pc_fault.c: the fault thread. pc_fault_request() and pc_fault_rerequest()
 * send PAGE_REQ on the urgent connection (under urgent_wlock); the latter
 * re-sends every request still outstanding (after a resume).
 */
int pc_fault_start(struct incoming *in);
/* Tells the fault thread to end (completion, stop); does not wait. */
void pc_fault_quit(struct incoming *in);
void pc_fault_join(struct incoming *in);
int pc_fault_request(struct incoming *in, uint32_t slot, uint64_t page);
void pc_fault_rerequest(struct incoming *in);
void pc_fault_free(struct incoming *in);

#endif /* VMM_MIGRATION_POSTCOPY_H */
