/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_decode.c - a state file decoded and checked (snap_codec.h): in
 * pieces as a reader streams it (snap_state_head(), snap_state_section(),
 * snap_state_finish()), or whole from one buffer (snap_state_decode(),
 * the same three pieces over it). One set of checks for both, so a restore
 * that keeps only some sections refuses exactly what a whole read refuses.
 */
#include <string.h>

#include "crc32c.h"
#include "le.h"
#include "snap_internal.h"

struct snap_sec snap_view_sec(const struct snap_view *v, uint32_t i)
{
	struct snap_sec s;

	snap_sec_decode(v->table + (size_t)i * SNAP_SEC_LEN, &s);
	return s;
}

int snap_view_find(const struct snap_view *v, uint32_t type, uint32_t instance,
		   struct snap_sec *out)
{
	for (uint32_t i = 0; i < v->h.nsections; i++) {
		struct snap_sec s = snap_view_sec(v, i);

		if (s.type == type && s.instance == instance) {
			*out = s;
			return 0;
		}
	}
	return -ENOENT;
}

void snap_view_vcpu(const struct snap_view *v, uint32_t index, const uint8_t **blob, uint32_t *len)
{
	struct snap_sec s = snap_view_sec(v, v->vcpu_first + index);

	*blob = v->vcpus + (s.offset - v->vcpus_off);
	*len = (uint32_t)s.len;
}

bool snap_sec_is_read(const struct snap_sec *s)
{
	return snap_sec_name(s->type) && s->version == SNAP_SEC_VERSION &&
	       !(s->flags & ~SNAP_SEC_REQUIRED);
}

uint64_t snap_sec_len_max(const struct snap_header *h, uint32_t type)
{
	switch (type) {
	case SNAP_SEC_LAYOUT:
		return (uint64_t)h->nslots * SNAP_SLOT_LEN;
	case SNAP_SEC_CONFIG:
		return MIG_VM_DESC_MAX - 1;
	case SNAP_SEC_CPU:
		return SNAP_CPU_HDR_LEN + (uint64_t)SNAP_CPU_WORDS_MAX * SNAP_CPU_WORD_LEN;
	case SNAP_SEC_VM_STATE:
	case SNAP_SEC_VCPU_STATE:
		return MIG_STATE_MAX;
	case SNAP_SEC_PARENT_PATH:
		return SNAP_PATH_MAX;
	}
	return UINT64_MAX; /* INDEX: its bitmaps follow from LAYOUT, read later */
}

static uint32_t limit32(uint32_t ctx, uint32_t proto)
{
	return ctx && ctx < proto ? ctx : proto;
}

/* A known section's length within [min, max]. */
static int sec_len(const struct snap_sec *s, uint64_t min, uint64_t max, char *err, size_t errlen)
{
	if (s->len < min || s->len > max)
		return proto_refuse(err, errlen,
				    "snapshot state: section %s of %llu bytes (%llu..%llu)",
				    snap_sec_name(s->type), (unsigned long long)s->len,
				    (unsigned long long)min, (unsigned long long)max);
	return 0;
}

static int check_text(const struct snap_sec *s, const uint8_t *p, char *err, size_t errlen)
{
	for (uint64_t i = 0; i < s->len; i++)
		if (!p[i])
			return proto_refuse(err, errlen,
					    "snapshot state: section %s has a NUL byte at %llu",
					    snap_sec_name(s->type), (unsigned long long)i);
	return 0;
}

/* The table: each entry's place and order (the padding and the CRCs come with the sections). */
static int check_table(const struct snap_view *v, char *err, size_t errlen)
{
	uint64_t end = SNAP_HEADER_LEN + (uint64_t)v->h.nsections * SNAP_SEC_LEN;
	struct snap_sec prev = {0};

	if (crc32c(0, v->table, (size_t)v->h.nsections * SNAP_SEC_LEN) != v->h.table_crc)
		return proto_refuse(err, errlen,
				    "snapshot state: section table CRC mismatch (corrupted)");
	for (uint32_t i = 0; i < v->h.nsections; i++) {
		struct snap_sec s = snap_view_sec(v, i);
		uint64_t want = snap_align(end, SNAP_SEC_ALIGN);

		if (s.offset != want || s.len > v->h.state_len - s.offset)
			return proto_refuse(
			    err, errlen,
			    "snapshot state: section %u (type 0x%x) at [%llu, +%llu), "
			    "expected at %llu within %llu bytes",
			    i, s.type, (unsigned long long)s.offset, (unsigned long long)s.len,
			    (unsigned long long)want, (unsigned long long)v->h.state_len);
		if (i &&
		    (s.type < prev.type || (s.type == prev.type && s.instance <= prev.instance)))
			return proto_refuse(
			    err, errlen,
			    "snapshot state: section %u (type 0x%x instance %u) out of "
			    "order or repeated",
			    i, s.type, s.instance);
		end = s.offset + s.len;
		prev = s;
	}
	if (end != v->h.state_len)
		return proto_refuse(err, errlen,
				    "snapshot state: %llu bytes after the last section",
				    (unsigned long long)(v->h.state_len - end));
	return 0;
}

