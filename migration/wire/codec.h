/* SPDX-License-Identifier: Apache-2.0 */
/*
 * codec.h - the migration wire format's one encoder and decoder: the
 * record table, little-endian conversion, and encode/decode/validate for
 * every record of protocol.h. Pure: no sockets, no KVM, no allocation, no
 * global state; every function may be called from any thread.
 *
 * Headers are bounded through the record table (mig_rec_check(), or
 * chan_recv_rec() for a channel) before any payload is read. Decoders check
 * all that needs no knowledge of the VM; what they cannot know is listed at
 * each one under "Caller checks". Encoders serialise without judging, so
 * test peers can send malformed records.
 *
 * Errors: -EPROTO (the record breaks the protocol; err names the record
 * and the rule), or -EINVAL (a caller's mistake, e.g. a misaligned buffer).
 * err/errlen may be NULL/0.
 */
#ifndef VMM_MIGRATION_CODEC_H
#define VMM_MIGRATION_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "le.h"
#include "protocol.h"
#include "rec_table.h"

/* ---- Hello and record header ---------------------------------------------- */

void mig_hello_encode(uint8_t out[MIG_HELLO_LEN], uint64_t session, uint32_t role, uint32_t index);
/*
 * Checks magic, major version and role. Caller checks: session id, index
 * against its connection count, the role's place in its accept sequence.
 */
int mig_hello_decode(const uint8_t in[MIG_HELLO_LEN], struct mig_hello *h, char *err,
		     size_t errlen);

void mig_rec_hdr_encode(uint8_t out[MIG_REC_HDR_LEN], uint32_t type, uint32_t len);
/* No judgement: follow with mig_rec_check(). */
void mig_rec_hdr_decode(const uint8_t in[MIG_REC_HDR_LEN], struct mig_rec_hdr *h);

/* ---- Fixed-size records ------------------------------------------------------
 * decode(p, len, out, err, errlen): p holds len payload bytes (the length
 * from the record header); -EPROTO unless len is the record's size and the
 * fields are valid. Records with no rule beyond their size say so.
 */

void mig_switchover_encode(uint8_t out[MIG_SWITCHOVER_LEN], const struct mig_switchover *v);
int mig_switchover_decode(const void *p, uint32_t len, struct mig_switchover *v, char *err,
			  size_t errlen);

/* SYNC and SYNC_ACK. Caller checks: seq is the next one (1, 2, 3 ...). */
void mig_sync_encode(uint8_t out[MIG_SYNC_LEN], const struct mig_sync *v);
int mig_sync_decode(const void *p, uint32_t len, struct mig_sync *v, char *err, size_t errlen);

void mig_committed_encode(uint8_t out[MIG_COMMITTED_LEN], const struct mig_committed *v);
int mig_committed_decode(const void *p, uint32_t len, struct mig_committed *v, char *err,
			 size_t errlen);

void mig_prepared_encode(uint8_t out[MIG_PREPARED_LEN], const struct mig_prepared *v);
int mig_prepared_decode(const void *p, uint32_t len, struct mig_prepared *v, char *err,
			size_t errlen);
/* DECIDED: what must be 1 or 2 (the proof is the receiver's to check, proof.h). */
void mig_decided_encode(uint8_t out[MIG_DECIDED_LEN], const struct mig_decided *v);
int mig_decided_decode(const void *p, uint32_t len, struct mig_decided *v, char *err,
		       size_t errlen);

/* HEARTBEAT. Unknown flag bits are kept (a later minor version). */
void mig_heartbeat_encode(uint8_t out[MIG_HEARTBEAT_LEN], const struct mig_heartbeat *v);
int mig_heartbeat_decode(const void *p, uint32_t len, struct mig_heartbeat *v, char *err,
			 size_t errlen);

/* RAM_FD. Checks: nfds is 1..MIG_RAM_FD_MAX, size a non-zero multiple of the page size. */
void mig_ram_fd_encode(uint8_t out[MIG_RAM_FD_LEN], const struct mig_ram_fd *v);
int mig_ram_fd_decode(const void *p, uint32_t len, struct mig_ram_fd *v, char *err, size_t errlen);

/* Checks: state is one of enum mig_recover_what. */
void mig_recover_state_encode(uint8_t out[MIG_RECOVER_STATE_LEN],
			      const struct mig_recover_state *v);
int mig_recover_state_decode(const void *p, uint32_t len, struct mig_recover_state *v, char *err,
			     size_t errlen);

