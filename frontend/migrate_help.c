/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migrate_help.c - what `vmm migrate` tells about itself: --help, with one
 * line per row of the parameter table (migration_params.h), and
 * --list-params, the table as JSON.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "migration.h"

static const char usage_head[] =
    "usage: vmm migrate --to HOST:PORT [--vm NAME | --api-socket PATH] [OPTIONS]\n"
    "       vmm migrate --resume --to HOST:PORT [--vm NAME | --api-socket PATH] [--json]\n"
    "       vmm migrate --status [--vm NAME | --api-socket PATH] [--json]\n"
    "       vmm migrate --cancel [--vm NAME | --api-socket PATH]\n"
    "       vmm migrate --recover [--to HOST:PORT] [--decide resume|run|discard]\n"
    "                   [--vm NAME | --api-socket PATH]\n"
    "       vmm migrate --list-params\n"
    "\n"
    "Live-migrates a running VM to a target started with `vmm run --incoming`.\n"
    "Exits 0 once the migration has completed (the target committed),\n"
    "1 when it failed or was cancelled (the VM keeps running on the source),\n"
    "2 on a bad command line, 3 when a postcopy migration paused (its connection\n"
    "broke: the VM runs on the target, which still lacks pages; finish it with\n"
    "--resume), 4 when the switchover's outcome is unknown (both sides keep the\n"
    "VM paused; settle it with --recover). Ctrl-C cancels the migration (not once\n"
    "in postcopy).\n"
    "\n"
    "  --vm NAME               the VM's name (default \"vmm\"): its default socket\n"
    "  --api-socket PATH       the VM's API socket instead\n"
    "  --to HOST:PORT          the target's migration address\n";

static const char usage_tail[] =
    "  --json                  print the final progress object as JSON\n"
    "  --progress              a progress line a second on stderr even when it is\n"
    "                          not a terminal (on a terminal one line is rewritten)\n"
    "  --status                print the progress of the current/last migration\n"
    "  --cancel                cancel the running migration\n"
    "  --resume                finish a paused postcopy migration: reconnect to the\n"
    "                          target at --to and follow it like a migration\n"
    "  --recover               settle a switchover whose outcome is unknown\n"
    "                          (state switchover-unknown): on the source, ask the\n"
    "                          target (at --to, default the migration's) who runs\n"
    "                          the VM and finish the commit\n"
    "  --decide resume         with --recover on the source: the target is known to\n"
    "                          be gone; resume the VM here without asking\n"
    "  --decide run|discard    with --recover on the target (its socket is\n"
    "                          <name>.sock.incoming): the source is known to be gone\n"
    "                          (run) or to run the VM (discard); run also ends an\n"
    "                          awaiting-release target's wait for a lost RELEASE\n"
    "  --list-params           the parameter table as JSON: name, option, type,\n"
    "                          range, default (docs/api.md)\n"
    "  -h, --help              this text\n";

#define USAGE_COL 26 /* where an option's text starts */
#define USAGE_END 80

