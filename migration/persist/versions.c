/* SPDX-License-Identifier: Apache-2.0 */
/*
 * versions.c - the versions of the formats this engine speaks, for `vmm
 * --version` (migration.h). Here because vmm_persist is the library that
 * sees both the wire's protocol.h and the snapshot's snap_format.h; the
 * front end sees neither.
 */
#include "migration.h"
#include "protocol.h"
#include "snap_format.h"

void migration_versions(struct migration_versions *v)
{
	v->protocol_major = MIG_VERSION_MAJOR;
	v->protocol_minor = MIG_VERSION_MINOR;
	v->snapshot_major = SNAP_VERSION_MAJOR;
	v->snapshot_minor = SNAP_VERSION_MINOR;
}
