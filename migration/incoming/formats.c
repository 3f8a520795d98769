/* SPDX-License-Identifier: Apache-2.0 */
/*
 * formats.c - the formats block of the target's CAPS (protocol 6.1): what
 * this build reads, from the state component table (state_versions.h),
 * said to a source whose hello is 6.1 or later. A 6.0 source (release
 * 0.3.0) gets 6.0's CAPS without it: its record table would refuse the
 * longer record, and it writes 0.3.0's form, which this build reads.
 */
#include "codec.h"
#include "incoming.h"
#include "state_versions.h"

uint32_t incoming_caps_formats(uint32_t peer_minor, uint8_t *out)
{
	struct mig_caps_formats f = {.protocol_minor = MIG_VERSION_MINOR};
	struct state_reads r;

	if (peer_minor < 1)
		return 0;
	state_reads_current(&r);
	f.framing_oldest = r.framing_oldest;
	f.framing_newest = r.framing_newest;
	for (uint32_t i = 0; i < STATE_COMP_COUNT; i++) {
		if (!r.newest[i])
			continue;
		f.comp[f.ncomp].id = i + 1;
		f.comp[f.ncomp].oldest = r.oldest[i];
		f.comp[f.ncomp].newest = r.newest[i];
		f.ncomp++;
	}
	return mig_caps_formats_encode(out, &f);
}