/* "  --flag ARG" and its help with the range and default, wrapped at USAGE_END. */
static void print_param_usage(FILE *f, const struct migration_param *d)
{
	char text[512], head[64];
	int n = snprintf(text, sizeof(text), "%s", d->help);
	int col;
	const char *w;

	if (d->kind == MP_U64 || d->kind == MP_UINT || d->kind == MP_POW2)
		n += snprintf(text + n, sizeof(text) - (size_t)n, ", %llu..%llu",
			      (unsigned long long)d->min, (unsigned long long)d->max);
	if (d->kind == MP_ENUM)
		snprintf(text + n, sizeof(text) - (size_t)n, " (default %s)", d->names[d->def]);
	else if (d->kind == MP_COMPRESS)
		snprintf(text + n, sizeof(text) - (size_t)n, " (default zstd:%llu)",
			 (unsigned long long)d->def);
	else if (d->kind != MP_BOOL && d->def >= d->min)
		snprintf(text + n, sizeof(text) - (size_t)n, " (default %llu)",
			 (unsigned long long)d->def);
	col = snprintf(head, sizeof(head), "  --%s%s%s", d->flag, d->arg[0] ? " " : "", d->arg);
	fputs(head, f);
	if (col >= USAGE_COL - 1) {
		fputc('\n', f);
		col = 0;
	}
	for (w = text; *w;) {
		size_t len = strcspn(w, " ");

		if (col > USAGE_COL && col + 1 + (int)len > USAGE_END) {
			fputc('\n', f);
			col = 0;
		}
		if (col < USAGE_COL) {
			col += fprintf(f, "%*s", USAGE_COL - col, "");
		} else {
			fputc(' ', f);
			col++;
		}
		col += fprintf(f, "%.*s", (int)len, w);
		w += len;
		w += strspn(w, " ");
	}
	fputc('\n', f);
}

void migrate_usage(FILE *f)
{
	fputs(usage_head, f);
	for (size_t i = 0; i < migration_param_count; i++)
		print_param_usage(f, &migration_param_table[i]);
	fputs(usage_tail, f);
}

/* An exact integer member (cJSON's doubles would round 2^53's neighbours). */
static bool add_exact(cJSON *o, const char *name, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	return cJSON_AddRawToObject(o, name, num) != NULL;
}

/* One row as JSON, typed as the API takes it (docs/openapi.json's MigrateRequest). */
static bool param_json(cJSON *o, const struct migration_param *d)
{
	char flag[64], level[32];
	cJSON *names;

	snprintf(flag, sizeof(flag), "--%s", d->flag);
	if (!cJSON_AddStringToObject(o, "name", d->name) ||
	    !cJSON_AddStringToObject(o, "option", flag) ||
	    !cJSON_AddStringToObject(o, "help", d->help))
		return false;
	switch (d->kind) {
	case MP_BOOL:
		return cJSON_AddStringToObject(o, "type", "boolean") &&
		       cJSON_AddBoolToObject(o, "default", d->def != 0);
	case MP_COMPRESS:
		snprintf(level, sizeof(level), "zstd:%llu", (unsigned long long)d->def);
		return cJSON_AddStringToObject(o, "type", "string") &&
		       cJSON_AddStringToObject(o, "default", level) &&
		       add_exact(o, "maximum_level", d->max);
	case MP_ENUM:
		names = cJSON_AddArrayToObject(o, "enum");
		for (uint64_t v = d->min; names && v <= d->max; v++)
			if (!cJSON_AddItemToArray(names, cJSON_CreateString(d->names[v])))
				return false;
		return names && cJSON_AddStringToObject(o, "type", "string") &&
		       cJSON_AddStringToObject(o, "default", d->names[d->def]);
	default:
		return cJSON_AddStringToObject(o, "type", "integer") &&
		       add_exact(o, "minimum", d->min) && add_exact(o, "maximum", d->max) &&
		       (d->def < d->min ? cJSON_AddNullToObject(o, "default") != NULL
					: add_exact(o, "default", d->def)) &&
		       (d->kind != MP_POW2 || cJSON_AddTrueToObject(o, "power_of_two"));
	}
}

/* `--list-params`: the table, for people, scripts and lint.openapi. */
int migrate_list_params(void)
{
	cJSON *a = cJSON_CreateArray();
	char *text = NULL;

	for (size_t i = 0; a && i < migration_param_count; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(a, o) ||
		    !param_json(o, &migration_param_table[i])) {
			cJSON_Delete(a);
			a = NULL;
		}
	}
	text = a ? cJSON_Print(a) : NULL;
	cJSON_Delete(a);
	if (!text) {
		fprintf(stderr, "vmm migrate: out of memory\n");
		return 1;
	}
	puts(text);
	free(text);
	return -1;
}
