/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_sections.c - the config's sections: the machine's, and those of a
 * layer above (config_layer.h), which the machine knows only from that
 * layer's key table. Which sections a text may open, and their list for
 * the "unknown section" message, merged so that each table's order stays.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "config_keys.h"

/* The machine's sections, in the order messages list them. */
static const char *const section_names[] = {"vm",   "firmware", "workload", "migration",
					    "disk", "net",	"sandbox",  "snapshot"};
#define N_SECTIONS   (sizeof(section_names) / sizeof(section_names[0]))
#define ALL_SECTIONS 48 /* the machine's and a layer's, for a message */

static bool layer_has_section(const struct config_layer *host, const char *section)
{
	for (size_t i = 0; host && host->keys && i < host->nkeys; i++)
		if (strcmp(host->keys[i].section, section) == 0)
			return true;
	return false;
}

bool config_known_section(const struct config_layer *host, const char *section)
{
	for (size_t i = 0; i < N_SECTIONS; i++)
		if (strcmp(section, section_names[i]) == 0)
			return true;
	return layer_has_section(host, section);
}

/* Appends `name` to out[] unless it is there; returns the new count. */
static size_t add_once(const char **out, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(out[i], name) == 0)
			return n;
	if (n < ALL_SECTIONS)
		out[n++] = name;
	return n;
}

/*
 * Every section, both tables merged: a section both name (a shared
 * [migration]) anchors the merge, the layer's sections before it coming
 * just before it, so each table's order is kept ("vm, firmware, workload,
 * console, api, migration, ..., snapshot or log").
 */
static size_t all_sections(const struct config_layer *host, const char **out)
{
	const char *mine[ALL_SECTIONS];
	size_t nmine = 0, n = 0, next = 0;

	for (size_t i = 0; host && host->keys && i < host->nkeys; i++)
		nmine = add_once(mine, nmine, host->keys[i].section);
	for (size_t i = 0; i < N_SECTIONS; i++) {
		for (size_t j = next; j < nmine; j++) {
			if (strcmp(mine[j], section_names[i]) != 0)
				continue;
			while (next < j)
				n = add_once(out, n, mine[next++]);
			next = j + 1;
		}
		n = add_once(out, n, section_names[i]);
	}
	while (next < nmine)
		n = add_once(out, n, mine[next++]);
	return n;
}

/* Built from the tables, so that no message forgets a section. */
const char *config_sections_list(const struct config_layer *host, char *buf, size_t len)
{
	const char *names[ALL_SECTIONS];
	size_t count = all_sections(host, names), n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < count && n < len; i++) {
		const char *sep = i == 0 ? "" : i + 1 == count ? " or " : ", ";

		n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, names[i]);
	}
	return buf;
}
