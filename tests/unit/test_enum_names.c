/* SPDX-License-Identifier: Apache-2.0 */
/* test_enum_names.c - an enum's words both ways, and the "a, b or c" list (enum_names.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "enum_names.h"

enum colour { RED, GREEN, BLUE = 3 };
static const char *const colours[] = {[RED] = "red", [GREEN] = "green", [BLUE] = "blue"};

static void test_both_ways(void **state)
{
	struct enum_names t = ENUM_NAMES(colours);

	(void)state;
	assert_int_equal(t.count, 4);
	assert_string_equal(enum_name(t, RED), "red");
	assert_string_equal(enum_name(t, BLUE), "blue");
	assert_string_equal(enum_name(t, 2), "unknown"); /* a hole */
	assert_string_equal(enum_name(t, 4), "unknown"); /* past the end */
	assert_int_equal(enum_value(t, "green"), GREEN);
	assert_int_equal(enum_value(t, "blue"), BLUE);
	assert_int_equal(enum_value(t, "Blue"), -1);
	assert_int_equal(enum_value(t, ""), -1);
	assert_int_equal(enum_value(t, NULL), -1);
}

static void test_list(void **state)
{
	static const char *const one[] = {"only"};
	static const char *const two[] = {"on", "off"};
	struct enum_names t = ENUM_NAMES(colours);
	char buf[64];

	(void)state;
	assert_string_equal(enum_list(t, buf, sizeof(buf)), "red, green or blue");
	assert_string_equal(enum_list(ENUM_NAMES(one), buf, sizeof(buf)), "only");
	assert_string_equal(enum_list(ENUM_NAMES(two), buf, sizeof(buf)), "on or off");
	/* truncated, still terminated */
	assert_string_equal(enum_list(t, buf, 6), "red, ");
	assert_string_equal(enum_list(t, buf, 1), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_both_ways),
	    cmocka_unit_test(test_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
