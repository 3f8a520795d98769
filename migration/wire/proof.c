/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proof.c - the commit proof's secret and hash (proof.h). SHA-256 comes
 * from OpenSSL, which the wire links for TLS already.
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "codec.h"
#include "proof.h"

static const char domain[] = "vmm commit proof 1";

void mig_proof_hash(const uint8_t secret[MIG_PROOF_LEN], uint64_t session,
		    uint8_t hash[MIG_PROOF_LEN])
{
	uint8_t in[sizeof(domain) - 1 + 8 + MIG_PROOF_LEN];
	unsigned int n = 0;

	memcpy(in, domain, sizeof(domain) - 1);
	le_put64(in + sizeof(domain) - 1, session);
	memcpy(in + sizeof(domain) - 1 + 8, secret, MIG_PROOF_LEN);
	/* SHA-256 of a fixed-size buffer cannot fail short of a broken libcrypto. */
	if (!EVP_Digest(in, sizeof(in), hash, &n, EVP_sha256(), NULL) || n != MIG_PROOF_LEN)
		memset(hash, 0, MIG_PROOF_LEN);
}

int mig_proof_new(struct mig_proof *p, uint64_t session, char *err, size_t errlen)
{
	size_t got = 0;

	while (got < sizeof(p->secret)) {
		ssize_t n = getrandom(p->secret + got, sizeof(p->secret) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;

			snprintf(err, errlen, "getrandom for the commit secret: %s", strerror(e));
			return -e;
		}
		got += (size_t)n;
	}
	mig_proof_hash(p->secret, session, p->hash);
	return 0;
}

bool mig_proof_check(const uint8_t hash[MIG_PROOF_LEN], uint64_t session, const void *payload,
		     uint32_t len)
{
	static const uint8_t zero[MIG_PROOF_LEN];
	uint8_t h[MIG_PROOF_LEN];

	/* An all-zero hash is no commitment (a failed digest): nothing matches it. */
	if (len != MIG_PROOF_LEN || !CRYPTO_memcmp(hash, zero, MIG_PROOF_LEN))
		return false;
	mig_proof_hash(payload, session, h);
	return !CRYPTO_memcmp(h, hash, MIG_PROOF_LEN);
}
