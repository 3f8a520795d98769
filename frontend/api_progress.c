/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_progress.c - the progress object of the control API (docs/api.md,
 * "the progress object"): struct migration_progress to JSON and back (the
 * reply of GET /api/v1/vm/migrate, the events stream's lines, and what
 * `vmm migrate` reads). Pure functions over cJSON values.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api_json.h"

/*
 * The members come from MIGRATION_PROGRESS (migration_progress.h), the
 * list the struct is declared from: its U64, UINT, BOOL and STR rows are
 * expanded here in both directions, in the list's order, so neither
 * direction can miss a field or disagree with the other. The OWN rows (the state's name,
 * params, the nullable members) are the functions below; a row's OWN
 * expansion here is empty.
 */
#define PROGRESS_SKIP_OWN(name, type, f, dim)

static bool add_u64(cJSON *j, const char *name, uint64_t v)
{
	return cJSON_AddNumberToObject(j, name, (double)v) != NULL;
}

static bool add_bool(cJSON *j, const char *name, bool v)
{
	return cJSON_AddBoolToObject(j, name, v) != NULL;
}

/* The engine's buffers are NUL-terminated; do not trust it blindly. */
static bool add_str(cJSON *j, const char *name, const char *v, size_t size)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%.*s", (int)size, v);
	return cJSON_AddStringToObject(j, name, buf) != NULL;
}

/*
 * The target's CAPS answer (docs/migration-protocol.md): "target_postcopy"
 * null until it came, then true / false, and "target_postcopy_reason".
 */
static bool add_target_caps(cJSON *j, const struct migration_progress *p)
{
	const char *r = p->target_postcopy_reason;
	int n = (int)strnlen(r, sizeof(p->target_postcopy_reason));
	char buf[sizeof(p->target_postcopy_reason)];
	cJSON *v = p->target_postcopy < 0
		       ? cJSON_AddNullToObject(j, "target_postcopy")
		       : cJSON_AddBoolToObject(j, "target_postcopy", p->target_postcopy > 0);

	snprintf(buf, sizeof(buf), "%.*s", n, r);
	return v && cJSON_AddStringToObject(j, "target_postcopy_reason", buf);
}

static void read_target_caps(const cJSON *j, struct migration_progress *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "target_postcopy");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "target_postcopy_reason");

	out->target_postcopy = cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
	if (cJSON_IsString(r))
		snprintf(out->target_postcopy_reason, sizeof(out->target_postcopy_reason), "%s",
			 r->valuestring);
}

/* A number, or null while it does not apply (`known` false). */
static bool add_u64_or_null(cJSON *j, const char *name, bool known, uint64_t v)
{
	return known ? add_u64(j, name, v) : cJSON_AddNullToObject(j, name) != NULL;
}

