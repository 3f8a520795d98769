/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm_table.h - the one runner of the state machines' table tests
 * (test_commit_fsm.c, test_settle_fsm.c, test_pc_fsm.c): rows of one step,
 * paths of several, and the machines' names.
 *
 * Every row and path begins with FSM_ROW_HEAD: what it is, and the
 * fault-matrix cell it stands for (docs/fault-matrix.md,
 * tests/faults/fault_cells.c), "FAULT:PHASE" as `vmm-faults --cell` takes
 * it, or "no cell: WHY" for a transition no cell reaches (a forged record,
 * an operator's refused command, a race of timing). The runner runs them
 * all, checks every cell against the matrix's list (a renamed or removed
 * cell fails here, not silently), prints each item that fails with its
 * cell, and fails the test once at the end, so that one run shows every
 * wrong row.
 *
 * The commit and settle machines share one shape (a state in .st, one
 * flag beside it, init(postcopy), step(event) -> action): FSM_MACHINE()
 * wraps one for struct fsm_row and struct fsm_path. The postcopy machine
 * (three bits) runs its own rows through fsm_table_run().
 */
#ifndef VMM_TESTS_FSM_TABLE_H
#define VMM_TESTS_FSM_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fault_cells.h"

/*
 * The first members of a row or path: its name, and its cell
 * ("FAULT:PHASE", or "no cell: WHY"). Plain members, not a nested struct,
 * so that a row stays one initialiser.
 */
#define FSM_ROW_HEAD                                                                               \
	const char *name;                                                                          \
	const char *cell

struct fsm_row_head {
	FSM_ROW_HEAD;
};

#define FSM_NO_CELL "no cell: "

/* True when cell is a cell of the fault matrix, or "no cell: " with a reason after it. */
static inline bool fsm_cell_named(const char *cell)
{
	size_t n = strlen(FSM_NO_CELL);

	if (!cell)
		return false;
	if (!strncmp(cell, FSM_NO_CELL, n))
		return strlen(cell) > n + 8; /* a reason, not a word */
	return fx_cell_find(cell) != NULL;
}

/*
 * Runs the n items of `items` (each `size` bytes, FSM_ROW_HEAD first)
 * through run(), which says whether the item did what it says and, when
 * not, writes what it did into got. kind: "row" or "path", for the
 * messages. Fails the calling cmocka test when any item fails.
 */
