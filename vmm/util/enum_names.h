/* SPDX-License-Identifier: Apache-2.0 */
/*
 * enum_names.h - the words of an enum, both ways: one array of names per
 * enum, indexed by value (holes allowed), serves the config, the API and
 * every message that lists the choices. Pure functions, any thread.
 */
#ifndef VMM_ENUM_NAMES_H
#define VMM_ENUM_NAMES_H

#include <stddef.h>

struct enum_names {
	const char *const *names; /* [value] = name, NULL for a hole */
	unsigned count;
};

/* The table of a names array: ENUM_NAMES(workload_kind_names). */
#define ENUM_NAMES(arr) ((struct enum_names){(arr), (unsigned)(sizeof(arr) / sizeof((arr)[0]))})

/* The name of value v, or "unknown". */
const char *enum_name(struct enum_names t, unsigned v);

/* The value called name (case-sensitive), or -1. */
int enum_value(struct enum_names t, const char *name);

/* "a, b or c" into buf (truncated to len), for "expected ..." messages; returns buf. */
const char *enum_list(struct enum_names t, char *buf, size_t len);

#endif /* VMM_ENUM_NAMES_H */
