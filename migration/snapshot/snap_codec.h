/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_codec.h - the snapshot format's one encoder and decoder (the layout
 * is snap_format.h, the specification docs/snapshot-format.md). Pure: no
 * files, no KVM, no global state; the caller reads and writes the files.
 * Nothing allocates but zstd inside snap_index_encode()/_bitmap().
 *
 * Reading a snapshot:
 *   1. Read the state file (its header first: snap_header_decode() on the
 *      first SNAP_HEADER_LEN bytes gives state_len, to bound the read), then
 *      snap_state_decode() on all of it: header, section table, every
 *      section's CRC and every known section's structure. A reader that
 *      must not hold what the file declares streams it instead, with the
 *      same checks: snap_state_head(), snap_state_section() per section,
 *      snap_state_finish().
 *   2. The snapshot against the VM built from its config and this host:
 *      its memory layout by the machine's guest_mem_layout_check() (the
 *      slots of snap_view_slot()), then snap_restore_check() (vCPUs, CPU
 *      features).
 *   3. For each layer of a diff chain, decode it the same way and pass all
 *      of them, base first, to snap_chain_check().
 *   4. Read the memory file's first SNAP_MEM_HEADER_LEN bytes:
 *      snap_mem_header_decode(), then snap_mem_check() with its size.
 *   5. Per slot: snap_index_bitmap() for the present pages, and
 *      snap_page_offset() for where each one is.
 * Writing: snap_layout_encode(), snap_index_encode(), snap_cpu_encode()
 * build the payloads; snap_state_encode() lays out and checksums the file.
 *
 * Errors: -EPROTO with a one-line message in err when the snapshot is
 * malformed, corrupted, truncated or does not fit this host (messages
 * begin "snapshot"); -EINVAL for a caller's mistake, -ENOSPC for a buffer
 * too small, -ERANGE for a page outside its slot. err may be NULL.
 */
#ifndef VMM_SNAP_CODEC_H
#define VMM_SNAP_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snap_format.h"

/* ---- Header and section table --------------------------------------------- */

/*
 * Writes the header, its magic, and its CRC; the fields as given (a test
 * may write another version). Leaves reserved bytes zero.
 */
void snap_header_encode(uint8_t out[SNAP_HEADER_LEN], const struct snap_header *h);
/*
 * Checks, in this order: len >= SNAP_HEADER_LEN, magic, major version
 * (before the CRC: another major may place it elsewhere), header_len, the
 * header CRC, then the fields: page size, slots, vCPUs, sections within the
 * format's limits, known flags, DIFF <=> parent id != 0 <=> generation >= 1
 * (at most SNAP_LAYERS_MAX), id not zero and not the parent's, memory not
 * 0, state_len large enough for the table and at most SNAP_STATE_MAX.
 */
int snap_header_decode(const uint8_t *p, size_t len, struct snap_header *h, char *err,
		       size_t errlen);

void snap_sec_encode(uint8_t out[SNAP_SEC_LEN], const struct snap_sec *s);
/* No judgement: snap_state_decode() checks the table as a whole. */
void snap_sec_decode(const uint8_t in[SNAP_SEC_LEN], struct snap_sec *s);

/* ---- The state file -------------------------------------------------------- */

/* A section to write: its table fields (offset, len and crc are filled in) and payload. */
struct snap_sec_in {
	struct snap_sec sec;
	const void *payload; /* sec.len bytes */
};

/* A required section of this build's version: what a writer of known sections wants. */
static inline struct snap_sec_in snap_sec_required(uint32_t type, uint32_t instance,
						   const void *payload, uint64_t len)
{
	return (struct snap_sec_in){.sec = {.type = type,
					    .version = SNAP_SEC_VERSION,
					    .flags = SNAP_SEC_REQUIRED,
					    .instance = instance,
					    .len = len},
				    .payload = payload};
}

