/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proof.h - the commit proof (docs/migration-protocol.md, "Threat model"):
 * what makes a COMMIT, a RELEASE or a resumed session something only this
 * migration's source can send.
 *
 * The source draws a 32-byte secret per migration and sends only its hash
 * in VM_DESC: SHA-256("vmm commit proof 1" || session id, 8 bytes little
 * endian || secret). The secret itself crosses the wire first inside the
 * source's COMMIT, which it sends only once it has decided that the VM runs
 * on the target; every later COMMIT, RELEASE and the first record of a
 * resumed session carry it again. A source that aborts never sends it, so a
 * party that read every byte before the decision (the session id travels in
 * clear without TLS) still cannot make the target run the VM.
 *
 * Pure functions but for mig_proof_new()'s getrandom(); any thread.
 */
#ifndef VMM_MIGRATION_PROOF_H
#define VMM_MIGRATION_PROOF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

struct mig_proof {
	uint8_t secret[MIG_PROOF_LEN]; /* the source's alone until COMMIT */
	uint8_t hash[MIG_PROOF_LEN];   /* VM_DESC's commit_hash */
};

/* A new secret for `session` and its hash. -errno (getrandom) with err set. */
int mig_proof_new(struct mig_proof *p, uint64_t session, char *err, size_t errlen);
/* The hash of `secret` for `session`, as VM_DESC carries it. */
void mig_proof_hash(const uint8_t secret[MIG_PROOF_LEN], uint64_t session,
		    uint8_t hash[MIG_PROOF_LEN]);
/*
 * Whether a COMMIT or RELEASE payload of len bytes reveals the secret whose
 * hash is `hash` (constant time in the payload's bytes).
 */
bool mig_proof_check(const uint8_t hash[MIG_PROOF_LEN], uint64_t session, const void *payload,
		     uint32_t len);

#endif /* VMM_MIGRATION_PROOF_H */
