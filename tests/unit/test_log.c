/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log.c - `vmm run`'s log records (frontend/log.h): the time,
 * the text and JSON forms, the escaping that keeps a record on one line,
 * cutting, level filtering and whole lines from many threads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define NS_PER_S UINT64_C(1000000000)
/* 2026-12-01T23:40:00Z */
#define T_2026 (UINT64_C(1796168400) * NS_PER_S)

static char rec[LOG_RECORD_MAX];

/* The record parsed as JSON; asserts it is one object on one line. */
static cJSON *parse_line(const char *line)
{
	size_t n = strlen(line);
	cJSON *o;

	assert_true(n > 0);
	assert_int_equal(line[n - 1], '\n');
	assert_null(memchr(line, '\n', n - 1));
	o = cJSON_Parse(line);
	if (!o)
		fail_msg("not JSON: %s", line);
	assert_true(cJSON_IsObject(o));
	return o;
}

static const char *str_member(const cJSON *o, const char *name)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(m) ? m->valuestring : NULL;
}

static void test_time(void **state)
{
	char ts[32];

	(void)state;
	log_format_time(ts, sizeof(ts), 0);
	assert_string_equal(ts, "1970-01-01T00:00:00.000Z");
	log_format_time(ts, sizeof(ts), T_2026 + 123456789);
	assert_string_equal(ts, "2026-12-01T23:40:00.123Z");
	/* a leap day, the day after, and a century that is not a leap year */
	log_format_time(ts, sizeof(ts), UINT64_C(1709208000) * NS_PER_S + 999999999);
	assert_string_equal(ts, "2024-02-29T12:00:00.999Z");
	log_format_time(ts, sizeof(ts), (UINT64_C(1709208000) + 43200) * NS_PER_S);
	assert_string_equal(ts, "2024-03-01T00:00:00.000Z");
	log_format_time(ts, sizeof(ts), (UINT64_C(4107542400) - 1) * NS_PER_S);
	assert_string_equal(ts, "2100-02-28T23:59:59.000Z");
	log_format_time(ts, sizeof(ts), UINT64_C(4107542400) * NS_PER_S);
	assert_string_equal(ts, "2100-03-01T00:00:00.000Z");
}

static void test_text(void **state)
{
	size_t n;

	(void)state;
	n = log_format_record(rec, sizeof(rec), LOG_FORMAT_TEXT, LOG_LEVEL_INFO, T_2026 + 123000000,
			      "dirty", true, "migrated to 127.0.0.1:4444");
	assert_string_equal(
	    rec, "2026-12-01T23:40:00.123Z info  vmm: dirty: migrated to 127.0.0.1:4444\n");
	assert_int_equal(n, strlen(rec));
	/* log_msg(): the name is not in the text */
	log_format_record(rec, sizeof(rec), LOG_FORMAT_TEXT, LOG_LEVEL_WARN, T_2026, "dirty", false,
			  "incoming: refused 10.0.0.1:5: bad magic");
	assert_string_equal(
	    rec, "2026-12-01T23:40:00.000Z warn  vmm: incoming: refused 10.0.0.1:5: bad magic\n");
	/* no name known yet: as log_msg() */
	log_format_record(rec, sizeof(rec), LOG_FORMAT_TEXT, LOG_LEVEL_ERROR, T_2026, NULL, true,
			  "x");
	assert_string_equal(rec, "2026-12-01T23:40:00.000Z error vmm: x\n");
	log_format_record(rec, sizeof(rec), LOG_FORMAT_TEXT, LOG_LEVEL_DEBUG, T_2026, "", true,
			  "x");
	assert_string_equal(rec, "2026-12-01T23:40:00.000Z debug vmm: x\n");
}