/*
 * The state file's layout for sections of the given lengths: fills each
 * sec.offset, h->nsections and h->state_len (the table right after the
 * header, each section at the next multiple of 8). -EINVAL past the
 * format's limits. A writer that streams its sections uses this, then
 * crc32c() per section, snap_table_encode() and snap_header_encode().
 */
int snap_state_plan(struct snap_header *h, struct snap_sec_in *secs, uint32_t n);
/* Writes n table entries to out and returns their CRC (the header's table_crc). */
uint32_t snap_table_encode(uint8_t *out, const struct snap_sec_in *secs, uint32_t n);
/*
 * The whole state file into out (outlen >= h->state_len after planning):
 * plans, copies the payloads, zeroes the padding, computes every CRC and
 * writes table and header. Returns the file's length, -EINVAL or -ENOSPC.
 * Sections are written in the order given, which must be ascending by
 * (type, instance) for a reader to accept them.
 */
long long snap_state_encode(uint8_t *out, size_t outlen, struct snap_header *h,
			    struct snap_sec_in *secs, uint32_t n);

/* Limits a reader imposes on top of the format's (0: the format's maximum). */
struct snap_limits {
	uint64_t max_state_len;
	uint32_t max_slots;
	uint32_t max_vcpus;
};

/* A decoded state file; the pointers point into the caller's buffer. */
struct snap_view {
	struct snap_header h;
	const uint8_t *file; /* the state file, h.state_len bytes */
	const uint8_t *table;
	const uint8_t *layout; /* nslots x SNAP_SLOT_LEN: snap_view_slot() */
	const uint8_t *index;  /* the INDEX payload: snap_index_bitmap() */
	uint64_t index_len;
	const char *config; /* config_len bytes of INI, not NUL terminated */
	uint32_t config_len;
	const uint8_t *cpu; /* ncpu words: snap_view_cpu_word() */
	uint32_t ncpu;
	const uint8_t *vm_state;
	uint32_t vm_state_len;
	uint32_t vcpu_first;	 /* table index of VCPU_STATE 0; the others follow */
	const uint8_t *vcpus;	 /* VCPU_STATE 0's payload, the others after it as in the file */
	uint64_t vcpus_off;	 /* VCPU_STATE 0's offset in the file */
	const char *parent_path; /* NULL, or parent_path_len bytes */
	uint32_t parent_path_len;
	uint32_t skipped; /* optional sections this build does not read */
};

/*
 * Decodes and checks a whole state file of len bytes, in this order: the
 * header (snap_header_decode(), and the reader's limits), len ==
 * state_len, the table's CRC, each entry (in the file, ascending and
 * packed as snap_state_plan() lays them out, ascending by (type,
 * instance)), the padding is zero, each section's CRC, then each section:
 * unknown type or version, or unknown flag bits, refused when required
 * and skipped when not; a known type's length, instance and payload
 * (LAYOUT: slots page aligned, ascending, non-overlapping, adding up to
 * memory, at the offsets snap_layout_encode() gives them, memory_file_len
 * their end; INDEX: an entry per slot, encodings and lengths; CPU: sorted,
 * known registers; CONFIG, PARENT_PATH text; VM_STATE and VCPU_STATE
 * within MIG_STATE_MAX), and every required type present (a VCPU_STATE for
 * each vCPU). The blobs inside VM_STATE and VCPU_STATE are the loaders'
 * (vm_state_load(), vcpu_state_load()); the bitmaps snap_index_bitmap()'s.
 */
int snap_state_decode(const void *p, size_t len, const struct snap_limits *lim, struct snap_view *v,
		      char *err, size_t errlen);

