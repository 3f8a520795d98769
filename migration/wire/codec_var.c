/* SPDX-License-Identifier: Apache-2.0 */
/*
 * codec_var.c - encode, decode and validate the records whose length
 * depends on their contents: VM_DESC, CAPS, END, PAGES and BITMAP. The
 * structural rules live here; what needs the receiver's VM (slot sizes,
 * connection counts) is left to it, through the small check helpers.
 */
#include <string.h>

#include "codec.h"
#include "proto_refuse.h"
#include "slot_table.h"

/* ---- CAPS ---- */

uint32_t mig_caps_encode(uint8_t out[MIG_CAPS_LEN], uint32_t flags, const char *reason)
{
	uint32_t n = reason ? (uint32_t)strnlen(reason, MIG_CAPS_REASON_MAX) : 0;

	le_put32(out, flags);
	le_put32(out + 4, n);
	return n;
}

uint32_t mig_caps_formats_encode(uint8_t *out, const struct mig_caps_formats *f)
{
	uint32_t n = f->ncomp < MIG_CAPS_COMPS_MAX ? f->ncomp : MIG_CAPS_COMPS_MAX;

	le_put32(out, f->protocol_minor);
	le_put16(out + 4, f->framing_oldest);
	le_put16(out + 6, f->framing_newest);
	le_put32(out + 8, n);
	le_put32(out + 12, 0);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *c = out + MIG_CAPS_FORMATS_LEN + i * MIG_CAPS_COMP_LEN;

		le_put32(c, f->comp[i].id);
		le_put16(c + 4, f->comp[i].oldest);
		le_put16(c + 6, f->comp[i].newest);
	}
	return MIG_CAPS_FORMATS_LEN + n * MIG_CAPS_COMP_LEN;
}

/* The formats block of n bytes at b (6.1). */
static int caps_formats_decode(const uint8_t *b, uint32_t n, struct mig_caps_formats *f, char *err,
			       size_t errlen)
{
	if (n < MIG_CAPS_FORMATS_LEN)
		return proto_refuse(err, errlen, "CAPS: formats block of %u bytes, at least %u", n,
				    MIG_CAPS_FORMATS_LEN);
	f->protocol_minor = le_get32(b);
	f->framing_oldest = le_get16(b + 4);
	f->framing_newest = le_get16(b + 6);
	f->ncomp = le_get32(b + 8);
	if (f->protocol_minor < 1)
		return proto_refuse(err, errlen, "CAPS: formats block from protocol minor 0");
	if (!f->framing_oldest || f->framing_oldest > f->framing_newest)
		return proto_refuse(err, errlen, "CAPS: state framings %u..%u", f->framing_oldest,
				    f->framing_newest);
	if (f->ncomp < 1 || f->ncomp > MIG_CAPS_COMPS_MAX)
		return proto_refuse(err, errlen, "CAPS: %u components (1..%u)", f->ncomp,
				    MIG_CAPS_COMPS_MAX);
	if (n != MIG_CAPS_FORMATS_LEN + f->ncomp * MIG_CAPS_COMP_LEN)
		return proto_refuse(
		    err, errlen, "CAPS: formats block of %u bytes for %u components", n, f->ncomp);
	for (uint32_t i = 0; i < f->ncomp; i++) {
		const uint8_t *c = b + MIG_CAPS_FORMATS_LEN + i * MIG_CAPS_COMP_LEN;

		f->comp[i].id = le_get32(c);
		f->comp[i].oldest = le_get16(c + 4);
		f->comp[i].newest = le_get16(c + 6);
		if (!f->comp[i].id || !f->comp[i].oldest || f->comp[i].oldest > f->comp[i].newest)
			return proto_refuse(err, errlen,
					    "CAPS: component %u: id %u, versions %u..%u", i,
					    f->comp[i].id, f->comp[i].oldest, f->comp[i].newest);
		for (uint32_t j = 0; j < i; j++)
			if (f->comp[j].id == f->comp[i].id)
				return proto_refuse(err, errlen, "CAPS: component %u twice",
						    f->comp[i].id);
	}
	return 0;
}

