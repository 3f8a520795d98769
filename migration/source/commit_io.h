/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commit_io.h - the switchover commit's record I/O on the source, shared
 * by commit.c (END to COMMITTED) and commit_recover.c (the unknown
 * outcome: a late COMMITTED, a recover connection, the operator's resume).
 * Internal to migration/source; what each result leads to is
 * commit_fsm.h's. Migration thread.
 */
#ifndef VMM_MIGRATION_SOURCE_COMMIT_IO_H
#define VMM_MIGRATION_SOURCE_COMMIT_IO_H

#include <stddef.h>
#include <stdint.h>

#include "commit_fsm.h"
#include "phases.h"

/* The source keeps (or takes back) the VM: forgets COMMIT's, RELEASE's and RESUME's keys. */
void commit_forget_target_side(struct migration *m);
/* ABORT on c with its proof, bound to c, best effort: 0 or -errno. */
int commit_abort_on(struct migration *m, struct mig_chan *c, const char *why);
/* The next record on c, which must be `type`; an ERROR is the target's message (-EPROTO). */
int commit_read_reply(struct mig_chan *c, uint32_t type, uint8_t buf[REPLY_MAX], uint32_t *len,
		      char *err, size_t errlen);
/*
 * COMMITTED on c, without failing the migration (a missing one is an
 * unknown outcome): 0, COMMIT_RUNS or COMMIT_DISCARDED (a proven DECIDED),
 * -EACCES (a DECIDED whose proof is not the target's), or -errno; err set.
 */
int commit_read_committed(struct migration *m, struct mig_chan *c, struct mig_committed *out,
			  char *err, size_t errlen);
/* Waits until `end` (CLOCK_MONOTONIC ns) for c to be readable: 0, -ETIMEDOUT, or -errno. */
int commit_wait_readable(const struct mig_chan *c, uint64_t end);
/* commit_read_committed()'s result as the commit's event (any failure: main lost). */
enum commit_event commit_committed_event(int ret, const struct mig_committed *c);

#endif /* VMM_MIGRATION_SOURCE_COMMIT_IO_H */
