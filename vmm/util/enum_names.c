/* SPDX-License-Identifier: Apache-2.0 */
/* enum_names.c - an enum's words both ways (enum_names.h). */
#include "enum_names.h"

#include <stdio.h>
#include <string.h>

const char *enum_name(struct enum_names t, unsigned v)
{
	return v < t.count && t.names[v] ? t.names[v] : "unknown";
}

int enum_value(struct enum_names t, const char *name)
{
	for (unsigned i = 0; name && i < t.count; i++)
		if (t.names[i] && !strcmp(t.names[i], name))
			return (int)i;
	return -1;
}

const char *enum_list(struct enum_names t, char *buf, size_t len)
{
	unsigned left = 0;
	size_t n = 0;

	for (unsigned i = 0; i < t.count; i++)
		left += t.names[i] != NULL;
	if (len)
		buf[0] = '\0';
	for (unsigned i = 0; i < t.count && n < len; i++) {
		if (!t.names[i])
			continue;
		left--;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", t.names[i],
				      !left	  ? ""
				      : left == 1 ? " or "
						  : ", ");
	}
	return buf;
}
