/* SPDX-License-Identifier: Apache-2.0 */
/* snap_internal.h - for the snapshot codec's own files only. */
#ifndef VMM_SNAP_INTERNAL_H
#define VMM_SNAP_INTERNAL_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "proto_refuse.h"
#include "snap_codec.h"

static inline uint64_t snap_align(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* "LAYOUT", ... or NULL for a type this build does not know. */
const char *snap_sec_name(uint32_t type);

/* Payload checks of snap_sections.c, called by snap_decode.c. */
int snap_layout_len_check(const struct snap_header *h, uint64_t len, char *err, size_t errlen);
int snap_layout_decode(struct snap_view *v, const uint8_t *p, uint64_t len, char *err,
		       size_t errlen);
int snap_index_decode(struct snap_view *v, const uint8_t *p, uint64_t len, char *err,
		      size_t errlen);
int snap_cpu_decode(struct snap_view *v, const uint8_t *p, uint64_t len, char *err, size_t errlen);

#endif /* VMM_SNAP_INTERNAL_H */