/* A peer's or a guest's string cannot end the line or forge a record. */
static void test_text_escaping(void **state)
{
	(void)state;
	log_format_record(rec, sizeof(rec), LOG_FORMAT_TEXT, LOG_LEVEL_WARN, T_2026, "vm", true,
			  "a \"q\"\nb\tc\rd\x01"
			  "e\x7f"
			  "f \xc3\xa9 \xff\xc3 \xed\xa0\x80 \\");
	assert_string_equal(rec, "2026-12-01T23:40:00.000Z warn  vmm: vm: a \"q\"\\nb\\tc\\rd\\x01"
				 "e\\x7f"
				 "f \xc3\xa9 \\xff\\xc3 \\xed\\xa0\\x80 \\\n");
	/* an overlong encoding and a code point past U+10FFFF are not UTF-8 either */
	log_format_record(rec, sizeof(rec), LOG_FORMAT_TEXT, LOG_LEVEL_WARN, T_2026, NULL, false,
			  "\xc0\xaf \xf4\x90\x80\x80 \xf0\x9f\x98\x80");
	assert_string_equal(rec, "2026-12-01T23:40:00.000Z warn  vmm: \\xc0\\xaf "
				 "\\xf4\\x90\\x80\\x80 \xf0\x9f\x98\x80\n");
}

static void test_json(void **state)
{
	cJSON *o;

	(void)state;
	log_format_record(rec, sizeof(rec), LOG_FORMAT_JSON, LOG_LEVEL_INFO, T_2026 + 123000000,
			  "dirty", true, "migrated to 127.0.0.1:4444");
	assert_string_equal(rec, "{\"ts\":\"2026-12-01T23:40:00.123Z\",\"level\":\"info\","
				 "\"vm\":\"dirty\",\"msg\":\"migrated to 127.0.0.1:4444\"}\n");
	o = parse_line(rec);
	assert_string_equal(str_member(o, "ts"), "2026-12-01T23:40:00.123Z");
	assert_string_equal(str_member(o, "level"), "info");
	assert_string_equal(str_member(o, "vm"), "dirty");
	assert_string_equal(str_member(o, "msg"), "migrated to 127.0.0.1:4444");
	cJSON_Delete(o);
	/* no "vm" before the name is known */
	log_format_record(rec, sizeof(rec), LOG_FORMAT_JSON, LOG_LEVEL_WARN, T_2026, NULL, false,
			  "incoming: refused");
	o = parse_line(rec);
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "vm"));
	assert_string_equal(str_member(o, "level"), "warn");
	cJSON_Delete(o);
}

static void test_json_escaping(void **state)
{
	static const char msg[] = "a \"q\" \\ \nb\tc\x01 \x1f \xc3\xa9 \xff";
	cJSON *o;

	(void)state;
	log_format_record(rec, sizeof(rec), LOG_FORMAT_JSON, LOG_LEVEL_ERROR, T_2026, "v\"m", true,
			  msg);
	o = parse_line(rec);
	/* everything but the byte that is not UTF-8 comes back as it was */
	assert_string_equal(str_member(o, "msg"), "a \"q\" \\ \nb\tc\x01 \x1f \xc3\xa9 \\xff");
	assert_string_equal(str_member(o, "vm"), "v\"m");
	assert_string_equal(str_member(o, "level"), "error");
	cJSON_Delete(o);
}

/* Too long: cut, marked, still one line, still JSON. */
static void test_cut(void **state)
{
	char *big = malloc(LOG_RECORD_MAX * 2);
	size_t n;
	cJSON *o;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', LOG_RECORD_MAX * 2 - 1);
	big[LOG_RECORD_MAX * 2 - 1] = '\0';
	n = log_format_record(rec, sizeof(rec), LOG_FORMAT_TEXT, LOG_LEVEL_INFO, T_2026, "vm", true,
			      big);
	assert_true(n < sizeof(rec));
	assert_int_equal(n, strlen(rec));
	assert_string_equal(rec + n - 4, "...\n");
	assert_null(memchr(rec, '\n', n - 1));
	/* control bytes grow six times in JSON: the message is cut until the object fits */
	memset(big, '\x01', LOG_RECORD_MAX * 2 - 1);
	n = log_format_record(rec, sizeof(rec), LOG_FORMAT_JSON, LOG_LEVEL_INFO, T_2026, "vm", true,
			      big);
	assert_true(n < sizeof(rec));
	o = parse_line(rec);
	n = strlen(str_member(o, "msg"));
	assert_true(n > 100);
	assert_string_equal(str_member(o, "msg") + n - 3, "...");
	cJSON_Delete(o);
	/* a small buffer still gets a whole line */
	n = log_format_record(rec, 64, LOG_FORMAT_TEXT, LOG_LEVEL_INFO, T_2026, "vm", true, big);
	assert_true(n < 64);
	assert_string_equal(rec + n - 4, "...\n");
	free(big);
}