/*
 * The same checks on a state file read in pieces, for a reader that keeps
 * only some sections (a restore of a diff chain: docs/snapshot-format.md,
 * "Reading"). In order:
 *   snap_state_head()     the header and the table (the file's first
 *                         SNAP_HEADER_LEN + SNAP_SEC_LEN * nsections bytes,
 *                         which must stay valid while the view is used),
 *                         file_len its size: the header's values, the
 *                         reader's limits, the table's CRC, each entry's
 *                         place and order, every section either read or
 *                         skippable (a required unknown one is refused
 *                         here), and the upper bound of each read one's
 *                         length (snap_sec_len_max()), before a byte of any
 *                         section is read;
 *   snap_state_section()  each section in table order: the padding before
 *                         it (d->end up to its offset, at most 7 bytes),
 *                         the CRC-32C of its payload as the caller read it,
 *                         and the payload itself for a section this build
 *                         reads (snap_sec_is_read()); NULL for one it skips.
 *                         The view points at the payloads given: VCPU_STATE
 *                         payloads must lie as in the file, relative to the
 *                         first one (each at the next multiple of 8);
 *   snap_state_finish()   every required section there, then INDEX.
 * A caller's mistake (a table not wholly given, a NULL payload where one is
 * needed, a section past the last) is -EINVAL; the file's, -EPROTO.
 */
struct snap_decoder {
	struct snap_view *v;
	uint32_t next;	     /* the section snap_state_section() takes next */
	uint64_t end;	     /* where the previous section (or the table) ends */
	uint32_t nvcpu;	     /* VCPU_STATE sections seen */
	struct snap_sec idx; /* INDEX, decoded last: it needs LAYOUT */
	const uint8_t *index;
};

int snap_state_head(struct snap_decoder *d, struct snap_view *v, const uint8_t *p, size_t len,
		    uint64_t file_len, const struct snap_limits *lim, char *err, size_t errlen);
int snap_state_section(struct snap_decoder *d, const uint8_t *pad, uint32_t crc,
		       const uint8_t *payload, char *err, size_t errlen);
int snap_state_finish(struct snap_decoder *d, char *err, size_t errlen);

/* A section whose type, version and flags this build reads (it is decoded, not skipped). */
bool snap_sec_is_read(const struct snap_sec *s);
/*
 * The largest payload a read section of this type may have in a state file
 * with header h (LAYOUT: exactly its slots'; INDEX: bounded by the file
 * only, UINT64_MAX). snap_state_head() refuses a longer one.
 */
uint64_t snap_sec_len_max(const struct snap_header *h, uint32_t type);

struct snap_sec snap_view_sec(const struct snap_view *v, uint32_t i);
/* The section of (type, instance): 0 and *out, or -ENOENT. For device sections. */
int snap_view_find(const struct snap_view *v, uint32_t type, uint32_t instance,
		   struct snap_sec *out);
/* vCPU index's blob (index < nvcpus). */
void snap_view_vcpu(const struct snap_view *v, uint32_t index, const uint8_t **blob, uint32_t *len);
struct snap_slot snap_view_slot(const struct snap_view *v, uint32_t s);
struct snap_cpu_word snap_view_cpu_word(const struct snap_view *v, uint32_t i);
struct snap_index_ent snap_view_index_ent(const struct snap_view *v, uint32_t s);

/* ---- Payload encoders ------------------------------------------------------- */

/*
 * LAYOUT for n slots into out (n x SNAP_SLOT_LEN bytes): the slot data is
 * laid out in slot order, each at the next multiple of SNAP_MEM_ALIGN
 * after the previous one's end, the first at SNAP_MEM_ALIGN. Returns the
 * memory file's length (the last slot's end).
 */
uint64_t snap_layout_encode(uint8_t *out, const struct mig_slot_desc *slots, uint32_t n);

/*
 * INDEX for n slots: bitmaps[s] has 8 * ceil(npages[s] / 64) bytes
 * (little-endian words, bit p = page p present). Writes the entries and
 * each bitmap (enc: SNAP_INDEX_RAW, or SNAP_INDEX_ZSTD at level 3) into
 * out; returns the payload's length, -ENOSPC or -EINVAL.
 */
long long snap_index_encode(uint8_t *out, size_t outlen, const uint64_t *const *bitmaps,
			    const uint64_t *npages, uint32_t n, uint32_t enc);
