/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_codec.c - the state file: its header, its section table, and the
 * whole file's layout, encoded field by field in little endian (offsets as
 * in docs/snapshot-format.md); the header and the table decoded. The
 * file's decode and checks are snap_decode.c's, the sections' payloads
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