/* What the log wrote to a file, from its start. */
static char *read_all(int fd)
{
	static char buf[1 << 20];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

static int temp_fd(void)
{
	FILE *f = tmpfile();

	assert_non_null(f);
	return dup(fileno(f)); /* tmpfile's file is deleted; our dup keeps it */
}

static void test_levels(void **state)
{
	struct vmm_log log, zero;
	int fd = temp_fd();
	char *out;

	(void)state;
	log_init(&log, LOG_FORMAT_TEXT, LOG_LEVEL_WARN, fd);
	assert_true(log_enabled(&log, LOG_LEVEL_ERROR));
	assert_true(log_enabled(&log, LOG_LEVEL_WARN));
	assert_false(log_enabled(&log, LOG_LEVEL_INFO));
	log_msg(&log, LOG_LEVEL_INFO, "dropped %d", 1);
	log_vm(&log, LOG_LEVEL_DEBUG, "dropped %d", 2);
	log_set_vm(&log, "demo");
	log_vm(&log, LOG_LEVEL_WARN, "kept %d", 3);
	log_msg(&log, LOG_LEVEL_ERROR, "kept %d", 4);
	out = read_all(fd);
	assert_null(strstr(out, "dropped"));
	assert_non_null(strstr(out, " warn  vmm: demo: kept 3\n"));
	assert_non_null(strstr(out, " error vmm: kept 4\n"));
	assert_int_equal(strchr(strchr(out, '\n') + 1, '\n')[1], '\0'); /* two lines */
	log_destroy(&log);

	/* all zero (never set up) is the defaults: info, not debug */
	memset(&zero, 0, sizeof(zero));
	assert_true(log_enabled(&zero, LOG_LEVEL_INFO));
	assert_false(log_enabled(&zero, LOG_LEVEL_DEBUG));
	assert_true(log_enabled(NULL, LOG_LEVEL_WARN));
	assert_false(log_enabled(NULL, LOG_LEVEL_DEBUG));
	close(fd);
}

/* A message longer than log_msg() formats is cut and marked too. */
static void test_long_message(void **state)
{
	struct vmm_log log;
	int fd = temp_fd();
	char *out, *big = malloc(6000);
	size_t n;

	(void)state;
	assert_non_null(big);
	memset(big, 'y', 5999);
	big[5999] = '\0';
	log_init(&log, LOG_FORMAT_TEXT, LOG_LEVEL_INFO, fd);
	log_msg(&log, LOG_LEVEL_INFO, "%s", big);
	out = read_all(fd);
	n = strlen(out);
	assert_true(n > 4000 && n < 4200);
	assert_string_equal(out + n - 5, "y...\n");
	assert_ptr_equal(strchr(out, '\n'), out + n - 1);
	log_destroy(&log);
	close(fd);
	free(big);
}

#define THREADS 4
#define RECORDS 300

static void *writer(void *arg)
{
	struct vmm_log *log = arg;

	for (int i = 0; i < RECORDS; i++)
		log_vm(log, LOG_LEVEL_INFO,
		       "record %d of a thread, with a \"quote\" and padding %0200d", i, 0);
	return NULL;
}

/* Records of several threads: each a whole line, none lost. */
static void test_threads(void **state)
{
	struct vmm_log log;
	pthread_t t[THREADS];
	int fd = temp_fd(), lines = 0;
	char *out, *line, *save = NULL;

	(void)state;
	log_init(&log, LOG_FORMAT_JSON, LOG_LEVEL_INFO, fd);
	log_set_vm(&log, "t");
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer, &log), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	out = read_all(fd);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);

		if (!o)
			fail_msg("line %d is not JSON: %s", lines, line);
		assert_string_equal(str_member(o, "vm"), "t");
		assert_non_null(strstr(str_member(o, "msg"), "padding 0000"));
		cJSON_Delete(o);
		lines++;
	}
	assert_int_equal(lines, THREADS * RECORDS);
	log_destroy(&log);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_time),	  cmocka_unit_test(test_text),
	    cmocka_unit_test(test_text_escaping), cmocka_unit_test(test_json),
	    cmocka_unit_test(test_json_escaping), cmocka_unit_test(test_cut),
	    cmocka_unit_test(test_levels),	  cmocka_unit_test(test_long_message),
	    cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
