/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_json.c - the control API's JSON contract: the migrate, resume and
 * recover request bodies and the state names, each member named and typed
 * here (docs/api.md is its description). The progress object is
 * api_progress.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "hostport.h"

/* JSON numbers are doubles: only integers up to 2^53 are exact. */
int api_json_get_u64(const cJSON *obj, const char *name, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	double d;

	if (!v)
		return -ENOENT;
	if (!cJSON_IsNumber(v))
		return -EINVAL;
	d = v->valuedouble;
	if (!(d >= 0) || d > 9007199254740992.0 || (double)(uint64_t)d != d)
		return -EINVAL;
	*out = (uint64_t)d;
	return 0;
}

/* ---- names: one table per enum, read both ways ---- */

static const char *const mode_names[] = {
    [MIGRATION_MODE_PRECOPY] = "precopy",
    [MIGRATION_MODE_POSTCOPY] = "postcopy",
    [MIGRATION_MODE_AUTO] = "auto",
};

static const char *const no_converge_names[] = {
    [MIGRATION_NO_CONVERGE_SWITCHOVER] = "switchover",
    [MIGRATION_NO_CONVERGE_FAIL] = "fail",
};

static const char *const state_names[] = {
    [MIGRATION_NONE] = "none",
    [MIGRATION_SETUP] = "setup",
    [MIGRATION_PRECOPY] = "precopy",
    [MIGRATION_SWITCHOVER] = "switchover",
    [MIGRATION_SWITCHOVER_UNKNOWN] = "switchover-unknown",
    [MIGRATION_POSTCOPY_ACTIVE] = "postcopy-active",
    [MIGRATION_POSTCOPY_PAUSED] = "postcopy-paused",
    [MIGRATION_COMPLETED] = "completed",
    [MIGRATION_FAILED] = "failed",
    [MIGRATION_CANCELLED] = "cancelled",
};

#define NAMES(t) (t), sizeof(t) / sizeof((t)[0])

static const char *name_of(const char *const *names, size_t n, unsigned v)
{
	return v < n && names[v] ? names[v] : "unknown";
}

/* The index of `name` in names[], or -1. */
static int index_of(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (names[i] && !strcmp(names[i], name))
			return (int)i;
	return -1;
}

const char *api_mode_name(enum migration_mode m)
{
	return name_of(NAMES(mode_names), (unsigned)m);
}

const char *api_no_converge_name(enum migration_no_converge n)
{
	return name_of(NAMES(no_converge_names), (unsigned)n);
}

const char *api_state_name(enum migration_state s)
{
	return name_of(NAMES(state_names), (unsigned)s);
}

int api_state_from_name(const char *name, enum migration_state *out)
{
	int i = index_of(NAMES(state_names), name);

	if (i < 0)
		return -EINVAL;
	*out = (enum migration_state)i;
	return 0;
}

/* ---- request bodies ---- */

