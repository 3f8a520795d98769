/* SPDX-License-Identifier: Apache-2.0 */
/*
 * state_versions.h - the versions of the VM's state, component by component
 * (docs/state-format.md, "Versions"; docs/compatibility.md).
 *
 * The state a migration or a snapshot moves is made of components: the
 * VM-wide KVM devices, each vCPU, the clock, the serial port, each virtio
 * device, the CPU features. Each has its own version, so that one of them
 * can change without the others, and a reader can tell which form of each
 * a blob holds. The blob framing (state_buf.h) has a version too: framing 2
 * (release 0.3.0) carries no versions, every component is at 1; framing 3
 * carries a VERSIONS section that names each section's component and
 * version.
 *
 * One table (state_comps[]) says, for each component, which versions this
 * build writes and reads; it feeds the writers, the loaders, the target's
 * CAPS (migration/incoming), the source's choice of form (migration/source),
 * `vmm --version`, and the docs (lint.compat_table compares them).
 *
 * A struct state_form says what to write: the framing and a version per
 * component. state_form_current() is this build's newest; a migration
 * writes the newest both sides know (state_form_negotiate()); a snapshot
 * the form of the release its --format-version names (state_form_release()).
 *
 * Pure data and pure functions: no KVM, no globals that change.
 */
#ifndef VMM_STATE_VERSIONS_H
#define VMM_STATE_VERSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The blob framing: 2 had no VERSIONS section (0.3.0), 3 has one. */
#define STATE_FRAMING_OLDEST 2u
#define STATE_FRAMING_NEWEST 3u

/*
 * Components, by their ids on the wire (CAPS) and in VERSIONS sections.
 * Never renumber; a new component takes the next id.
 */
enum state_comp {
	STATE_COMP_VM = 1,	     /* PIC_MASTER, PIC_SLAVE, IOAPIC, PIT2 */
	STATE_COMP_VCPU = 2,	     /* a vCPU blob's sections */
	STATE_COMP_CLOCK = 3,	     /* CLOCK */
	STATE_COMP_SERIAL = 4,	     /* SERIAL */
	STATE_COMP_VIRTIO_BLK = 5,   /* VIRTIOi of a [disk] */
	STATE_COMP_VIRTIO_NET = 6,   /* VIRTIOi of a [net] */
	STATE_COMP_CPU_FEATURES = 7, /* [vm] cpu_features; a snapshot's CPU section */
	STATE_COMP_END
};
#define STATE_COMP_COUNT (STATE_COMP_END - 1)

struct state_comp_info {
	uint16_t id;	       /* enum state_comp */
	const char *name;      /* "virtio-blk": messages, docs, --version */
	const char *sections;  /* what it covers, for the docs */
	uint16_t newest;       /* the version this build writes by default */
	uint16_t oldest_read;  /* the oldest version this build loads */
	uint16_t oldest_write; /* the oldest version this build can still write */
};

/* Indexed by id - 1; state_comps[i].id == i + 1. */
extern const struct state_comp_info state_comps[STATE_COMP_COUNT];

/* The component of an id, or NULL for one this build does not know. */
const struct state_comp_info *state_comp_get(uint32_t id);

/* What to write: the framing, and each component's version (0 = none known). */
struct state_form {
	uint16_t framing;
	uint16_t v[STATE_COMP_COUNT]; /* indexed by id - 1 */
};

/* This build's newest form. */
void state_form_current(struct state_form *f);

/*
 * The form a release wrote ("0.3.0"), from its row in this build's table;
 * -ENOENT for a release this build does not know (err names the ones it
 * knows). The current development version is known too.
 */
int state_form_release(const char *version, struct state_form *f, char *err, size_t errlen);

/* What a peer reads: the framings and each component's range. */
struct state_reads {
	uint16_t framing_oldest, framing_newest;
	uint16_t oldest[STATE_COMP_COUNT], newest[STATE_COMP_COUNT]; /* 0, 0: not known */
};

/* What this build reads (its CAPS), and what a release read. */
void state_reads_current(struct state_reads *r);
int state_reads_release(const char *version, struct state_reads *r, char *err, size_t errlen);

/*
 * The newest form this build can write that a peer which reads `peer` can
 * read, for a VM that has the components used[] (indexed by id - 1; a
 * component the VM lacks may be unknown to the peer). Returns 0, or
 * -EPROTONOSUPPORT with one line naming the first component (or the
 * framing) that cannot be expressed: "the target cannot read virtio-net
 * state (it has no such component)".
 */
int state_form_negotiate(const struct state_reads *peer, const bool used[STATE_COMP_COUNT],
			 struct state_form *out, char *err, size_t errlen);

/* Whether this build can write f: -EPROTONOSUPPORT naming the first that it cannot. */
int state_form_check(const struct state_form *f, char *err, size_t errlen);

/*
 * The releases this build knows the state forms of, oldest first, ending
 * with the current development version: {"0.3.0", ...}. Their forms are in
 * state_versions.c; the commits are in VERSIONS at the top of the tree.
 */
extern const char *const state_releases[];
extern const size_t state_nreleases;

#endif /* VMM_STATE_VERSIONS_H */
