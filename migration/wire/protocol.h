/* SPDX-License-Identifier: Apache-2.0 */
/*
 * protocol.h - the migration wire format (protocol 6.1), specified byte by
 * byte in docs/migration-protocol.md. All integers are little endian; the
 * structures below are packed and describe the wire layout, which is also
 * the host layout on the little-endian hosts we build for (asserted below).
 * Encode and decode them with codec.h, never by casting a received buffer.
 *
 * Every connection starts with a struct mig_hello from the source. Then
 * records follow: struct mig_rec_hdr (type, payload length) and the
 * payload. Every payload length is bounded through the record table
 * (mig_rec_check() in rec_table.h: type, channel, direction, min and max
 * length) before anything is allocated or read.
 *
 * The channels (the hello's role) and what each carries:
 * docs/migration-protocol.md, "Connections". The shard rule: page p of slot
 * s travels only on data connection (s + p / shard_pages) % connections, so
 * the copies of a page arrive in the order they were sent.
 */
#ifndef VMM_MIGRATION_PROTOCOL_H
#define VMM_MIGRATION_PROTOCOL_H

#include <stdint.h>

#include "shard.h"

#define MIG_MAGIC	  "VMMMIG\r\n"
#define MIG_VERSION_MAJOR 6u
/*
 * 6.0: a proof per decision (proof.h). 6.1: CAPS states what the target
 * reads (MIG_CAPS_FORMATS) to a source whose hello says 6.1 or later, and
 * the source writes the newest state form both know. A 6.1 side speaks
 * 6.0's forms to a 6.0 peer (release 0.3.0): docs/compatibility.md.
 */
#define MIG_VERSION_MINOR 1u

enum mig_role {
	MIG_ROLE_MAIN = 0,
	MIG_ROLE_DATA = 1,
	MIG_ROLE_URGENT = 2,	  /* postcopy page requests and their answers */
	MIG_ROLE_MAIN_RESUME = 3, /* main connection of a resumed postcopy */
	MIG_ROLE_RECOVER = 4,	  /* settles a switchover of unknown outcome */
	MIG_ROLE_MAX = MIG_ROLE_RECOVER,
};

struct mig_hello {
	char magic[8];
	uint32_t version_major;
	uint32_t version_minor;
	uint64_t session_id; /* random per migration: data channels join their main */
	uint32_t role;
	/*
	 * Bits 0-15: the data channel index (0 for the others). Bits 16-31:
	 * the resume attempt (0 for the first session, k for a session's k-th
	 * resume), so a target can tell a dead attempt's connections from the
	 * live one's: they share the session id.
	 */
	uint32_t index;
} __attribute__((packed));
#define MIG_HELLO_INDEX(index)	    ((index)&0xffffu)
#define MIG_HELLO_ATTEMPT(index)    ((index) >> 16)
#define MIG_HELLO_SET_ATTEMPT(i, a) ((i) | ((uint32_t)(a) << 16))

enum mig_rec_type {
	MIG_REC_VM_DESC = 1,
	MIG_REC_SWITCHOVER = 2,
	MIG_REC_VCPU_STATE = 3,
	MIG_REC_VM_STATE = 4,
	MIG_REC_END = 5,
	MIG_REC_COMMITTED = 6,
	MIG_REC_ERROR = 7,
	MIG_REC_SYNC_ACK = 8,
	MIG_REC_POSTCOPY = 9,
	MIG_REC_BITMAP = 10,
	MIG_REC_BITMAP_END = 11,
	MIG_REC_POSTCOPY_DONE = 12,
	MIG_REC_POSTCOPY_ARMED = 13,
	MIG_REC_PAGES = 16,
	MIG_REC_CHANNEL_END = 17,
	MIG_REC_SYNC = 18,
	MIG_REC_PAGE_REQ = 19,
	MIG_REC_PREPARED = 20,
	MIG_REC_COMMIT = 21,
	MIG_REC_ABORT = 22,
	MIG_REC_RELEASE = 23,
	MIG_REC_RECOVER_STATE = 24,
	MIG_REC_CAPS = 25,
	MIG_REC_HEARTBEAT = 26,
	MIG_REC_RAM_FD = 27,
	MIG_REC_RESUME = 28,
	MIG_REC_DECIDED = 29,
};

