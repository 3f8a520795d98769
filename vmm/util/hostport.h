/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostport.h - the one parser of "host:port" addresses, used by the CLI,
 * the API and the migration transport alike, so that what one accepts the
 * others accept too.
 *
 * Accepted: "name:port", "1.2.3.4:port", "[v6addr]:port". The host is not
 * empty; the port is 1-5 decimal digits with a value 1..65535.
 */
#ifndef VMM_UTIL_HOSTPORT_H
#define VMM_UTIL_HOSTPORT_H

#include <stddef.h>

#define HOSTPORT_HOST_MAX 256 /* bytes, with the NUL */
#define HOSTPORT_PORT_MAX 6

/* Splits addr; host/port are NUL-terminated. Returns 0 or -EINVAL. */
int hostport_split(const char *addr, char *host, size_t hostlen, char *port, size_t portlen);

/* 0 when addr is a valid "host:port", else -EINVAL. */
int hostport_check(const char *addr);

#endif /* VMM_UTIL_HOSTPORT_H */
