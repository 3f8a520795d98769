/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snap_format.h - the snapshot format (version 1.0), specified byte by byte
 * in docs/snapshot-format.md: a snapshot is a directory of two files,
 *
 *   state   the header, the section table, then the sections (the memory
 *           layout, the present-page index, the config, the CPU features,
 *           the VM and vCPU state blobs, later device state). Every part
 *           carries a CRC-32C; every section a type, a version and flags.
 *   memory  a 64-byte header, then each memslot's pages at a fixed offset
 *           (slot s's page p at slot s's file_offset + p * 4096). Pages
 *           the index does not mark present are holes: the file is sparse.
 *
 * A diff layer (vmm snapshot --diff) is the same two files; its index marks
 * only the pages written since its parent, whose snapshot id it names.
 *
 * All integers are little endian. The structures below are the decoded
 * form, not the file's layout: encode and decode with snap_codec.h.
 */
#ifndef VMM_SNAP_FORMAT_H
#define VMM_SNAP_FORMAT_H

#include <stdint.h>

#include "protocol.h" /* MIG_PAGE_SIZE, MIG_SLOTS_MAX, MIG_VCPUS_MAX, MIG_STATE_MAX ... */

#define SNAP_MAGIC	   "VMMSNS\r\n" /* the state file */
#define SNAP_MEM_MAGIC	   "VMMSNM\r\n" /* the memory file */
#define SNAP_VERSION_MAJOR 1u
#define SNAP_VERSION_MINOR 0u

/* The file names inside a snapshot directory. */
#define SNAP_STATE_FILE	 "state"
#define SNAP_MEMORY_FILE "memory"

/* ---- Sizes and limits ----------------------------------------------------- */

#define SNAP_HEADER_LEN	    128u /* the state file's header */
#define SNAP_SEC_LEN	    32u	 /* one section table entry */
#define SNAP_MEM_HEADER_LEN 64u	 /* the memory file's header */
#define SNAP_SLOT_LEN	    24u	 /* one LAYOUT entry */
#define SNAP_INDEX_ENT_LEN  16u	 /* one INDEX entry */
#define SNAP_CPU_HDR_LEN    8u
#define SNAP_CPU_WORD_LEN   16u
#define SNAP_SEC_ALIGN	    8u /* sections start at multiples of 8; padding is zero */

/*
 * Memslot data starts at a multiple of 2 MiB in the memory file (so the
 * file can back guest memory with huge pages), the first at 2 MiB: the
 * memory header occupies the first block, the rest of it is a hole.
 */
#define SNAP_MEM_ALIGN (2ull << 20)

/* Sections in one state file: the fixed ones, a vCPU each, and room for devices. */
#define SNAP_SECTIONS_MAX (MIG_VCPUS_MAX + 1024u)
/* The whole state file; a reader may pass a tighter limit (struct snap_limits). */
#define SNAP_STATE_MAX (1ull << 30)
/* One section of a type this build does not read (device state, later). */
#define SNAP_SECTION_MAX (64u << 20)
/* CPU feature words in a CPU section. */
#define SNAP_CPU_WORDS_MAX 256u
/* Diff layers above one full snapshot. */
#define SNAP_LAYERS_MAX 64u
/*
 * The state files of a chain (a full snapshot and its diff layers)
 * together: a reader refuses a chain whose headers declare more, before
 * reading what they declare. As much as one state file may be.
 */
#define SNAP_CHAIN_STATE_MAX SNAP_STATE_MAX
/* PARENT_PATH text. */
#define SNAP_PATH_MAX 4096u

/* ---- The state file's header (SNAP_HEADER_LEN bytes at offset 0) ---------- */

/* A snapshot's identity: 128 random bits, never all zero. */
struct snap_id {
	uint8_t b[16];
};

#define SNAP_F_DIFF 0x1u /* a diff layer: parent, generation >= 1 */

struct snap_header {
	uint16_t version_major;
	uint16_t version_minor;
	uint32_t header_len; /* SNAP_HEADER_LEN */
	struct snap_id id;
	struct snap_id parent; /* a diff layer's parent; zero for a full snapshot */
	uint32_t flags;	       /* SNAP_F_* */
	uint32_t generation;   /* 0 full; a diff layer: its parent's + 1 */
	uint64_t memory;       /* bytes of guest RAM: the sum of the slots */
	uint32_t page_size;    /* MIG_PAGE_SIZE */
	uint32_t nslots;
	uint32_t nvcpus;
	uint32_t nsections;
	uint64_t state_len;	  /* bytes of the state file */
	uint64_t memory_file_len; /* bytes of the memory file */
	uint64_t created_ns;	  /* CLOCK_REALTIME when taken; informational */
	uint32_t table_crc;	  /* CRC-32C of the section table */
};

