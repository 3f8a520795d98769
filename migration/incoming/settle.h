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

struct incoming;

/* PREPARED went out and no decision came yet (the API reports switchover-unknown). */
bool incoming_outcome_unknown(struct incoming *in);
/* Precopy: RELEASE came and the source's main connection closed. */
bool settle_finished(struct incoming *in);
/* Ends and joins the settle thread, frees its state; NULL state is fine. Before lfd closes. */
void settle_stop(struct incoming *in);

#endif /* VMM_MIGRATION_TARGET_SETTLE_H */
