/* SPDX-License-Identifier: Apache-2.0 */
#include "state_buf.h"

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serial.h"
#include "state_versions.h"

/* Payloads are the KVM structures as the x86_64 kernel lays them out. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "state format is little endian");
_Static_assert(sizeof(struct state_header) == 64, "HEADER payload is 64 bytes");

void state_buf_init(struct state_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void state_buf_free(struct state_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void state_buf_put(struct state_buf *b, const void *p, size_t n)
{
	if (b->error || n == 0)
		return;
	if (n > SIZE_MAX / 2 - b->len) {
		b->error = -ENOMEM;
		return;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *d;

		while (cap < b->len + n)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d) {
			b->error = -ENOMEM;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void state_buf_put_section(struct state_buf *b, uint32_t type, const void *p, uint32_t len)
{
	uint32_t hdr[2] = {htole32(type), htole32(len)};

	state_buf_put(b, hdr, sizeof(hdr));
	state_buf_put(b, p, len);
}

static void fill_sizes(uint16_t *s)
{
	s[STATE_SZ_REGS] = sizeof(struct kvm_regs);
	s[STATE_SZ_SREGS] = sizeof(struct kvm_sregs);
	s[STATE_SZ_XSAVE] = sizeof(struct kvm_xsave);
	s[STATE_SZ_FPU] = sizeof(struct kvm_fpu);
	s[STATE_SZ_XCRS] = sizeof(struct kvm_xcrs);
	s[STATE_SZ_LAPIC] = sizeof(struct kvm_lapic_state);
	s[STATE_SZ_MSR_ENTRY] = sizeof(struct kvm_msr_entry);
	s[STATE_SZ_VCPU_EVENTS] = sizeof(struct kvm_vcpu_events);
	s[STATE_SZ_DEBUGREGS] = sizeof(struct kvm_debugregs);
	s[STATE_SZ_MP_STATE] = sizeof(struct kvm_mp_state);
	s[STATE_SZ_IRQCHIP] = sizeof(struct kvm_irqchip);
	s[STATE_SZ_PIT2] = sizeof(struct kvm_pit_state2);
	s[STATE_SZ_CLOCK] = sizeof(struct kvm_clock_data);
	/* The fixed part of the SERIAL section: an old 10-byte layout is refused here. */
	s[STATE_SZ_SERIAL] = SERIAL_STATE_FIXED;
}

static const char *const size_names[STATE_NR_SIZES] = {
    [STATE_SZ_REGS] = "kvm_regs",	    [STATE_SZ_SREGS] = "kvm_sregs",
    [STATE_SZ_XSAVE] = "kvm_xsave",	    [STATE_SZ_FPU] = "kvm_fpu",
    [STATE_SZ_XCRS] = "kvm_xcrs",	    [STATE_SZ_LAPIC] = "kvm_lapic_state",
    [STATE_SZ_MSR_ENTRY] = "kvm_msr_entry", [STATE_SZ_VCPU_EVENTS] = "kvm_vcpu_events",
    [STATE_SZ_DEBUGREGS] = "kvm_debugregs", [STATE_SZ_MP_STATE] = "kvm_mp_state",
    [STATE_SZ_IRQCHIP] = "kvm_irqchip",	    [STATE_SZ_PIT2] = "kvm_pit_state2",
    [STATE_SZ_CLOCK] = "kvm_clock_data",    [STATE_SZ_SERIAL] = "serial_state (fixed part)",
};

static void put_header(struct state_buf *b, enum state_kind kind, uint32_t index, unsigned framing)
{
	struct state_header h;

	memset(&h, 0, sizeof(h));
	h.magic = STATE_MAGIC;
	h.major = (uint16_t)framing;
	h.minor = STATE_VERSION_MINOR;
	h.kind = (uint32_t)kind;
	h.index = index;
	fill_sizes(h.sizes);
	state_buf_put_section(b, STATE_SEC_HEADER, &h, sizeof(h));
}

void state_buf_put_header_versions(struct state_buf *b, enum state_kind kind, uint32_t index,
				   unsigned framing, const struct state_version_ent *ents,
				   unsigned n)
{
	uint8_t v[STATE_VERSIONS_MAX * STATE_VERSIONS_ENT];

	put_header(b, kind, index, framing);
	if (framing < 3)
		return;
	if (n > STATE_VERSIONS_MAX) {
		b->error = -EINVAL;
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		uint32_t t = htole32(ents[i].type);
		uint16_t c = htole16(ents[i].comp), ver = htole16(ents[i].version);

		memcpy(v + i * STATE_VERSIONS_ENT, &t, 4);
		memcpy(v + i * STATE_VERSIONS_ENT + 4, &c, 2);
		memcpy(v + i * STATE_VERSIONS_ENT + 6, &ver, 2);
	}
	state_buf_put_section(b, STATE_SEC_VERSIONS, v, n * STATE_VERSIONS_ENT);
}

static uint32_t get_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static int check_header(const char *what, enum state_kind kind, const uint8_t *p, uint32_t len,
			struct state_header *h, char *err, size_t errlen)
{
	uint16_t ours[STATE_NR_SIZES];

