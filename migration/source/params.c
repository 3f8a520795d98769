/* SPDX-License-Identifier: Apache-2.0 */
/*
 * params.c - the migration parameters as data (migration_params.h): the
 * table made from MIGRATION_PARAMS, the defaults and the checks. Pure
 * functions, callable from any thread.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "enum_names.h"
#include "hostport.h"
#include "migration.h"

#define FIELD_SIZE(f) sizeof(((struct migration_params *)0)->f)

#define ROW(NAME, FIELD, KIND, DEF, MIN, MAX, FLAG, ARG, HELP, NAMES)                              \
	{.name = #NAME,                                                                            \
	 .kind = KIND,                                                                             \
	 .offset = offsetof(struct migration_params, FIELD),                                       \
	 .size = FIELD_SIZE(FIELD),                                                                \
	 .def = DEF,                                                                               \
	 .min = MIN,                                                                               \
	 .max = MAX,                                                                               \
	 .flag = FLAG,                                                                             \
	 .arg = ARG,                                                                               \
	 .help = HELP,                                                                             \
	 .names = (const char *const[])NAMES},
const struct migration_param migration_param_table[] = {MIGRATION_PARAMS(ROW)};
#undef ROW
const size_t migration_param_count =
    sizeof(migration_param_table) / sizeof(migration_param_table[0]);

/* An enum's names cover exactly its values; a field is one of the widths set() writes. */
#define CHECK_ROW(NAME, FIELD, KIND, DEF, MIN, MAX, FLAG, ARG, HELP, NAMES)                        \
	_Static_assert(KIND != MP_ENUM ||                                                          \
			   sizeof((const char *[])NAMES) / sizeof(char *) == (MAX) + 1,            \
		       #NAME ": one name per value");                                              \
	_Static_assert(FIELD_SIZE(FIELD) == 8 || FIELD_SIZE(FIELD) == 4 ||                         \
			   (KIND == MP_BOOL && FIELD_SIZE(FIELD) == sizeof(bool)),                 \
		       #NAME ": a field of 8, 4 or (a bool) 1 bytes");
MIGRATION_PARAMS(CHECK_ROW)
#undef CHECK_ROW

const struct migration_param *migration_param_find(const char *name)
{
	for (size_t i = 0; i < migration_param_count; i++)
		if (!strcmp(migration_param_table[i].name, name))
			return &migration_param_table[i];
	return NULL;
}

uint64_t migration_param_get(const struct migration_params *p, const struct migration_param *d)
{
	const char *f = (const char *)p + d->offset;
	uint64_t v8;
	uint32_t v4;
	bool b;

	if (d->size == 8) {
		memcpy(&v8, f, 8);
		return v8;
	}
	if (d->size == 4) {
		memcpy(&v4, f,
		       4); /* unsigned, int and enum fields; their values are never negative */
		return v4;
	}
	memcpy(&b, f, sizeof(b));
	return b;
}

static void put(struct migration_params *p, const struct migration_param *d, uint64_t v)
{
	char *f = (char *)p + d->offset;
	uint32_t v4 = (uint32_t)v;
	bool b = v != 0;

	if (d->size == 8)
		memcpy(f, &v, 8);
	else if (d->size == 4)
		memcpy(f, &v4, 4);
	else
		memcpy(f, &b, sizeof(b));
}

static bool allowed(const struct migration_param *d, uint64_t v)
{
	if (v < d->min || v > d->max)
		return false;
	return d->kind != MP_POW2 || !(v & (v - 1));
}

void migration_param_refusal(const struct migration_param *d, char *err, size_t errlen)
{
	switch (d->kind) {
	case MP_BOOL:
		snprintf(err, errlen, "'%s' must be true or false", d->name);
		return;
	case MP_COMPRESS:
		snprintf(err, errlen,
			 "'%s' must be \"none\", \"zstd\" or \"zstd:LEVEL\" with LEVEL an integer "
			 "from 1 to %llu",
			 d->name, (unsigned long long)d->max);
		return;
	case MP_ENUM: {
		int n = snprintf(err, errlen, "'%s' must be", d->name);

		for (uint64_t v = d->min; v <= d->max && n > 0 && (size_t)n < errlen; v++)
			n += snprintf(err + n, errlen - (size_t)n, "%s\"%s\"",
				      v == d->min   ? " "
				      : v == d->max ? " or "
						    : ", ",
				      d->names[v]);
		return;
	}
	default:
		snprintf(err, errlen, "'%s' must be %s from %llu to %llu", d->name,
			 d->kind == MP_POW2 ? "a power of two" : "an integer",
			 (unsigned long long)d->min, (unsigned long long)d->max);
	}
}

int migration_param_set(struct migration_params *p, const struct migration_param *d, uint64_t v,
			char *err, size_t errlen)
{
	if (!allowed(d, v)) {
		migration_param_refusal(d, err, errlen);
		return -EINVAL;
	}
	put(p, d, v);
	return 0;
}

const char *migration_param_value_name(const struct migration_param *d, uint64_t v)
{
	return d->kind == MP_ENUM && v <= d->max ? d->names[v] : "?";
}

int migration_param_value_of(const struct migration_param *d, const char *name, uint64_t *v)
{
	int i = d->kind == MP_ENUM
		    ? enum_value((struct enum_names){d->names, (unsigned)d->max + 1}, name)
		    : -1;

	if (i < (int)d->min)
		return -EINVAL;
	*v = (uint64_t)i;
	return 0;
}

bool migration_clear_chunk_valid(uint64_t pages)
{
	return allowed(migration_param_find("clear_chunk_pages"), pages);
}

void migration_params_defaults(struct migration_params *p)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < migration_param_count; i++)
		put(p, &migration_param_table[i], migration_param_table[i].def);
	/* The one default that depends on the host: a harvest thread per CPU. */
	p->harvest_threads = cpus > 0 ? (unsigned)cpus : 1;
	if (p->harvest_threads > MIGRATION_MAX_HARVEST_THREADS)
		p->harvest_threads = MIGRATION_MAX_HARVEST_THREADS;
}

int migration_params_check(const struct migration_params *p, char *err, size_t errlen)
{
	if (hostport_check(p->to)) {
		snprintf(err, errlen, "bad destination '%.200s' (expected host:port or unix:PATH)",
			 p->to);
		return -EINVAL;
	}
	for (size_t i = 0; i < migration_param_count; i++) {
		const struct migration_param *d = &migration_param_table[i];

		if (!allowed(d, migration_param_get(p, d))) {
			migration_param_refusal(d, err, errlen);
			return -EINVAL;
		}
	}
	return 0;
}