/*
 * SYNC (data, source to target) ends a precopy pass on that connection;
 * SYNC_ACK (main, target to source) says every connection's pages up to
 * that SYNC are in guest memory. Waiting for it keeps the target's backlog
 * (first-touch page faults, decompression) out of the blackout and makes
 * the measured throughput the real one.
 */
struct mig_sync {
	uint64_t seq;
} __attribute__((packed));

struct mig_rec_hdr {
	uint32_t type;
	uint32_t len; /* payload bytes that follow */
} __attribute__((packed));

/*
 * The decision proofs (proof.h): every decision has its own Ed25519 key;
 * VM_DESC carries the source's four public keys, PREPARED the target's
 * two, and COMMIT, RELEASE, ABORT, RESUME and DECIDED each carry that
 * decision's signature, bound to the session, the resume attempt and the
 * connection's TLS exporter (zeros without TLS).
 */
#define MIG_KEY_LEN  32u /* an Ed25519 public (or private) key */
#define MIG_SIG_LEN  64u /* an Ed25519 signature: one decision's proof */
#define MIG_BIND_LEN 32u /* the TLS exporter a proof is bound to */
/* The exporter's label (RFC 8446 section 7.5), no context. */
#define MIG_BIND_LABEL "EXPORTER-vmm-decision-proof"

/* VM_DESC payload: this, then nslots x mig_slot_desc, then config_len bytes of INI. */
struct mig_vm_desc {
	uint64_t memory;
	uint32_t page_size;
	uint32_t nslots;
	uint32_t nvcpus;
	uint32_t connections;
	uint32_t config_len;
	uint32_t shard_pages; /* power of two, 64..65536 */
	/* The source's decision keys: COMMIT, RELEASE, ABORT, RESUME (enum mig_decision). */
	uint8_t keys[4][MIG_KEY_LEN];
} __attribute__((packed));

struct mig_slot_desc {
	uint64_t gpa;
	uint64_t size;
} __attribute__((packed));

/* SWITCHOVER payload: the source paused its vCPUs. */
struct mig_switchover {
	uint32_t pass; /* precopy passes completed */
	uint32_t reserved;
} __attribute__((packed));

/* VCPU_STATE payload: this, then the vCPU's state blob (docs/state-format.md). */
struct mig_vcpu_state_hdr {
	uint32_t index;
	uint32_t reserved;
} __attribute__((packed));

/*
 * END payload: this, then connections x uint64_t PAGES records sent per
 * channel (none in a local handover: connections = 0).
 */
struct mig_end {
	uint64_t memory_digest; /* 0 unless the test-only digest check is on */
	uint32_t connections;
	uint32_t commit_timeout_ms; /* how long the source waits for COMMITTED */
} __attribute__((packed));
/* END's commit_timeout_ms at most (the API's timeout_ms limit: one hour). */
#define MIG_COMMIT_TIMEOUT_MAX_MS 3600000u

/*
 * The switchover commit (docs/migration-protocol.md, "Switchover"). The
 * source is the coordinator: the target resumes only on COMMIT, and a
 * source that sent COMMIT never resumes on its own.
 *
 * PREPARED payload (target to source): the state is loaded, the vCPUs are
 * ready; the target waits for COMMIT or ABORT and never runs without COMMIT.
 */
struct mig_prepared {
	uint64_t restore_us; /* END received to PREPARED */
	uint64_t reserved;
	/* The target's decision keys: its operator's RUN, DISCARD (proof.h). */
	uint8_t keys[2][MIG_KEY_LEN];
} __attribute__((packed));