/*
 * Each entry read or skippable, and a read one no longer than its type
 * allows: decided on the table, before a byte of a section is read.
 */
static int check_kinds(const struct snap_view *v, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < v->h.nsections; i++) {
		struct snap_sec s = snap_view_sec(v, i);
		const char *name = snap_sec_name(s.type);
		int ret;

		if (snap_sec_is_read(&s)) {
			if (s.type == SNAP_SEC_LAYOUT)
				ret = snap_layout_len_check(&v->h, s.len, err, errlen);
			else if (s.type == SNAP_SEC_CPU)
				ret = s.len > snap_sec_len_max(&v->h, s.type)
					  ? proto_refuse(err, errlen,
							 "snapshot state: CPU of %llu bytes for "
							 "more than %u words",
							 (unsigned long long)s.len,
							 SNAP_CPU_WORDS_MAX)
					  : 0;
			else if (s.type != SNAP_SEC_INDEX)
				ret = sec_len(&s, 1, snap_sec_len_max(&v->h, s.type), err, errlen);
			else
				ret = 0;
			if (ret)
				return ret;
			continue;
		}
		if (s.flags & SNAP_SEC_REQUIRED)
			return proto_refuse(err, errlen,
					    "snapshot state: required section %s%s0x%x version %u "
					    "(flags 0x%x) is unknown to this vmm (format %u.%u)",
					    name ? name : "", name ? " " : "", s.type, s.version,
					    s.flags, SNAP_VERSION_MAJOR, SNAP_VERSION_MINOR);
		if (!name && s.len > SNAP_SECTION_MAX)
			return proto_refuse(err, errlen,
					    "snapshot state: section 0x%x of %llu bytes exceeds %u",
					    s.type, (unsigned long long)s.len, SNAP_SECTION_MAX);
	}
	return 0;
}

int snap_state_head(struct snap_decoder *d, struct snap_view *v, const uint8_t *p, size_t len,
		    uint64_t file_len, const struct snap_limits *lim, char *err, size_t errlen)
{
	const struct snap_limits none = {0};
	int ret;

	if (!lim)
		lim = &none;
	memset(d, 0, sizeof(*d));
	memset(v, 0, sizeof(*v));
	d->v = v;
	ret = snap_header_decode(p, len, &v->h, err, errlen);
	if (ret)
		return ret;
	if (v->h.nslots > limit32(lim->max_slots, MIG_SLOTS_MAX) ||
	    v->h.nvcpus > limit32(lim->max_vcpus, MIG_VCPUS_MAX))
		return proto_refuse(
		    err, errlen,
		    "snapshot: %u memory slots and %u vCPUs, this vmm allows %u and "
		    "%u",
		    v->h.nslots, v->h.nvcpus, limit32(lim->max_slots, MIG_SLOTS_MAX),
		    limit32(lim->max_vcpus, MIG_VCPUS_MAX));
	if (lim->max_state_len && v->h.state_len > lim->max_state_len)
		return proto_refuse(
		    err, errlen, "snapshot state: %llu bytes, this vmm reads at most %llu",
		    (unsigned long long)v->h.state_len, (unsigned long long)lim->max_state_len);
	if (file_len != v->h.state_len)
		return proto_refuse(
		    err, errlen, "snapshot state: %s: %llu bytes, the header says %llu",
		    file_len < v->h.state_len ? "truncated" : "trailing bytes",
		    (unsigned long long)file_len, (unsigned long long)v->h.state_len);
	d->end = SNAP_HEADER_LEN + (uint64_t)v->h.nsections * SNAP_SEC_LEN;
	if (len < d->end)
		return -EINVAL; /* the caller's: the table is not all there */
	v->table = p + SNAP_HEADER_LEN;
	ret = check_table(v, err, errlen);
	return ret ? ret : check_kinds(v, err, errlen);
}

