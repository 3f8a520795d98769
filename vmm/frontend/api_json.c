/* SPDX-License-Identifier: Apache-2.0 */
/* api_json.c - JSON <-> structs for the control API. */
#include <errno.h>
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

/* An optional integer field in [min, max]; absent leaves *out alone. */
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

static int get_unsigned(const cJSON *obj, const char *name, uint64_t min, uint64_t max,
			unsigned *out, char *err, size_t errlen)
{
	uint64_t v = *out;
	int ret = get_range(obj, name, min, max, &v, err, errlen);

	if (!ret)
		*out = (unsigned)v;
	return ret;
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
	if (errno || *end || l < API_ZSTD_LEVEL_MIN || l > API_ZSTD_LEVEL_MAX)
		return -EINVAL;
	*level = (int)l;
	return 0;
}

/* The one address rule (hostport.h); the engine resolves the host. */
static bool valid_address(const char *s, size_t max)
{
	return strlen(s) < max && !hostport_check(s);
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

/* Refuses members not in `known` (n names), so that a typo is not silently ignored. */
static int check_known(const cJSON *body, const char *const *known, size_t n, char *err,
		       size_t errlen)
{
	const cJSON *item;

	if (!cJSON_IsObject(body)) {
		snprintf(err, errlen, "the request body must be a JSON object");
		return -EINVAL;
	}
	cJSON_ArrayForEach(item, body) {
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

/* The required "to" member, validated, into to/tolen. */
static int get_to(const cJSON *body, char *to, size_t tolen, char *err, size_t errlen)
{
	const char *s;

	if (get_string(body, "to", &s, "\"host:port\"", err, errlen))
		return -EINVAL;
	if (!s) {
		snprintf(err, errlen, "'to' is required: the target's \"host:port\"");
		return -EINVAL;
	}
	if (!valid_address(s, tolen)) {
		snprintf(err, errlen, "'to' must be \"host:port\" with a port from 1 to 65535, got '%.64s'",
			 s);
		return -EINVAL;
	}
	snprintf(to, tolen, "%s", s);
	return 0;
}

static const char *const known_fields[] = {
	"to",		 "downtime_ms",	      "max_bandwidth", "connections",
	"compress",	 "harvest_threads",   "clear_chunk_pages", "max_passes",
	"max_time_ms",	 "no_converge",	      "mode",	       "timeout_ms",
	"postcopy_after", "no_final_bitmap",
};

static const char *const resume_fields[] = {"to"};

int api_resume_from_json(const cJSON *body, char *to, size_t tolen, char *err, size_t errlen)
{
	if (check_known(body, resume_fields, sizeof(resume_fields) / sizeof(resume_fields[0]), err,
			errlen))
		return -EINVAL;
	return get_to(body, to, tolen, err, errlen);
}

int api_params_from_json(const cJSON *body, struct migration_params *p, char *err, size_t errlen)
{
	const char *s;
	uint64_t chunk;

	if (check_known(body, known_fields, sizeof(known_fields) / sizeof(known_fields[0]), err,
			errlen) ||
	    get_to(body, p->to, sizeof(p->to), err, errlen))
		return -EINVAL;

	if (get_range(body, "downtime_ms", 1, API_DOWNTIME_MS_MAX, &p->downtime_ms, err, errlen) ||
	    get_range(body, "max_bandwidth", 0, API_BANDWIDTH_MAX, &p->max_bandwidth, err, errlen) ||
	    get_unsigned(body, "connections", 1, MIGRATION_MAX_CONNECTIONS, &p->connections, err,
			 errlen) ||
	    get_unsigned(body, "harvest_threads", 1, MIGRATION_MAX_HARVEST_THREADS,
			 &p->harvest_threads, err, errlen) ||
	    get_unsigned(body, "max_passes", 1, API_MAX_PASSES_MAX, &p->max_passes, err, errlen) ||
	    get_range(body, "max_time_ms", 1, API_MAX_TIME_MS_MAX, &p->max_time_ms, err, errlen) ||
	    get_range(body, "timeout_ms", 1, API_TIMEOUT_MS_MAX, &p->timeout_ms, err, errlen) ||
	    get_unsigned(body, "postcopy_after", 0, API_POSTCOPY_AFTER_MAX, &p->postcopy_after, err,
			 errlen) ||
	    get_bool(body, "no_final_bitmap", &p->no_final_bitmap, err, errlen))
		return -EINVAL;

	chunk = p->clear_chunk_pages;
	if (get_range(body, "clear_chunk_pages", API_CLEAR_CHUNK_MIN, API_CLEAR_CHUNK_MAX, &chunk,
		      err, errlen) ||
	    chunk % API_CLEAR_CHUNK_MIN) {
		snprintf(err, errlen,
			 "'clear_chunk_pages' must be a multiple of %llu from %llu to %llu",
			 API_CLEAR_CHUNK_MIN, API_CLEAR_CHUNK_MIN, API_CLEAR_CHUNK_MAX);
		return -EINVAL;
	}
	p->clear_chunk_pages = (unsigned)chunk;

#define COMPRESS_ALLOWED "\"none\", \"zstd\" or \"zstd:LEVEL\" with LEVEL from 1 to 19"
	if (get_string(body, "compress", &s, COMPRESS_ALLOWED, err, errlen))
		return -EINVAL;
	if (s && api_parse_compress(s, &p->compress_level)) {
		snprintf(err, errlen, "'compress' must be " COMPRESS_ALLOWED ", got '%.32s'", s);
		return -EINVAL;
	}

#define NO_CONVERGE_ALLOWED "\"switchover\" or \"fail\""
	if (get_string(body, "no_converge", &s, NO_CONVERGE_ALLOWED, err, errlen))
		return -EINVAL;
	if (s) {
		if (!strcmp(s, "switchover")) {
			p->no_converge = MIGRATION_NO_CONVERGE_SWITCHOVER;
		} else if (!strcmp(s, "fail")) {
			p->no_converge = MIGRATION_NO_CONVERGE_FAIL;
		} else {
			snprintf(err, errlen, "'no_converge' must be " NO_CONVERGE_ALLOWED
				 ", got '%.32s'", s);
			return -EINVAL;
		}
	}

#define MODE_ALLOWED "\"precopy\", \"postcopy\" or \"auto\""
	if (get_string(body, "mode", &s, MODE_ALLOWED, err, errlen))
		return -EINVAL;
	if (s) {
		if (!strcmp(s, "precopy")) {
			p->mode = MIGRATION_MODE_PRECOPY;
		} else if (!strcmp(s, "postcopy")) {
			p->mode = MIGRATION_MODE_POSTCOPY;
		} else if (!strcmp(s, "auto")) {
			p->mode = MIGRATION_MODE_AUTO;
		} else {
			snprintf(err, errlen, "'mode' must be " MODE_ALLOWED ", got '%.32s'", s);
			return -EINVAL;
		}
	}
	return 0;
}

const char *api_mode_name(enum migration_mode m)
{
	switch (m) {
	case MIGRATION_MODE_PRECOPY:
		return "precopy";
	case MIGRATION_MODE_POSTCOPY:
		return "postcopy";
	case MIGRATION_MODE_AUTO:
		return "auto";
	}
	return "unknown";
}

const char *api_state_name(enum migration_state s)
{
	switch (s) {
	case MIGRATION_NONE:
		return "none";
	case MIGRATION_SETUP:
		return "setup";
	case MIGRATION_PRECOPY:
		return "precopy";
	case MIGRATION_SWITCHOVER:
		return "switchover";
	case MIGRATION_POSTCOPY_ACTIVE:
		return API_STATE_POSTCOPY_ACTIVE;
	case MIGRATION_POSTCOPY_PAUSED:
		return API_STATE_POSTCOPY_PAUSED;
	case MIGRATION_COMPLETED:
		return "completed";
	case MIGRATION_FAILED:
		return "failed";
	case MIGRATION_CANCELLED:
		return "cancelled";
	}
	return "unknown";
}

const char *api_no_converge_name(enum migration_no_converge n)
{
	switch (n) {
	case MIGRATION_NO_CONVERGE_SWITCHOVER:
		return "switchover";
	case MIGRATION_NO_CONVERGE_FAIL:
		return "fail";
	}
	return "unknown";
}

/* One table drives both directions, so that they cannot disagree. */
enum field_kind { F_U64, F_UNSIGNED, F_BOOL, F_STRING };

struct progress_field {
	const char *name;
	enum field_kind kind;
	size_t offset;
	size_t size; /* F_STRING */
};

#define PF(field, kind)                                                                            \
	{ #field, kind, offsetof(struct migration_progress, field),                                \
	  sizeof(((struct migration_progress *)0)->field) }

static const struct progress_field progress_fields[] = {
	PF(pass, F_UNSIGNED),
	PF(bytes_sent, F_U64),
	PF(bytes_remaining, F_U64),
	PF(throughput_bps, F_U64),
	PF(dirty_rate_pps, F_U64),
	PF(expected_downtime_ms, F_U64),
	PF(pages_sent, F_U64),
	PF(zero_pages, F_U64),
	PF(skipped_pages, F_U64),
	PF(total_ms, F_U64),
	PF(downtime_ms, F_U64),
	PF(downtime_us, F_U64),
	PF(downtime_ack_us, F_U64),
	PF(blackout_pause_us, F_U64),
	PF(blackout_send_us, F_U64),
	PF(blackout_state_us, F_U64),
	PF(blackout_ack_us, F_U64),
	PF(target_restore_us, F_U64),
	PF(setup_ms, F_U64),
	PF(harvest_us_last, F_U64),
	PF(harvest_us_final, F_U64),
	PF(harvest_us_total, F_U64),
	PF(harvest_threads, F_UNSIGNED),
	PF(manual_protect, F_BOOL),
	PF(initially_set, F_BOOL),
	PF(sparse_guest, F_BOOL),
	PF(converged, F_BOOL),
	PF(mode_used, F_STRING),
	PF(bitmap_raw_bytes, F_U64),
	PF(bitmap_bytes, F_U64),
	PF(bitmap_send_us, F_U64),
	PF(postcopy_pages, F_U64),
	PF(pages_requested, F_U64),
	PF(pages_pushed, F_U64),
	PF(all_arrived_ms, F_U64),
	PF(fault_p50_us, F_U64),
	PF(fault_p99_us, F_U64),
	PF(fault_max_us, F_U64),
	PF(faults, F_U64),
	PF(resumes, F_UNSIGNED),
	PF(error, F_STRING),
};

#define NFIELDS (sizeof(progress_fields) / sizeof(progress_fields[0]))

cJSON *api_progress_to_json(const struct migration_progress *p, const char *state)
{
	cJSON *j = cJSON_CreateObject();
	const char *base = (const char *)p;

	if (!j || !cJSON_AddStringToObject(j, "state", state ? state : "unknown"))
		goto fail;
	for (size_t i = 0; i < NFIELDS; i++) {
		const struct progress_field *f = &progress_fields[i];
		const void *v = base + f->offset;
		cJSON *ok = NULL;

		switch (f->kind) {
		case F_U64:
			ok = cJSON_AddNumberToObject(j, f->name, (double)*(const uint64_t *)v);
			break;
		case F_UNSIGNED:
			ok = cJSON_AddNumberToObject(j, f->name, *(const unsigned *)v);
			break;
		case F_BOOL:
			ok = cJSON_AddBoolToObject(j, f->name, *(const bool *)v);
			break;
		case F_STRING: {
			char buf[256];

			/* the engine's buffers are NUL-terminated; do not trust it blindly */
			snprintf(buf, sizeof(buf), "%.*s", (int)f->size, (const char *)v);
			ok = cJSON_AddStringToObject(j, f->name, buf);
			break;
		}
		}
		if (!ok)
			goto fail;
	}
	return j;
fail:
	cJSON_Delete(j);
	return NULL;
}

int api_progress_from_json(const cJSON *j, struct migration_progress *out, char *state,
			   size_t statelen)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "state");
	char *base = (char *)out;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(j) || !cJSON_IsString(st))
		return -EINVAL;
	snprintf(state, statelen, "%s", st->valuestring);
	for (size_t i = 0; i < NFIELDS; i++) {
		const struct progress_field *f = &progress_fields[i];
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, f->name);
		void *dst = base + f->offset;
		uint64_t u = 0;

		switch (f->kind) {
		case F_U64:
			if (!api_json_get_u64(j, f->name, &u))
				*(uint64_t *)dst = u;
			break;
		case F_UNSIGNED:
			if (!api_json_get_u64(j, f->name, &u) && u <= 0xffffffffu)
				*(unsigned *)dst = (unsigned)u;
			break;
		case F_BOOL:
			*(bool *)dst = cJSON_IsTrue(v);
			break;
		case F_STRING:
			if (cJSON_IsString(v))
				snprintf(dst, f->size, "%s", v->valuestring);
			break;
		}
	}
	return 0;
}