	if (len != sizeof(*h)) {
		snprintf(err, errlen, "%s: section HEADER: length %u, expected %zu", what, len,
			 sizeof(*h));
		return -EINVAL;
	}
	memcpy(h, p, sizeof(*h));
	if (h->magic != STATE_MAGIC) {
		snprintf(err, errlen, "%s: section HEADER: bad magic 0x%08x, expected 0x%08x", what,
			 h->magic, STATE_MAGIC);
		return -EINVAL;
	}
	if (h->major < STATE_FRAMING_OLDEST || h->major > STATE_FRAMING_NEWEST) {
		snprintf(err, errlen,
			 "%s: section HEADER: format version %u.%u, this vmm reads %u.x..%u.x",
			 what, h->major, h->minor, STATE_FRAMING_OLDEST, STATE_FRAMING_NEWEST);
		return -EINVAL;
	}
	if (h->kind != (uint32_t)kind) {
		snprintf(err, errlen, "%s: section HEADER: blob kind %u, expected %u (%s)", what,
			 h->kind, (unsigned)kind, kind == STATE_KIND_VCPU ? "vcpu" : "vm");
		return -EINVAL;
	}
	fill_sizes(ours);
	for (int i = 0; i < STATE_NR_SIZES; i++) {
		if (h->sizes[i] != ours[i]) {
			snprintf(err, errlen, "%s: section HEADER: %s size %u, expected %u", what,
				 size_names[i], h->sizes[i], ours[i]);
			return -EINVAL;
		}
	}
	return 0;
}

static const char *type_name(const struct state_section_spec *specs, size_t nspecs, uint32_t type)
{
	if (type == STATE_SEC_HEADER)
		return "HEADER";
	if (type == STATE_SEC_END)
		return "END";
	if (type == STATE_SEC_VERSIONS)
		return "VERSIONS";
	for (size_t i = 0; i < nspecs; i++)
		if (specs[i].type == type)
			return specs[i].name;
	return NULL;
}

/*
 * Gives every section found its component and version: framing 2's are the
 * spec's component at version 1; framing 3's come from its VERSIONS entry,
 * which must exist once for every section present and for nothing else,
 * name a component this build knows (the spec's, where it names one) and a
 * version this build reads.
 */
