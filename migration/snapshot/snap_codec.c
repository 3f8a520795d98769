/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_codec.c - the state file: its header, its section table, and the
 * whole file's layout, encoded and decoded field by field in little endian
 * (offsets as in docs/snapshot-format.md). The sections' payloads are
 * snap_sections.c's.
 */
#include <string.h>

#include "crc32c.h"
#include "le.h"
#include "snap_internal.h"

#define SNAP_HEADER_CRC_AT (SNAP_HEADER_LEN - 4)

const char *snap_sec_name(uint32_t type)
{
	switch (type) {
	case SNAP_SEC_LAYOUT:
		return "LAYOUT";
	case SNAP_SEC_INDEX:
		return "INDEX";
	case SNAP_SEC_CONFIG:
		return "CONFIG";
	case SNAP_SEC_CPU:
		return "CPU";
	case SNAP_SEC_VM_STATE:
		return "VM_STATE";
	case SNAP_SEC_VCPU_STATE:
		return "VCPU_STATE";
	case SNAP_SEC_PARENT_PATH:
		return "PARENT_PATH";
	default:
		return NULL;
	}
}

/* ---- Header ---- */

void snap_header_encode(uint8_t out[SNAP_HEADER_LEN], const struct snap_header *h)
{
	memset(out, 0, SNAP_HEADER_LEN);
	memcpy(out, SNAP_MAGIC, 8);
	le_put16(out + 8, h->version_major);
	le_put16(out + 10, h->version_minor);
	le_put32(out + 12, h->header_len);
	memcpy(out + 16, h->id.b, 16);
	memcpy(out + 32, h->parent.b, 16);
	le_put32(out + 48, h->flags);
	le_put32(out + 52, h->generation);
	le_put64(out + 56, h->memory);
	le_put32(out + 64, h->page_size);
	le_put32(out + 68, h->nslots);
	le_put32(out + 72, h->nvcpus);
	le_put32(out + 76, h->nsections);
	le_put64(out + 80, h->state_len);
	le_put64(out + 88, h->memory_file_len);
	le_put64(out + 96, h->created_ns);
	le_put32(out + 104, h->table_crc);
	/* 108..123 reserved */
	le_put32(out + SNAP_HEADER_CRC_AT, crc32c(0, out, SNAP_HEADER_CRC_AT));
}

int snap_header_decode(const uint8_t *p, size_t len, struct snap_header *h, char *err,
		       size_t errlen)
{
	bool diff;

	if (len < SNAP_HEADER_LEN)
		return proto_refuse(err, errlen,
				    "snapshot state: truncated: %zu bytes, the header needs %u",
				    len, SNAP_HEADER_LEN);
	if (memcmp(p, SNAP_MAGIC, 8))
		return proto_refuse(err, errlen, "snapshot state: not a vmm snapshot (bad magic)");
	h->version_major = le_get16(p + 8);
	h->version_minor = le_get16(p + 10);
	if (h->version_major != SNAP_VERSION_MAJOR)
		return proto_refuse(err, errlen,
				    "snapshot format version %u.%u, this vmm reads %u.x",
				    h->version_major, h->version_minor, SNAP_VERSION_MAJOR);
	h->header_len = le_get32(p + 12);
	if (h->header_len != SNAP_HEADER_LEN)
		return proto_refuse(err, errlen, "snapshot state: header of %u bytes, expected %u",
				    h->header_len, SNAP_HEADER_LEN);
	if (le_get32(p + SNAP_HEADER_CRC_AT) != crc32c(0, p, SNAP_HEADER_CRC_AT))
		return proto_refuse(err, errlen, "snapshot state: header CRC mismatch (corrupted)");
	memcpy(h->id.b, p + 16, 16);
	memcpy(h->parent.b, p + 32, 16);
	h->flags = le_get32(p + 48);
	h->generation = le_get32(p + 52);
	h->memory = le_get64(p + 56);
	h->page_size = le_get32(p + 64);
	h->nslots = le_get32(p + 68);
	h->nvcpus = le_get32(p + 72);
	h->nsections = le_get32(p + 76);
	h->state_len = le_get64(p + 80);
	h->memory_file_len = le_get64(p + 88);
	h->created_ns = le_get64(p + 96);
	h->table_crc = le_get32(p + 104);
	if (h->page_size != MIG_PAGE_SIZE || !h->nslots || h->nslots > MIG_SLOTS_MAX ||
	    !h->nvcpus || h->nvcpus > MIG_VCPUS_MAX || !h->nsections ||
	    h->nsections > SNAP_SECTIONS_MAX || !h->memory)
		return proto_refuse(err, errlen,
				    "snapshot state: bad header values (page size %u, %u slots, %u "
				    "vCPUs, %u sections, memory %llu)",
				    h->page_size, h->nslots, h->nvcpus, h->nsections,
				    (unsigned long long)h->memory);
	if (h->flags & ~SNAP_F_DIFF)
		return proto_refuse(err, errlen, "snapshot state: unknown header flags 0x%x",
				    h->flags);
	diff = h->flags & SNAP_F_DIFF;
	if (snap_id_is_zero(&h->id) || !memcmp(&h->id, &h->parent, sizeof(h->id)))
		return proto_refuse(err, errlen, "snapshot state: bad snapshot id");
	if (diff == snap_id_is_zero(&h->parent) || diff != (h->generation > 0) ||
	    h->generation > SNAP_LAYERS_MAX)
		return proto_refuse(err, errlen,
				    "snapshot state: %s with %s parent id and generation %u",
				    diff ? "diff layer" : "full snapshot",
				    snap_id_is_zero(&h->parent) ? "no" : "a", h->generation);
	if (h->state_len < SNAP_HEADER_LEN + (uint64_t)h->nsections * SNAP_SEC_LEN ||
	    h->state_len > SNAP_STATE_MAX)
		return proto_refuse(err, errlen,
				    "snapshot state: length %llu does not fit %u sections (at most "
				    "%llu)",
				    (unsigned long long)h->state_len, h->nsections,
				    (unsigned long long)SNAP_STATE_MAX);
	return 0;
}

