/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pc_fsm.c - the target's postcopy phase transitions (pc_fsm.h), one case
 * per event; tests/unit/test_pc_fsm.c has a row for each.
 */
#include <stddef.h>

#include "pc_fsm.h"

enum pc_action pc_fsm_step(struct pc_fsm *f, enum pc_event ev)
{
	switch (ev) {
	case PC_EV_LOST:
		/* Once: after DONE nothing is missing, and a stop ends postcopy anyway. */
		if (f->paused || f->complete || f->stopping)
			return PC_ACT_IGNORE;
		f->paused = true;
		return PC_ACT_PAUSE;
	case PC_EV_RESUMED:
	case PC_EV_RESUME_FAILED:
		/* The control thread's end of a resume: paused stays set when it failed. */
		f->paused = ev == PC_EV_RESUME_FAILED;
		return PC_ACT_RESUMED;
	case PC_EV_STOP:
		f->stopping = true;
		return PC_ACT_STOP;
	case PC_EV_ALL_IN:
		/* Exactly once, and never once a stop began (its DONE would lie). */
		if (f->complete || f->stopping)
			return PC_ACT_IGNORE;
		f->complete = true;
		return PC_ACT_SEND_DONE;
	case PC_EV_RELEASE:
		/* Only DONE is answered with RELEASE; a second one says nothing new. */
		if (!f->complete || f->released)
			return PC_ACT_IGNORE;
		f->released = true;
		return PC_ACT_RELEASED;
	case PC_EV_MAIN_ENDED:
		/*
		 * Read for RELEASE only after DONE (before it, main's end is a
		 * loss: PC_EV_LOST). Released: the source's exit. Not: DONE may
		 * be lost with main, the source's resume gets it again.
		 */
		if (!f->complete)
			return PC_ACT_IGNORE;
		return f->released ? PC_ACT_FINISH : PC_ACT_REDO_DONE;
	default:
		return PC_ACT_IGNORE;
	}
}

static const char *const event_names[PC_EV_COUNT] = {
    "LOST", "RESUMED", "RESUME_FAILED", "STOP", "ALL_IN", "RELEASE", "MAIN_ENDED",
};

static const char *const action_names[PC_ACT_COUNT] = {
    "NONE", "PAUSE", "RESUMED", "STOP", "SEND_DONE", "IGNORE", "RELEASED", "FINISH", "REDO_DONE",
};

const char *pc_event_name(enum pc_event ev)
{
	return (unsigned)ev < PC_EV_COUNT ? event_names[ev] : "?";
}

const char *pc_action_name(enum pc_action a)
{
	return (unsigned)a < PC_ACT_COUNT ? action_names[a] : "?";
}
