/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.c - the engine's words that the front end shows and reads back:
 * the migration states (migration.h), both ways. The one home of these
 * names: the engine's messages, the API's "state" member, `vmm migrate`
 * and the events stream all read this table, so a new state is named once.
 * The names are part of the API's contract (docs/api.md): renaming one
 * breaks clients. Pure functions, any thread.
 */
#include <errno.h>

#include "enum_names.h"
#include "migration.h"

static const char *const state_names[] = {
    [MIGRATION_NONE] = "none",
    [MIGRATION_SETUP] = "setup",
    [MIGRATION_PRECOPY] = "precopy",
    [MIGRATION_SWITCHOVER] = "switchover",
    [MIGRATION_SWITCHOVER_UNKNOWN] = "switchover-unknown",
    [MIGRATION_POSTCOPY_ACTIVE] = "postcopy-active",
    [MIGRATION_POSTCOPY_PAUSED] = "postcopy-paused",
    [MIGRATION_COMPLETED] = "completed",
    [MIGRATION_FAILED] = "failed",
    [MIGRATION_CANCELLED] = "cancelled",
    [MIGRATION_AWAITING_RELEASE] = "awaiting-release",
};

/* A state added after the last one must be named here. */
_Static_assert(sizeof(state_names) / sizeof(state_names[0]) == MIGRATION_STATE_COUNT,
	       "every enum migration_state has a name");

const char *migration_state_name(enum migration_state s)
{
	return enum_name(ENUM_NAMES(state_names), (unsigned)s);
}

int migration_state_from_name(const char *name, enum migration_state *out)
{
	int i = enum_value(ENUM_NAMES(state_names), name);

	if (i < 0)
		return -EINVAL;
	*out = (enum migration_state)i;
	return 0;
}