int mig_caps_decode(const void *p, uint32_t len, struct mig_caps_view *v, char *err, size_t errlen)
{
	const uint8_t *b = p;
	int ret;

	if (len < MIG_CAPS_LEN || len > MIG_CAPS_MAX)
		return proto_refuse(err, errlen, "CAPS record with bad length %u (%u..%u)", len,
				    MIG_CAPS_LEN, MIG_CAPS_MAX);
	v->flags = le_get32(b);
	v->reason_len = le_get32(b + 4);
	v->has_formats = v->flags & MIG_CAPS_FORMATS;
	if (v->has_formats ? v->reason_len > len - MIG_CAPS_LEN
			   : v->reason_len != len - MIG_CAPS_LEN)
		return proto_refuse(err, errlen, "CAPS: reason of %u bytes in a record of %u",
				    v->reason_len, len);
	if (v->reason_len > MIG_CAPS_REASON_MAX)
		return proto_refuse(err, errlen, "CAPS: reason of %u bytes, at most %u",
				    v->reason_len, MIG_CAPS_REASON_MAX);
	if ((v->flags & MIG_CAPS_POSTCOPY) && v->reason_len)
		return proto_refuse(err, errlen,
				    "CAPS: postcopy is possible but a reason is given");
	if (!(v->flags & MIG_CAPS_POSTCOPY) && !v->reason_len)
		return proto_refuse(err, errlen,
				    "CAPS: postcopy is impossible and no reason given");
	for (uint32_t i = 0; i < v->reason_len; i++)
		if (b[MIG_CAPS_LEN + i] < 0x20 || b[MIG_CAPS_LEN + i] > 0x7e)
			return proto_refuse(err, errlen,
					    "CAPS: reason byte %u is 0x%02x, not printable", i,
					    b[MIG_CAPS_LEN + i]);
	memcpy(v->reason, b + MIG_CAPS_LEN, v->reason_len);
	v->reason[v->reason_len] = '\0';
	if (!v->has_formats)
		return 0;
	ret = caps_formats_decode(b + MIG_CAPS_LEN + v->reason_len,
				  len - MIG_CAPS_LEN - v->reason_len, &v->formats, err, errlen);
	return ret;
}

/* ---- VM_DESC ---- */

void mig_vm_desc_encode(uint8_t out[MIG_VM_DESC_LEN], const struct mig_vm_desc *d)
{
	le_put64(out, d->memory);
	le_put32(out + 8, d->page_size);
	le_put32(out + 12, d->nslots);
	le_put32(out + 16, d->nvcpus);
	le_put32(out + 20, d->connections);
	le_put32(out + 24, d->config_len);
	le_put32(out + 28, d->shard_pages);
	memcpy(out + 32, d->keys, sizeof(d->keys));
}

void mig_slot_desc_encode(uint8_t out[MIG_SLOT_DESC_LEN], const struct mig_slot_desc *s)
{
	le_put64(out, s->gpa);
	le_put64(out + 8, s->size);
}

uint64_t mig_vm_desc_len(const struct mig_vm_desc *d)
{
	return MIG_VM_DESC_LEN + (uint64_t)d->nslots * MIG_SLOT_DESC_LEN + d->config_len;
}

struct mig_slot_desc mig_vm_desc_slot(const struct mig_vm_desc_view *v, uint32_t i)
{
	const uint8_t *s = v->slots + (size_t)i * MIG_SLOT_DESC_LEN;

	return (struct mig_slot_desc){.gpa = le_get64(s), .size = le_get64(s + 8)};
}

static uint32_t limit(uint32_t ctx, uint32_t proto)
{
	return ctx && ctx < proto ? ctx : proto;
}

