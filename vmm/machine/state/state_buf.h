/* SPDX-License-Identifier: Apache-2.0 */
/*
 * state_buf.h - the framing shared by the vCPU and VM state blobs
 * (docs/state-format.md): a growable byte buffer with a sticky error for
 * writing, and one bounded parser for reading.
 *
 * A blob is a sequence of sections {u32 type, u32 len, len bytes of
 * payload}, little endian: first a HEADER section, then typed sections,
 * last an END section with no payload. Nothing may follow END.
 *
 * Not thread safe: one buffer belongs to one caller.
 */
#ifndef VMM_STATE_BUF_H
#define VMM_STATE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATE_MAGIC 0x54534d56u /* "VMST" as little-endian bytes */
/*
 * The HEADER's major is the blob framing (state_versions.h): 2 (0.3.0) and
 * 3 (a VERSIONS section after HEADER) are read; another is refused.
 */
#define STATE_VERSION_MAJOR 3 /* the newest framing, written by default */
#define STATE_VERSION_MINOR 0 /* informational */

/* Section types common to both blobs. */
#define STATE_SEC_HEADER 0x0001u
#define STATE_SEC_END	 0x0002u
/*
 * Framing 3: right after HEADER, one entry per other section of the blob
 * (END excepted): {u32 section type, u16 component, u16 version}.
 */
#define STATE_SEC_VERSIONS 0x0003u
#define STATE_VERSIONS_ENT 8u
#define STATE_VERSIONS_MAX 64u /* entries: more than any blob has sections */

/* Size of a section's {type, len} prefix. */
#define STATE_SEC_HDR_SIZE 8u

enum state_kind {
	STATE_KIND_VCPU = 1,
	STATE_KIND_VM = 2,
};

/*
 * HEADER payload, 64 bytes, every field little endian. `sizes` are the
 * x86_64 sizes of the KVM structures the sections carry, so that a blob
 * says what it holds; a loader refuses any size it does not share.
 */
enum state_size_index {
	STATE_SZ_REGS,
	STATE_SZ_SREGS,
	STATE_SZ_XSAVE,
	STATE_SZ_FPU,
	STATE_SZ_XCRS,
	STATE_SZ_LAPIC,
	STATE_SZ_MSR_ENTRY,
	STATE_SZ_VCPU_EVENTS,
	STATE_SZ_DEBUGREGS,
	STATE_SZ_MP_STATE,
	STATE_SZ_IRQCHIP,
	STATE_SZ_PIT2,
	STATE_SZ_CLOCK,
	STATE_SZ_SERIAL,
	STATE_NR_SIZES
};

struct state_header {
	uint32_t magic;			/* STATE_MAGIC */
	uint16_t major;			/* STATE_VERSION_MAJOR */
	uint16_t minor;			/* STATE_VERSION_MINOR */
	uint32_t kind;			/* enum state_kind */
	uint32_t index;			/* vCPU index (VCPU) or number of vCPUs (VM) */
	uint16_t sizes[STATE_NR_SIZES]; /* enum state_size_index */
	uint8_t reserved[64 - 16 - 2 * STATE_NR_SIZES]; /* zero */
};

struct state_buf {
	uint8_t *data;
	size_t len, cap;
	int error; /* 0 or -ENOMEM; once set, puts do nothing */
};

/* Writes the message into err (when given) and returns ret: one-line errors. */
int state_fail(int ret, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

void state_buf_init(struct state_buf *b);
void state_buf_free(struct state_buf *b);
/* Appends n bytes; sets b->error = -ENOMEM on failure; no-op after an error. */
void state_buf_put(struct state_buf *b, const void *p, size_t n);
/* Appends {u32 type, u32 len} (little endian) and the payload. */
void state_buf_put_section(struct state_buf *b, uint32_t type, const void *p, uint32_t len);

/*
 * Writing a blob in a given framing (state_versions.h): the HEADER, then
 * in framing 3 the VERSIONS section of the n sections that will follow,
 * each {type, component, version}; framing 2 writes none (every component
 * is at version 1 there, which the caller made sure of).
 */
struct state_version_ent {
	uint32_t type;
	uint16_t comp;
	uint16_t version;
};
void state_buf_put_header_versions(struct state_buf *b, enum state_kind kind, uint32_t index,
				   unsigned framing, const struct state_version_ent *ents,
				   unsigned n);

/* ---- reading ---- */

/* What a loader expects of one section type. */
struct state_section_spec {
	uint32_t type;
	const char *name; /* used in error messages: "section LAPIC" */
	uint32_t min_len; /* min_len == max_len: exact size */
	uint32_t max_len;
	bool required;
	uint32_t unit; /* if not 0: len must be min_len + k * unit */
	/*
	 * The component (enum state_comp) its VERSIONS entry must name; 0 when
	 * the loader decides (a virtio section: the device's kind).
	 */
	uint16_t comp;
};

/*
 * One section found by state_parse(); payload points into the input.
 * comp and version are its VERSIONS entry's (framing 3), or spec.comp and
 * 1 (framing 2); version is within the component's oldest_read..newest.
 */
struct state_section {
	const uint8_t *payload;
	uint32_t len;
	bool present;
	uint16_t comp;
	uint16_t version;
};

/*
 * Walks a blob: checks the HEADER (first; magic, kind, framing 2 or 3, the
 * KVM structure sizes), in framing 3 the VERSIONS section (second; one
 * entry per section present, each a known component at a version this
 * build reads, the spec's component where it names one), then every
 * section against `specs` (unknown type,
 * length out of bounds, duplicate, missing required section, truncated
 * input, data after END). `found[i]` receives the section of `specs[i]`;
 * `*hdr` the header. Never reads outside data[0..len). `what` prefixes
 * messages ("vcpu state"). Returns 0 or -EINVAL with one line in err.
 */
int state_parse(const char *what, enum state_kind kind, const void *data, size_t len,
		const struct state_section_spec *specs, size_t nspecs, struct state_section *found,
		struct state_header *hdr, char *err, size_t errlen);

#endif /* VMM_STATE_BUF_H */
