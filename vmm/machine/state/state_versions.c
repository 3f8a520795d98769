/* SPDX-License-Identifier: Apache-2.0 */
/*
 * state_versions.c - the component table and the releases' state forms
 * (state_versions.h). A component's version is bumped when its sections'
 * payload changes; the row then says which older versions this build still
 * reads and writes (a loader of the last two releases' versions), and
 * CHANGELOG.md says so.
 */
#include "state_versions.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifndef VMM_VERSION
#error "VMM_VERSION (the VERSIONS file's current version) must be defined"
#endif

const struct state_comp_info state_comps[STATE_COMP_COUNT] = {
    {STATE_COMP_VM, "vm", "PIC_MASTER, PIC_SLAVE, IOAPIC, PIT2", 1, 1, 1},
    {STATE_COMP_VCPU, "vcpu", "a vCPU blob: REGS ... MP_STATE", 1, 1, 1},
    {STATE_COMP_CLOCK, "clock", "CLOCK", 1, 1, 1},
    {STATE_COMP_SERIAL, "serial", "SERIAL", 1, 1, 1},
    {STATE_COMP_VIRTIO_BLK, "virtio-blk", "VIRTIOi of a [disk]", 1, 1, 1},
    {STATE_COMP_VIRTIO_NET, "virtio-net", "VIRTIOi of a [net]", 1, 1, 1},
    {STATE_COMP_CPU_FEATURES, "cpu-features", "[vm] cpu_features; snapshot CPU", 1, 1, 1},
};

/*
 * What each release wrote and read. A release's row never changes once it
 * is cut; a new release appends one. 0.3.0 wrote framing 2 (no VERSIONS
 * section), every component at 1, and read exactly that.
 */
struct release_forms {
	const char *version;
	uint16_t framing_oldest, framing_newest;
	uint16_t v[STATE_COMP_COUNT]; /* written and the newest read; 0: no such component */
	uint16_t oldest[STATE_COMP_COUNT];
};

static const struct release_forms releases[] = {
    {"0.3.0", 2, 2, {1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1}},
};
#define NRELEASES (sizeof(releases) / sizeof(releases[0]))

const char *const state_releases[] = {"0.3.0", VMM_VERSION};
const size_t state_nreleases = sizeof(state_releases) / sizeof(state_releases[0]);
_Static_assert(sizeof(state_releases) / sizeof(state_releases[0]) == NRELEASES + 1,
	       "every past release has its forms, then the current version");

const struct state_comp_info *state_comp_get(uint32_t id)
{
	if (id < 1 || id >= STATE_COMP_END)
		return NULL;
	return &state_comps[id - 1];
}

void state_form_current(struct state_form *f)
{
	memset(f, 0, sizeof(*f));
	f->framing = STATE_FRAMING_NEWEST;
	for (size_t i = 0; i < STATE_COMP_COUNT; i++)
		f->v[i] = state_comps[i].newest;
}

void state_reads_current(struct state_reads *r)
{
	memset(r, 0, sizeof(*r));
	r->framing_oldest = STATE_FRAMING_OLDEST;
	r->framing_newest = STATE_FRAMING_NEWEST;
	for (size_t i = 0; i < STATE_COMP_COUNT; i++) {
		r->oldest[i] = state_comps[i].oldest_read;
		r->newest[i] = state_comps[i].newest;
	}
}

static const struct release_forms *find_release(const char *version, char *err, size_t errlen)
{
	char known[128] = "";
	size_t off = 0;

	for (size_t i = 0; i < NRELEASES; i++)
		if (!strcmp(releases[i].version, version))
			return &releases[i];
	for (size_t i = 0; i < state_nreleases && off < sizeof(known); i++)
		off += (size_t)snprintf(known + off, sizeof(known) - off, "%s%s", i ? ", " : "",
					state_releases[i]);
	if (err && errlen)
		snprintf(err, errlen, "release %s is not one this vmm knows (it knows %s)", version,
			 known);
	return NULL;
}

