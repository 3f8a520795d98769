/* SPDX-License-Identifier: Apache-2.0 */
#include "hostport.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

int hostport_split(const char *addr, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon, *h = addr;
	size_t hl, pl;
	unsigned long v;

	if (!addr)
		return -EINVAL;
	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		h = addr + 1;
		hl = (size_t)(end - h);
		colon = end + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - addr);
		/* An unbracketed IPv6 address is ambiguous: "::1:7000". */
		if (memchr(addr, ':', hl))
			return -EINVAL;
	}
	pl = strlen(colon + 1);
	if (hl == 0 || hl >= hostlen || pl == 0 || pl > 5 || pl >= portlen)
		return -EINVAL;
	for (const char *p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	v = strtoul(colon + 1, NULL, 10);
	if (v == 0 || v > 65535)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	memcpy(port, colon + 1, pl + 1);
	return 0;
}

const char *hostport_unix_path(const char *addr)
{
	size_t n = strlen(HOSTPORT_UNIX_PREFIX);

	return addr && !strncmp(addr, HOSTPORT_UNIX_PREFIX, n) ? addr + n : NULL;
}

int hostport_check(const char *addr)
{
	char host[HOSTPORT_HOST_MAX], port[HOSTPORT_PORT_MAX];
	const char *path = hostport_unix_path(addr);

	if (path)
		return path[0] && strlen(path) < PATH_MAX ? 0 : -EINVAL;
	return hostport_split(addr, host, sizeof(host), port, sizeof(port));
}
