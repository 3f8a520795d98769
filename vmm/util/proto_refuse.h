/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto_refuse.h - how a decoder of untrusted bytes (the wire's codec, the
 * snapshot codec) refuses: one line into err, -EPROTO returned. Any thread.
 */
#ifndef VMM_PROTO_REFUSE_H
#define VMM_PROTO_REFUSE_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Formats the message into err (if any: err may be NULL or errlen 0) and returns -EPROTO. */
static inline int __attribute__((format(printf, 3, 4)))
proto_refuse(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EPROTO;
}

#endif /* VMM_PROTO_REFUSE_H */
