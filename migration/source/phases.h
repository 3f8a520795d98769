/* SPDX-License-Identifier: Apache-2.0 */
/*
 * phases.h - the phases of the source state machine. migration_thread()
 * (migration.c) runs them in this order, and nothing else calls them:
 *
 *   SETUP      source_setup()    connect, VM_DESC, dirty logging, worker teams
 *   PRECOPY    precopy()         passes until the rest fits, or the decision
 *                                to switch over the postcopy way
 *   then either
 *   SWITCHOVER stop_and_copy()   pause, the last pages, state, END, ACK
 *   or
 *   SWITCHOVER postcopy_switchover()  arm the target, pause, final bitmaps,
 *                                state, END, ACK: the VM runs on the target
 *   POSTCOPY_* postcopy_serve()  serve page requests and push the rest until
 *                                POSTCOPY_DONE, reconnecting on migration_resume()
 *
 * Each phase runs on the migration thread, calls only down (session.h,
 * ram_send.h through the send team, wire/, dirty/, the machine) and fails
 * the migration itself (migration_fail) before returning -errno. Before the
 * target's ACK a failure leaves the VM intact: guest RAM is only ever read,
 * and the caller resumes paused vCPUs and turns dirty logging off.
 */
#ifndef VMM_MIGRATION_SOURCE_PHASES_H
#define VMM_MIGRATION_SOURCE_PHASES_H

#include <stdint.h>

#include "session.h"

/* setup.c: everything before the first pass. t_start: the migration's start (now_ns()). */
int source_setup(struct migration *m, uint64_t t_start);

/* How precopy() decided to switch over. */
enum precopy_outcome {
	PRECOPY_STOP_AND_COPY, /* converged, or past the limits with no_converge = switchover */
	PRECOPY_POSTCOPY, /* mode postcopy after postcopy_after passes, or auto not converging */
};

/*
 * precopy.c: pass after pass until the switchover decision; 0 with *out
 * set, or -errno (the migration failed or was cancelled).
 */
int precopy(struct migration *m, uint64_t t_start, enum precopy_outcome *out);

/*
 * stop_copy.c: the stop-and-copy switchover. 0 once the target ACKed: the
 * VM runs there. On failure *t_pause is non-zero if the vCPUs were paused.
 */
int stop_and_copy(struct migration *m, uint64_t t_start, uint64_t *t_pause);

/*
 * postcopy_switch.c: the postcopy switchover up to the target's ACK; 0
 * once the VM runs on the target, which from then on lacks the stale pages.
 * Before the ACK, as stop_and_copy().
 */
int postcopy_switchover(struct migration *m, uint64_t *t_pause);

/*
 * postcopy_serve.c: after a successful postcopy_switchover(); returns only
 * once the target has every page. It cannot fail: the source's memory is
 * the only complete copy, so a broken connection waits for a resume.
 */
void postcopy_serve(struct migration *m, uint64_t t_switch);

#endif /* VMM_MIGRATION_SOURCE_PHASES_H */