static int apply_versions(const char *what, const struct state_section_spec *specs, size_t nspecs,
			  struct state_section *found, const uint8_t *v, unsigned n, char *err,
			  size_t errlen)
{
	bool seen[STATE_VERSIONS_MAX] = {false};

	if (nspecs > STATE_VERSIONS_MAX) {
		snprintf(err, errlen, "%s: %zu section types, at most %u", what, nspecs,
			 STATE_VERSIONS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < nspecs; i++) {
		found[i].comp = specs[i].comp;
		found[i].version = 1;
	}
	if (!v)
		return 0;
	for (unsigned e = 0; e < n; e++) {
		uint32_t type = get_le32(v + e * STATE_VERSIONS_ENT);
		uint16_t comp =
		    (uint16_t)(v[e * STATE_VERSIONS_ENT + 4] | v[e * STATE_VERSIONS_ENT + 5] << 8);
		uint16_t ver =
		    (uint16_t)(v[e * STATE_VERSIONS_ENT + 6] | v[e * STATE_VERSIONS_ENT + 7] << 8);
		const struct state_comp_info *c = state_comp_get(comp);
		size_t i;

		for (i = 0; i < nspecs && specs[i].type != type; i++)
			;
		if (i == nspecs || !found[i].present) {
			snprintf(err, errlen,
				 "%s: section VERSIONS: entry %u names section type 0x%x, which "
				 "the blob does not hold",
				 what, e, type);
			return -EINVAL;
		}
		if (seen[i]) {
			snprintf(err, errlen, "%s: section VERSIONS: section %s twice", what,
				 specs[i].name);
			return -EINVAL;
		}
		seen[i] = true;
		if (!c) {
			snprintf(err, errlen,
				 "%s: section %s: component %u is unknown to this vmm (a newer "
				 "vmm's state)",
				 what, specs[i].name, comp);
			return -EINVAL;
		}
		if (specs[i].comp && comp != specs[i].comp) {
			snprintf(err, errlen, "%s: section %s: component %s, expected %s", what,
				 specs[i].name, c->name, state_comp_get(specs[i].comp)->name);
			return -EINVAL;
		}
		if (ver < c->oldest_read || ver > c->newest) {
			snprintf(err, errlen,
				 "%s: section %s: %s state version %u, this vmm reads %u..%u", what,
				 specs[i].name, c->name, ver, c->oldest_read, c->newest);
			return -EINVAL;
		}
		found[i].comp = comp;
		found[i].version = ver;
	}
	for (size_t i = 0; i < nspecs; i++) {
		if (found[i].present && !seen[i]) {
			snprintf(err, errlen, "%s: section %s has no VERSIONS entry", what,
				 specs[i].name);
			return -EINVAL;
		}
	}
	return 0;
}

int state_parse(const char *what, enum state_kind kind, const void *data, size_t len,
		const struct state_section_spec *specs, size_t nspecs, struct state_section *found,
		struct state_header *hdr, char *err, size_t errlen)
{
	const uint8_t *p = data;
	size_t off = 0;
	bool ended = false;
	unsigned nsec = 0, nversions = 0;
	const uint8_t *versions = NULL;

	memset(found, 0, nspecs * sizeof(*found));
	if (!data && len) {
		snprintf(err, errlen, "%s: no data", what);
		return -EINVAL;
	}
	while (off < len) {
		uint32_t type, slen;
		const char *name;
		size_t i;

		if (ended) {
			snprintf(err, errlen, "%s: %zu bytes after section END at offset %zu", what,
				 len - off, off);
			return -EINVAL;
		}
		if (len - off < STATE_SEC_HDR_SIZE) {
			snprintf(err, errlen,
				 "%s: truncated at offset %zu: %zu bytes left, a section header "
				 "needs %u",
				 what, off, len - off, STATE_SEC_HDR_SIZE);
			return -EINVAL;
		}
		type = get_le32(p + off);
		slen = get_le32(p + off + 4);
		off += STATE_SEC_HDR_SIZE;
		name = type_name(specs, nspecs, type);
		if (!name) {
			snprintf(err, errlen, "%s: unknown section type 0x%x at offset %zu", what,
				 type, off - STATE_SEC_HDR_SIZE);
			return -EINVAL;
		}
		if (nsec == 0 && type != STATE_SEC_HEADER) {
			snprintf(err, errlen, "%s: section %s comes first, expected HEADER", what,
				 name);
			return -EINVAL;
		}
		if (nsec > 0 && type == STATE_SEC_HEADER) {
			snprintf(err, errlen, "%s: duplicate section HEADER", what);
			return -EINVAL;
		}
		if (slen > len - off) {
			snprintf(err, errlen,
				 "%s: section %s: length %u, but only %zu bytes left (truncated)",
				 what, name, slen, len - off);
			return -EINVAL;
		}
		nsec++;
		if (type == STATE_SEC_HEADER) {
			int ret = check_header(what, kind, p + off, slen, hdr, err, errlen);

			if (ret)
				return ret;
		} else if (type == STATE_SEC_VERSIONS) {
			if (nsec != 2 || hdr->major < 3) {
				snprintf(err, errlen, "%s: section VERSIONS %s", what,
					 hdr->major < 3 ? "in a framing 2 blob (it has none)"
							: "is not right after HEADER");
				return -EINVAL;
			}
			if (slen % STATE_VERSIONS_ENT ||
			    slen > STATE_VERSIONS_MAX * STATE_VERSIONS_ENT) {
				snprintf(err, errlen,
					 "%s: section VERSIONS: length %u, expected %u * n, at "
					 "most %u",
					 what, slen, STATE_VERSIONS_ENT,
					 STATE_VERSIONS_MAX * STATE_VERSIONS_ENT);
				return -EINVAL;
			}
			versions = p + off;
			nversions = slen / STATE_VERSIONS_ENT;
		} else if (type == STATE_SEC_END) {
			if (slen != 0) {
				snprintf(err, errlen, "%s: section END: length %u, expected 0",
					 what, slen);
				return -EINVAL;
			}
			ended = true;
		} else {
			for (i = 0; i < nspecs && specs[i].type != type; i++)
				;
			if (found[i].present) {
				snprintf(err, errlen, "%s: duplicate section %s", what, name);
				return -EINVAL;
			}
			if (slen < specs[i].min_len || slen > specs[i].max_len ||
			    (specs[i].unit && (slen - specs[i].min_len) % specs[i].unit)) {
				if (specs[i].unit)
					snprintf(err, errlen,
						 "%s: section %s: length %u, expected %u + %u * n, "
						 "at most %u",
						 what, name, slen, specs[i].min_len, specs[i].unit,
						 specs[i].max_len);
				else if (specs[i].min_len == specs[i].max_len)
					snprintf(err, errlen,
						 "%s: section %s: length %u, expected %u", what,
						 name, slen, specs[i].min_len);
				else
					snprintf(err, errlen,
						 "%s: section %s: length %u, expected %u..%u", what,
						 name, slen, specs[i].min_len, specs[i].max_len);
				return -EINVAL;
			}
			found[i].payload = p + off;
			found[i].len = slen;
			found[i].present = true;
		}
		off += slen;
	}
	if (nsec == 0) {
		snprintf(err, errlen, "%s: empty (expected a HEADER section)", what);
		return -EINVAL;
	}
	if (!ended) {
		snprintf(err, errlen, "%s: truncated: no END section after %zu bytes", what, len);
		return -EINVAL;
	}
	for (size_t i = 0; i < nspecs; i++) {
		if (specs[i].required && !found[i].present) {
			snprintf(err, errlen, "%s: missing section %s", what, specs[i].name);
			return -EINVAL;
		}
	}
	if (hdr->major >= 3 && !versions) {
		snprintf(err, errlen, "%s: missing section VERSIONS (framing %u has one)", what,
			 hdr->major);
		return -EINVAL;
	}
	return apply_versions(what, specs, nspecs, found, versions, nversions, err, errlen);
}

int state_fail(int ret, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}
