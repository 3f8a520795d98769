/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proof.h - the decision proofs (docs/migration-protocol.md, "Decision
 * proofs" and "Threat model"): what makes a COMMIT, a RELEASE, an ABORT, a
 * resumed session or an operator's decision something only the side that
 * took that decision can send, on that connection, once decided.
 *
 * Each decision has its own Ed25519 key, drawn per migration. The source's
 * four public keys (COMMIT, RELEASE, ABORT, RESUME) travel in VM_DESC, the
 * target's two (RUN, DISCARD: its operator's `--decide`) in PREPARED. A
 * proof is the decision key's signature over
 *   "vmm decision proof 6" (20 bytes) || decision (u32) || session (u64)
 *   || attempt (u32) || binding (32 bytes)
 * (integers little endian): the attempt is a resumed session's number (0
 * otherwise), the binding the connection's TLS exporter (32 zero bytes
 * without TLS). Nothing secret ever crosses the wire: a proof read off
 * one decision proves nothing else, a resume proof only its own attempt,
 * and under TLS nothing outside its own TLS session. A side that took the
 * other way forgets the key of the decision it will never take
 * (mig_keys_forget), so it cannot prove it later, whatever asks.
 *
 * Pure functions but for mig_keys_new()'s getrandom(); a struct mig_keys
 * is its owner's (no lock inside); any thread.
 */
#ifndef VMM_MIGRATION_PROOF_H
#define VMM_MIGRATION_PROOF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

/* The decisions, as signed (the u32 after the domain). */
enum mig_decision {
	MIG_DECIDE_COMMIT = 0,	/* source: the VM runs on the target */
	MIG_DECIDE_RELEASE = 1, /* source: it lets go, never asks again */
	MIG_DECIDE_ABORT = 2,	/* source: the VM runs on the source */
	MIG_DECIDE_RESUME = 3,	/* source: a resumed session (attempt k) */
	MIG_DECIDE_RUN = 4,	/* target's operator: the VM runs on the target */
	MIG_DECIDE_DISCARD = 5, /* target's operator: the target discarded its copy */
	MIG_DECISIONS = 6,
};
#define MIG_SOURCE_DECISIONS 4u /* COMMIT..RESUME: VM_DESC's keys */

/* A side's decision keys: private halves while they may still be used. */
struct mig_keys {
	uint8_t priv[MIG_DECISIONS][MIG_KEY_LEN];
	uint8_t pub[MIG_DECISIONS][MIG_KEY_LEN];
	bool live[MIG_DECISIONS]; /* may still sign */
	/*
	 * One proof made ahead of its need (mig_proof_presign) and what it
	 * was made for; mig_proof_sign() hands it out for exactly that, and
	 * forgetting its key wipes it. Ed25519 is deterministic: it is the
	 * very signature a later call would make.
	 */
	struct {
		bool set;
		unsigned d;
		uint64_t session;
		uint32_t attempt;
		uint8_t bind[MIG_BIND_LEN];
		uint8_t sig[MIG_SIG_LEN];
	} ahead;
};

/* The decision's name, for messages ("COMMIT", ...). */
const char *mig_decision_name(unsigned d);
/*
 * New keys for decisions first..first+n-1 (the others stay dead). -errno
 * (getrandom, or libcrypto failing) with err set.
 */
int mig_keys_new(struct mig_keys *k, unsigned first, unsigned n, char *err, size_t errlen);
/*
 * Decision d's key from the 32 private bytes priv (mig_keys_new draws
 * them; the fuzz seeds and unit tests give fixed ones). 0 or -EIO.
 */
int mig_keys_set(struct mig_keys *k, unsigned d, const uint8_t priv[MIG_KEY_LEN]);
/* The decision's private key is wiped: it can never be proven from now on. */
void mig_keys_forget(struct mig_keys *k, unsigned d);
/* Wipes every private key (the owner is done with them). */
void mig_keys_wipe(struct mig_keys *k);
/*
 * The proof of decision d: sig = MIG_SIG_LEN bytes. -EPERM (err says the
 * decision was overridden) when its key was forgotten, -EIO on a libcrypto
 * failure.
 */
int mig_proof_sign(const struct mig_keys *k, unsigned d, uint64_t session, uint32_t attempt,
		   const uint8_t bind[MIG_BIND_LEN], uint8_t sig[MIG_SIG_LEN], char *err,
		   size_t errlen);
/*
 * Makes decision d's proof for this session, attempt and binding now, so
 * that the mig_proof_sign() that needs it later (in a blackout) only
 * copies it. Replaces any earlier one. Errors as mig_proof_sign's.
 */
int mig_proof_presign(struct mig_keys *k, unsigned d, uint64_t session, uint32_t attempt,
		      const uint8_t bind[MIG_BIND_LEN], char *err, size_t errlen);
/*
 * Loads what signing and verifying need (libcrypto's Ed25519 and its
 * signature method: a fresh process's first verification costs several
 * times a later one) and checks it: a throwaway key signs one proof and
 * verifies it. For a side whose first verification falls in a blackout.
 * 0, or -EIO with err set when libcrypto cannot.
 */
int mig_proof_warm(char *err, size_t errlen);
/*
 * Whether sig (len bytes) proves decision d for this session, attempt and
 * binding under the public key pub. False for any other length, and for an
 * all-zero key (no commitment).
 */
bool mig_proof_verify(const uint8_t pub[MIG_KEY_LEN], unsigned d, uint64_t session,
		      uint32_t attempt, const uint8_t bind[MIG_BIND_LEN], const void *sig,
		      uint32_t len);

#endif /* VMM_MIGRATION_PROOF_H */
