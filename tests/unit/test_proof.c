/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_proof.c - the decision proofs (migration/wire/proof.h): the signed
 * message is the one docs/migration-protocol.md defines (a known answer
 * computed outside the code, with the openssl command line), and a proof
 * proves only its own decision, session, attempt and binding; a forgotten
 * decision can never be proven again, not even by a proof made ahead.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proof.h"

#define SESSION 0x1122334455667788ull

static void unhex(const char *hex, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

/*
 * Private key 00 01 .. 1f as RELEASE's; the message "vmm decision proof 6"
 * || 01 00 00 00 || 88 77 66 55 44 33 22 11 || 07 00 00 00 || 32 x aa, signed
 * by `openssl pkeyutl -sign -rawin` (Ed25519 is deterministic).
 */
static const char kat_pub[] = "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8";
static const char kat_sig[] = "c656bf0cd390826ab8dc0131367df319451113fc78aeab585887d3dbbbcb95d4"
			      "0cc73acf306afc882b951cbadf5a9ee41a6473d0c56ca489324bf52b10d36107";

static void test_known_answer(void **state)
{
	struct mig_keys k = {0};
	uint8_t priv[MIG_KEY_LEN], bind[MIG_BIND_LEN], pub[MIG_KEY_LEN], want[MIG_SIG_LEN],
	    sig[MIG_SIG_LEN];
	char err[128];

	(void)state;
	for (unsigned i = 0; i < MIG_KEY_LEN; i++)
		priv[i] = (uint8_t)i;
	memset(bind, 0xaa, sizeof(bind));
	unhex(kat_pub, pub, sizeof(pub));
	unhex(kat_sig, want, sizeof(want));
	assert_int_equal(mig_keys_set(&k, MIG_DECIDE_RELEASE, priv), 0);
	assert_memory_equal(k.pub[MIG_DECIDE_RELEASE], pub, MIG_KEY_LEN);
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_RELEASE, SESSION, 7, bind, sig, err, sizeof(err)), 0);
	assert_memory_equal(sig, want, MIG_SIG_LEN);
	assert_true(mig_proof_verify(pub, MIG_DECIDE_RELEASE, SESSION, 7, bind, want, MIG_SIG_LEN));
}

/* A proof read off one decision proves nothing else: finding 1 of issue 36. */
static void test_one_decision_each(void **state)
{
	static const uint8_t zero[MIG_KEY_LEN], plain[MIG_BIND_LEN];
	struct mig_keys k;
	uint8_t sig[MIG_SIG_LEN], bad[MIG_SIG_LEN], other[MIG_BIND_LEN];
	char err[128];

	(void)state;
	memset(other, 0x5a, sizeof(other));
	assert_int_equal(
	    mig_keys_new(&k, MIG_DECIDE_COMMIT, MIG_SOURCE_DECISIONS, err, sizeof(err)), 0);
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_COMMIT, SESSION, 0, plain, sig, err, sizeof(err)), 0);
	assert_true(mig_proof_verify(k.pub[MIG_DECIDE_COMMIT], MIG_DECIDE_COMMIT, SESSION, 0, plain,
				     sig, MIG_SIG_LEN));
	/* COMMIT's proof is no RELEASE, no ABORT, no RESUME: not under their keys, nor its own. */
	for (unsigned d = MIG_DECIDE_RELEASE; d < MIG_SOURCE_DECISIONS; d++) {
		assert_false(mig_proof_verify(k.pub[d], d, SESSION, 0, plain, sig, MIG_SIG_LEN));
		assert_false(mig_proof_verify(k.pub[MIG_DECIDE_COMMIT], d, SESSION, 0, plain, sig,
					      MIG_SIG_LEN));
	}
	/* Another session, attempt or TLS session: refused. */
	assert_false(mig_proof_verify(k.pub[MIG_DECIDE_COMMIT], MIG_DECIDE_COMMIT, SESSION + 1, 0,
				      plain, sig, MIG_SIG_LEN));
	assert_false(mig_proof_verify(k.pub[MIG_DECIDE_COMMIT], MIG_DECIDE_COMMIT, SESSION, 1,
				      plain, sig, MIG_SIG_LEN));
	assert_false(mig_proof_verify(k.pub[MIG_DECIDE_COMMIT], MIG_DECIDE_COMMIT, SESSION, 0,
				      other, sig, MIG_SIG_LEN));
	/* Any flipped bit, any other length, the all-zero key. */
	for (unsigned i = 0; i < MIG_SIG_LEN * 8; i += 7) {
		memcpy(bad, sig, sizeof(bad));
		bad[i / 8] ^= (uint8_t)(1u << (i % 8));
		assert_false(mig_proof_verify(k.pub[MIG_DECIDE_COMMIT], MIG_DECIDE_COMMIT, SESSION,
					      0, plain, bad, MIG_SIG_LEN));
	}
	assert_false(mig_proof_verify(k.pub[MIG_DECIDE_COMMIT], MIG_DECIDE_COMMIT, SESSION, 0,
				      plain, sig, MIG_SIG_LEN - 1));
	assert_false(mig_proof_verify(k.pub[MIG_DECIDE_COMMIT], MIG_DECIDE_COMMIT, SESSION, 0,
				      plain, sig, 0));
	assert_false(
	    mig_proof_verify(zero, MIG_DECIDE_COMMIT, SESSION, 0, plain, sig, MIG_SIG_LEN));
	mig_keys_wipe(&k);
}