/* One section whose type and version this build reads. */
static int decode_known(struct snap_decoder *d, uint32_t i, const struct snap_sec *s,
			const uint8_t *p, char *err, size_t errlen)
{
	struct snap_view *v = d->v;
	int ret;

	if (s->type != SNAP_SEC_VCPU_STATE && s->instance)
		return proto_refuse(err, errlen, "snapshot state: section %s with instance %u",
				    snap_sec_name(s->type), s->instance);
	switch (s->type) {
	case SNAP_SEC_LAYOUT:
		return snap_layout_decode(v, p, s->len, err, errlen);
	case SNAP_SEC_INDEX:
		d->idx = *s; /* decoded last: it needs LAYOUT */
		d->index = p;
		return 0;
	case SNAP_SEC_CONFIG:
		ret = sec_len(s, 1, MIG_VM_DESC_MAX - 1, err, errlen);
		if (!ret)
			ret = check_text(s, p, err, errlen);
		v->config = (const char *)p;
		v->config_len = (uint32_t)s->len;
		return ret;
	case SNAP_SEC_CPU:
		return snap_cpu_decode(v, p, s->len, err, errlen);
	case SNAP_SEC_VM_STATE:
		v->vm_state = p;
		v->vm_state_len = (uint32_t)s->len;
		return sec_len(s, 1, MIG_STATE_MAX, err, errlen);
	case SNAP_SEC_VCPU_STATE:
		if (s->instance != d->nvcpu || s->instance >= v->h.nvcpus)
			return proto_refuse(
			    err, errlen,
			    "snapshot state: VCPU_STATE for vCPU %u, expected vCPU %u "
			    "of %u",
			    s->instance, d->nvcpu, v->h.nvcpus);
		if (!d->nvcpu++) {
			v->vcpu_first = i;
			v->vcpus = p;
			v->vcpus_off = s->offset;
		}
		return sec_len(s, 1, MIG_STATE_MAX, err, errlen);
	case SNAP_SEC_PARENT_PATH:
		ret = sec_len(s, 1, SNAP_PATH_MAX, err, errlen);
		if (!ret)
			ret = check_text(s, p, err, errlen);
		v->parent_path = (const char *)p;
		v->parent_path_len = (uint32_t)s->len;
		return ret;
	}
	return -EINVAL; /* not reached: snap_sec_is_read() knows the type */
}

int snap_state_section(struct snap_decoder *d, const uint8_t *pad, uint32_t crc,
		       const uint8_t *payload, char *err, size_t errlen)
{
	struct snap_view *v = d->v;
	uint32_t i = d->next;
	struct snap_sec s;
	const char *name;

	if (i >= v->h.nsections)
		return -EINVAL;
	s = snap_view_sec(v, i);
	name = snap_sec_name(s.type);
	for (uint64_t b = 0; b < s.offset - d->end; b++)
		if (pad[b])
			return proto_refuse(err, errlen,
					    "snapshot state: padding before section %u is not "
					    "zero (corrupted)",
					    i);
	if (crc != s.crc)
		return proto_refuse(err, errlen,
				    "snapshot state: section %s%s0x%x instance %u: CRC "
				    "mismatch (corrupted)",
				    name ? name : "", name ? " " : "", s.type, s.instance);
	d->next++;
	d->end = s.offset + s.len;
	if (!snap_sec_is_read(&s)) {
		v->skipped++;
		return 0;
	}
	return payload ? decode_known(d, i, &s, payload, err, errlen) : -EINVAL;
}

int snap_state_finish(struct snap_decoder *d, char *err, size_t errlen)
{
	struct snap_view *v = d->v;

	if (d->next != v->h.nsections)
		return -EINVAL;
	if (!v->layout || !d->index || !v->config || !v->cpu || !v->vm_state)
		return proto_refuse(err, errlen, "snapshot state: missing section %s",
				    !v->layout	 ? "LAYOUT"
				    : !d->index	 ? "INDEX"
				    : !v->config ? "CONFIG"
				    : !v->cpu	 ? "CPU"
						 : "VM_STATE");
	if (d->nvcpu != v->h.nvcpus)
		return proto_refuse(err, errlen,
				    "snapshot state: missing section VCPU_STATE for vCPU %u",
				    d->nvcpu);
	return snap_index_decode(v, d->index, d->idx.len, err, errlen);
}

int snap_state_decode(const void *p, size_t len, const struct snap_limits *lim, struct snap_view *v,
		      char *err, size_t errlen)
{
	struct snap_decoder d;
	int ret = snap_state_head(&d, v, p, len, len, lim, err, errlen);

	if (ret)
		return ret;
	v->file = p;
	for (uint32_t i = 0; !ret && i < v->h.nsections; i++) {
		struct snap_sec s = snap_view_sec(v, i);

		ret = snap_state_section(&d, v->file + d.end, crc32c(0, v->file + s.offset, s.len),
					 v->file + s.offset, err, errlen);
	}
	return ret ? ret : snap_state_finish(&d, err, errlen);
}
