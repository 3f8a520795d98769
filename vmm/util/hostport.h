/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostport.h - the one parser of "host:port" addresses, used by the CLI,
 * the API and the migration transport alike, so that what one accepts the
 * others accept too.
 *
 * Accepted: "name:port", "1.2.3.4:port", "[v6addr]:port". The host is not
 * empty; the port is 1-5 decimal digits with a value 1..65535.
 *
 * A migration may also go to a vmm on this host through a UNIX socket:
 * "unix:PATH", PATH not empty and shorter than PATH_MAX. hostport_check()
 * accepts both forms; hostport_split() only host:port.
 */
#ifndef VMM_UTIL_HOSTPORT_H
#define VMM_UTIL_HOSTPORT_H

#include <stddef.h>

#define HOSTPORT_HOST_MAX 256 /* bytes, with the NUL */
#define HOSTPORT_PORT_MAX 6

/* Splits addr; host/port are NUL-terminated. Returns 0 or -EINVAL. */
int hostport_split(const char *addr, char *host, size_t hostlen, char *port, size_t portlen);

/* 0 when addr is a valid "host:port" or "unix:PATH", else -EINVAL. */
int hostport_check(const char *addr);

#define HOSTPORT_UNIX_PREFIX "unix:"
/* PATH of a "unix:PATH" address (not checked), or NULL for any other string. */
const char *hostport_unix_path(const char *addr);

#endif /* VMM_UTIL_HOSTPORT_H */
