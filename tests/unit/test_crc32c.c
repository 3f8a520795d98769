/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_crc32c.c - CRC-32C (vmm/util/crc32c.h): the published check value,
 * RFC 3720's test vectors, continuation, and the table against a bit-by-bit
 * computation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "crc32c.h"

/* Bit by bit, straight from the definition. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t len)
{
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return ~crc;
}

static void test_known_answers(void **state)
{
	uint8_t b[32];

	(void)state;
	assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(crc32c(0, NULL, 0), 0);
	assert_int_equal(crc32c(0, "a", 1), 0xc1d04330u);
	/* RFC 3720, B.4: 32 bytes of zeros, of ones, ascending, descending. */
	memset(b, 0, sizeof(b));
	assert_int_equal(crc32c(0, b, sizeof(b)), 0x8a9136aau);
	memset(b, 0xff, sizeof(b));
	assert_int_equal(crc32c(0, b, sizeof(b)), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	assert_int_equal(crc32c(0, b, sizeof(b)), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	assert_int_equal(crc32c(0, b, sizeof(b)), 0x113fdb5cu);
}

/* Whichever path this host takes, at every alignment and length around a word. */
static void test_alignments(void **state)
{
	static uint8_t b[4096 + 80];
	uint32_t x = 1;

	(void)state;
	for (size_t i = 0; i < sizeof(b); i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
	for (size_t at = 0; at < 16; at++)
		for (size_t len = 0; len < 64; len++)
			assert_int_equal(crc32c(0, b + at, len), crc32c_bitwise(b + at, len));
	assert_int_equal(crc32c(0, b + 3, 4096), crc32c_bitwise(b + 3, 4096));
}

static void test_continue(void **state)
{
	static const char s[] = "the quick brown fox jumps over the lazy dog";
	size_t n = sizeof(s) - 1;

	(void)state;
	for (size_t cut = 0; cut <= n; cut++)
		assert_int_equal(crc32c(crc32c(0, s, cut), s + cut, n - cut), crc32c(0, s, n));
}

static void test_table(void **state)
{
	uint8_t b[300];

	(void)state;
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 131 + 7);
	for (size_t n = 0; n <= sizeof(b); n += 1)
		assert_int_equal(crc32c(0, b, n), crc32c_bitwise(b, n));
	for (int v = 0; v < 256; v++) {
		uint8_t one = (uint8_t)v;

		assert_int_equal(crc32c(0, &one, 1), crc32c_bitwise(&one, 1));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_known_answers),
	    cmocka_unit_test(test_alignments),
	    cmocka_unit_test(test_continue),
	    cmocka_unit_test(test_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
