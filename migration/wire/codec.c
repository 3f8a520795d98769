/* SPDX-License-Identifier: Apache-2.0 */
/*
 * codec.c - encode and decode the hello, the record header and the
 * fixed-size records, field by field in little endian (offsets as in
 * docs/migration-protocol.md).
 */
#include <string.h>

#include "codec.h"
#include "proto_refuse.h"

void mig_hello_encode(uint8_t out[MIG_HELLO_LEN], uint64_t session, uint32_t role, uint32_t index)
{
	memcpy(out, MIG_MAGIC, 8);
	le_put32(out + 8, MIG_VERSION_MAJOR);
	le_put32(out + 12, MIG_VERSION_MINOR);
	le_put64(out + 16, session);
	le_put32(out + 24, role);
	le_put32(out + 28, index);
}

int mig_hello_decode(const uint8_t in[MIG_HELLO_LEN], struct mig_hello *h, char *err, size_t errlen)
{
	memcpy(h->magic, in, 8);
	h->version_major = le_get32(in + 8);
	h->version_minor = le_get32(in + 12);
	h->session_id = le_get64(in + 16);
	h->role = le_get32(in + 24);
	h->index = le_get32(in + 28);
	if (memcmp(h->magic, MIG_MAGIC, 8))
		return proto_refuse(err, errlen, "not a vmm migration stream (bad magic)");
	if (h->version_major != MIG_VERSION_MAJOR)
		return proto_refuse(err, errlen,
				    "migration protocol version %u.%u, this vmm speaks %u.x",
				    h->version_major, h->version_minor, MIG_VERSION_MAJOR);
	if (h->role > MIG_ROLE_MAX)
		return proto_refuse(err, errlen, "hello: unknown channel role %u", h->role);
	return 0;
}

void mig_rec_hdr_encode(uint8_t out[MIG_REC_HDR_LEN], uint32_t type, uint32_t len)
{
	le_put32(out, type);
	le_put32(out + 4, len);
}

void mig_rec_hdr_decode(const uint8_t in[MIG_REC_HDR_LEN], struct mig_rec_hdr *h)
{
	h->type = le_get32(in);
	h->len = le_get32(in + 4);
}

/* The size check every fixed-size decoder starts with. */
static int fixed(uint32_t type, uint32_t len, uint32_t want, char *err, size_t errlen)
{
	if (len != want)
		return proto_refuse(err, errlen, "%s record with bad length %u (expected %u)",
				    mig_rec_name(type), len, want);
	return 0;
}

void mig_switchover_encode(uint8_t out[MIG_SWITCHOVER_LEN], const struct mig_switchover *v)
{
	le_put32(out, v->pass);
	le_put32(out + 4, v->reserved);
}

int mig_switchover_decode(const void *p, uint32_t len, struct mig_switchover *v, char *err,
			  size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_SWITCHOVER, len, MIG_SWITCHOVER_LEN, err, errlen);

	if (ret)
		return ret;
	v->pass = le_get32(b);
	v->reserved = le_get32(b + 4);
	return 0;
}

void mig_ram_fd_encode(uint8_t out[MIG_RAM_FD_LEN], const struct mig_ram_fd *v)
{
	le_put64(out, v->size);
	le_put32(out + 8, v->nfds);
	le_put32(out + 12, v->reserved);
}

int mig_ram_fd_decode(const void *p, uint32_t len, struct mig_ram_fd *v, char *err, size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_RAM_FD, len, MIG_RAM_FD_LEN, err, errlen);

	if (ret)
		return ret;
	v->size = le_get64(b);
	v->nfds = le_get32(b + 8);
	v->reserved = le_get32(b + 12);
	if (v->nfds == 0 || v->nfds > MIG_RAM_FD_MAX || v->size == 0 || v->size % MIG_PAGE_SIZE)
		return proto_refuse(err, errlen,
				    "RAM_FD: bad values (%u descriptors of %llu bytes)", v->nfds,
				    (unsigned long long)v->size);
	return 0;
}

void mig_sync_encode(uint8_t out[MIG_SYNC_LEN], const struct mig_sync *v)
{
	le_put64(out, v->seq);
}

int mig_sync_decode(const void *p, uint32_t len, struct mig_sync *v, char *err, size_t errlen)
{
	int ret = fixed(MIG_REC_SYNC, len, MIG_SYNC_LEN, err, errlen);

	if (ret)
		return ret;
	v->seq = le_get64(p);
	return 0;
}

void mig_committed_encode(uint8_t out[MIG_COMMITTED_LEN], const struct mig_committed *v)
{
	le_put64(out, v->restore_us);
	le_put64(out + 8, v->resume_mono_ns);
	memcpy(out + 16, v->boot_id, 16);
}

