/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proof.c - the decision keys and their proofs (proof.h). Ed25519 comes
 * from OpenSSL, which the wire links for TLS already. Private keys are
 * drawn with getrandom() here, not OpenSSL's generator, so that no thread
 * that signs needs more syscalls than it already has (seccomp); signing
 * Ed25519 is deterministic.
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "codec.h"
#include "proof.h"

static const char domain[] = "vmm decision proof 6";
#define MSG_LEN (sizeof(domain) - 1 + 4 + 8 + 4 + MIG_BIND_LEN)

static const char *const names[MIG_DECISIONS] = {"COMMIT", "RELEASE", "ABORT",
						 "RESUME", "RUN",     "DISCARD"};

const char *mig_decision_name(unsigned d)
{
	return d < MIG_DECISIONS ? names[d] : "?";
}

static void message(uint8_t out[MSG_LEN], unsigned d, uint64_t session, uint32_t attempt,
		    const uint8_t bind[MIG_BIND_LEN])
{
	size_t o = sizeof(domain) - 1;

	memcpy(out, domain, o);
	le_put32(out + o, d);
	le_put64(out + o + 4, session);
	le_put32(out + o + 12, attempt);
	memcpy(out + o + 16, bind, MIG_BIND_LEN);
}

static int fill_random(uint8_t *p, size_t len, char *err, size_t errlen)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(p + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;

			snprintf(err, errlen, "getrandom for the decision keys: %s", strerror(e));
			return -e;
		}
		got += (size_t)n;
	}
	return 0;
}

int mig_keys_set(struct mig_keys *k, unsigned d, const uint8_t priv[MIG_KEY_LEN])
{
	EVP_PKEY *p;
	size_t len = MIG_KEY_LEN;
	bool ok;

	if (d >= MIG_DECISIONS)
		return -EINVAL;
	p = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, priv, MIG_KEY_LEN);
	ok = p && EVP_PKEY_get_raw_public_key(p, k->pub[d], &len) == 1 && len == MIG_KEY_LEN;
	EVP_PKEY_free(p);
	if (!ok) {
		mig_keys_forget(k, d);
		return -EIO;
	}
	memmove(k->priv[d], priv, MIG_KEY_LEN);
	k->live[d] = true;
	if (k->ahead.d == d)
		k->ahead.set = false; /* made with the key this one replaces */
	return 0;
}

int mig_keys_new(struct mig_keys *k, unsigned first, unsigned n, char *err, size_t errlen)
{
	uint8_t priv[MIG_KEY_LEN];
	int ret = 0;

	memset(k, 0, sizeof(*k));
	if (first + n > MIG_DECISIONS)
		return -EINVAL;
	for (unsigned d = first; !ret && d < first + n; d++) {
		ret = fill_random(priv, sizeof(priv), err, errlen);
		if (!ret && mig_keys_set(k, d, priv)) {
			snprintf(err, errlen, "libcrypto: cannot make an Ed25519 key");
			ret = -EIO;
		}
	}
	OPENSSL_cleanse(priv, sizeof(priv));
	if (ret)
		mig_keys_wipe(k);
	return ret;
}

void mig_keys_forget(struct mig_keys *k, unsigned d)
{
	if (d >= MIG_DECISIONS)
		return;
	OPENSSL_cleanse(k->priv[d], MIG_KEY_LEN);
	k->live[d] = false;
	/* A proof made ahead is as good as the key, for its one message. */
	if (k->ahead.set && k->ahead.d == d) {
		OPENSSL_cleanse(&k->ahead, sizeof(k->ahead));
		k->ahead.set = false;
	}
}

void mig_keys_wipe(struct mig_keys *k)
{
	for (unsigned d = 0; d < MIG_DECISIONS; d++)
		mig_keys_forget(k, d);
}

