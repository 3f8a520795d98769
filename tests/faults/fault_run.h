/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_run.h - one cell of the fault matrix, run for real: a source with
 * the dirty guest and a target (vmm_harness), `vmm migrate` in the
 * background, the migration brought to the cell's phase (a test-hook step
 * that stops the process, or a poll of the source's progress), the fault
 * applied and lifted, the operator's action where the outcome needs one
 * (`--resume`, `--recover`), and then what happened classified into the
 * matrix's vocabulary, checked with the guest's own verification on the side
 * that owns the VM and "never both running".
 */
#ifndef VMM_FAULTS_RUN_H
#define VMM_FAULTS_RUN_H

#include <stdbool.h>

#include "fault_cells.h"

struct fx_env {
	const char *vmm;     /* the vmm binary */
	const char *work;    /* a directory per cell goes under it */
	const char *config;  /* examples/dirty.cfg */
	int timeout_ms;	     /* T: `vmm migrate --timeout-ms` */
	const char *scripts; /* tests/integration: recproxy.py and flood.py */
	bool verbose;	     /* progress of each cell on stderr */
	/*
	 * -1: only the trickle cells flood the target's port (8 trickling, 64
	 * idle). N >= 0: every cell does, with N trickling and N idle, from its
	 * trigger until its end (0: none, the baseline); the settle timings in
	 * the detail line then show what the flood costs (bench_trickle).
	 */
	int flood;
};

struct fx_result {
	enum fx_outcome observed;
	bool pass;
	/*
	 * A guest died by a bare triple fault, its registers reset (the
	 * emulated platform's: docs/fault-matrix.md, "The guests that died on
	 * the emulator"); the program runs such a cell once more.
	 */
	bool platform;
	double secs;
	char detail[2600]; /* one line: what decided the observation, or what went wrong */
};

/* Runs the cell with the target on port; fills *res. Never leaves a process behind. */
void fx_cell_run(const struct fx_env *env, const struct fx_cell *cell, int port,
		 struct fx_result *res);

#endif /* VMM_FAULTS_RUN_H */
