/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_proof.c - the commit proof (migration/wire/proof.h): the hash is the
 * one docs/migration-protocol.md defines (a known answer computed outside
 * the code), and only the secret behind VM_DESC's hash, for this session,
 * in a payload of exactly 32 bytes, passes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proof.h"

#define SESSION 0x1122334455667788ull

/* SHA-256("vmm commit proof 1" || 88 77 66 55 44 33 22 11 || 00 01 .. 1f), by Python's hashlib. */
static const char kat[] = "c32431b08967927295648cdb17c5f7821d2b4bd5c30105eee206568a4874195f";

static void test_known_answer(void **state)
{
	uint8_t secret[MIG_PROOF_LEN], hash[MIG_PROOF_LEN];
	char hex[2 * MIG_PROOF_LEN + 1];

	(void)state;
	for (unsigned i = 0; i < MIG_PROOF_LEN; i++)
		secret[i] = (uint8_t)i;
	mig_proof_hash(secret, SESSION, hash);
	for (unsigned i = 0; i < MIG_PROOF_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", hash[i]);
	assert_string_equal(hex, kat);
	assert_true(mig_proof_check(hash, SESSION, secret, MIG_PROOF_LEN));
}

static void test_only_the_secret_passes(void **state)
{
	struct mig_proof p, q;
	uint8_t bad[MIG_PROOF_LEN + 1];
	static const uint8_t zero[MIG_PROOF_LEN];
	char err[128];

	(void)state;
	assert_int_equal(mig_proof_new(&p, SESSION, err, sizeof(err)), 0);
	assert_int_equal(mig_proof_new(&q, SESSION, err, sizeof(err)), 0);
	assert_memory_not_equal(p.secret, q.secret, MIG_PROOF_LEN); /* drawn, not fixed */
	assert_true(mig_proof_check(p.hash, SESSION, p.secret, MIG_PROOF_LEN));
	/* Another migration's secret, this one's for another session, the hash itself. */
	assert_false(mig_proof_check(p.hash, SESSION, q.secret, MIG_PROOF_LEN));
	assert_false(mig_proof_check(p.hash, SESSION + 1, p.secret, MIG_PROOF_LEN));
	assert_false(mig_proof_check(p.hash, SESSION, p.hash, MIG_PROOF_LEN));
	/* Any flipped bit. */
	for (unsigned bit = 0; bit < 8 * MIG_PROOF_LEN; bit++) {
		memcpy(bad, p.secret, MIG_PROOF_LEN);
		bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_false(mig_proof_check(p.hash, SESSION, bad, MIG_PROOF_LEN));
	}
	/* The old empty COMMIT, a short or long payload. */
	memcpy(bad, p.secret, MIG_PROOF_LEN);
	bad[MIG_PROOF_LEN] = 0;
	assert_false(mig_proof_check(p.hash, SESSION, bad, 0));
	assert_false(mig_proof_check(p.hash, SESSION, bad, MIG_PROOF_LEN - 1));
	assert_false(mig_proof_check(p.hash, SESSION, bad, MIG_PROOF_LEN + 1));
	/* A VM_DESC without a commitment (all zero) accepts nothing. */
	assert_false(mig_proof_check(zero, SESSION, p.secret, MIG_PROOF_LEN));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_known_answer),
	    cmocka_unit_test(test_only_the_secret_passes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