/* Each resume attempt has its own proof (one key, the attempt signed). */
static void test_resume_attempts(void **state)
{
	static const uint8_t plain[MIG_BIND_LEN];
	struct mig_keys k;
	uint8_t sig[MIG_SIG_LEN];
	char err[128];

	(void)state;
	assert_int_equal(
	    mig_keys_new(&k, MIG_DECIDE_COMMIT, MIG_SOURCE_DECISIONS, err, sizeof(err)), 0);
	for (uint32_t a = 1; a < 70000; a += 9999) {
		assert_int_equal(
		    mig_proof_sign(&k, MIG_DECIDE_RESUME, SESSION, a, plain, sig, err, sizeof(err)),
		    0);
		assert_true(mig_proof_verify(k.pub[MIG_DECIDE_RESUME], MIG_DECIDE_RESUME, SESSION,
					     a, plain, sig, MIG_SIG_LEN));
		assert_false(mig_proof_verify(k.pub[MIG_DECIDE_RESUME], MIG_DECIDE_RESUME, SESSION,
					      a + 1, plain, sig, MIG_SIG_LEN));
	}
	mig_keys_wipe(&k);
}

/* An overridden decision can never be proven: its key is gone. */
static void test_forget(void **state)
{
	static const uint8_t plain[MIG_BIND_LEN];
	struct mig_keys k, q;
	uint8_t sig[MIG_SIG_LEN];
	char err[128];

	(void)state;
	assert_int_equal(
	    mig_keys_new(&k, MIG_DECIDE_COMMIT, MIG_SOURCE_DECISIONS, err, sizeof(err)), 0);
	assert_int_equal(
	    mig_keys_new(&q, MIG_DECIDE_COMMIT, MIG_SOURCE_DECISIONS, err, sizeof(err)), 0);
	assert_memory_not_equal(k.pub, q.pub, sizeof(k.pub));
	mig_keys_forget(&k, MIG_DECIDE_RELEASE);
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_RELEASE, SESSION, 0, plain, sig, err, sizeof(err)),
	    -EPERM);
	assert_non_null(strstr(err, "RELEASE cannot be proven"));
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_ABORT, SESSION, 0, plain, sig, err, sizeof(err)), 0);
	/* The target's decisions were never drawn here: not provable either. */
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_RUN, SESSION, 0, plain, sig, err, sizeof(err)), -EPERM);
	mig_keys_wipe(&k);
	for (unsigned d = 0; d < MIG_DECISIONS; d++)
		assert_false(k.live[d]);
	mig_keys_wipe(&q);
}