/*
 * DECIDED payload (target to source, main): the target's operator decided
 * (`vmm migrate --recover --decide`), proven with the target's key for
 * that decision (PREPARED's). A source told "runs" stays stopped for good;
 * told "discarded", it may run the VM again.
 */
enum mig_decided_what {
	MIG_DECIDED_RUNS = 1,	   /* the VM runs on the target */
	MIG_DECIDED_DISCARDED = 2, /* the target discarded its copy */
};
struct mig_decided {
	uint32_t what; /* enum mig_decided_what */
	uint32_t reserved;
	uint8_t proof[MIG_SIG_LEN];
} __attribute__((packed));

/* RECOVER_STATE payload (target to source, recover connection). */
enum mig_recover_what {
	MIG_RECOVER_PREPARED = 1, /* waiting for the decision; the vCPUs never ran */
	MIG_RECOVER_RUNNING = 2,  /* COMMIT was received: the VM runs here */
};

struct mig_recover_state {
	uint32_t state; /* enum mig_recover_what */
	uint32_t reserved;
} __attribute__((packed));

/*
 * COMMITTED payload (target to source): COMMIT arrived and the VM runs on
 * the target from now on. A source on the same host (same boot_id) takes
 * resume_mono_ns, the target's CLOCK_MONOTONIC when it released the vCPUs,
 * as the end of the downtime, instead of when COMMITTED reached it: on a
 * small shared host the resumed vCPUs can delay the source's own wake-up by
 * a millisecond.
 */
struct mig_committed {
	uint64_t restore_us;	 /* target: END received to PREPARED */
	uint64_t resume_mono_ns; /* target's CLOCK_MONOTONIC at the resume */
	uint8_t boot_id[16];	 /* target host's /proc/sys/kernel/random/boot_id */
} __attribute__((packed));

/* ERROR payload: a message, not NUL terminated, at most MIG_ERROR_MAX bytes. */
#define MIG_ERROR_MAX 512u

/*
 * PAGES payload: this header, nzero x uint32 page indexes (zero pages),
 * ndata x uint32 page indexes, then data_len bytes: the ndata pages in
 * index order, raw (MIG_ENC_RAW, data_len = ndata * 4096) or one zstd
 * frame of them (MIG_ENC_ZSTD). Page indexes are relative to the slot.
 */
#define MIG_PAGES_MAX 512u
enum mig_encoding {
	MIG_ENC_RAW = 0,
	MIG_ENC_ZSTD = 1,
};

struct mig_pages_hdr {
	uint32_t slot;
	uint32_t nzero;
	uint32_t ndata;
	uint32_t encoding;
	uint32_t data_len;
	uint32_t reserved;
} __attribute__((packed));

/* CHANNEL_END payload: totals for this data channel. */
struct mig_channel_end {
	uint64_t records;
	uint64_t pages;
} __attribute__((packed));

/*
 * POSTCOPY (main, source to target) starts a postcopy switchover: the source
 * paused its vCPUs; BITMAP records (one per memslot with stale pages) and
 * BITMAP_END follow, then VM_STATE, VCPU_STATE..., END.
 */
#define MIG_POSTCOPY_NO_FINAL_BITMAP 0x1u /* every page is stale (baseline) */
struct mig_postcopy {
	uint32_t pass;
	uint32_t flags;
} __attribute__((packed));

/*
 * BITMAP: one memslot's stale pages. Source to target at a postcopy
 * switchover, target to source (pages still missing) on a resume.
 * raw_len = 8 * ceil(slot pages / 64); data is one zstd frame expanding to
 * exactly raw_len bytes (bit p of little-endian word p / 64 = page p).
 */
struct mig_bitmap_hdr {
	uint32_t slot;
	uint32_t raw_len;
	uint32_t data_len;
	uint32_t reserved;
} __attribute__((packed));

