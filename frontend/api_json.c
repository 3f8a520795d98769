/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_json.c - the control API's JSON contract: the migrate, resume and
 * recover request bodies, each member named and typed here (docs/api.md is
 * its description). The progress object is api_progress.c's; the state
 * names are the engine's (migration_state_name(), migration/api/names.c).
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
static int u64_value(const cJSON *v, uint64_t *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return -EINVAL;
	d = v->valuedouble;
	if (!(d >= 0) || d > (double)MIGRATION_PARAM_U64_MAX || (double)(uint64_t)d != d)
		return -EINVAL;
	*out = (uint64_t)d;
	return 0;
}

int api_json_get_u64(const cJSON *obj, const char *name, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return v ? u64_value(v, out) : -ENOENT;
}

/* ---- names ---- */

const char *api_mode_name(enum migration_mode m)
{
	return migration_param_value_name(migration_param_find("mode"), (uint64_t)m);
}

/* ---- request bodies ---- */

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

int api_parse_compress(const char *s, int *level)
{
	char *end;
	long l;

	if (!strcmp(s, "none")) {
		*level = 0;
		return 0;
	}
	if (!strcmp(s, "zstd")) {
		*level = MIGRATION_ZSTD_LEVEL_DEFAULT;
		return 0;
	}
	if (strncmp(s, "zstd:", 5) || s[5] < '0' || s[5] > '9')
		return -EINVAL;
	errno = 0;
	l = strtol(s + 5, &end, 10);
	if (*end || l < 1)
		return -EINVAL;
	/* the upper limit is the table's: a huge level reaches its check as INT_MAX */
	*level = errno == ERANGE || l > INT_MAX ? INT_MAX : (int)l;
	return 0;
}

/*
 * Refuses members not in `known` (n names), nor, with `params`, a row of the
 * parameter table, so that a typo is not silently ignored.
 */
static int check_known(const cJSON *body, const char *const *known, size_t n, bool params,
		       char *err, size_t errlen)
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
		if (i == n && !(params && item->string && migration_param_find(item->string))) {
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
			 "'to' must be \"host:port\" with a port from 1 to 65535, or "
			 "\"unix:PATH\", got '%.64s'",
			 s);
		return -EINVAL;
	}
	snprintf(to, tolen, "%s", s);
	return 0;
}

static const char *const resume_fields[] = {"to"};

int api_resume_from_json(const cJSON *body, char *to, size_t tolen, char *err, size_t errlen)
{
	if (check_known(body, resume_fields, sizeof(resume_fields) / sizeof(resume_fields[0]),
			false, err, errlen))
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
			false, err, errlen))
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

/* One member, typed by its row: numbers, true/false, or a name. */
static int get_param(const cJSON *v, const struct migration_param *d, struct migration_params *p,
		     char *err, size_t errlen)
{
	uint64_t n;
	int level;

	switch (d->kind) {
	case MP_BOOL:
		if (!cJSON_IsBool(v))
			break;
		return migration_param_set(p, d, cJSON_IsTrue(v), err, errlen);
	case MP_COMPRESS:
	case MP_ENUM:
		if (!cJSON_IsString(v) || !v->valuestring) {
			snprintf(err, errlen, "'%s' must be a string: %s", d->name, d->arg);
			return -EINVAL;
		}
		if (d->kind == MP_COMPRESS && !api_parse_compress(v->valuestring, &level))
			return migration_param_set(p, d, (uint64_t)level, err, errlen);
		if (d->kind == MP_ENUM && !migration_param_value_of(d, v->valuestring, &n))
			return migration_param_set(p, d, n, err, errlen);
		break;
	default:
		if (u64_value(v, &n))
			break;
		return migration_param_set(p, d, n, err, errlen);
	}
	migration_param_refusal(d, err, errlen);
	return -EINVAL;
}

int api_params_from_json(const cJSON *body, struct migration_params *p, char *err, size_t errlen)
{
	static const char *const to_field[] = {"to"};

	if (check_known(body, to_field, 1, true, err, errlen) ||
	    get_to(body, p->to, sizeof(p->to), err, errlen))
		return -EINVAL;
	for (size_t i = 0; i < migration_param_count; i++) {
		const struct migration_param *d = &migration_param_table[i];
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, d->name);

		if (v && get_param(v, d, p, err, errlen))
			return -EINVAL;
	}
	return migration_params_check(p, err, errlen) ? -EINVAL : 0;
}
