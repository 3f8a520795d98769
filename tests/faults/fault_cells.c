/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fault matrix: one line per cell. The rules behind the expectations
 * (T is `vmm migrate --timeout-ms`, a stall lasts longer than 3T):
 *   - before COMMIT any failure aborts: the source keeps the VM; the target
 *     only ever runs the VM on COMMIT;
 *   - after COMMIT the source never resumes by itself: it waits in
 *     switchover-unknown for a late COMMITTED or for `--recover`; the
 *     decision counts from just before COMMIT is written, so a COMMIT that
 *     cannot be sent leaves it unknown as well;
 *   - a stalled process that continues finds the protocol where it left it:
 *     a stalled source completes; a stalled target is given up on before
 *     PREPARED and waited for after it;
 *   - in postcopy a broken or stalled link pauses both sides until
 *     `--resume`; a dead process there takes the VM with it (the source
 *     held missing pages, the target held the running guest);
 *   - running out of file descriptors breaks nothing that is already open;
 *     before the connections exist it is a plain failure to connect;
 *   - a record lost with its link (recproxy.py drops it, then cuts) is a
 *     cut at that record: the commit decides as for a reset there;
 *   - trickling and idle connections on the port hold only their own
 *     slots: a fresh migration, and the recover or the resume that settles
 *     a reset, get in;
 *   - so do connections that send a valid hello and nothing more, even
 *     with the migration's own session id: one that has proven nothing is
 *     evicted like an idle one;
 *   - an operator who takes the VM back on the source (`--decide resume`)
 *     is the only owner even when the proven ABORT that tells the target
 *     is lost: the target runs on no proof a reader of the wire captured.
 * Never both running, in any cell (checked for every cell, not listed).
 */
#include "fault_cells.h"

#include <stdio.h>
#include <string.h>

/* Triggers: a step on the source or the target, or none (the fault comes first). */
#define SRC(step)                                                                                  \
	{                                                                                          \
		FX_ON_SOURCE, step, false, false, NULL                                             \
	}
#define TGT(step)                                                                                  \
	{                                                                                          \
		FX_ON_TARGET, step, false, false, NULL                                             \
	}
#define SRC_PC(step)                                                                               \
	{                                                                                          \
		FX_ON_SOURCE, step, true, false, NULL                                              \
	}
#define BEFORE                                                                                     \
	{                                                                                          \
		FX_NO_STEP, NULL, false, true, NULL                                                \
	}
/* Record faults: through the proxy from the start; the phase is the mode. */
#define DROP(rec)                                                                                  \
	{                                                                                          \
		FX_NO_STEP, NULL, false, true, rec                                                 \
	}
#define DROP_PC(rec)                                                                               \
	{                                                                                          \
		FX_NO_STEP, NULL, true, true, rec                                                  \
	}
/* The reader's cells: a target step, through the proxy, which drops the first ABORT. */
#define READER(step)                                                                               \
	{                                                                                          \
		FX_ON_TARGET, step, false, false, "ABORT"                                          \
	}
#define READER_PC(step)                                                                            \
	{                                                                                          \
		FX_ON_TARGET, step, true, false, "ABORT"                                           \
	}

#define COMPLETED FX_O_COMPLETED
#define KEEPS	  FX_O_SOURCE_KEEPS
#define RESUME	  FX_O_RESUME_COMPLETES
#define RECOVER	  FX_O_RECOVER_COMPLETES
#define REC_SRC	  FX_O_RECOVER_SOURCE
#define DEC_TGT	  FX_O_DECIDE_TARGET
#define LOST	  FX_O_CLEAR_ERROR