static inline void fsm_table_run(const char *kind, const void *items, size_t n, size_t size,
				 bool (*run)(const void *item, char *got, size_t len))
{
	unsigned bad = 0;

	for (size_t i = 0; i < n; i++) {
		const void *item = (const char *)items + i * size;
		struct fsm_row_head h;
		char got[256] = "";

		/* The same leading members: the head's bytes are the item's first ones. */
		memcpy(&h, item, sizeof(h));
		if (!fsm_cell_named(h.cell)) {
			fprintf(stderr, "%s %zu \"%s\": \"%s\" is no fault-matrix cell\n", kind, i,
				h.name, h.cell ? h.cell : "(none)");
			bad++;
		}
		if (!run(item, got, sizeof(got))) {
			fprintf(stderr, "%s %zu \"%s\" [%s]: %s\n", kind, i, h.name,
				h.cell ? h.cell : "(none)", got);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* A machine of the commit/settle shape, as the runners see it (FSM_MACHINE()). */
struct fsm_machine {
	size_t size; /* of the state struct, at most FSM_STATE_MAX */
	void (*init)(void *f, bool postcopy);
	void (*set)(void *f, int st, bool flag); /* a row's starting point */
	int (*step)(void *f, int ev);		 /* the action */
	int (*state)(const void *f);
	bool (*flag)(const void *f);
	const char *flag_name;
	const char *(*state_name)(int st);
	const char *(*event_name)(int ev);
	const char *(*action_name)(int a);
};

/*
 * Defines `var`, the struct fsm_machine of machine `fsm` (struct fsm with
 * its state in .st and the flag `flag`; fsm_init(), fsm_step()) whose
 * enums and names are prefixed `pfx` (enum pfx_state, pfx_event,
 * pfx_action; pfx_state_name() and the others): the typed calls wrapped
 * once here, not in each test.
 */
#define FSM_MACHINE(var, fsm, pfx, flagm)                                                          \
	static void var##_init(void *f, bool postcopy)                                             \
	{                                                                                          \
		fsm##_init(f, postcopy);                                                           \
	}                                                                                          \
	static void var##_set(void *f, int st, bool flag)                                          \
	{                                                                                          \
		struct fsm *m = f;                                                                 \
		m->st = (enum pfx##_state)st;                                                      \
		m->flagm = flag;                                                                   \
	}                                                                                          \
	static int var##_step(void *f, int ev)                                                     \
	{                                                                                          \
		return (int)fsm##_step(f, (enum pfx##_event)ev);                                   \
	}                                                                                          \
	static int var##_state(const void *f)                                                      \
	{                                                                                          \
		return (int)((const struct fsm *)f)->st;                                           \
	}                                                                                          \
	static bool var##_flag(const void *f)                                                      \
	{                                                                                          \
		return ((const struct fsm *)f)->flagm;                                             \
	}                                                                                          \
	static const char *var##_state_name(int st)                                                \
	{                                                                                          \
		return pfx##_state_name((enum pfx##_state)st);                                     \
	}                                                                                          \
	static const char *var##_event_name(int ev)                                                \
	{                                                                                          \
		return pfx##_event_name((enum pfx##_event)ev);                                     \
	}                                                                                          \
	static const char *var##_action_name(int a)                                                \
	{                                                                                          \
		return pfx##_action_name((enum pfx##_action)a);                                    \
	}                                                                                          \
	static const struct fsm_machine var = {                                                    \
	    sizeof(struct fsm), var##_init, var##_set,	      var##_step,	var##_state,       \
	    var##_flag,		#flagm,	    var##_state_name, var##_event_name, var##_action_name}

#define FSM_STATE_MAX 256
#define FSM_PATH_MAX  6

/*
 * One step: from state `from` with the flag `flag` (the commit's
 * resume_sent, the settle's main_alive), event ev gives action want,
 * state to and the flag flag_after.
 */
struct fsm_row {
	FSM_ROW_HEAD;
	bool postcopy;
	int from;
	bool flag;
	int ev;
	int want;
	int to;
	bool flag_after;
};

/* A path from the machine's start: the events, the actions they give in order, the end state. */
struct fsm_path {
	FSM_ROW_HEAD;
	bool postcopy;
	int ev[FSM_PATH_MAX];
	int want[FSM_PATH_MAX];
	int end;
	size_t n; /* steps */
};

/* The machine the item runners below step: one table at a time (a test's own). */
static const struct fsm_machine *fsm_running;

/* A machine's state, wherever it is (at most FSM_STATE_MAX bytes). */
union fsm_state {
	max_align_t align;
	unsigned char bytes[FSM_STATE_MAX];
};

static inline bool fsm_row_ok(const void *item, char *got, size_t len)
{
	const struct fsm_machine *m = fsm_running;
	const struct fsm_row *r = item;
	union fsm_state f;
	int a;

	m->init(&f, r->postcopy);
	m->set(&f, r->from, r->flag);
	a = m->step(&f, r->ev);
	snprintf(got, len, "%s (%s %d) + %s gave %s -> %s (%d), want %s -> %s (%d)",
		 m->state_name(r->from), m->flag_name, r->flag, m->event_name(r->ev),
		 m->action_name(a), m->state_name(m->state(&f)), m->flag(&f),
		 m->action_name(r->want), m->state_name(r->to), r->flag_after);
	return a == r->want && m->state(&f) == r->to && m->flag(&f) == r->flag_after;
}

static inline bool fsm_path_ok(const void *item, char *got, size_t len)
{
	const struct fsm_machine *m = fsm_running;
	const struct fsm_path *p = item;
	union fsm_state f;

	m->init(&f, p->postcopy);
	for (size_t k = 0; k < p->n && k < FSM_PATH_MAX; k++) {
		int a = m->step(&f, p->ev[k]);

		if (a != p->want[k]) {
			snprintf(got, len, "step %zu (%s): got %s, want %s", k,
				 m->event_name(p->ev[k]), m->action_name(a),
				 m->action_name(p->want[k]));
			return false;
		}
	}
	snprintf(got, len, "ended in %s, want %s", m->state_name(m->state(&f)),
		 m->state_name(p->end));
	return m->state(&f) == p->end;
}

/* Every row of machine m (fsm_table_run's checks and messages). */
static inline void fsm_rows_run(const struct fsm_machine *m, const struct fsm_row *rows, size_t n)
{
	assert_true(m->size <= sizeof(union fsm_state));
	fsm_running = m;
	fsm_table_run("row", rows, n, sizeof(rows[0]), fsm_row_ok);
}

/* Every path of machine m. */
static inline void fsm_paths_run(const struct fsm_machine *m, const struct fsm_path *paths,
				 size_t n)
{
	assert_true(m->size <= sizeof(union fsm_state));
	fsm_running = m;
	fsm_table_run("path", paths, n, sizeof(paths[0]), fsm_path_ok);
}

/* Every state, event and action of a machine has a name; one past the last is "?". */
static inline void fsm_names_check(const struct fsm_machine *m, int states, int events, int actions)
{
	for (int i = 0; i < states; i++)
		assert_string_not_equal(m->state_name(i), "?");
	for (int i = 0; i < events; i++)
		assert_string_not_equal(m->event_name(i), "?");
	for (int i = 0; i < actions; i++)
		assert_string_not_equal(m->action_name(i), "?");
	assert_string_equal(m->state_name(states), "?");
	assert_string_equal(m->event_name(events), "?");
	assert_string_equal(m->action_name(actions), "?");
}

/* The check of the cells can fail: names that are not cells are refused. */
static inline void fsm_table_check_cells(void)
{
	assert_true(fsm_cell_named("kill-target:sw-after-state"));
	assert_true(fsm_cell_named(FSM_NO_CELL "only a forged record gets here"));
	assert_false(fsm_cell_named("kill-target:nowhere"));
	assert_false(fsm_cell_named("kill-target"));
	assert_false(fsm_cell_named(FSM_NO_CELL "why"));
	assert_false(fsm_cell_named(NULL));
}

#endif /* VMM_TESTS_FSM_TABLE_H */
