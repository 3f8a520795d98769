/* SPDX-License-Identifier: Apache-2.0 */
/*
 * phases.h - the phases of the source state machine, in the order
 * migration_thread() runs them (nothing else calls them): source_setup(),
 * precopy(), then stop_and_copy() or postcopy_switchover() and
 * postcopy_serve(); both switchovers end in the commit (commit.c).
 *
 * Each phase runs on the migration thread, calls only down (session.h,
 * ram_send.h through the send team, wire/, dirty/, the machine) and fails
 * the migration itself (migration_fail) before returning -errno. Before the
 * source's COMMIT a failure leaves the VM intact: guest RAM is only ever read,
 * and the caller resumes paused vCPUs and turns dirty logging off.
 */
#ifndef VMM_MIGRATION_SOURCE_PHASES_H
#define VMM_MIGRATION_SOURCE_PHASES_H

#include <stdint.h>

#include "session.h"

/* setup.c: everything before the first pass. t_start: the migration's start (now_ns()). */
int source_setup(struct migration *m, uint64_t t_start);
/*
 * formats.c, from source_setup() once CAPS came: m->target_minor and
 * m->form, the newest state form this build and the target both know for
 * this VM; -EPROTONOSUPPORT (the migration failed, naming what the target
 * cannot read) when there is none.
 */
int source_choose_form(struct migration *m, const struct mig_caps_view *v);

/* How precopy() decided to switch over. */
enum precopy_outcome {
	PRECOPY_STOP_AND_COPY, /* converged, stalled or past the limits (no_converge not fail) */
	PRECOPY_POSTCOPY, /* mode postcopy after postcopy_after passes, or auto not converging */
};

/*
 * precopy.c: pass after pass until the switchover decision; 0 with *out
 * set, or -errno (the migration failed or was cancelled).
 */
int precopy(struct migration *m, uint64_t t_start, enum precopy_outcome *out);

/*
 * stop_copy.c: the stop-and-copy switchover. 0 once the target committed:
 * the VM runs there. On failure *t_pause is non-zero if the caller must
 * resume the vCPUs: before COMMIT, or when the operator decided so.
 */
int stop_and_copy(struct migration *m, uint64_t t_start, uint64_t *t_pause);

/*
 * postcopy_switch.c: the postcopy switchover up to the commit; 0 once
 * COMMIT went out: the VM runs (or will run, on the resume) on the target,
 * which from then on lacks the stale pages. Before COMMIT, as
 * stop_and_copy(). Without COMMITTED, m->commit.unconfirmed is set.
 */
int postcopy_switchover(struct migration *m, uint64_t *t_pause);

/*
 * postcopy_serve.c: after a successful postcopy_switchover(); returns 1 if
 * the operator resumed the VM here while COMMITTED never came and no resume
 * reached the target (migration_recover), else returns only
 * once the target has every page. It cannot fail: the source's memory is
 * the only complete copy, so a broken connection waits for a resume.
 */
int postcopy_serve(struct migration *m, uint64_t t_switch);

/*
 * postcopy_serve.c: the urgent thread, which answers the target's page
 * requests. postcopy_switchover() starts it at END, before the commit: the
 * target faults on stale pages while it loads the state (KVM maps the
 * kvmclock page when the MSR is set), and the paused source's memory is
 * the one copy, so serving it cannot conflict with an abort. Stopped by
 * postcopy_switchover() if the migration aborts, by the serve otherwise.
 * Source migration thread only.
 */
int postcopy_urgent_start(struct migration *m);
void postcopy_urgent_stop(struct migration *m);

/*
 * postcopy_missing.c: after a postcopy resume, reads the target's BITMAP
 * records and BITMAP_END on main into the slots' pending bitmaps (cleared
 * first) and unclaims those pages; -errno with a message (the target's
 * ERROR, a count that does not match, a record out of place). Source
 * migration thread only, no sender running.
 */
int postcopy_read_missing(struct migration *m, char *err, size_t errlen);

/*
 * postcopy_done.c: reads main until POSTCOPY_DONE (or a HEARTBEAT saying
 * it went out and was lost), then sends RELEASE. 10 s without a record
 * (MIG_HEARTBEAT_DEAD_MS) fails like a broken connection: the caller
 * pauses. 0 or -errno (the migration failed, with its message).
 */
int postcopy_wait_done(struct migration *m);

/*
 * commit.c: the switchover commit, after END (see commit.c for the states).
 *
 * commit_wait_prepared: PREPARED within 3 x timeout_ms; otherwise sends
 * ABORT (best effort) and fails the migration: the caller resumes the vCPUs.
 */
int commit_wait_prepared(struct migration *m, struct mig_prepared *p);
/*
 * Sets `committed`, sends COMMIT, waits timeout_ms for COMMITTED: 0 when it
 * came (*out; zeroed if a proven DECIDED said the target's operator runs
 * it), COMMIT_DISCARDED when a proven DECIDED said its operator discarded
 * it, else -errno; err says why. Either way the source must
 * never resume on its own now. Does not fail the migration.
 */
int commit_decide(struct migration *m, struct mig_committed *out, char *err, size_t errlen);
/*
 * RELEASE on c, best effort: the target may stop answering recover
 * connections. Forgets the ABORT key first (the VM runs on the target);
 * sends nothing once the RELEASE key was forgotten (commit_override).
 */
void commit_release(struct migration *m, struct mig_chan *c);
/*
 * COMMIT on c with its proof (proof.h): only once `committed` is set
 * (main, a recover connection). -EPERM once this source aborted or its
 * operator took the VM back.
 */
int commit_send(struct migration *m, struct mig_chan *c, char *err, size_t errlen);
/*
 * RESUME on a resumed session's main, proving resume `attempt`; sets
 * commit.resumed_once first (the target may run on it). -EPERM as above.
 */
int commit_resume_send(struct migration *m, struct mig_chan *c, uint32_t attempt, char *err,
		       size_t errlen);
/*
 * The operator resumed the VM here: forget COMMIT, RELEASE and RESUME and
 * tell the target with a proven ABORT (main, then a recover connection to
 * `to`, bounded by timeout_ms). Best effort. Migration thread.
 */
void commit_override(struct migration *m, const char *to);
/* What commit_decide() and commit_settle() return when the target's operator decided. */
#define COMMIT_RUNS	 1 /* (commit_decide) the target's operator runs it there */
#define COMMIT_DISCARDED 2 /* the target's operator discarded it: the source may run it */
/*
 * Precopy after commit_decide() failed: MIGRATION_SWITCHOVER_UNKNOWN until
 * a late COMMITTED, a recover (migration_recover) or the VM stopping.
 * 0: the VM runs on the target (RELEASE sent; *out as the target said, or
 * zero); 1: the operator decided to resume here (the target told, best
 * effort: commit_override); COMMIT_DISCARDED: the target's operator
 * discarded its copy, proven; -ESRCH: the VM is stopping (do not resume).
 */
int commit_settle(struct migration *m, struct mig_committed *out, const char *why);

#endif /* VMM_MIGRATION_SOURCE_PHASES_H */