/* An optional integer field in [min, max] (a range only the API sets); absent leaves *out alone. */
static int get_range(const cJSON *obj, const char *name, uint64_t min, uint64_t max, uint64_t *out,
		     char *err, size_t errlen)
{
	uint64_t v;
	int ret = api_json_get_u64(obj, name, &v);

	if (ret == -ENOENT)
		return 0;
	if (ret || v < min || v > max) {
		snprintf(err, errlen, "'%s' must be an integer from %llu to %llu", name,
			 (unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int get_unsigned_range(const cJSON *obj, const char *name, uint64_t min, uint64_t max,
			      unsigned *out, char *err, size_t errlen)
{
	uint64_t v = *out;
	int ret = get_range(obj, name, min, max, &v, err, errlen);

	if (!ret)
		*out = (unsigned)v;
	return ret;
}

/*
 * An optional integer field whose range the engine checks: only its type
 * is checked here. A value too large for the field is stored as UINT_MAX,
 * which every engine range refuses with the engine's own message.
 */
static int get_unsigned(const cJSON *obj, const char *name, unsigned *out, char *err, size_t errlen)
{
	uint64_t v;
	int ret = api_json_get_u64(obj, name, &v);

	if (ret == -ENOENT)
		return 0;
	if (ret) {
		snprintf(err, errlen, "'%s' must be a non-negative integer", name);
		return -EINVAL;
	}
	*out = v > UINT_MAX ? UINT_MAX : (unsigned)v;
	return 0;
}

/* An optional string field; *out stays NULL when absent. */
static int get_string(const cJSON *obj, const char *name, const char **out, const char *allowed,
		      char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	*out = NULL;
	if (!v)
		return 0;
	if (!cJSON_IsString(v) || !v->valuestring) {
		snprintf(err, errlen, "'%s' must be a string: %s", name, allowed);
		return -EINVAL;
	}
	*out = v->valuestring;
	return 0;
}

/* An optional boolean field; absent leaves *out alone. */
static int get_bool(const cJSON *obj, const char *name, bool *out, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!v)
		return 0;
	if (!cJSON_IsBool(v)) {
		snprintf(err, errlen, "'%s' must be true or false", name);
		return -EINVAL;
	}
	*out = cJSON_IsTrue(v);
	return 0;
}

int api_parse_compress(const char *s, int *level)
{
	char *end;
	long l;

	if (!strcmp(s, "none")) {
		*level = 0;
		return 0;
	}
	if (!strcmp(s, "zstd")) {
		*level = API_ZSTD_LEVEL_DEFAULT;
		return 0;
	}
	if (strncmp(s, "zstd:", 5) || s[5] < '0' || s[5] > '9')
		return -EINVAL;
	errno = 0;
	l = strtol(s + 5, &end, 10);
	if (*end || l < 1)
		return -EINVAL;
	/* the upper limit is the engine's: a huge level reaches its check as INT_MAX */
	*level = errno == ERANGE || l > INT_MAX ? INT_MAX : (int)l;
	return 0;
}

/* Refuses members not in `known` (n names), so that a typo is not silently ignored. */
static int check_known(const cJSON *body, const char *const *known, size_t n, char *err,
		       size_t errlen)
{
	const cJSON *item;

	if (!cJSON_IsObject(body)) {
		snprintf(err, errlen, "the request body must be a JSON object");
		return -EINVAL;
	}
	cJSON_ArrayForEach(item, body)
	{
		size_t i;

		for (i = 0; i < n; i++)
			if (item->string && !strcmp(item->string, known[i]))
				break;
		if (i == n) {
			snprintf(err, errlen, "unknown field '%.64s'",
				 item->string ? item->string : "");
			return -EINVAL;
		}
	}
	return 0;
}

/* The required "to" member, checked by the one address rule (hostport.h), into to/tolen. */
static int get_to(const cJSON *body, char *to, size_t tolen, char *err, size_t errlen)
{
	const char *s;

	if (get_string(body, "to", &s, "\"host:port\"", err, errlen))
		return -EINVAL;
	if (!s) {
		snprintf(err, errlen, "'to' is required: the target's \"host:port\"");
		return -EINVAL;
	}
	if (strlen(s) >= tolen || hostport_check(s)) {
		snprintf(err, errlen,
			 "'to' must be \"host:port\" with a port from 1 to 65535, got '%.64s'", s);
		return -EINVAL;
	}
	snprintf(to, tolen, "%s", s);
	return 0;
}

static const char *const known_fields[] = {
    "to",
    "downtime_ms",
    "max_bandwidth",
    "connections",
    "compress",
    "harvest_threads",
    "clear_chunk_pages",
    "max_passes",
    "max_time_ms",
    "no_converge",
    "mode",
    "timeout_ms",
    "postcopy_after",
    "no_final_bitmap",
};

static const char *const resume_fields[] = {"to"};

int api_resume_from_json(const cJSON *body, char *to, size_t tolen, char *err, size_t errlen)
{
	if (check_known(body, resume_fields, sizeof(resume_fields) / sizeof(resume_fields[0]), err,
			errlen))
		return -EINVAL;
	return get_to(body, to, tolen, err, errlen);
}

static const char *const recover_fields[] = {"to", "decide"};

int api_recover_from_json(const cJSON *body, char *to, size_t tolen, enum api_decide *decide,
			  char *err, size_t errlen)
{
	static const char *const decisions[] = {[API_DECIDE_ASK] = "",
						[API_DECIDE_RESUME] = "resume",
						[API_DECIDE_RUN] = "run",
						[API_DECIDE_DISCARD] = "discard"};
	const char *s;

	to[0] = '\0';
	*decide = API_DECIDE_ASK;
	if (check_known(body, recover_fields, sizeof(recover_fields) / sizeof(recover_fields[0]),
			err, errlen))
		return -EINVAL;
	if (cJSON_GetObjectItemCaseSensitive(body, "to") && get_to(body, to, tolen, err, errlen))
		return -EINVAL;
	if (get_string(body, "decide", &s, "\"resume\", \"run\" or \"discard\"", err, errlen))
		return -EINVAL;
	if (!s)
		return 0;
	for (size_t i = API_DECIDE_RESUME; i < sizeof(decisions) / sizeof(decisions[0]); i++) {
		if (!strcmp(s, decisions[i])) {
			*decide = (enum api_decide)i;
			return 0;
		}
	}
	snprintf(err, errlen, "'decide' must be \"resume\", \"run\" or \"discard\", got '%.32s'",
		 s);
	return -EINVAL;
}

#define COMPRESS_ALLOWED    "\"none\", \"zstd\" or \"zstd:LEVEL\" with LEVEL an integer from 1"
#define NO_CONVERGE_ALLOWED "\"switchover\" or \"fail\""
#define MODE_ALLOWED	    "\"precopy\", \"postcopy\" or \"auto\""

/* The string-valued fields: compress, no_converge, mode. */
static int get_choices(const cJSON *body, struct migration_params *p, char *err, size_t errlen)
{
	const char *s;

	if (get_string(body, "compress", &s, COMPRESS_ALLOWED, err, errlen))
		return -EINVAL;
	if (s && api_parse_compress(s, &p->compress_level)) {
		snprintf(err, errlen, "'compress' must be " COMPRESS_ALLOWED ", got '%.32s'", s);
		return -EINVAL;
	}
	if (get_string(body, "no_converge", &s, NO_CONVERGE_ALLOWED, err, errlen))
		return -EINVAL;
	if (s) {
		int v = index_of(NAMES(no_converge_names), s);

		if (v < 0) {
			snprintf(err, errlen,
				 "'no_converge' must be " NO_CONVERGE_ALLOWED ", got '%.32s'", s);
			return -EINVAL;
		}
		p->no_converge = (enum migration_no_converge)v;
	}
	if (get_string(body, "mode", &s, MODE_ALLOWED, err, errlen))
		return -EINVAL;
	if (s) {
		int v = index_of(NAMES(mode_names), s);

		if (v < 0) {
			snprintf(err, errlen, "'mode' must be " MODE_ALLOWED ", got '%.32s'", s);
			return -EINVAL;
		}
		p->mode = (enum migration_mode)v;
	}
	return 0;
}

int api_params_from_json(const cJSON *body, struct migration_params *p, char *err, size_t errlen)
{
	if (check_known(body, known_fields, sizeof(known_fields) / sizeof(known_fields[0]), err,
			errlen) ||
	    get_to(body, p->to, sizeof(p->to), err, errlen))
		return -EINVAL;

	/* ranges only the API sets */
	if (get_range(body, "downtime_ms", 1, API_DOWNTIME_MS_MAX, &p->downtime_ms, err, errlen) ||
	    get_range(body, "max_bandwidth", 0, API_BANDWIDTH_MAX, &p->max_bandwidth, err,
		      errlen) ||
	    get_unsigned_range(body, "max_passes", 1, API_MAX_PASSES_MAX, &p->max_passes, err,
			       errlen) ||
	    get_range(body, "max_time_ms", 1, API_MAX_TIME_MS_MAX, &p->max_time_ms, err, errlen) ||
	    get_range(body, "timeout_ms", 1, API_TIMEOUT_MS_MAX, &p->timeout_ms, err, errlen))
		return -EINVAL;
	/* ranges the engine sets: checked below, by the engine's own rule */
	if (get_unsigned(body, "connections", &p->connections, err, errlen) ||
	    get_unsigned(body, "harvest_threads", &p->harvest_threads, err, errlen) ||
	    get_unsigned(body, "clear_chunk_pages", &p->clear_chunk_pages, err, errlen) ||
	    get_unsigned(body, "postcopy_after", &p->postcopy_after, err, errlen) ||
	    get_bool(body, "no_final_bitmap", &p->no_final_bitmap, err, errlen) ||
	    get_choices(body, p, err, errlen))
		return -EINVAL;
	return migration_params_check(p, err, errlen) ? -EINVAL : 0;
}
