/* SPDX-License-Identifier: Apache-2.0 */
/* codec_internal.h - for the codec's own files only: how they report a refusal. */
#ifndef VMM_MIGRATION_CODEC_INTERNAL_H
#define VMM_MIGRATION_CODEC_INTERNAL_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Formats the message into err (if any) and returns -EPROTO. */
static inline int __attribute__((format(printf, 3, 4)))
mig_refuse(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EPROTO;
}

#endif /* VMM_MIGRATION_CODEC_INTERNAL_H */