/* clang-format off */
const struct fx_cell fx_cells[] = {
/* fault            phase          trigger                          expect     commit quick why */
{FX_KILL_TARGET, FX_SETUP,      SRC("source-setup"),              KEEPS,     false, false, "target dead before PREPARED"},
{FX_KILL_TARGET, FX_FIRST_PASS, SRC("source-first-pass"),         KEEPS,     false, false, "target dead before PREPARED"},
{FX_KILL_TARGET, FX_LATER_PASS, SRC("source-second-pass"),        KEEPS,     false, true,  "target dead before PREPARED"},
{FX_KILL_TARGET, FX_SW_BEFORE,  TGT("target-end"),                KEEPS,     false, false, "target dead before PREPARED"},
{FX_KILL_TARGET, FX_SW_STATE,   TGT("target-prepared"),           REC_SRC,   true,  true,  "COMMIT sent, no COMMITTED: the operator asserts the target is dead"},
{FX_KILL_TARGET, FX_SW_COMMIT,  TGT("target-commit"),             REC_SRC,   true,  false, "COMMIT read, killed before COMMITTED"},
{FX_KILL_TARGET, FX_PC_EARLY,   SRC_PC("source-postcopy-early"),  LOST,      false, false, "the running guest died with the target"},
{FX_KILL_TARGET, FX_PC_LATE,    SRC_PC("source-postcopy-late"),   LOST,      false, false, "the running guest died with the target"},

{FX_KILL_SOURCE, FX_SETUP,      SRC("source-setup"),              LOST,      false, false, "the only copy died before END"},
{FX_KILL_SOURCE, FX_FIRST_PASS, SRC("source-first-pass"),         LOST,      false, false, "the only copy died before END"},
{FX_KILL_SOURCE, FX_LATER_PASS, SRC("source-second-pass"),        LOST,      false, false, "the only copy died before END"},
{FX_KILL_SOURCE, FX_SW_BEFORE,  SRC("source-paused"),             LOST,      false, false, "the only copy died before END"},
{FX_KILL_SOURCE, FX_SW_STATE,   SRC("source-prepared"),           DEC_TGT,   true,  true,  "PREPARED, no decision: the operator runs it on the target"},
{FX_KILL_SOURCE, FX_SW_COMMIT,  SRC("source-commit-sent"),        COMPLETED, true,  true,  "COMMIT arrived: the target runs it"},
{FX_KILL_SOURCE, FX_PC_EARLY,   SRC_PC("source-postcopy-early"),  LOST,      false, false, "missing pages died with the source"},
{FX_KILL_SOURCE, FX_PC_LATE,    SRC_PC("source-postcopy-late"),   LOST,      false, false, "missing pages died with the source"},

{FX_STOP_TARGET, FX_SETUP,      SRC("source-setup"),              KEEPS,     false, false, "sends time out after T"},
{FX_STOP_TARGET, FX_FIRST_PASS, SRC("source-first-pass"),         KEEPS,     false, false, "sends time out after T"},
{FX_STOP_TARGET, FX_LATER_PASS, SRC("source-second-pass"),        KEEPS,     true,  false, "sends or the wait for PREPARED time out; the late target must not run"},
{FX_STOP_TARGET, FX_SW_BEFORE,  TGT("target-end"),                KEEPS,     true,  false, "no PREPARED within 3T: abort; the late target discards"},
{FX_STOP_TARGET, FX_SW_STATE,   TGT("target-prepared"),           COMPLETED, true,  true,  "switchover-unknown while stalled, settles by itself"},
{FX_STOP_TARGET, FX_SW_COMMIT,  TGT("target-commit"),             COMPLETED, true,  false, "switchover-unknown while stalled, settles by itself"},
{FX_STOP_TARGET, FX_PC_EARLY,   SRC_PC("source-postcopy-early"),  RESUME,    false, false, "postcopy sends time out: paused"},
{FX_STOP_TARGET, FX_PC_LATE,    SRC_PC("source-postcopy-late"),   RESUME,    false, false, "postcopy sends time out: paused"},

{FX_STOP_SOURCE, FX_SETUP,      SRC("source-setup"),              COMPLETED, false, false, "a stalled source completes"},
{FX_STOP_SOURCE, FX_FIRST_PASS, SRC("source-first-pass"),         COMPLETED, false, false, "a stalled source completes"},
{FX_STOP_SOURCE, FX_LATER_PASS, SRC("source-second-pass"),        COMPLETED, false, false, "a stalled source completes"},
{FX_STOP_SOURCE, FX_SW_BEFORE,  SRC("source-paused"),             COMPLETED, false, true,  "a stalled source completes"},
{FX_STOP_SOURCE, FX_SW_STATE,   SRC("source-prepared"),           COMPLETED, true,  false, "late COMMIT settles the waiting target"},
{FX_STOP_SOURCE, FX_SW_COMMIT,  SRC("source-commit-sent"),        COMPLETED, true,  false, "a stalled source completes"},
{FX_STOP_SOURCE, FX_PC_EARLY,   SRC_PC("source-postcopy-early"),  COMPLETED, false, false, "the target waits for its pages"},
{FX_STOP_SOURCE, FX_PC_LATE,    SRC_PC("source-postcopy-late"),   COMPLETED, false, false, "the target waits for its pages"},

{FX_RESET,       FX_SETUP,      SRC("source-setup"),              KEEPS,     false, false, "link lost before PREPARED"},
{FX_RESET,       FX_FIRST_PASS, SRC("source-first-pass"),         KEEPS,     false, false, "link lost before PREPARED"},
{FX_RESET,       FX_LATER_PASS, SRC("source-second-pass"),        KEEPS,     false, false, "link lost before PREPARED"},
{FX_RESET,       FX_SW_BEFORE,  SRC("source-paused"),             KEEPS,     false, false, "link lost before END"},
{FX_RESET,       FX_SW_STATE,   SRC("source-prepared"),           RECOVER,   true,  false, "decided before COMMIT is written: unknown; --recover commits"},
{FX_RESET,       FX_SW_COMMIT,  TGT("target-commit"),             RECOVER,   true,  false, "target runs on COMMIT; --recover finds it running"},
{FX_RESET,       FX_PC_EARLY,   SRC_PC("source-postcopy-early"),  RESUME,    false, true,  "postcopy link lost: paused"},
{FX_RESET,       FX_PC_LATE,    SRC_PC("source-postcopy-late"),   RESUME,    false, false, "postcopy link lost: paused"},

{FX_BLACKHOLE,   FX_SETUP,      SRC("source-setup"),              KEEPS,     false, false, "sends time out after T"},
{FX_BLACKHOLE,   FX_FIRST_PASS, SRC("source-first-pass"),         KEEPS,     false, false, "sends time out after T"},
{FX_BLACKHOLE,   FX_LATER_PASS, SRC("source-second-pass"),        KEEPS,     false, true,  "sends time out after T"},
{FX_BLACKHOLE,   FX_SW_BEFORE,  SRC("source-paused"),             KEEPS,     true,  false, "no PREPARED within 3T: abort; the late target must not run"},
{FX_BLACKHOLE,   FX_SW_STATE,   SRC("source-prepared"),           COMPLETED, true,  false, "COMMIT retransmitted after the link returns"},
{FX_BLACKHOLE,   FX_SW_COMMIT,  TGT("target-commit"),             COMPLETED, true,  false, "COMMITTED retransmitted after the link returns"},
{FX_BLACKHOLE,   FX_PC_EARLY,   SRC_PC("source-postcopy-early"),  RESUME,    false, false, "postcopy sends time out: paused"},
{FX_BLACKHOLE,   FX_PC_LATE,    SRC_PC("source-postcopy-late"),   RESUME,    false, false, "postcopy sends time out: paused"},

{FX_FD_EXHAUSTION, FX_SETUP,    BEFORE,                           KEEPS,     false, false, "the target cannot accept: connect/hello times out"},
{FX_FD_EXHAUSTION, FX_FIRST_PASS, SRC("source-first-pass"),       COMPLETED, false, true,  "open connections keep working"},
{FX_FD_EXHAUSTION, FX_LATER_PASS, SRC("source-second-pass"),      COMPLETED, false, false, "open connections keep working"},
{FX_FD_EXHAUSTION, FX_SW_BEFORE,  SRC("source-paused"),           COMPLETED, false, false, "open connections keep working"},
{FX_FD_EXHAUSTION, FX_SW_STATE,   SRC("source-prepared"),         COMPLETED, true,  false, "open connections keep working"},
{FX_FD_EXHAUSTION, FX_SW_COMMIT,  TGT("target-commit"),           COMPLETED, true,  false, "open connections keep working"},
{FX_FD_EXHAUSTION, FX_PC_EARLY,   SRC_PC("source-postcopy-early"), COMPLETED, false, false, "open connections keep working"},
{FX_FD_EXHAUSTION, FX_PC_LATE,    SRC_PC("source-postcopy-late"), COMPLETED, false, false, "open connections keep working"},

{FX_DROP_PREPARED, FX_PRECOPY,    DROP("PREPARED"),                KEEPS,     true,  false, "no PREPARED: abort; the target, unknown, never sees a COMMIT"},
{FX_DROP_PREPARED, FX_POSTCOPY,   DROP_PC("PREPARED"),             KEEPS,     true,  false, "no PREPARED: abort; the target, unknown, never sees a COMMIT"},
{FX_DROP_COMMIT,   FX_PRECOPY,    DROP("COMMIT"),                  RECOVER,   true,  false, "decided, not delivered: both unknown; --recover commits"},
{FX_DROP_COMMIT,   FX_POSTCOPY,   DROP_PC("COMMIT"),               RESUME,    true,  false, "decided, not delivered: the resume is the COMMIT"},
{FX_DROP_COMMITTED, FX_PRECOPY,   DROP("COMMITTED"),               RECOVER,   true,  false, "the target runs; --recover learns it"},
{FX_DROP_COMMITTED, FX_POSTCOPY,  DROP_PC("COMMITTED"),            RESUME,    true,  false, "the target runs; the resume goes on"},
{FX_DROP_RELEASE,  FX_PRECOPY,    DROP("RELEASE"),                 COMPLETED, true,  false, "the source let go; the target runs (awaiting-release until the operator)"},
{FX_DROP_RELEASE,  FX_POSTCOPY,   DROP_PC("RELEASE"),              COMPLETED, true,  false, "every page arrived; the source let go"},
{FX_DROP_DONE,     FX_POSTCOPY,   DROP_PC("POSTCOPY_DONE"),        RESUME,    true,  false, "DONE lost with the link: a resume gets an empty bitmap and DONE again"},

{FX_TRICKLE,       FX_SETUP,      BEFORE,                          COMPLETED, false, false, "a fresh migration gets in past 72 trickling and idle connections"},
{FX_TRICKLE,       FX_SW_STATE,   SRC("source-prepared"),          RECOVER,   true,  false, "reset after PREPARED; --recover gets past 72 trickling and idle connections"},
{FX_TRICKLE,       FX_PC_EARLY,   SRC_PC("source-postcopy-early"), RESUME,    false, false, "reset in postcopy; --resume gets past 72 trickling and idle connections"},

{FX_VALID_HELLO,   FX_SETUP,      BEFORE,                          COMPLETED, false, false, "a fresh migration gets in past 64 valid hellos"},
{FX_VALID_HELLO,   FX_SW_STATE,   SRC("source-prepared"),          RECOVER,   true,  false, "reset after PREPARED; --recover gets past 64 recover hellos of its session"},
{FX_VALID_HELLO,   FX_SW_COMMIT,  TGT("target-commit"),            RECOVER,   true,  false, "reset after COMMIT; --recover gets past 64 recover hellos of its session"},
{FX_VALID_HELLO,   FX_PC_EARLY,   SRC_PC("source-postcopy-early"), RESUME,    false, false, "reset in postcopy; --resume gets past 64 resume hellos of its session"},
{FX_VALID_HELLO,   FX_PC_LATE,    SRC_PC("source-postcopy-late"),  RESUME,    false, false, "reset late in postcopy; --resume gets past 64 resume hellos of its session"},
{FX_READER_RESUME, FX_SW_STATE,   READER("target-prepared"),       KEEPS,     true,  false, "the operator took the VM back; its ABORT lost, a replayed COMMIT proof releases nothing"},
{FX_READER_RESUME, FX_SW_COMMIT,  READER("target-commit"),         KEEPS,     true,  false, "the same with COMMIT read before the stall: late, it waits for a RELEASE that never comes"},
{FX_READER_RESUME, FX_POSTCOPY,   READER_PC("target-prepared"),    KEEPS,     true,  false, "the postcopy switchover taken back; no RELEASE or RESUME proof made of COMMIT's"},
};
/* clang-format on */