/* A bound for snap_index_encode()'s outlen. */
uint64_t snap_index_len_max(const uint64_t *npages, uint32_t n);

/* CPU for n words (ascending by leaf, subleaf, reg) into out: 8 + 16 n bytes. */
void snap_cpu_encode(uint8_t *out, const struct snap_cpu_word *w, uint32_t n);

/* ---- Pages ------------------------------------------------------------------ */

/*
 * Slot s's present bitmap into words (nwords >= ceil(pages / 64)): the
 * data expands to exactly the slot's bitmap, no bit past its last page is
 * set, and the bits set equal the entry's present count. -EPROTO
 * ("snapshot: INDEX of slot 1: ..."), -EINVAL (s or nwords).
 * In a full snapshot a present page's data is in the memory file, where a
 * hole is a zero page; in a diff layer a present page was written since
 * the parent (a hole: it became zero), an absent one is the parent's.
 */
int snap_index_bitmap(const struct snap_view *v, uint32_t s, uint64_t *words, uint64_t nwords,
		      char *err, size_t errlen);

/* Where page p of slot s is in the memory file: 0, or -ERANGE. */
int snap_page_offset(const struct snap_view *v, uint32_t s, uint64_t p, uint64_t *off);
/* The same for a guest physical address (page aligned or not): 0, or -ERANGE. */
int snap_gpa_offset(const struct snap_view *v, uint64_t gpa, uint64_t *off);

/* ---- The memory file's header ------------------------------------------------ */

void snap_mem_header_encode(uint8_t out[SNAP_MEM_HEADER_LEN], const struct snap_mem_header *m);
/* Checks length, magic, major version, CRC. */
int snap_mem_header_decode(const uint8_t *p, size_t len, struct snap_mem_header *m, char *err,
			   size_t errlen);
/*
 * The memory file against its state file: the same snapshot id, and its
 * length (as the caller stat()ed it) equal to both headers' memory_file_len.
 */
int snap_mem_check(const struct snap_view *v, const struct snap_mem_header *m, uint64_t file_len,
		   char *err, size_t errlen);

/* ---- Restore checks ------------------------------------------------------------ */

/*
 * What the restoring side has: the VM it built from the snapshot's config
 * (its memory layout is the machine's to compare: guest_mem_layout_check()),
 * and its host.
 */
struct snap_host {
	uint32_t nvcpus;		 /* the VM's vCPUs */
	const struct snap_cpu_word *cpu; /* what this host can give a guest */
	uint32_t ncpu;
};

/*
 * The snapshot against the restoring VM and host, in this order: vCPU
 * count, CPU features (each bit the snapshot's guest had must be in the
 * host's word of the same leaf, subleaf and register; a word the host
 * lacks is all missing). The message names the first difference, or every
 * missing feature ("... lacks 2 CPU features the guest uses: avx2
 * (0x7.0:ebx[5]), 0xd.1:eax[3]"). After the layout: persist's
 * image_check_vm() calls both.
 */
int snap_restore_check(const struct snap_view *v, const struct snap_host *host, char *err,
		       size_t errlen);

/*
 * A chain of layers, base first: layers[0] a full snapshot; each next one
 * a diff layer whose parent id is the previous layer's id, generation one
 * more, the same memory layout. n 1..SNAP_LAYERS_MAX + 1.
 */
int snap_chain_check(const struct snap_view *const *layers, uint32_t n, char *err, size_t errlen);
/*
 * One link of a chain, as a reader meets it top down: child (layer i of the
 * chain, base 0) on parent (layer i - 1), as snap_chain_check() checks each.
 */
int snap_layer_check(const struct snap_view *parent, const struct snap_view *child, uint32_t i,
		     char *err, size_t errlen);

/* "1f2e3d4c5b6a7988..." (32 hex digits) into out[33]. */
void snap_id_hex(const struct snap_id *id, char out[33]);
bool snap_id_is_zero(const struct snap_id *id);

#endif /* VMM_SNAP_CODEC_H */