int state_form_release(const char *version, struct state_form *f, char *err, size_t errlen)
{
	const struct release_forms *r;

	if (!strcmp(version, VMM_VERSION)) {
		state_form_current(f);
		return 0;
	}
	r = find_release(version, err, errlen);
	if (!r)
		return -ENOENT;
	memset(f, 0, sizeof(*f));
	f->framing = r->framing_newest;
	memcpy(f->v, r->v, sizeof(f->v));
	return 0;
}

int state_reads_release(const char *version, struct state_reads *out, char *err, size_t errlen)
{
	const struct release_forms *r;

	if (!strcmp(version, VMM_VERSION)) {
		state_reads_current(out);
		return 0;
	}
	r = find_release(version, err, errlen);
	if (!r)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->framing_oldest = r->framing_oldest;
	out->framing_newest = r->framing_newest;
	memcpy(out->oldest, r->oldest, sizeof(out->oldest));
	memcpy(out->newest, r->v, sizeof(out->newest));
	return 0;
}

static uint16_t min16(uint16_t a, uint16_t b)
{
	return a < b ? a : b;
}

static uint16_t max16(uint16_t a, uint16_t b)
{
	return a > b ? a : b;
}

int state_form_negotiate(const struct state_reads *peer, const bool used[STATE_COMP_COUNT],
			 struct state_form *out, char *err, size_t errlen)
{
	uint16_t fw = min16(STATE_FRAMING_NEWEST, peer->framing_newest);

	memset(out, 0, sizeof(*out));
	if (fw < max16(STATE_FRAMING_OLDEST, peer->framing_oldest)) {
		if (err && errlen)
			snprintf(err, errlen,
				 "the state framing: the peer reads versions %u..%u, this vmm "
				 "writes %u..%u",
				 peer->framing_oldest, peer->framing_newest, STATE_FRAMING_OLDEST,
				 STATE_FRAMING_NEWEST);
		return -EPROTONOSUPPORT;
	}
	out->framing = fw;
	for (size_t i = 0; i < STATE_COMP_COUNT; i++) {
		const struct state_comp_info *c = &state_comps[i];
		uint16_t v;

		if (!peer->newest[i]) {
			if (used[i]) {
				if (err && errlen)
					snprintf(err, errlen,
						 "%s state: the peer's vmm has no such component",
						 c->name);
				return -EPROTONOSUPPORT;
			}
			continue;
		}
		v = min16(c->newest, peer->newest[i]);
		/* Framing 2 has no way to say a version: every component is at 1 there. */
		if (out->framing < 3 && v != 1)
			v = 0;
		if (!v || v < max16(c->oldest_write, peer->oldest[i])) {
			if (!used[i])
				continue;
			if (err && errlen)
				snprintf(err, errlen,
					 "%s state: the peer reads versions %u..%u, this vmm "
					 "writes %u..%u",
					 c->name, peer->oldest[i], peer->newest[i], c->oldest_write,
					 c->newest);
			return -EPROTONOSUPPORT;
		}
		out->v[i] = v;
	}
	return 0;
}

int state_form_check(const struct state_form *f, char *err, size_t errlen)
{
	if (f->framing < STATE_FRAMING_OLDEST || f->framing > STATE_FRAMING_NEWEST) {
		if (err && errlen)
			snprintf(err, errlen, "state framing %u: this vmm writes %u..%u",
				 f->framing, STATE_FRAMING_OLDEST, STATE_FRAMING_NEWEST);
		return -EPROTONOSUPPORT;
	}
	for (size_t i = 0; i < STATE_COMP_COUNT; i++) {
		const struct state_comp_info *c = &state_comps[i];

		if (f->v[i] && (f->v[i] < c->oldest_write || f->v[i] > c->newest ||
				(f->framing < 3 && f->v[i] != 1))) {
			if (err && errlen)
				snprintf(err, errlen,
					 "%s state version %u: this vmm writes %u..%u%s", c->name,
					 f->v[i], c->oldest_write, c->newest,
					 f->framing < 3 ? " (framing 2 holds only version 1)" : "");
			return -EPROTONOSUPPORT;
		}
	}
	return 0;
}