struct mig_bitmap_end {
	uint32_t nbitmaps; /* BITMAP records sent in this round */
	uint32_t flags;	   /* MIG_BITMAP_END_* */
	uint64_t pages;	   /* bits set in the union of every round's bitmaps */
} __attribute__((packed));

/*
 * S->T only: the end of the preliminary round, harvested while the guest
 * still runs. The target drops those pages, then answers POSTCOPY_ARMED;
 * the final round after the pause carries supersets of these bitmaps.
 */
#define MIG_BITMAP_END_PRELIMINARY 1u

/* PAGE_REQ (urgent, target to source): a vCPU faulted on a stale page. */
struct mig_page_req {
	uint32_t slot;
	uint32_t page;
} __attribute__((packed));

/* POSTCOPY_DONE (main, target to source): every stale page has arrived. */
struct mig_postcopy_done {
	uint64_t faults;       /* userfaultfd faults */
	uint64_t requested;    /* PAGE_REQs sent */
	uint64_t arrived_us;   /* resume to the last page */
	uint64_t fault_p50_us; /* requested fault to page in place */
	uint64_t fault_p99_us;
	uint64_t fault_max_us;
	uint64_t duplicates; /* pages received that were not stale: must be 0 */
} __attribute__((packed));

/*
 * HEARTBEAT (main or main-resume, target to source): postcopy only, every
 * MIG_HEARTBEAT_MS from the vCPUs' start on the target until RELEASE. A
 * source waiting for POSTCOPY_DONE that has no whole record on main
 * MIG_HEARTBEAT_DEAD_MS after its wait for it began (a deadline, however
 * slowly bytes trickle) takes the link for dead and pauses (a resume goes
 * on). MIG_HEARTBEAT_DONE says that POSTCOPY_DONE went out: a source
 * that never saw it (lost on the way) completes on this.
 */
#define MIG_HEARTBEAT_MS      1000u
#define MIG_HEARTBEAT_DEAD_MS 10000u
#define MIG_HEARTBEAT_DONE    0x1u
struct mig_heartbeat {
	uint64_t missing; /* stale pages not yet in place on the target */
	uint32_t flags;	  /* MIG_HEARTBEAT_*; unknown bits are ignored */
	uint32_t reserved;
} __attribute__((packed));

/*
 * CAPS (main, target to source): the answer to VM_DESC once the VM exists,
 * before any data connection is accepted, so the source knows before the
 * first page whether it may switch over the postcopy way. Payload: this,
 * then reason_len bytes (printable ASCII, not NUL terminated): why the
 * target cannot do postcopy ("userfaultfd: the syscall: ...").
 */
#define MIG_CAPS_POSTCOPY   0x1u /* a userfaultfd for guest RAM is available */
#define MIG_CAPS_FORMATS    0x2u /* 6.1: the formats block follows the reason */
#define MIG_CAPS_REASON_MAX 256u
struct mig_caps {
	uint32_t flags;	     /* MIG_CAPS_*; unknown bits are ignored */
	uint32_t reason_len; /* 0 with MIG_CAPS_POSTCOPY, else 1..MIG_CAPS_REASON_MAX */
} __attribute__((packed));

/*
 * The formats block (6.1, MIG_CAPS_FORMATS): what the target reads, sent
 * only to a source whose hello minor is 1 or more (a 6.0 source's record
 * table would refuse the longer CAPS). This header, then ncomp x struct
 * mig_caps_comp: the state framings and, per state component
 * (vmm/machine/state/state_versions.h), the versions the target loads. A source
 * writes the newest form both know, or refuses before any page naming the
 * component it cannot express; it ignores components it does not know.
 */
