/* SPDX-License-Identifier: Apache-2.0 */
/*
 * settle.h - the target's half of the switchover commit (settle.c): the
 * decision after PREPARED, the unknown outcome and the recover
 * connections, RELEASE. The public calls are in migration.h
 * (migration_incoming_prepare, _decision, _decide, _started).
 */
#ifndef VMM_MIGRATION_TARGET_SETTLE_H
#define VMM_MIGRATION_TARGET_SETTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct incoming;

/* PREPARED went out and no decision came yet (the API reports switchover-unknown). */
bool incoming_outcome_unknown(struct incoming *in);
/*
 * Precopy: the VM runs here and the source has not let go yet (no RELEASE,
 * or its connection still open): since when, and what would end it.
 */
bool settle_awaiting_release(struct incoming *in, uint64_t *since_ns, const char **what);
/* Precopy: RELEASE came and the source's main connection closed. */
bool settle_finished(struct incoming *in);
/*
 * The receiving thread, before it waits for the source: draws this
 * target's own decision keys (its operator's RUN and DISCARD, whose public
 * halves PREPARED carries) and loads what verifying needs
 * (mig_proof_warm), so that the switchover's blackout pays for no key and
 * for no first use of libcrypto, only for checking COMMIT. 0 or -errno
 * with err set.
 */
int settle_keys_new(struct incoming *in, char *err, size_t errlen);
/*
 * The receiving thread, once the VM is received (before PREPARED goes
 * out): the gate serves recover and resume connections from now on
 * (gate_late_open), answering with this switchover's state.
 */
void settle_open_late(struct incoming *in);
/*
 * Ends and joins the settle thread, frees its state; NULL state is fine.
 * After gate_stop(): the gate's workers use the state.
 */
void settle_stop(struct incoming *in);

#endif /* VMM_MIGRATION_TARGET_SETTLE_H */
