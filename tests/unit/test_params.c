/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_params.c - the migration parameter table (migration_params.h): every
 * row's default, range and names, and the API's JSON in and out, which the
 * table makes (api_json.c, api_progress.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "migration.h"

static cJSON *parse(const char *text)
{
	cJSON *j = cJSON_Parse(text);

	assert_non_null(j);
	return j;
}

static void base_params(struct migration_params *p)
{
	memset(p, 0, sizeof(*p));
	p->downtime_ms = 300;
	p->connections = 4;
	p->compress_level = 1;
	p->harvest_threads = 2;
	p->clear_chunk_pages = 512;
	p->max_passes = 30;
	p->max_time_ms = 60000;
	p->timeout_ms = 10000;
	p->throttle_max_pct = 99;
}

static void test_params_all_fields(void **state)
{
	struct migration_params p;
	char err[256];
	cJSON *j =
	    parse("{\"to\":\"10.0.0.2:4444\",\"downtime_ms\":50,\"max_bandwidth\":1073741824,"
		  "\"connections\":8,\"compress\":\"zstd:3\",\"harvest_threads\":16,"
		  "\"clear_chunk_pages\":1024,\"max_passes\":7,\"max_time_ms\":5000,"
		  "\"no_converge\":\"fail\",\"mode\":\"auto\",\"timeout_ms\":2000,"
		  "\"postcopy_after\":5,\"no_final_bitmap\":true,\"converge\":\"throttle\","
		  "\"throttle_max_pct\":60}");

	(void)state;
	base_params(&p);
	assert_int_equal(api_params_from_json(j, &p, err, sizeof(err)), 0);
	assert_string_equal(p.to, "10.0.0.2:4444");
	assert_int_equal(p.downtime_ms, 50);
	assert_int_equal(p.max_bandwidth, 1073741824ULL);
	assert_int_equal(p.connections, 8);
	assert_int_equal(p.compress_level, 3);
	assert_int_equal(p.harvest_threads, 16);
	assert_int_equal(p.clear_chunk_pages, 1024);
	assert_int_equal(p.max_passes, 7);
	assert_int_equal(p.max_time_ms, 5000);
	assert_int_equal(p.no_converge, MIGRATION_NO_CONVERGE_FAIL);
	assert_int_equal(p.mode, MIGRATION_MODE_AUTO);
	assert_int_equal(p.timeout_ms, 2000);
	assert_int_equal(p.postcopy_after, 5);
	assert_true(p.no_final_bitmap);
	assert_int_equal(p.converge, MIGRATION_CONVERGE_THROTTLE);
	assert_int_equal(p.throttle_max_pct, 60);
	cJSON_Delete(j);
}

static void test_params_postcopy(void **state)
{
	static const struct {
		const char *json;
		enum migration_mode mode;
		unsigned after;
		bool no_bitmap;
	} cases[] = {
	    {"{\"to\":\"h:1\",\"mode\":\"postcopy\"}", MIGRATION_MODE_POSTCOPY, 1, false},
	    {"{\"to\":\"h:1\",\"mode\":\"precopy\"}", MIGRATION_MODE_PRECOPY, 1, false},
	    {"{\"to\":\"h:1\",\"postcopy_after\":0}", MIGRATION_MODE_AUTO, 0, false},
	    {"{\"to\":\"h:1\",\"postcopy_after\":1000}", MIGRATION_MODE_AUTO, 1000, false},
	    {"{\"to\":\"h:1\",\"no_final_bitmap\":false}", MIGRATION_MODE_AUTO, 1, false},
	    {"{\"to\":\"h:1\",\"mode\":\"postcopy\",\"postcopy_after\":3,"
	     "\"no_final_bitmap\":true}",
	     MIGRATION_MODE_POSTCOPY, 3, true},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct migration_params p;
		char err[256] = "";
		cJSON *j = parse(cases[i].json);

		base_params(&p);
		/* absent fields keep the caller's (the engine's) defaults */
		p.mode = MIGRATION_MODE_AUTO;
		p.postcopy_after = 1;
		if (api_params_from_json(j, &p, err, sizeof(err)))
			fail_msg("%s: %s", cases[i].json, err);
		assert_int_equal(p.mode, cases[i].mode);
		assert_int_equal(p.postcopy_after, cases[i].after);
		assert_int_equal(p.no_final_bitmap, cases[i].no_bitmap);
		cJSON_Delete(j);
	}
}

static void test_params_defaults_kept(void **state)
{
	struct migration_params p;
	char err[256];
	cJSON *j = parse("{\"to\":\"[::1]:4444\",\"compress\":\"none\"}");

	(void)state;
	base_params(&p);
	assert_int_equal(api_params_from_json(j, &p, err, sizeof(err)), 0);
	assert_string_equal(p.to, "[::1]:4444");
	assert_int_equal(p.compress_level, 0);
	assert_int_equal(p.downtime_ms, 300);
	assert_int_equal(p.connections, 4);
	assert_int_equal(p.clear_chunk_pages, 512);
	assert_int_equal(p.no_converge, MIGRATION_NO_CONVERGE_SWITCHOVER);
	assert_int_equal(p.mode, MIGRATION_MODE_PRECOPY);
	cJSON_Delete(j);
}

struct bad_case {
	const char *json;
	const char *msg; /* substring of the error */
};

static void test_params_bad(void **state)
{
	static const struct bad_case cases[] = {
	    {"[]", "must be a JSON object"},
	    {"{}", "'to' is required"},
	    {"{\"to\":5}", "'to' must be a string"},
	    {"{\"to\":\"nohost\"}", "'to' must be \"host:port\""},
	    {"{\"to\":\":80\"}", "'to' must be \"host:port\""},
	    {"{\"to\":\"h:0\"}", "port from 1 to 65535"},
	    {"{\"to\":\"h:65536\"}", "port from 1 to 65535"},
	    {"{\"to\":\"h:80x\"}", "'to' must be"},
	    {"{\"to\":\"h:1\",\"downtime_ms\":0}",
	     "'downtime_ms' must be an integer from 1 to 600000"},
	    {"{\"to\":\"h:1\",\"downtime_ms\":\"5\"}", "'downtime_ms' must be an integer"},
	    {"{\"to\":\"h:1\",\"downtime_ms\":1.5}", "'downtime_ms' must be an integer"},
	    {"{\"to\":\"h:1\",\"max_bandwidth\":-1}", "'max_bandwidth' must be an integer from 0"},
	    {"{\"to\":\"h:1\",\"max_bandwidth\":1e300}", "'max_bandwidth'"},
	    {"{\"to\":\"h:1\",\"max_passes\":0}", "'max_passes' must be an integer from 1"},
	    {"{\"to\":\"h:1\",\"max_time_ms\":0}", "'max_time_ms' must be an integer from 1"},
	    {"{\"to\":\"h:1\",\"timeout_ms\":0}", "'timeout_ms' must be an integer from 1"},
	    {"{\"to\":\"h:1\",\"compress\":\"lz4\"}", "'compress' must be \"none\", \"zstd\""},
	    {"{\"to\":\"h:1\",\"compress\":\"zstd:0\"}",
	     "'compress' must be \"none\", \"zstd\" or \"zstd:LEVEL\""},
	    {"{\"to\":\"h:1\",\"compress\":\"zstd:x\"}", "LEVEL an integer from 1"},
	    {"{\"to\":\"h:1\",\"compress\":3}", "'compress' must be a string"},
	    {"{\"to\":\"h:1\",\"no_converge\":\"maybe\"}",
	     "'no_converge' must be \"switchover\", \"fail\" or \"at-limits\""},
	    {"{\"to\":\"h:1\",\"mode\":\"fast\"}",
	     "'mode' must be \"precopy\", \"postcopy\" or \"auto\""},
	    {"{\"to\":\"h:1\",\"conections\":2}", "unknown field 'conections'"},
	    {"{\"to\":\"h:1\",\"mode\":\"Postcopy\"}", "'mode' must be"},
	    {"{\"to\":\"h:1\",\"mode\":true}", "'mode' must be a string"},
	    {"{\"to\":\"h:1\",\"postcopy_after\":-1}",
	     "'postcopy_after' must be an integer from 0 to 1000"},
	    {"{\"to\":\"h:1\",\"connections\":\"4\"}",
	     "'connections' must be an integer from 1 to 16"},
	    {"{\"to\":\"h:1\",\"harvest_threads\":-2}",
	     "'harvest_threads' must be an integer from 1 to 64"},
	    {"{\"to\":\"h:1\",\"clear_chunk_pages\":512.5}",
	     "'clear_chunk_pages' must be a power of two from 64 to 65536"},
	    {"{\"to\":\"h:1\",\"postcopy_after\":0.5}", "'postcopy_after'"},
	    {"{\"to\":\"h:1\",\"postcopy_after\":\"2\"}", "'postcopy_after'"},
	    {"{\"to\":\"h:1\",\"no_final_bitmap\":1}", "'no_final_bitmap' must be true or false"},
	    {"{\"to\":\"h:1\",\"no_final_bitmap\":\"yes\"}",
	     "'no_final_bitmap' must be true or false"},
	    {"{\"to\":\"h:1\",\"no_final_bitmap\":null}",
	     "'no_final_bitmap' must be true or false"},
	    {"{\"to\":\"h:1\",\"converge\":\"auto\"}",
	     "'converge' must be \"none\" or \"throttle\""},
	    {"{\"to\":\"h:1\",\"throttle_max_pct\":100}",
	     "'throttle_max_pct' must be an integer from 1 to 99"},
	    {"{\"to\":\"h:1\",\"throttle_max_pct\":0}",
	     "'throttle_max_pct' must be an integer from 1 to 99"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct migration_params p;
		char err[256] = "";
		cJSON *j = parse(cases[i].json);

		base_params(&p);
		if (api_params_from_json(j, &p, err, sizeof(err)) != -EINVAL ||
		    !strstr(err, cases[i].msg))
			fail_msg("%s: got '%s', want '%s'", cases[i].json, err, cases[i].msg);
		cJSON_Delete(j);
	}
}

/*
 * The API and the engine refuse a value with the same message: both take it
 * from the table (migration_param_refusal()).
 */
static void set_raw(struct migration_params *p, const char *name, uint64_t v)
{
	const struct migration_param *d = migration_param_find(name);
	uint32_t v4 = (uint32_t)v;

	assert_non_null(d);
	if (d->size == 8)
		memcpy((char *)p + d->offset, &v, 8);
	else
		memcpy((char *)p + d->offset, &v4, 4);
}

/* The engine's message for base_params() with one field changed; fails if it accepts. */
static void engine_message(const char *field, uint64_t v, char *msg, size_t len)
{
	struct migration_params q;

	base_params(&q);
	snprintf(q.to, sizeof(q.to), "h:1");
	set_raw(&q, field, v);
	if (migration_params_check(&q, msg, len) != -EINVAL)
		fail_msg("the engine accepts %s = %llu", field, (unsigned long long)v);
}

static void test_params_engine_ranges(void **state)
{
	static const struct {
		const char *json;
		const char *field;
		uint64_t value; /* as the engine sees it */
	} cases[] = {
	    {"{\"to\":\"h:1\",\"connections\":0}", "connections", 0},
	    {"{\"to\":\"h:1\",\"connections\":17}", "connections", 17},
	    {"{\"to\":\"h:1\",\"connections\":1e12}", "connections", 4294967295u},
	    {"{\"to\":\"h:1\",\"harvest_threads\":0}", "harvest_threads", 0},
	    {"{\"to\":\"h:1\",\"harvest_threads\":65}", "harvest_threads", 65},
	    {"{\"to\":\"h:1\",\"clear_chunk_pages\":0}", "clear_chunk_pages", 0},
	    {"{\"to\":\"h:1\",\"clear_chunk_pages\":100}", "clear_chunk_pages", 100},
	    /* a multiple of 64 but no power of two: the old API rule took it */
	    {"{\"to\":\"h:1\",\"clear_chunk_pages\":192}", "clear_chunk_pages", 192},
	    /* above the engine's maximum: the old API rule took it */
	    {"{\"to\":\"h:1\",\"clear_chunk_pages\":131072}", "clear_chunk_pages", 131072},
	    {"{\"to\":\"h:1\",\"clear_chunk_pages\":524288}", "clear_chunk_pages", 524288},
	    {"{\"to\":\"h:1\",\"postcopy_after\":1001}", "postcopy_after", 1001},
	    {"{\"to\":\"h:1\",\"compress\":\"zstd:20\"}", "compress", 20},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct migration_params p;
		char err[256] = "", want[256] = "";
		cJSON *j = parse(cases[i].json);

		engine_message(cases[i].field, cases[i].value, want, sizeof(want));
		base_params(&p);
		if (api_params_from_json(j, &p, err, sizeof(err)) != -EINVAL || strcmp(err, want))
			fail_msg("%s: got '%s', want the engine's '%s'", cases[i].json, err, want);
		cJSON_Delete(j);
	}
}

/* One clear-chunk rule: the API takes exactly what migration_clear_chunk_valid() takes. */
static void test_params_clear_chunk_rule(void **state)
{
	static const uint64_t values[] = {
	    1,	  32,	63,   64,    96,    100,   128,	  192,	  256,	  512,
	    1000, 1024, 4096, 32768, 65535, 65536, 65600, 131072, 262144,
	};

	(void)state;
	assert_true(migration_clear_chunk_valid(MIGRATION_CLEAR_CHUNK_MIN));
	assert_true(migration_clear_chunk_valid(MIGRATION_CLEAR_CHUNK_MAX));
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		struct migration_params p;
		char text[96], err[256] = "";
		cJSON *j;
		int ret;

		snprintf(text, sizeof(text), "{\"to\":\"h:1\",\"clear_chunk_pages\":%llu}",
			 (unsigned long long)values[i]);
		j = parse(text);
		base_params(&p);
		ret = api_params_from_json(j, &p, err, sizeof(err));
		if ((ret == 0) != migration_clear_chunk_valid(values[i]))
			fail_msg("clear_chunk_pages %llu: API %s ('%s'), engine %s",
				 (unsigned long long)values[i], ret ? "refuses" : "accepts", err,
				 migration_clear_chunk_valid(values[i]) ? "accepts" : "refuses");
		if (!ret)
			assert_int_equal(p.clear_chunk_pages, values[i]);
		cJSON_Delete(j);
	}
}

static void test_compress(void **state)
{
	int level = -1;

	(void)state;
	assert_int_equal(api_parse_compress("none", &level), 0);
	assert_int_equal(level, 0);
	assert_int_equal(api_parse_compress("zstd", &level), 0);
	assert_int_equal(level, MIGRATION_ZSTD_LEVEL_DEFAULT);
	assert_int_equal(api_parse_compress("zstd:19", &level), 0);
	assert_int_equal(level, 19);
	assert_int_equal(api_parse_compress("zstd:", &level), -EINVAL);
	assert_int_equal(api_parse_compress("zstd:-1", &level), -EINVAL);
	assert_int_equal(api_parse_compress("zstd:3x", &level), -EINVAL);
	assert_int_equal(api_parse_compress("ZSTD", &level), -EINVAL);
	assert_string_equal(api_mode_name(MIGRATION_MODE_POSTCOPY), "postcopy");
	assert_string_equal(api_mode_name(MIGRATION_MODE_PRECOPY), "precopy");
	assert_string_equal(api_mode_name(MIGRATION_MODE_AUTO), "auto");
}

/* Every row: its default passes, both ends of its range pass, one past each is refused. */
static int try_json(const char *name, const char *value, struct migration_params *p, char *err,
		    size_t errlen)
{
	char text[256];
	cJSON *j;
	int ret;

	snprintf(text, sizeof(text), "{\"to\":\"h:1\",\"%s\":%s}", name, value);
	j = parse(text);
	migration_params_defaults(p);
	ret = api_params_from_json(j, p, err, errlen);
	cJSON_Delete(j);
	return ret;
}

static void expect_accepted(const struct migration_param *d, const char *value, uint64_t want)
{
	struct migration_params p;
	char err[256] = "";

	if (try_json(d->name, value, &p, err, sizeof(err)))
		fail_msg("%s = %s refused: %s", d->name, value, err);
	assert_int_equal(migration_param_get(&p, d), want);
}

static void expect_refused(const struct migration_param *d, const char *value)
{
	struct migration_params p;
	char err[256] = "", want[256];

	migration_param_refusal(d, want, sizeof(want));
	if (try_json(d->name, value, &p, err, sizeof(err)) != -EINVAL || strcmp(err, want))
		fail_msg("%s = %s: got '%s', want '%s'", d->name, value, err, want);
}

static void test_table_rows(void **state)
{
	struct migration_params p;
	char err[256], v[64];

	(void)state;
	migration_params_defaults(&p);
	snprintf(p.to, sizeof(p.to), "h:1");
	assert_int_equal(migration_params_check(&p, err, sizeof(err)), 0);
	for (size_t i = 0; i < migration_param_count; i++) {
		const struct migration_param *d = &migration_param_table[i];

		assert_ptr_equal(migration_param_find(d->name), d);
		if (d->def >= d->min) /* harvest_threads' 0 means the host's CPUs */
			assert_int_equal(migration_param_get(&p, d), d->def);
		switch (d->kind) {
		case MP_BOOL:
			expect_accepted(d, "true", 1);
			expect_accepted(d, "false", 0);
			expect_refused(d, "1");
			break;
		case MP_ENUM:
			for (uint64_t n = d->min; n <= d->max; n++) {
				snprintf(v, sizeof(v), "\"%s\"", d->names[n]);
				expect_accepted(d, v, n);
				assert_string_equal(migration_param_value_name(d, n), d->names[n]);
			}
			expect_refused(d, "\"nosuch\"");
			break;
		case MP_COMPRESS:
			expect_accepted(d, "\"none\"", 0);
			expect_accepted(d, "\"zstd\"", MIGRATION_ZSTD_LEVEL_DEFAULT);
			snprintf(v, sizeof(v), "\"zstd:%llu\"", (unsigned long long)d->max);
			expect_accepted(d, v, d->max);
			snprintf(v, sizeof(v), "\"zstd:%llu\"", (unsigned long long)d->max + 1);
			expect_refused(d, v);
			break;
		default:
			snprintf(v, sizeof(v), "%llu", (unsigned long long)d->min);
			expect_accepted(d, v, d->min);
			snprintf(v, sizeof(v), "%llu", (unsigned long long)d->max);
			expect_accepted(d, v, d->max);
			if (d->min > 0) {
				snprintf(v, sizeof(v), "%llu", (unsigned long long)d->min - 1);
				expect_refused(d, v);
			}
			/* 2^53 + 1 is no exact JSON number: only ranges below it */
			if (d->max < MIGRATION_PARAM_U64_MAX) {
				snprintf(v, sizeof(v), "%llu", (unsigned long long)d->max + 1);
				expect_refused(d, v);
			}
			if (d->kind == MP_POW2) {
				snprintf(v, sizeof(v), "%llu", (unsigned long long)d->min + 1);
				expect_refused(d, v);
			}
			expect_refused(d, "-1");
			expect_refused(d, "0.5");
			expect_refused(d, "\"1\"");
		}
	}
}

/* Names and options are unique, and every option is the name's spelling or a shorter one. */
static void test_table_unique(void **state)
{
	(void)state;
	for (size_t i = 0; i < migration_param_count; i++) {
		const struct migration_param *a = &migration_param_table[i];

		assert_true(a->help[0] && a->flag[0]);
		assert_true(a->kind == MP_BOOL ? !a->arg[0] : a->arg[0] != 0);
		for (size_t k = i + 1; k < migration_param_count; k++) {
			assert_string_not_equal(a->name, migration_param_table[k].name);
			assert_string_not_equal(a->flag, migration_param_table[k].flag);
		}
	}
	assert_null(migration_param_find("to"));
	assert_null(migration_param_find("compress_level"));
}

/* The progress object's "params" are the table's members, and read back the same. */
static void test_table_progress_params(void **state)
{
	struct migration_progress in, out;
	char st[32];
	cJSON *j, *params;

	(void)state;
	memset(&in, 0, sizeof(in));
	migration_params_defaults(&in.params);
	snprintf(in.params.to, sizeof(in.params.to), "h:1");
	in.params.compress_level = 0;
	in.params.no_final_bitmap = true;
	in.params.mode = MIGRATION_MODE_PRECOPY;
	j = api_progress_to_json(&in, "precopy");
	assert_non_null(j);
	params = cJSON_GetObjectItemCaseSensitive(j, "params");
	assert_true(cJSON_IsObject(params));
	assert_int_equal(cJSON_GetArraySize(params), (int)migration_param_count + 1);
	for (size_t i = 0; i < migration_param_count; i++)
		assert_non_null(
		    cJSON_GetObjectItemCaseSensitive(params, migration_param_table[i].name));
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(params, "compress")->valuestring,
			    "none");
	assert_int_equal(api_progress_from_json(j, &out, st, sizeof(st)), 0);
	for (size_t i = 0; i < migration_param_count; i++)
		assert_int_equal(migration_param_get(&out.params, &migration_param_table[i]),
				 migration_param_get(&in.params, &migration_param_table[i]));
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_params_all_fields),
	    cmocka_unit_test(test_params_defaults_kept),
	    cmocka_unit_test(test_params_bad),
	    cmocka_unit_test(test_params_engine_ranges),
	    cmocka_unit_test(test_params_clear_chunk_rule),
	    cmocka_unit_test(test_params_postcopy),
	    cmocka_unit_test(test_compress),
	    cmocka_unit_test(test_table_rows),
	    cmocka_unit_test(test_table_unique),
	    cmocka_unit_test(test_table_progress_params),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