/* ---- Section table ---- */

void snap_sec_encode(uint8_t out[SNAP_SEC_LEN], const struct snap_sec *s)
{
	le_put32(out, s->type);
	le_put16(out + 4, s->version);
	le_put16(out + 6, s->flags);
	le_put32(out + 8, s->instance);
	le_put32(out + 12, s->crc);
	le_put64(out + 16, s->offset);
	le_put64(out + 24, s->len);
}

void snap_sec_decode(const uint8_t in[SNAP_SEC_LEN], struct snap_sec *s)
{
	s->type = le_get32(in);
	s->version = le_get16(in + 4);
	s->flags = le_get16(in + 6);
	s->instance = le_get32(in + 8);
	s->crc = le_get32(in + 12);
	s->offset = le_get64(in + 16);
	s->len = le_get64(in + 24);
}

int snap_state_plan(struct snap_header *h, struct snap_sec_in *secs, uint32_t n)
{
	uint64_t off = SNAP_HEADER_LEN + (uint64_t)n * SNAP_SEC_LEN, end = off;

	if (!n || n > SNAP_SECTIONS_MAX)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		off = snap_align(end, SNAP_SEC_ALIGN);
		if (secs[i].sec.len > SNAP_STATE_MAX)
			return -EINVAL;
		secs[i].sec.offset = off;
		end = off + secs[i].sec.len;
		if (end > SNAP_STATE_MAX)
			return -EINVAL;
	}
	h->nsections = n;
	h->state_len = end;
	return 0;
}

uint32_t snap_table_encode(uint8_t *out, const struct snap_sec_in *secs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		snap_sec_encode(out + (size_t)i * SNAP_SEC_LEN, &secs[i].sec);
	return crc32c(0, out, (size_t)n * SNAP_SEC_LEN);
}

long long snap_state_encode(uint8_t *out, size_t outlen, struct snap_header *h,
			    struct snap_sec_in *secs, uint32_t n)
{
	int ret = snap_state_plan(h, secs, n);

	if (ret)
		return ret;
	if (outlen < h->state_len)
		return -ENOSPC;
	memset(out, 0, h->state_len);
	for (uint32_t i = 0; i < n; i++) {
		if (secs[i].sec.len)
			memcpy(out + secs[i].sec.offset, secs[i].payload, secs[i].sec.len);
		secs[i].sec.crc = crc32c(0, secs[i].payload, secs[i].sec.len);
	}
	h->table_crc = snap_table_encode(out + SNAP_HEADER_LEN, secs, n);
	snap_header_encode(out, h);
	return (long long)h->state_len;
}

/* ---- The whole file ---- */

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

	*blob = v->file + s.offset;
	*len = (uint32_t)s.len;
}

static uint32_t limit32(uint32_t ctx, uint32_t proto)
{
	return ctx && ctx < proto ? ctx : proto;
}