/* ---- The section table (nsections x SNAP_SEC_LEN at offset 128) ----------- */

/*
 * Section types. A reader that does not know a type skips the section if
 * it is optional and refuses the file if it is required (SNAP_SEC_REQUIRED);
 * the same for a known type of a version it does not read. 0x1000..0x1fff
 * are device state (virtio devices, later), the instance their index.
 */
enum snap_sec_type {
	SNAP_SEC_LAYOUT = 0x0001,      /* nslots x SNAP_SLOT_LEN: the memslots */
	SNAP_SEC_INDEX = 0x0002,       /* the present pages, a bitmap per slot */
	SNAP_SEC_CONFIG = 0x0003,      /* the VM's config, INI text */
	SNAP_SEC_CPU = 0x0004,	       /* the guest's CPU feature words */
	SNAP_SEC_VM_STATE = 0x0010,    /* the VM blob (docs/state-format.md) */
	SNAP_SEC_VCPU_STATE = 0x0011,  /* a vCPU blob; instance = the vCPU */
	SNAP_SEC_PARENT_PATH = 0x0020, /* optional: where the parent layer was written */
	SNAP_SEC_DEVICE_FIRST = 0x1000,
	SNAP_SEC_DEVICE_LAST = 0x1fff,
};

/* The version of each known type this build writes and reads. */
#define SNAP_SEC_VERSION 1u

#define SNAP_SEC_REQUIRED 0x1u /* a reader that cannot read it must refuse the file */

struct snap_sec {
	uint32_t type;
	uint16_t version;
	uint16_t flags;	   /* SNAP_SEC_* */
	uint32_t instance; /* the vCPU (VCPU_STATE), the device; 0 otherwise */
	uint32_t crc;	   /* CRC-32C of the payload */
	uint64_t offset;   /* from the start of the state file */
	uint64_t len;
};

/* ---- Sections' payloads --------------------------------------------------- */

/* LAYOUT entry: a memslot and where its pages are in the memory file. */
struct snap_slot {
	uint64_t gpa;
	uint64_t size;
	uint64_t file_offset; /* snap_layout_encode()'s: a function of the sizes */
};

/* INDEX: nslots entries, then each slot's bitmap data in slot order. */
enum snap_index_enc {
	SNAP_INDEX_RAW = 0,  /* data_len = 8 * ceil(pages / 64) */
	SNAP_INDEX_ZSTD = 1, /* one zstd frame of that */
};

struct snap_index_ent {
	uint64_t present; /* bits set in the slot's bitmap */
	uint32_t encoding;
	uint32_t data_len;
};

/* CPU: a count (u32) and a reserved u32, then count words, ascending by (leaf, subleaf, reg). */
enum snap_cpu_reg {
	SNAP_CPU_EAX = 0,
	SNAP_CPU_EBX = 1,
	SNAP_CPU_ECX = 2,
	SNAP_CPU_EDX = 3,
};

struct snap_cpu_word {
	uint32_t leaf;
	uint32_t subleaf;
	uint32_t reg;  /* enum snap_cpu_reg */
	uint32_t bits; /* feature bits the guest was given */
};

/* ---- The memory file's header (SNAP_MEM_HEADER_LEN bytes at offset 0) ---- */

struct snap_mem_header {
	uint16_t version_major;
	uint16_t version_minor;
	struct snap_id id; /* the state file's */
	uint64_t file_len; /* the state header's memory_file_len */
};

_Static_assert(SNAP_HEADER_LEN % SNAP_SEC_ALIGN == 0, "the table starts aligned");
_Static_assert(SNAP_SEC_LEN % SNAP_SEC_ALIGN == 0, "table entries keep the alignment");
_Static_assert(SNAP_SECTIONS_MAX *(uint64_t)SNAP_SEC_LEN < SNAP_STATE_MAX, "a table fits");

#endif /* VMM_SNAP_FORMAT_H */