const int fx_ncells = (int)(sizeof(fx_cells) / sizeof(fx_cells[0]));

static const char *const fault_names[FX_FAULT_COUNT] = {
    "kill-target",  "kill-source",   "stop-target",   "stop-source", "reset",
    "blackhole",    "fd-exhaustion", "drop-prepared", "drop-commit", "drop-committed",
    "drop-release", "drop-done",     "trickle",	      "valid-hello", "reader-resume",
};

static const char *const phase_names[FX_PHASE_COUNT] = {
    "setup",	       "first-pass",	 "later-pass",	  "sw-before-state", "sw-after-state",
    "sw-after-commit", "postcopy-early", "postcopy-late", "precopy",	     "postcopy",
};

static const char *const outcome_names[FX_O_COUNT] = {
    "-",
    "completed",
    "source-keeps",
    "resume-completes",
    "recover-completes",
    "recover-source",
    "decide-target",
    "clear-error",
};

const char *fx_fault_name(enum fx_fault f)
{
	return f < FX_FAULT_COUNT ? fault_names[f] : "?";
}

const char *fx_phase_name(enum fx_phase p)
{
	return p < FX_PHASE_COUNT ? phase_names[p] : "?";
}

const char *fx_outcome_name(enum fx_outcome o)
{
	return o < FX_O_COUNT ? outcome_names[o] : "?";
}