/* The parameters in effect, under the migrate request's own names: the table's. */
static cJSON *params_to_json(const struct migration_params *p)
{
	cJSON *j = cJSON_CreateObject();
	bool ok = j && cJSON_AddStringToObject(j, "to", p->to);

	for (size_t i = 0; ok && i < migration_param_count; i++) {
		const struct migration_param *d = &migration_param_table[i];
		uint64_t v = migration_param_get(p, d);
		char compress[32];

		switch (d->kind) {
		case MP_BOOL:
			ok = add_bool(j, d->name, v != 0);
			break;
		case MP_ENUM:
			ok = cJSON_AddStringToObject(j, d->name, migration_param_value_name(d, v));
			break;
		case MP_COMPRESS:
			if (v)
				snprintf(compress, sizeof(compress), "zstd:%llu",
					 (unsigned long long)v);
			else
				snprintf(compress, sizeof(compress), "none");
			ok = cJSON_AddStringToObject(j, d->name, compress);
			break;
		default:
			ok = add_u64(j, d->name, v);
		}
	}
	if (!ok) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/*
 * The members that are not plain numbers: the dirty rate (null until the
 * second harvest), converged (null when it does not apply) and params.
 */
static bool add_specials(cJSON *j, const struct migration_progress *p)
{
	cJSON *params;

	if (!add_u64_or_null(j, "dirty_rate_pages_per_s", p->dirty_rate_known,
			     p->dirty_rate_pages_per_s) ||
	    /* a zeroed record (no migration, a target's) has no switchover reason */
	    !(p->converged < 0 || !p->switchover_reason[0]
		  ? cJSON_AddNullToObject(j, "converged")
		  : cJSON_AddBoolToObject(j, "converged", p->converged > 0)))
		return false;
	/* "none" (no migration) has no parameters */
	if (!p->params.to[0])
		return true;
	params = params_to_json(&p->params);
	return params && cJSON_AddItemToObject(j, "params", params);
}

static void read_specials(const cJSON *j, struct migration_progress *out)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "converged");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "params");
	char err[256];

	out->dirty_rate_known =
	    !api_json_get_u64(j, "dirty_rate_pages_per_s", &out->dirty_rate_pages_per_s);
	out->converged = cJSON_IsBool(c) ? cJSON_IsTrue(c) : -1;
	migration_params_defaults(&out->params);
	if (cJSON_IsObject(params) && api_params_from_json(params, &out->params, err, sizeof(err)))
		migration_params_defaults(&out->params); /* a server we do not understand */
}

cJSON *api_progress_to_json(const struct migration_progress *p, const char *state)
{
	cJSON *j = cJSON_CreateObject();

	if (!j || !cJSON_AddStringToObject(j, "state", state ? state : "unknown"))
		goto fail;
#define TO_NUM(name, f)                                                                            \
	if (!add_u64(j, #name, p->f))                                                              \
		goto fail;
#define TO_BOOL(name, f)                                                                           \
	if (!add_bool(j, #name, p->f))                                                             \
		goto fail;
#define TO_STR(name, f, size)                                                                      \
	if (!add_str(j, #name, p->f, sizeof(p->f)))                                                \
		goto fail;
	MIGRATION_PROGRESS(TO_NUM, TO_NUM, TO_BOOL, TO_STR, PROGRESS_SKIP_OWN)
#undef TO_NUM
#undef TO_BOOL
#undef TO_STR
	if (!add_target_caps(j, p) || !add_specials(j, p))
		goto fail;
	return j;
fail:
	cJSON_Delete(j);
	return NULL;
}

static void read_u64(const cJSON *j, const char *name, uint64_t *out)
{
	uint64_t u;

	if (!api_json_get_u64(j, name, &u))
		*out = u;
}

static void read_uint(const cJSON *j, const char *name, unsigned *out)
{
	uint64_t u;

	if (!api_json_get_u64(j, name, &u) && u <= UINT_MAX)
		*out = (unsigned)u;
}

static void read_bool(const cJSON *j, const char *name, bool *out)
{
	*out = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, name));
}

static void read_str(const cJSON *j, const char *name, char *out, size_t size)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);

	if (cJSON_IsString(v))
		snprintf(out, size, "%s", v->valuestring);
}

int api_progress_from_json(const cJSON *j, struct migration_progress *out, char *state,
			   size_t statelen)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "state");

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(j) || !cJSON_IsString(st))
		return -EINVAL;
	snprintf(state, statelen, "%s", st->valuestring);
	if (migration_state_from_name(st->valuestring, &out->state))
		out->state = MIGRATION_NONE;
#define FROM_U64(name, f)	read_u64(j, #name, &out->f);
#define FROM_UINT(name, f)	read_uint(j, #name, &out->f);
#define FROM_BOOL(name, f)	read_bool(j, #name, &out->f);
#define FROM_STR(name, f, size) read_str(j, #name, out->f, sizeof(out->f));
	MIGRATION_PROGRESS(FROM_U64, FROM_UINT, FROM_BOOL, FROM_STR, PROGRESS_SKIP_OWN)
#undef FROM_U64
#undef FROM_UINT
#undef FROM_BOOL
#undef FROM_STR
	read_target_caps(j, out);
	read_specials(j, out);
	return 0;
}
