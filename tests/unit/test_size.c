/* SPDX-License-Identifier: Apache-2.0 */
/* test_size.c - parse_size() and parse_u64(). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>

#include "config.h"
#include "size.h"

#define K (UINT64_C(1) << 10)
#define M (UINT64_C(1) << 20)
#define G (UINT64_C(1) << 30)
#define T (UINT64_C(1) << 40)

struct good {
	const char *in;
	uint64_t want;
};

static void test_size_good(void **state)
{
	(void)state;
	static const struct good cases[] = {
		{"0", 0},
		{"4096", 4096},
		{"4K", 4 * K},
		{"4k", 4 * K},
		{"512M", 512 * M},
		{"512m", 512 * M},
		{"4G", 4 * G},
		{"1T", T},
		{"2GiB", 2 * G},
		{"2gib", 2 * G},
		{"3MB", 3 * M},
		{"3mb", 3 * M},
		{"64KiB", 64 * K},
		{"4096B", 4096},
		{"007", 7},          /* decimal, not octal */
		{"0x1000", 4096},    /* hex: plain bytes */
		{"0X10", 16},
		{"0x1B", 27},        /* hex takes no suffix: B is a digit */
		{"16777215T", 16777215 * T},
		{"18446744073709551615", UINT64_MAX},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rc = parse_size(cases[i].in, &v);
		if (rc != 0 || v != cases[i].want)
			fail_msg("parse_size(\"%s\") = %d, %llu; want 0, %llu", cases[i].in, rc,
				 (unsigned long long)v, (unsigned long long)cases[i].want);
	}
}

struct bad {
	const char *in;
	int want;
};

static void test_size_bad(void **state)
{
	(void)state;
	static const struct bad cases[] = {
		{"", -EINVAL},
		{"-1", -EINVAL},
		{"+1", -EINVAL},
		{"12Q", -EINVAL},
		{"G", -EINVAL},
		{"1.5G", -EINVAL},
		{"4G ", -EINVAL},
		{" 4G", -EINVAL},
		{"4 G", -EINVAL},
		{"4GB ", -EINVAL},
		{"4Gx", -EINVAL},
		{"4GiBB", -EINVAL},
		{"4iB", -EINVAL},
		{"4Bi", -EINVAL},
		{"4KK", -EINVAL},
		{"0x", -EINVAL},
		{"0x1G", -EINVAL},
		{"0x10K", -EINVAL},
		{"abc", -EINVAL},
		{"99999999999T", -ERANGE},
		{"16777216T", -ERANGE},
		{"18446744073709551616", -ERANGE},
		{"0x10000000000000000", -ERANGE},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 777;
		int rc = parse_size(cases[i].in, &v);
		if (rc != cases[i].want || v != 777)
			fail_msg("parse_size(\"%s\") = %d (value %llu); want %d, untouched",
				 cases[i].in, rc, (unsigned long long)v, cases[i].want);
	}
	uint64_t v;
	assert_int_equal(parse_size(NULL, &v), -EINVAL);
}

static void test_u64_good(void **state)
{
	(void)state;
	static const struct good cases[] = {
		{"0", 0},
		{"1", 1},
		{"4096", 4096},
		{"0x0", 0},
		{"0xff", 255},
		{"0XFF", 255},
		{"0xDeadBeef", 0xdeadbeef},
		{"0010", 10},
		{"18446744073709551615", UINT64_MAX},
		{"0xffffffffffffffff", UINT64_MAX},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rc = parse_u64(cases[i].in, &v);
		if (rc != 0 || v != cases[i].want)
			fail_msg("parse_u64(\"%s\") = %d, %llu; want 0, %llu", cases[i].in, rc,
				 (unsigned long long)v, (unsigned long long)cases[i].want);
	}
}

static void test_u64_bad(void **state)
{
	(void)state;
	static const struct bad cases[] = {
		{"", -EINVAL},
		{"-1", -EINVAL},
		{"+1", -EINVAL},
		{" 1", -EINVAL},
		{"1 ", -EINVAL},
		{"1K", -EINVAL}, /* no size suffixes */
		{"12abc", -EINVAL},
		{"0x", -EINVAL},
		{"0xg", -EINVAL},
		{"1.0", -EINVAL},
		{"18446744073709551616", -ERANGE},
		{"99999999999999999999999", -ERANGE},
		{"0x10000000000000000", -ERANGE},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 777;
		int rc = parse_u64(cases[i].in, &v);
		if (rc != cases[i].want || v != 777)
			fail_msg("parse_u64(\"%s\") = %d (value %llu); want %d, untouched",
				 cases[i].in, rc, (unsigned long long)v, cases[i].want);
	}
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(workload_kind_name(WORKLOAD_HELLO), "hello");
	assert_string_equal(workload_kind_name(WORKLOAD_IDLE), "idle");
	assert_string_equal(workload_kind_name(WORKLOAD_DIRTY), "dirty");
	assert_string_equal(mem_backend_name(MEM_BACKEND_ANON), "anonymous");
	assert_string_equal(mem_backend_name(MEM_BACKEND_MEMFD), "memfd");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_good), cmocka_unit_test(test_size_bad),
		cmocka_unit_test(test_u64_good),  cmocka_unit_test(test_u64_bad),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