/* The table: placement, order, padding, CRCs. Payloads are checked after. */
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
		for (uint64_t b = end; b < want; b++)
			if (v->file[b])
				return proto_refuse(
				    err, errlen,
				    "snapshot state: padding before section %u is not "
				    "zero (corrupted)",
				    i);
		end = s.offset + s.len;
		prev = s;
	}
	if (end != v->h.state_len)
		return proto_refuse(err, errlen,
				    "snapshot state: %llu bytes after the last section",
				    (unsigned long long)(v->h.state_len - end));
	for (uint32_t i = 0; i < v->h.nsections; i++) {
		struct snap_sec s = snap_view_sec(v, i);
		const char *name = snap_sec_name(s.type);

		if (crc32c(0, v->file + s.offset, s.len) != s.crc)
			return proto_refuse(err, errlen,
					    "snapshot state: section %s%s0x%x instance %u: CRC "
					    "mismatch (corrupted)",
					    name ? name : "", name ? " " : "", s.type, s.instance);
	}
	return 0;
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

/* One section whose type and version this build reads. */
static int decode_known(struct snap_view *v, uint32_t i, const struct snap_sec *s, uint32_t *nvcpu,
			const struct snap_sec **index, char *err, size_t errlen)
{
	const uint8_t *p = v->file + s->offset;
	int ret;

	if (s->type != SNAP_SEC_VCPU_STATE && s->instance)
		return proto_refuse(err, errlen, "snapshot state: section %s with instance %u",
				    snap_sec_name(s->type), s->instance);
	switch (s->type) {
	case SNAP_SEC_LAYOUT:
		return snap_layout_decode(v, p, s->len, err, errlen);
	case SNAP_SEC_INDEX:
		*index = s; /* after the loop: it needs LAYOUT */
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
		if (s->instance != *nvcpu || s->instance >= v->h.nvcpus)
			return proto_refuse(
			    err, errlen,
			    "snapshot state: VCPU_STATE for vCPU %u, expected vCPU %u "
			    "of %u",
			    s->instance, *nvcpu, v->h.nvcpus);
		if (!(*nvcpu)++)
			v->vcpu_first = i;
		return sec_len(s, 1, MIG_STATE_MAX, err, errlen);
	case SNAP_SEC_PARENT_PATH:
		ret = sec_len(s, 1, SNAP_PATH_MAX, err, errlen);
		if (!ret)
			ret = check_text(s, p, err, errlen);
		v->parent_path = (const char *)p;
		v->parent_path_len = (uint32_t)s->len;
		return ret;
	}
	return -EINVAL; /* not reached: snap_sec_name() knows the type */
}

int snap_state_decode(const void *p, size_t len, const struct snap_limits *lim, struct snap_view *v,
		      char *err, size_t errlen)
{
	const struct snap_limits none = {0};
	const struct snap_sec *index = NULL;
	struct snap_sec idx;
	uint32_t nvcpu = 0;
	int ret;

	if (!lim)
		lim = &none;
	memset(v, 0, sizeof(*v));
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
	if (len != v->h.state_len)
		return proto_refuse(err, errlen,
				    "snapshot state: %s: %zu bytes, the header says %llu",
				    len < v->h.state_len ? "truncated" : "trailing bytes", len,
				    (unsigned long long)v->h.state_len);
	v->file = p;
	v->table = v->file + SNAP_HEADER_LEN;
	ret = check_table(v, err, errlen);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < v->h.nsections; i++) {
		struct snap_sec s = snap_view_sec(v, i);
		const char *name = snap_sec_name(s.type);

		if (name && s.version == SNAP_SEC_VERSION && !(s.flags & ~SNAP_SEC_REQUIRED)) {
			if (s.type == SNAP_SEC_INDEX) {
				idx = s;
				index = &idx;
				continue;
			}
			ret = decode_known(v, i, &s, &nvcpu, &index, err, errlen);
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
		v->skipped++;
	}
	if (!v->layout || !index || !v->config || !v->cpu || !v->vm_state)
		return proto_refuse(err, errlen, "snapshot state: missing section %s",
				    !v->layout	 ? "LAYOUT"
				    : !index	 ? "INDEX"
				    : !v->config ? "CONFIG"
				    : !v->cpu	 ? "CPU"
						 : "VM_STATE");
	if (nvcpu != v->h.nvcpus)
		return proto_refuse(
		    err, errlen, "snapshot state: missing section VCPU_STATE for vCPU %u", nvcpu);
	return snap_index_decode(v, v->file + index->offset, index->len, err, errlen);
}