int mig_committed_decode(const void *p, uint32_t len, struct mig_committed *v, char *err,
			 size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_COMMITTED, len, MIG_COMMITTED_LEN, err, errlen);

	if (ret)
		return ret;
	v->restore_us = le_get64(b);
	v->resume_mono_ns = le_get64(b + 8);
	memcpy(v->boot_id, b + 16, 16);
	return 0;
}

void mig_prepared_encode(uint8_t out[MIG_PREPARED_LEN], const struct mig_prepared *v)
{
	le_put64(out, v->restore_us);
	le_put64(out + 8, v->reserved);
	memcpy(out + 16, v->keys, sizeof(v->keys));
}

void mig_decided_encode(uint8_t out[MIG_DECIDED_LEN], const struct mig_decided *v)
{
	le_put32(out, v->what);
	le_put32(out + 4, v->reserved);
	memcpy(out + 8, v->proof, MIG_SIG_LEN);
}

int mig_decided_decode(const void *p, uint32_t len, struct mig_decided *v, char *err, size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_DECIDED, len, MIG_DECIDED_LEN, err, errlen);

	if (ret)
		return ret;
	v->what = le_get32(b);
	v->reserved = le_get32(b + 4);
	memcpy(v->proof, b + 8, MIG_SIG_LEN);
	if (v->what != MIG_DECIDED_RUNS && v->what != MIG_DECIDED_DISCARDED)
		return proto_refuse(
		    err, errlen, "DECIDED: what %u is neither 1 (runs) nor 2 (discarded)", v->what);
	return 0;
}

void mig_heartbeat_encode(uint8_t out[MIG_HEARTBEAT_LEN], const struct mig_heartbeat *v)
{
	le_put64(out, v->missing);
	le_put32(out + 8, v->flags);
	le_put32(out + 12, v->reserved);
}

int mig_heartbeat_decode(const void *p, uint32_t len, struct mig_heartbeat *v, char *err,
			 size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_HEARTBEAT, len, MIG_HEARTBEAT_LEN, err, errlen);

	if (ret)
		return ret;
	v->missing = le_get64(b);
	v->flags = le_get32(b + 8);
	v->reserved = le_get32(b + 12);
	return 0;
}

int mig_prepared_decode(const void *p, uint32_t len, struct mig_prepared *v, char *err,
			size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_PREPARED, len, MIG_PREPARED_LEN, err, errlen);

	if (ret)
		return ret;
	v->restore_us = le_get64(b);
	v->reserved = le_get64(b + 8);
	memcpy(v->keys, b + 16, sizeof(v->keys));
	return 0;
}

void mig_recover_state_encode(uint8_t out[MIG_RECOVER_STATE_LEN], const struct mig_recover_state *v)
{
	le_put32(out, v->state);
	le_put32(out + 4, v->reserved);
}

int mig_recover_state_decode(const void *p, uint32_t len, struct mig_recover_state *v, char *err,
			     size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_RECOVER_STATE, len, MIG_RECOVER_STATE_LEN, err, errlen);

	if (ret)
		return ret;
	v->state = le_get32(b);
	v->reserved = le_get32(b + 4);
	if (v->state != MIG_RECOVER_PREPARED && v->state != MIG_RECOVER_RUNNING)
		return proto_refuse(err, errlen, "RECOVER_STATE: unknown state %u", v->state);
	return 0;
}

void mig_postcopy_encode(uint8_t out[MIG_POSTCOPY_LEN], const struct mig_postcopy *v)
{
	le_put32(out, v->pass);
	le_put32(out + 4, v->flags);
}

int mig_postcopy_decode(const void *p, uint32_t len, struct mig_postcopy *v, char *err,
			size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_POSTCOPY, len, MIG_POSTCOPY_LEN, err, errlen);

	if (ret)
		return ret;
	v->pass = le_get32(b);
	v->flags = le_get32(b + 4);
	if (v->flags & ~MIG_POSTCOPY_NO_FINAL_BITMAP)
		return proto_refuse(err, errlen, "POSTCOPY with unknown flags 0x%x", v->flags);
	return 0;
}

void mig_bitmap_end_encode(uint8_t out[MIG_BITMAP_END_LEN], const struct mig_bitmap_end *v)
{
	le_put32(out, v->nbitmaps);
	le_put32(out + 4, v->flags);
	le_put64(out + 8, v->pages);
}

int mig_bitmap_end_decode(const void *p, uint32_t len, struct mig_bitmap_end *v, char *err,
			  size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_BITMAP_END, len, MIG_BITMAP_END_LEN, err, errlen);

	if (ret)
		return ret;
	v->nbitmaps = le_get32(b);
	v->flags = le_get32(b + 4);
	v->pages = le_get64(b + 8);
	if (v->flags & ~MIG_BITMAP_END_PRELIMINARY)
		return proto_refuse(err, errlen, "BITMAP_END with unknown flags 0x%x", v->flags);
	return 0;
}