int mig_vm_desc_decode(const void *p, uint32_t len, const struct mig_desc_limits *lim,
		       struct mig_vm_desc_view *v, char *err, size_t errlen)
{
	const struct mig_desc_limits none = {0};
	const uint8_t *b = p;
	struct mig_vm_desc *d = &v->d;
	uint64_t total = 0;
	uint32_t bad;

	if (!lim)
		lim = &none;
	if (len < MIG_VM_DESC_LEN)
		return proto_refuse(err, errlen,
				    "VM_DESC: record of %u bytes is shorter than its "
				    "header",
				    len);
	d->memory = le_get64(b);
	d->page_size = le_get32(b + 8);
	d->nslots = le_get32(b + 12);
	d->nvcpus = le_get32(b + 16);
	d->connections = le_get32(b + 20);
	d->config_len = le_get32(b + 24);
	d->shard_pages = le_get32(b + 28);
	memcpy(d->keys, b + 32, sizeof(d->keys));
	if (d->page_size != MIG_PAGE_SIZE || d->nslots == 0 ||
	    d->nslots > limit(lim->max_slots, MIG_SLOTS_MAX) || d->nvcpus == 0 ||
	    d->nvcpus > limit(lim->max_vcpus, MIG_VCPUS_MAX) ||
	    d->connections > limit(lim->max_connections, MIG_CONNECTIONS_MAX) ||
	    d->shard_pages < MIG_SHARD_PAGES_MIN || d->shard_pages > MIG_SHARD_PAGES_MAX ||
	    (d->shard_pages & (d->shard_pages - 1)) || d->config_len == 0 ||
	    d->config_len >= MIG_VM_DESC_MAX)
		return proto_refuse(err, errlen,
				    "VM_DESC: bad values (page size %u, %u slots, %u vCPUs, %u "
				    "connections, config %u bytes, shard of %u pages)",
				    d->page_size, d->nslots, d->nvcpus, d->connections,
				    d->config_len, d->shard_pages);
	if ((uint64_t)len != mig_vm_desc_len(d))
		return proto_refuse(
		    err, errlen,
		    "VM_DESC: length %u does not match %u slots and %u bytes of config", len,
		    d->nslots, d->config_len);
	v->slots = b + MIG_VM_DESC_LEN;
	v->config = (const char *)v->slots + (size_t)d->nslots * MIG_SLOT_DESC_LEN;
	/* The table's shape is the one a snapshot's LAYOUT has: checked in one place. */
	bad = slot_table_shape(v->slots, d->nslots, MIG_SLOT_DESC_LEN, MIG_PAGE_SIZE,
			       MIG_SLOT_SIZE_MAX, &total);
	if (bad < d->nslots) {
		struct mig_slot_desc s = mig_vm_desc_slot(v, bad);

		return proto_refuse(err, errlen, "VM_DESC: slot %u [0x%llx, +0x%llx) is malformed",
				    bad, (unsigned long long)s.gpa, (unsigned long long)s.size);
	}
	if (total != d->memory)
		return proto_refuse(err, errlen,
				    "VM_DESC: slots add up to %llu bytes, memory is %llu",
				    (unsigned long long)total, (unsigned long long)d->memory);
	return 0;
}

/* ---- END ---- */

void mig_end_encode(uint8_t out[MIG_END_LEN], const struct mig_end *v)
{
	le_put64(out, v->memory_digest);
	le_put32(out + 8, v->connections);
	le_put32(out + 12, v->commit_timeout_ms);
}

int mig_end_decode(const void *p, uint32_t len, struct mig_end_view *v, char *err, size_t errlen)
{
	const uint8_t *b = p;

	if (len < MIG_END_LEN)
		return proto_refuse(err, errlen, "END record with bad length %u", len);
	v->end.memory_digest = le_get64(b);
	v->end.connections = le_get32(b + 8);
	v->end.commit_timeout_ms = le_get32(b + 12);
	v->counts = b + MIG_END_LEN;
	if (v->end.connections > MIG_CONNECTIONS_MAX)
		return proto_refuse(err, errlen, "END for %u connections (0..%u allowed)",
				    v->end.connections, MIG_CONNECTIONS_MAX);
	if ((uint64_t)len != MIG_END_LEN + (uint64_t)v->end.connections * 8)
		return proto_refuse(err, errlen,
				    "END record length %u does not match %u connections", len,
				    v->end.connections);
	return 0;
}

