/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_reader.h - the reader-resume fault (fault_cells.h): a passive
 * reader of a plaintext migration, an operator's override, and the reader
 * replaying what it captured (issue 36, finding 1), applied to a cell whose
 * target the phase's step stopped after PREPARED (or after reading COMMIT).
 *
 * fault_run.c's apply() calls it with the target stopped and `vmm migrate`
 * running through recproxy.py, which prints every decision record that
 * passes and drops the first ABORT (with --then hold). In order:
 *   1. `vmm migrate` ends (exit 4, switchover-unknown; postcopy 3, paused),
 *      and the proxy has printed the COMMIT it forwarded;
 *   2. precopy: `vmm migrate --recover` fails (the target does not answer);
 *      then the operator's `--recover --decide resume`, which must succeed:
 *      the VM runs on the source, and its proven ABORT on main is the one
 *      the proxy drops (the one on its recover connection never goes out:
 *      the stalled target sends no RECOVER_STATE);
 *   3. the target continues (SIGCONT), reads the late COMMIT and says that
 *      it waits for RELEASE;
 *   4. the reader replays COMMIT's captured proof as RELEASE on a recover
 *      connection (postcopy: also as RESUME, attempt 1, on a main-resume
 *      connection); the target must name each as a proof that does not
 *      verify.
 * What follows is the cell's own: settling, classification (the source
 * keeps the VM: `failed`), the window (the source's guest verifies passes,
 * the target's none) and never both running. The cell's thread only.
 */
#ifndef VMM_FAULTS_READER_H
#define VMM_FAULTS_READER_H

#include <stddef.h>

#include "fault_observe.h"

/*
 * The steps above; `stepped` is the stopped target, `port` the one it
 * listens on (the reader connects there, past the proxy). 0, or -errno
 * with err saying which step did not happen as it must.
 */
int fx_reader_resume(struct fx_ctx *x, struct hx_proc *stepped, int port, char *err, size_t errlen);

#endif /* VMM_FAULTS_READER_H */