/* Checks: flags only MIG_POSTCOPY_NO_FINAL_BITMAP. Caller checks: not sent twice. */
void mig_postcopy_encode(uint8_t out[MIG_POSTCOPY_LEN], const struct mig_postcopy *v);
int mig_postcopy_decode(const void *p, uint32_t len, struct mig_postcopy *v, char *err,
			size_t errlen);

/*
 * Checks: flags only MIG_BITMAP_END_PRELIMINARY. Caller checks: the round's
 * order (PRELIMINARY once, source to target only), nbitmaps and pages
 * against what it received.
 */
void mig_bitmap_end_encode(uint8_t out[MIG_BITMAP_END_LEN], const struct mig_bitmap_end *v);
int mig_bitmap_end_decode(const void *p, uint32_t len, struct mig_bitmap_end *v, char *err,
			  size_t errlen);
/*
 * The announced counts against what the receiver counted (BITMAP records
 * of this round, set bits in the union of all rounds): "BITMAP_END
 * announces 1 bitmaps / 2 pages, got 1 / 1".
 */
int mig_bitmap_end_check(const struct mig_bitmap_end *v, uint32_t nbitmaps, uint64_t pages,
			 char *err, size_t errlen);

void mig_postcopy_done_encode(uint8_t out[MIG_POSTCOPY_DONE_LEN],
			      const struct mig_postcopy_done *v);
int mig_postcopy_done_decode(const void *p, uint32_t len, struct mig_postcopy_done *v, char *err,
			     size_t errlen);

/* Caller checks: records (and pages) against what arrived on the connection. */
void mig_channel_end_encode(uint8_t out[MIG_CHANNEL_END_LEN], const struct mig_channel_end *v);
int mig_channel_end_decode(const void *p, uint32_t len, struct mig_channel_end *v, char *err,
			   size_t errlen);

/* Caller checks: slot < its slot count, page < that slot's pages. */
void mig_page_req_encode(uint8_t out[MIG_PAGE_REQ_LEN], const struct mig_page_req *v);
int mig_page_req_decode(const void *p, uint32_t len, struct mig_page_req *v, char *err,
			size_t errlen);

/* ---- Records with a fixed header and a variable part ----------------------- */

/*
 * CAPS: the header, then reason_len bytes of reason. mig_caps_encode()
 * writes the header for flags and reason (NULL or "" with
 * MIG_CAPS_POSTCOPY) and returns how many bytes of reason follow it (at
 * most MIG_CAPS_REASON_MAX: a longer one is cut). decode checks: len ==
 * header + reason_len, reason_len <= MIG_CAPS_REASON_MAX, 0 when
 * MIG_CAPS_POSTCOPY is set and at least 1 when it is not, every reason
 * byte printable ASCII; unknown flag bits are kept, not refused (a later
 * minor version may add capabilities). It copies the reason into
 * v->reason, NUL terminated. Messages begin "CAPS".
 *
 * 6.1: with MIG_CAPS_FORMATS in flags, the formats block follows the
 * reason (mig_caps_formats_encode() writes it, at most
 * MIG_CAPS_FORMATS_LEN + MIG_CAPS_COMPS_MAX * MIG_CAPS_COMP_LEN bytes);
 * decode then needs len == header + reason_len + the block, protocol_minor
 * >= 1, framings 1 <= oldest <= newest, ncomp 1..MIG_CAPS_COMPS_MAX, each
 * id non-zero and once, 1 <= oldest <= newest, and sets v->has_formats.
 */
struct mig_caps_formats {
	uint32_t protocol_minor;
	uint16_t framing_oldest, framing_newest;
	uint32_t ncomp;
	struct mig_caps_comp comp[MIG_CAPS_COMPS_MAX];
};
struct mig_caps_view {
	uint32_t flags;
	uint32_t reason_len;
	char reason[MIG_CAPS_REASON_MAX + 1];
	bool has_formats;
	struct mig_caps_formats formats;
};
uint32_t mig_caps_encode(uint8_t out[MIG_CAPS_LEN], uint32_t flags, const char *reason);
uint32_t mig_caps_formats_encode(uint8_t *out, const struct mig_caps_formats *f);
int mig_caps_decode(const void *p, uint32_t len, struct mig_caps_view *v, char *err, size_t errlen);

/*
 * VCPU_STATE: the header, then the state blob (docs/state-format.md).
 * decode needs len >= MIG_VCPU_STATE_HDR_LEN and a blob of at most
 * MIG_STATE_MAX; *blob_len = len - header. Caller checks: index < its
 * vCPUs, each vCPU once; the blob itself (vcpu_state). VM_STATE has no
 * header: its payload is the blob, bounded by the table.
 */