/* ---- PAGES ---- */

void mig_pages_hdr_encode(uint8_t out[MIG_PAGES_HDR_LEN], const struct mig_pages_hdr *ph)
{
	le_put32(out, ph->slot);
	le_put32(out + 4, ph->nzero);
	le_put32(out + 8, ph->ndata);
	le_put32(out + 12, ph->encoding);
	le_put32(out + 16, ph->data_len);
	le_put32(out + 20, ph->reserved);
}

uint64_t mig_pages_len(const struct mig_pages_hdr *ph)
{
	return MIG_PAGES_HDR_LEN + ((uint64_t)ph->nzero + ph->ndata) * sizeof(uint32_t) +
	       ph->data_len;
}

int mig_pages_hdr_decode(const void *p, uint32_t len, struct mig_pages_hdr *ph, char *err,
			 size_t errlen)
{
	const uint8_t *b = p;
	uint64_t raw_len;

	if (len < MIG_PAGES_HDR_LEN)
		return proto_refuse(err, errlen,
				    "PAGES record of %u bytes is shorter than its header", len);
	ph->slot = le_get32(b);
	ph->nzero = le_get32(b + 4);
	ph->ndata = le_get32(b + 8);
	ph->encoding = le_get32(b + 12);
	ph->data_len = le_get32(b + 16);
	ph->reserved = le_get32(b + 20);
	if (ph->nzero > MIG_PAGES_MAX || ph->ndata > MIG_PAGES_MAX ||
	    ph->nzero + ph->ndata > MIG_PAGES_MAX || ph->nzero + ph->ndata == 0)
		return proto_refuse(err, errlen,
				    "PAGES with %u zero + %u data pages (1..%u allowed)", ph->nzero,
				    ph->ndata, MIG_PAGES_MAX);
	raw_len = (uint64_t)ph->ndata * MIG_PAGE_SIZE;
	if ((ph->encoding == MIG_ENC_RAW && ph->data_len != raw_len) ||
	    (ph->encoding == MIG_ENC_ZSTD && (ph->data_len > MIG_PAGES_DATA_MAX || !ph->ndata)) ||
	    ph->encoding > MIG_ENC_ZSTD)
		return proto_refuse(err, errlen,
				    "PAGES encoding %u with %u data bytes for %u pages",
				    ph->encoding, ph->data_len, ph->ndata);
	if ((uint64_t)len != mig_pages_len(ph))
		return proto_refuse(err, errlen,
				    "PAGES record length %u does not match its contents", len);
	return 0;
}

int mig_pages_decode(const void *p, uint32_t len, struct mig_pages_view *v, char *err,
		     size_t errlen)
{
	const uint8_t *b = p;
	int ret;

	if ((uintptr_t)p % sizeof(uint32_t))
		return -EINVAL;
	ret = mig_pages_hdr_decode(p, len, &v->h, err, errlen);
	if (ret)
		return ret;
	/* Little-endian host (protocol.h): the index arrays are used in place. */
	v->zero_idx = (const uint32_t *)(const void *)(b + MIG_PAGES_HDR_LEN);
	v->data_idx = v->zero_idx + v->h.nzero;
	v->data = (const uint8_t *)(v->data_idx + v->h.ndata);
	return 0;
}

int mig_pages_check_range(const uint32_t *idx, uint32_t n, uint32_t slot, uint64_t slot_npages,
			  char *err, size_t errlen)
{
	for (uint32_t i = 0; i < n; i++)
		if (idx[i] >= slot_npages)
			return proto_refuse(err, errlen,
					    "PAGES: page %u is outside slot %u (%llu pages)",
					    idx[i], slot, (unsigned long long)slot_npages);
	return 0;
}