int mig_bitmap_end_check(const struct mig_bitmap_end *v, uint32_t nbitmaps, uint64_t pages,
			 char *err, size_t errlen)
{
	if (v->nbitmaps != nbitmaps || v->pages != pages)
		return proto_refuse(
		    err, errlen, "BITMAP_END announces %u bitmaps / %llu pages, got %u / %llu",
		    v->nbitmaps, (unsigned long long)v->pages, nbitmaps, (unsigned long long)pages);
	return 0;
}

void mig_postcopy_done_encode(uint8_t out[MIG_POSTCOPY_DONE_LEN], const struct mig_postcopy_done *v)
{
	const uint64_t f[7] = {v->faults,	v->requested,	 v->arrived_us, v->fault_p50_us,
			       v->fault_p99_us, v->fault_max_us, v->duplicates};

	for (int i = 0; i < 7; i++)
		le_put64(out + 8 * i, f[i]);
}

int mig_postcopy_done_decode(const void *p, uint32_t len, struct mig_postcopy_done *v, char *err,
			     size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_POSTCOPY_DONE, len, MIG_POSTCOPY_DONE_LEN, err, errlen);

	if (ret)
		return ret;
	v->faults = le_get64(b);
	v->requested = le_get64(b + 8);
	v->arrived_us = le_get64(b + 16);
	v->fault_p50_us = le_get64(b + 24);
	v->fault_p99_us = le_get64(b + 32);
	v->fault_max_us = le_get64(b + 40);
	v->duplicates = le_get64(b + 48);
	return 0;
}

void mig_channel_end_encode(uint8_t out[MIG_CHANNEL_END_LEN], const struct mig_channel_end *v)
{
	le_put64(out, v->records);
	le_put64(out + 8, v->pages);
}

int mig_channel_end_decode(const void *p, uint32_t len, struct mig_channel_end *v, char *err,
			   size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_CHANNEL_END, len, MIG_CHANNEL_END_LEN, err, errlen);

	if (ret)
		return ret;
	v->records = le_get64(b);
	v->pages = le_get64(b + 8);
	return 0;
}

void mig_page_req_encode(uint8_t out[MIG_PAGE_REQ_LEN], const struct mig_page_req *v)
{
	le_put32(out, v->slot);
	le_put32(out + 4, v->page);
}

int mig_page_req_decode(const void *p, uint32_t len, struct mig_page_req *v, char *err,
			size_t errlen)
{
	const uint8_t *b = p;
	int ret = fixed(MIG_REC_PAGE_REQ, len, MIG_PAGE_REQ_LEN, err, errlen);

	if (ret)
		return ret;
	v->slot = le_get32(b);
	v->page = le_get32(b + 4);
	return 0;
}

void mig_vcpu_state_hdr_encode(uint8_t out[MIG_VCPU_STATE_HDR_LEN], uint32_t index)
{
	le_put32(out, index);
	le_put32(out + 4, 0);
}

int mig_vcpu_state_hdr_decode(const void *p, uint32_t len, struct mig_vcpu_state_hdr *v,
			      uint32_t *blob_len, char *err, size_t errlen)
{
	const uint8_t *b = p;

	if (len < MIG_VCPU_STATE_HDR_LEN)
		return proto_refuse(err, errlen, "VCPU_STATE record with bad length %u", len);
	if (len - MIG_VCPU_STATE_HDR_LEN > MIG_STATE_MAX)
		return proto_refuse(err, errlen,
				    "VCPU_STATE: state of %u bytes exceeds its limit of %u",
				    len - MIG_VCPU_STATE_HDR_LEN, MIG_STATE_MAX);
	v->index = le_get32(b);
	v->reserved = le_get32(b + 4);
	*blob_len = len - MIG_VCPU_STATE_HDR_LEN;
	return 0;
}

uint32_t mig_error_len(const char *msg)
{
	return (uint32_t)strnlen(msg, MIG_ERROR_MAX);
}

int mig_error_decode(const void *p, uint32_t len, char *out, size_t outlen, char *err,
		     size_t errlen)
{
	size_t n;

	if (len > MIG_ERROR_MAX)
		return proto_refuse(err, errlen, "ERROR: record larger than %u bytes (%u bytes)",
				    MIG_ERROR_MAX, len);
	if (!outlen)
		return -EINVAL;
	n = len < outlen - 1 ? len : outlen - 1;
	n = n ? strnlen(p, n) : 0;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}