#define MIG_CAPS_COMPS_MAX 64u
struct mig_caps_formats_hdr {
	uint32_t protocol_minor; /* the target's: 1 or more */
	uint16_t framing_oldest; /* state blob framings it reads */
	uint16_t framing_newest;
	uint32_t ncomp; /* 1..MIG_CAPS_COMPS_MAX */
	uint32_t reserved;
} __attribute__((packed));
struct mig_caps_comp {
	uint32_t id;	 /* a state component; each once, not 0 */
	uint16_t oldest; /* 1..newest */
	uint16_t newest;
} __attribute__((packed));

/*
 * The local handover (5.1): a source and a target on one host, joined by a
 * UNIX socket, move the VM without copying its memory. VM_DESC says
 * connections = 0 (no data connection; END then carries no counts), and
 * RAM_FD follows it on main: its bytes carry, as SCM_RIGHTS ancillary
 * data, nfds descriptors of the guest's RAM (memfds sealed against
 * shrinking), which the target maps in place of memory of its own. Only
 * the device and vCPU state then cross the socket, and the commit decides
 * as for any migration. A target refuses connections = 0 on TCP.
 */
#define MIG_RAM_FD_MAX 1u /* descriptors in one RAM_FD (guest RAM is one memfd) */
struct mig_ram_fd {
	uint64_t size; /* bytes of each descriptor's file: VM_DESC.memory */
	uint32_t nfds; /* 1..MIG_RAM_FD_MAX */
	uint32_t reserved;
} __attribute__((packed));

/* The one page size of the protocol (VM_DESC.page_size). */
#define MIG_PAGE_SIZE 4096u
/* VM_DESC at most 1 MiB; VM_STATE, and a VCPU_STATE's blob, too. */
#define MIG_VM_DESC_MAX (1u << 20)
#define MIG_STATE_MAX	(1u << 20)

/*
 * Protocol maxima. A receiver passes tighter limits of its own (KVM's slot
 * count, its vCPU and connection limits) to the decoders.
 *   MIG_SLOTS_MAX: KVM's memslot limit on the hosts we run on.
 *   MIG_SLOT_PAGES_MAX: page indexes are uint32, so a slot holds at most
 *     2^32 pages (16 TiB); that bounds the largest BITMAP.
 */
#define MIG_SLOTS_MAX	    32764u
#define MIG_VCPUS_MAX	    1024u
#define MIG_CONNECTIONS_MAX 64u
#define MIG_SLOT_PAGES_MAX  (1ull << 32)
#define MIG_SLOT_SIZE_MAX   (MIG_SLOT_PAGES_MAX * MIG_PAGE_SIZE)
#define MIG_BITMAP_RAW_MAX  ((uint32_t)(MIG_SLOT_PAGES_MAX / 8))
/* VM_DESC's shard_pages: MIG_SHARD_PAGES_MIN..MAX, shard.h (the source's --clear-chunk). */

/* Wire sizes of the fixed parts, in bytes. */
#define MIG_HELLO_LEN	       32u
#define MIG_REC_HDR_LEN	       8u
#define MIG_VM_DESC_LEN	       160u
#define MIG_SLOT_DESC_LEN      16u
#define MIG_SWITCHOVER_LEN     8u
#define MIG_VCPU_STATE_HDR_LEN 8u
#define MIG_END_LEN	       16u
#define MIG_COMMITTED_LEN      32u
#define MIG_PREPARED_LEN       80u
#define MIG_DECIDED_LEN	       72u
#define MIG_RECOVER_STATE_LEN  8u
#define MIG_SYNC_LEN	       8u
#define MIG_PAGES_HDR_LEN      24u
#define MIG_CHANNEL_END_LEN    16u
#define MIG_POSTCOPY_LEN       8u
#define MIG_BITMAP_HDR_LEN     16u
#define MIG_BITMAP_END_LEN     16u
#define MIG_PAGE_REQ_LEN       8u
#define MIG_POSTCOPY_DONE_LEN  56u
#define MIG_CAPS_LEN	       8u
#define MIG_CAPS_FORMATS_LEN   16u
#define MIG_CAPS_COMP_LEN      8u
/* CAPS at most: header, reason, formats block with every component. */
#define MIG_CAPS_MAX                                                                               \
	(MIG_CAPS_LEN + MIG_CAPS_REASON_MAX + MIG_CAPS_FORMATS_LEN +                               \
	 MIG_CAPS_COMPS_MAX * MIG_CAPS_COMP_LEN)
