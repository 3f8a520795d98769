/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_classify.h - the outcome of a settled fault-matrix cell in the
 * matrix's vocabulary, with the operator's action where the outcome needs
 * one (`vmm migrate --resume`, `--recover`, `--recover --decide ...`), and
 * who then owns the VM (for the verification window). Internal to vmm-faults.
 */
#ifndef VMM_FAULTS_CLASSIFY_H
#define VMM_FAULTS_CLASSIFY_H

#include "fault_cells.h"
#include "fault_observe.h"

enum fx_outcome fx_classify(struct fx_ctx *x, enum fx_owner *owner);

#endif /* VMM_FAULTS_CLASSIFY_H */