void mig_vcpu_state_hdr_encode(uint8_t out[MIG_VCPU_STATE_HDR_LEN], uint32_t index);
int mig_vcpu_state_hdr_decode(const void *p, uint32_t len, struct mig_vcpu_state_hdr *v,
			      uint32_t *blob_len, char *err, size_t errlen);

/*
 * ERROR: the message is the payload, at most MIG_ERROR_MAX bytes, no NUL.
 * mig_error_len() is how many bytes of msg to send. decode copies it into
 * out (outlen >= 1), NUL terminated, cut at an embedded NUL or at outlen.
 */
uint32_t mig_error_len(const char *msg);
int mig_error_decode(const void *p, uint32_t len, char *out, size_t outlen, char *err,
		     size_t errlen);

/*
 * END: the header, then connections little-endian uint64 counts (PAGES
 * records sent per data connection). Checks: 0 <= connections <=
 * MIG_CONNECTIONS_MAX, len == header + 8 * connections. The view points
 * into p. Caller checks: connections == the connections it opened; the
 * counts against what arrived; the digest.
 */
struct mig_end_view {
	struct mig_end end;
	const uint8_t *counts; /* connections x le64: use mig_end_count() */
};
void mig_end_encode(uint8_t out[MIG_END_LEN], const struct mig_end *v);
int mig_end_decode(const void *p, uint32_t len, struct mig_end_view *v, char *err, size_t errlen);
static inline uint64_t mig_end_count(const struct mig_end_view *v, uint32_t i)
{
	return le_get64(v->counts + (size_t)i * 8);
}

/*
 * VM_DESC: the header, nslots x slot descriptors, config_len bytes of INI.
 * Limits the receiver imposes on top of the protocol's (0 = the protocol
 * maximum MIG_SLOTS_MAX, MIG_VCPUS_MAX, MIG_CONNECTIONS_MAX).
 */
struct mig_desc_limits {
	uint32_t max_slots;
	uint32_t max_vcpus;
	uint32_t max_connections;
};
struct mig_vm_desc_view {
	struct mig_vm_desc d;
	const uint8_t *slots; /* nslots x MIG_SLOT_DESC_LEN: use mig_vm_desc_slot() */
	const char *config;   /* config_len bytes, not NUL terminated */
};
void mig_vm_desc_encode(uint8_t out[MIG_VM_DESC_LEN], const struct mig_vm_desc *d);
void mig_slot_desc_encode(uint8_t out[MIG_SLOT_DESC_LEN], const struct mig_slot_desc *s);
/* The payload length a VM_DESC header announces (header + slots + config). */
uint64_t mig_vm_desc_len(const struct mig_vm_desc *d);
/*
 * Checks: page_size == MIG_PAGE_SIZE; 1..max slots and vCPUs, 0..max connections (0: a local
 * handover); shard_pages a power of two in MIG_SHARD_PAGES_MIN..MAX; 1 <= config_len <
 * MIG_VM_DESC_MAX; len == mig_vm_desc_len(); every slot non-empty, page aligned, not wrapping, at
 * most MIG_SLOT_SIZE_MAX, ascending and not overlapping; memory == the sum of the slots. Messages
 * begin "VM_DESC: ". Caller checks: the config parses and agrees with memory and nvcpus; the slot
 * layout it builds equals the slots.
 */
int mig_vm_desc_decode(const void *p, uint32_t len, const struct mig_desc_limits *lim,
		       struct mig_vm_desc_view *v, char *err, size_t errlen);
struct mig_slot_desc mig_vm_desc_slot(const struct mig_vm_desc_view *v, uint32_t i);

/*
 * PAGES: the header, nzero then ndata little-endian uint32 page indexes,
 * data_len bytes of page data (raw: ndata pages; zstd: one frame of them).
 * Senders: mig_pages_hdr_encode() for the header and mig_pages_len() for
 * the record's length; the index array and the pages go out as they are.
 *
 * mig_pages_hdr_decode() checks the header against the record length, for
 * a reader that reads the index array and the data into its own buffers:
 * 1 <= nzero + ndata <= MIG_PAGES_MAX, encoding known, raw data_len ==
 * 4096 * ndata, zstd ndata >= 1 and data_len <= MIG_PAGES_DATA_MAX, len ==
 * mig_pages_len(). Messages begin "PAGES".
 * mig_pages_decode() does the same on a whole payload and points into it
 * (p must be 4-byte aligned: -EINVAL otherwise).
 * Caller checks: mig_pages_check_ctx() (slot < its slots, the indexes
 * against the slot, the shard rule for the connection); that zstd data
 * expands to exactly ndata pages.
 */