int mig_proof_sign(const struct mig_keys *k, unsigned d, uint64_t session, uint32_t attempt,
		   const uint8_t bind[MIG_BIND_LEN], uint8_t sig[MIG_SIG_LEN], char *err,
		   size_t errlen)
{
	uint8_t msg[MSG_LEN];
	EVP_PKEY *p = NULL;
	EVP_MD_CTX *c = NULL;
	size_t len = MIG_SIG_LEN;
	int ok = 0;

	if (d >= MIG_DECISIONS || !k->live[d]) {
		snprintf(err, errlen,
			 "%s cannot be proven: this side decided otherwise and forgot its key",
			 mig_decision_name(d));
		return -EPERM;
	}
	if (k->ahead.set && k->ahead.d == d && k->ahead.session == session &&
	    k->ahead.attempt == attempt && !memcmp(k->ahead.bind, bind, MIG_BIND_LEN)) {
		memcpy(sig, k->ahead.sig, MIG_SIG_LEN);
		return 0;
	}
	message(msg, d, session, attempt, bind);
	p = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, k->priv[d], MIG_KEY_LEN);
	c = p ? EVP_MD_CTX_new() : NULL;
	ok = c && EVP_DigestSignInit(c, NULL, NULL, NULL, p) == 1 &&
	     EVP_DigestSign(c, sig, &len, msg, sizeof(msg)) == 1 && len == MIG_SIG_LEN;
	EVP_MD_CTX_free(c);
	EVP_PKEY_free(p);
	if (!ok) {
		snprintf(err, errlen, "libcrypto: cannot sign the %s proof", mig_decision_name(d));
		return -EIO;
	}
	return 0;
}

int mig_proof_presign(struct mig_keys *k, unsigned d, uint64_t session, uint32_t attempt,
		      const uint8_t bind[MIG_BIND_LEN], char *err, size_t errlen)
{
	uint8_t sig[MIG_SIG_LEN];
	int ret;

	k->ahead.set = false; /* signed afresh, not handed back */
	ret = mig_proof_sign(k, d, session, attempt, bind, sig, err, errlen);
	if (ret)
		return ret;
	k->ahead.d = d;
	k->ahead.session = session;
	k->ahead.attempt = attempt;
	memcpy(k->ahead.bind, bind, MIG_BIND_LEN);
	memcpy(k->ahead.sig, sig, MIG_SIG_LEN);
	OPENSSL_cleanse(sig, sizeof(sig));
	k->ahead.set = true;
	return 0;
}

int mig_proof_warm(char *err, size_t errlen)
{
	static const uint8_t bind[MIG_BIND_LEN];
	uint8_t sig[MIG_SIG_LEN];
	struct mig_keys k;
	int ret = mig_keys_new(&k, MIG_DECIDE_RUN, 1, err, errlen);

	if (!ret)
		ret = mig_proof_sign(&k, MIG_DECIDE_RUN, 0, 0, bind, sig, err, errlen);
	if (!ret && !mig_proof_verify(k.pub[MIG_DECIDE_RUN], MIG_DECIDE_RUN, 0, 0, bind, sig,
				      MIG_SIG_LEN)) {
		snprintf(err, errlen, "libcrypto: an Ed25519 proof of our own does not verify");
		ret = -EIO;
	}
	mig_keys_wipe(&k);
	return ret;
}

bool mig_proof_verify(const uint8_t pub[MIG_KEY_LEN], unsigned d, uint64_t session,
		      uint32_t attempt, const uint8_t bind[MIG_BIND_LEN], const void *sig,
		      uint32_t len)
{
	static const uint8_t zero[MIG_KEY_LEN];
	uint8_t msg[MSG_LEN];
	EVP_PKEY *p;
	EVP_MD_CTX *c;
	bool ok;

	/* An all-zero key is no commitment (never set): nothing matches it. */
	if (len != MIG_SIG_LEN || d >= MIG_DECISIONS || !CRYPTO_memcmp(pub, zero, MIG_KEY_LEN))
		return false;
	message(msg, d, session, attempt, bind);
	p = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, MIG_KEY_LEN);
	c = p ? EVP_MD_CTX_new() : NULL;
	ok = c && EVP_DigestVerifyInit(c, NULL, NULL, NULL, p) == 1 &&
	     EVP_DigestVerify(c, sig, MIG_SIG_LEN, msg, sizeof(msg)) == 1;
	EVP_MD_CTX_free(c);
	EVP_PKEY_free(p);
	return ok;
}
