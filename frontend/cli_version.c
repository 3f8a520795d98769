/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_version.c - `vmm --version`: the release, then the versions of every
 * format it speaks, from what the code itself uses (the protocol's and the
 * snapshot header's numbers, migration_versions(); the state component
 * table), so that an operator of a mixed fleet can tell which pairs work
 * (docs/compatibility.md; lint.compat_table compares that page's table with
 * this output).
 */
#include <stdio.h>

#include "cli.h"
#include "migration.h"
#include "state_versions.h"

int cli_version(void)
{
	struct migration_versions v;

	migration_versions(&v);
	printf("vmm %s\n", VMM_VERSION);
	printf("protocol %u.%u (any %u.x peer)\n", v.protocol_major, v.protocol_minor,
	       v.protocol_major);
	printf("snapshot-format %u.%u\n", v.snapshot_major, v.snapshot_minor);
	printf("state-framing %u (reads %u..%u)\n", STATE_FRAMING_NEWEST, STATE_FRAMING_OLDEST,
	       STATE_FRAMING_NEWEST);
	for (size_t i = 0; i < STATE_COMP_COUNT; i++)
		printf("state %s %u (reads %u..%u, writes %u..%u)\n", state_comps[i].name,
		       state_comps[i].newest, state_comps[i].oldest_read, state_comps[i].newest,
		       state_comps[i].oldest_write, state_comps[i].newest);
	printf("releases");
	for (size_t i = 0; i < state_nreleases; i++)
		printf(" %s", state_releases[i]);
	printf("\n");
	return 0;
}