void mig_pages_hdr_encode(uint8_t out[MIG_PAGES_HDR_LEN], const struct mig_pages_hdr *ph);
uint64_t mig_pages_len(const struct mig_pages_hdr *ph);
int mig_pages_hdr_decode(const void *p, uint32_t len, struct mig_pages_hdr *ph, char *err,
			 size_t errlen);
struct mig_pages_view {
	struct mig_pages_hdr h;
	const uint32_t *zero_idx; /* nzero */
	const uint32_t *data_idx; /* ndata */
	const uint8_t *data;	  /* data_len */
};
int mig_pages_decode(const void *p, uint32_t len, struct mig_pages_view *v, char *err,
		     size_t errlen);
/* Every index < slot_npages, else -EPROTO "PAGES: page N is outside slot S (P pages)". */
int mig_pages_check_range(const uint32_t *idx, uint32_t n, uint32_t slot, uint64_t slot_npages,
			  char *err, size_t errlen);

/* What a receiver of PAGES knows of its VM and its connection. */
struct mig_pages_ctx {
	uint32_t nslots;      /* the VM's memory slots */
	uint64_t slot_npages; /* pages of slot ph->slot; any value while ph->slot >= nslots */
	uint32_t shard_pages; /* the VM_DESC's (decoded: a power of two in 64..65536) */
	uint32_t connections; /* data connections, >= 1 */
	uint32_t index;	      /* this data connection's */
	bool urgent;	      /* the urgent connection: any slot's pages, no shards */
};
/*
 * A PAGES record (header from mig_pages_hdr_decode(), zero indexes then
 * data indexes) against the receiver's context: the slot exists ("PAGES for
 * slot S of N"); with idx, also mig_pages_check_range() and, off the urgent
 * connection, the shard rule of protocol.h ("PAGES: page P of slot S
 * belongs to another connection": another connection's copy of that page
 * could overtake a newer one). idx NULL checks the slot only, for a reader
 * that refuses before it reads the indexes; it calls again with them.
 * -EPROTO.
 */
int mig_pages_check_ctx(const struct mig_pages_hdr *ph, const uint32_t *idx,
			const struct mig_pages_ctx *ctx, char *err, size_t errlen);

/*
 * BITMAP: the header, then data_len bytes: one zstd frame expanding to
 * raw_len bytes of little-endian uint64 words (bit p % 64 of word p / 64 =
 * page p). mig_bitmap_hdr_decode() checks: data_len == len - header,
 * raw_len a non-zero multiple of 8 and at most MIG_BITMAP_RAW_MAX, data_len
 * <= ZSTD_COMPRESSBOUND(raw_len). Messages begin "BITMAP for slot N".
 * Caller checks: mig_bitmap_check_slot() (slot exists, raw_len fits it),
 * that the frame expands to exactly raw_len bytes, mig_bitmap_check_tail();
 * the round's count and order.
 */
void mig_bitmap_hdr_encode(uint8_t out[MIG_BITMAP_HDR_LEN], const struct mig_bitmap_hdr *bh);
int mig_bitmap_hdr_decode(const void *p, uint32_t len, struct mig_bitmap_hdr *bh, char *err,
			  size_t errlen);
/* raw_len of a slot of npages pages: 8 * ceil(npages / 64). */
static inline uint64_t mig_bitmap_raw_len(uint64_t npages)
{
	return (npages + 63) / 64 * 8;
}
/* The largest BITMAP record for a slot of npages pages: a tighter ctx_max. */
uint32_t mig_bitmap_rec_max(uint64_t npages);
/*
 * slot < nslots and raw_len == mig_bitmap_raw_len(slot_npages), where
 * slot_npages is the pages of slot bh->slot (any value when bh->slot >=
 * nslots). "BITMAP for slot S: raw R, D compressed bytes do not fit the slot".
 */
int mig_bitmap_check_slot(const struct mig_bitmap_hdr *bh, uint32_t nslots, uint64_t slot_npages,
			  char *err, size_t errlen);
/* No bit set past the slot's last page: "BITMAP for slot S marks pages past its end". */
int mig_bitmap_check_tail(const uint64_t *words, uint64_t npages, uint32_t slot, char *err,
			  size_t errlen);

#endif /* VMM_MIGRATION_CODEC_H */