int mig_pages_check_ctx(const struct mig_pages_hdr *ph, const uint32_t *idx,
			const struct mig_pages_ctx *ctx, char *err, size_t errlen)
{
	uint32_t n = ph->nzero + ph->ndata;
	int ret;

	if (ph->slot >= ctx->nslots)
		return proto_refuse(err, errlen, "PAGES for slot %u of %u", ph->slot, ctx->nslots);
	if (!idx)
		return 0;
	ret = mig_pages_check_range(idx, n, ph->slot, ctx->slot_npages, err, errlen);
	if (ret)
		return ret;
	for (uint32_t i = 0; !ctx->urgent && i < n; i++)
		if ((ph->slot + idx[i] / ctx->shard_pages) % ctx->connections != ctx->index)
			return proto_refuse(
			    err, errlen, "PAGES: page %u of slot %u belongs to another connection",
			    idx[i], ph->slot);
	return 0;
}

/* ---- BITMAP ---- */

void mig_bitmap_hdr_encode(uint8_t out[MIG_BITMAP_HDR_LEN], const struct mig_bitmap_hdr *bh)
{
	le_put32(out, bh->slot);
	le_put32(out + 4, bh->raw_len);
	le_put32(out + 8, bh->data_len);
	le_put32(out + 12, bh->reserved);
}

int mig_bitmap_hdr_decode(const void *p, uint32_t len, struct mig_bitmap_hdr *bh, char *err,
			  size_t errlen)
{
	const uint8_t *b = p;

	if (len < MIG_BITMAP_HDR_LEN)
		return proto_refuse(err, errlen, "BITMAP record of %u bytes", len);
	bh->slot = le_get32(b);
	bh->raw_len = le_get32(b + 4);
	bh->data_len = le_get32(b + 8);
	bh->reserved = le_get32(b + 12);
	if (bh->data_len != len - MIG_BITMAP_HDR_LEN || !bh->raw_len || bh->raw_len % 8 ||
	    bh->raw_len > MIG_BITMAP_RAW_MAX || bh->data_len > ZSTD_COMPRESSBOUND(bh->raw_len))
		return proto_refuse(
		    err, errlen,
		    "BITMAP for slot %u: raw %u, %u compressed bytes in a record of "
		    "%u bytes are inconsistent",
		    bh->slot, bh->raw_len, bh->data_len, len);
	return 0;
}

uint32_t mig_bitmap_rec_max(uint64_t npages)
{
	uint64_t raw = mig_bitmap_raw_len(npages);

	if (raw > MIG_BITMAP_RAW_MAX)
		raw = MIG_BITMAP_RAW_MAX;
	return (uint32_t)(MIG_BITMAP_HDR_LEN + ZSTD_COMPRESSBOUND(raw));
}

int mig_bitmap_check_slot(const struct mig_bitmap_hdr *bh, uint32_t nslots, uint64_t slot_npages,
			  char *err, size_t errlen)
{
	if (bh->slot >= nslots || bh->raw_len != mig_bitmap_raw_len(slot_npages))
		return proto_refuse(
		    err, errlen,
		    "BITMAP for slot %u: raw %u, %u compressed bytes do not fit the slot", bh->slot,
		    bh->raw_len, bh->data_len);
	return 0;
}

int mig_bitmap_check_tail(const uint64_t *words, uint64_t npages, uint32_t slot, char *err,
			  size_t errlen)
{
	uint64_t nwords = mig_bitmap_raw_len(npages) / 8;

	/* Bits past the slot's last page would never be cleared. */
	if (npages % 64 && nwords && words[nwords - 1] >> (npages % 64))
		return proto_refuse(err, errlen, "BITMAP for slot %u marks pages past its end",
				    slot);
	return 0;
}