#define MIG_HEARTBEAT_LEN 16u
#define MIG_RAM_FD_LEN	  16u

_Static_assert(sizeof(struct mig_hello) == MIG_HELLO_LEN, "hello is 32 bytes on the wire");
_Static_assert(sizeof(struct mig_rec_hdr) == MIG_REC_HDR_LEN, "record header");
_Static_assert(sizeof(struct mig_vm_desc) == MIG_VM_DESC_LEN, "VM_DESC header");
_Static_assert(sizeof(struct mig_slot_desc) == MIG_SLOT_DESC_LEN, "VM_DESC slot");
_Static_assert(sizeof(struct mig_switchover) == MIG_SWITCHOVER_LEN, "SWITCHOVER");
_Static_assert(sizeof(struct mig_vcpu_state_hdr) == MIG_VCPU_STATE_HDR_LEN, "VCPU_STATE header");
_Static_assert(sizeof(struct mig_end) == MIG_END_LEN, "END header");
_Static_assert(sizeof(struct mig_committed) == MIG_COMMITTED_LEN, "COMMITTED");
_Static_assert(sizeof(struct mig_prepared) == MIG_PREPARED_LEN, "PREPARED");
_Static_assert(sizeof(struct mig_decided) == MIG_DECIDED_LEN, "DECIDED");
_Static_assert(sizeof(struct mig_recover_state) == MIG_RECOVER_STATE_LEN, "RECOVER_STATE");
_Static_assert(sizeof(struct mig_sync) == MIG_SYNC_LEN, "SYNC, SYNC_ACK");
_Static_assert(sizeof(struct mig_pages_hdr) == MIG_PAGES_HDR_LEN, "PAGES header");
_Static_assert(sizeof(struct mig_channel_end) == MIG_CHANNEL_END_LEN, "CHANNEL_END");
_Static_assert(sizeof(struct mig_postcopy) == MIG_POSTCOPY_LEN, "POSTCOPY");
_Static_assert(sizeof(struct mig_bitmap_hdr) == MIG_BITMAP_HDR_LEN, "BITMAP header");
_Static_assert(sizeof(struct mig_bitmap_end) == MIG_BITMAP_END_LEN, "BITMAP_END");
_Static_assert(sizeof(struct mig_page_req) == MIG_PAGE_REQ_LEN, "PAGE_REQ");
_Static_assert(sizeof(struct mig_postcopy_done) == MIG_POSTCOPY_DONE_LEN, "POSTCOPY_DONE");
_Static_assert(sizeof(struct mig_caps) == MIG_CAPS_LEN, "CAPS header");
_Static_assert(sizeof(struct mig_caps_formats_hdr) == MIG_CAPS_FORMATS_LEN, "CAPS formats");
_Static_assert(sizeof(struct mig_caps_comp) == MIG_CAPS_COMP_LEN, "CAPS component");
_Static_assert(sizeof(struct mig_heartbeat) == MIG_HEARTBEAT_LEN, "HEARTBEAT");
_Static_assert(sizeof(struct mig_ram_fd) == MIG_RAM_FD_LEN, "RAM_FD");

/*
 * The page index arrays of PAGES, the counts of END and the words of a
 * BITMAP travel as little-endian arrays and are passed through without
 * conversion (the zero-copy send path, the receiver's reads into its own
 * arrays): that needs a little-endian host.
 */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the wire's uint32/uint64 arrays are passed through: little-endian hosts only");

#endif /* VMM_MIGRATION_PROTOCOL_H */