/*
 * A proof made ahead (before the pause) is the one signing would make, for
 * its own message only, and goes with its key.
 */
static void test_presign(void **state)
{
	static const uint8_t plain[MIG_BIND_LEN];
	struct mig_keys k;
	uint8_t first[MIG_SIG_LEN], sig[MIG_SIG_LEN], other[MIG_BIND_LEN], old[MIG_SIG_LEN];
	char err[128];

	(void)state;
	memset(other, 0x5a, sizeof(other));
	assert_int_equal(
	    mig_keys_new(&k, MIG_DECIDE_COMMIT, MIG_SOURCE_DECISIONS, err, sizeof(err)), 0);
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_COMMIT, SESSION, 0, plain, first, err, sizeof(err)), 0);
	assert_int_equal(
	    mig_proof_presign(&k, MIG_DECIDE_COMMIT, SESSION, 0, plain, err, sizeof(err)), 0);
	assert_true(k.ahead.set);
	assert_memory_equal(k.ahead.sig, first, MIG_SIG_LEN);
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_COMMIT, SESSION, 0, plain, sig, err, sizeof(err)), 0);
	assert_memory_equal(sig, first, MIG_SIG_LEN);
	/* Another connection, session or decision: signed for itself, and it verifies. */
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_COMMIT, SESSION, 0, other, sig, err, sizeof(err)), 0);
	assert_memory_not_equal(sig, first, MIG_SIG_LEN);
	assert_true(mig_proof_verify(k.pub[MIG_DECIDE_COMMIT], MIG_DECIDE_COMMIT, SESSION, 0, other,
				     sig, MIG_SIG_LEN));
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_RELEASE, SESSION, 0, plain, sig, err, sizeof(err)), 0);
	assert_true(mig_proof_verify(k.pub[MIG_DECIDE_RELEASE], MIG_DECIDE_RELEASE, SESSION, 0,
				     plain, sig, MIG_SIG_LEN));
	/* Forgetting another decision keeps it; forgetting COMMIT wipes it with the key. */
	mig_keys_forget(&k, MIG_DECIDE_ABORT);
	assert_true(k.ahead.set);
	mig_keys_forget(&k, MIG_DECIDE_COMMIT);
	assert_false(k.ahead.set);
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_COMMIT, SESSION, 0, plain, sig, err, sizeof(err)),
	    -EPERM);
	for (unsigned i = 0; i < MIG_SIG_LEN; i++)
		assert_int_equal(k.ahead.sig[i], 0);
	/* A forgotten decision cannot be made ahead either. */
	assert_int_equal(
	    mig_proof_presign(&k, MIG_DECIDE_COMMIT, SESSION, 0, plain, err, sizeof(err)), -EPERM);
	/* A key set anew voids what its predecessor made ahead. */
	assert_int_equal(
	    mig_proof_presign(&k, MIG_DECIDE_RESUME, SESSION, 3, plain, err, sizeof(err)), 0);
	memcpy(old, k.ahead.sig, sizeof(old));
	assert_int_equal(mig_keys_set(&k, MIG_DECIDE_RESUME, first), 0);
	assert_int_equal(
	    mig_proof_sign(&k, MIG_DECIDE_RESUME, SESSION, 3, plain, sig, err, sizeof(err)), 0);
	assert_memory_not_equal(sig, old, MIG_SIG_LEN);
	assert_true(mig_proof_verify(k.pub[MIG_DECIDE_RESUME], MIG_DECIDE_RESUME, SESSION, 3, plain,
				     sig, MIG_SIG_LEN));
	mig_keys_wipe(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_known_answer),    cmocka_unit_test(test_one_decision_each),
	    cmocka_unit_test(test_resume_attempts), cmocka_unit_test(test_forget),
	    cmocka_unit_test(test_presign),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