const struct fx_cell *fx_cell_find(const char *fault_phase)
{
	const char *colon = strchr(fault_phase, ':');

	if (!colon)
		return NULL;
	for (int i = 0; i < fx_ncells; i++) {
		const char *f = fx_fault_name(fx_cells[i].fault);

		if (strlen(f) == (size_t)(colon - fault_phase) &&
		    !strncmp(f, fault_phase, (size_t)(colon - fault_phase)) &&
		    !strcmp(colon + 1, fx_phase_name(fx_cells[i].phase)))
			return &fx_cells[i];
	}
	return NULL;
}

int fx_cells_check(char *why, size_t len)
{
	int seen[FX_FAULT_COUNT][FX_PHASE_COUNT] = {{0}};

	for (int i = 0; i < fx_ncells; i++)
		seen[fx_cells[i].fault][fx_cells[i].phase]++;
	/* The grid's faults at every grid phase once; the others where listed, once. */
	for (int f = 0; f < FX_FAULT_COUNT; f++)
		for (int p = 0; p < FX_PHASE_COUNT; p++)
			if (f < FX_GRID_FAULTS && p < FX_GRID_PHASES
				? seen[f][p] != 1
				: seen[f][p] > 1 || (f < FX_GRID_FAULTS && seen[f][p])) {
				snprintf(why, len, "the table has %s:%s %d times", fx_fault_name(f),
					 fx_phase_name(p), seen[f][p]);
				return -1;
			}
	return 0;
}
