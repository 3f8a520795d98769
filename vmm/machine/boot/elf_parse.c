/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf_parse.c - pass 1 of the ELF loader (elf_parse.h): every field is
 * checked against the file size and guest RAM before it is used, and no
 * input may crash it.
 */
#include "elf_parse.h"

#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vmm_abi.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the loader reads little-endian ELF fields in host byte order");

#define XEN_ELFNOTE_PHYS32_ENTRY 18u
#define FOUR_GIB		 (1ull << 32)

int elf_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* "256 MiB" or "1052 KiB" or "12345 bytes", for messages about guest RAM. */
static const char *fmt_size(char *buf, size_t len, uint64_t n)
{
	if (n && n % (1ull << 20) == 0)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(n >> 20));
	else if (n && n % 1024 == 0)
		snprintf(buf, len, "%llu KiB", (unsigned long long)(n >> 10));
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)n);
	return buf;
}

/* [off, off+len) inside a buffer of `size` bytes, overflow-safe. */
static bool in_bounds(uint64_t off, uint64_t len, uint64_t size)
{
	uint64_t end;

	if (__builtin_add_overflow(off, len, &end))
		return false;
	return end <= size;
}

static int check_ident(const unsigned char *f, size_t size, struct elf_parsed *p, char *err,
		       size_t errlen)
{
	if (size == 0)
		return elf_fail(err, errlen, -ENOEXEC, "empty file (0 bytes), not an ELF image");
	if (size < SELFMAG || memcmp(f, ELFMAG, SELFMAG) != 0)
		return elf_fail(err, errlen, -ENOEXEC, "not an ELF file (bad magic, %zu bytes)",
				size);
	if (size < EI_NIDENT)
		return elf_fail(err, errlen, -EINVAL,
				"truncated ELF header: file is %zu bytes, need at least %d", size,
				EI_NIDENT);
	switch (f[EI_CLASS]) {
	case ELFCLASS64:
		p->is64 = true;
		break;
	case ELFCLASS32:
		p->is64 = false;
		break;
	default:
		return elf_fail(err, errlen, -ENOEXEC,
				"unsupported ELF class %u (expected 1 = ELF32 or 2 = ELF64)",
				f[EI_CLASS]);
	}
	if (f[EI_DATA] != ELFDATA2LSB)
		return elf_fail(
		    err, errlen, -ENOEXEC,
		    "unsupported ELF data encoding %u (%s), only little endian is supported",
		    f[EI_DATA], f[EI_DATA] == ELFDATA2MSB ? "big endian" : "invalid");
	if (f[EI_VERSION] != EV_CURRENT)
		return elf_fail(err, errlen, -EINVAL, "bad ELF ident version %u (expected %u)",
				f[EI_VERSION], EV_CURRENT);
	return 0;
}

static int parse_headers(const unsigned char *f, size_t size, struct elf_parsed *p, uint64_t *phoff,
			 unsigned *phnum, char *err, size_t errlen)
{
	uint16_t type, machine, phentsize, nph;
	uint32_t version;
	size_t ehsize = p->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t want_phent = p->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	uint64_t tablesz;

	if (size < ehsize)
		return elf_fail(err, errlen, -EINVAL,
				"truncated ELF header: file is %zu bytes, ELF%d header needs %zu",
				size, p->is64 ? 64 : 32, ehsize);
#define READ_EHDR(T)                                                                               \
	do {                                                                                       \
		T eh;                                                                              \
                                                                                                   \
		memcpy(&eh, f, sizeof(eh));                                                        \
		type = eh.e_type;                                                                  \
		machine = eh.e_machine;                                                            \
		version = eh.e_version;                                                            \
		p->entry = eh.e_entry;                                                             \
		*phoff = eh.e_phoff;                                                               \
		phentsize = eh.e_phentsize;                                                        \
		nph = eh.e_phnum;                                                                  \
	} while (0)
	/* the same fields in both classes, only their widths differ */
	if (p->is64)
		READ_EHDR(Elf64_Ehdr);
	else
		READ_EHDR(Elf32_Ehdr);
#undef READ_EHDR
	p->machine = machine;
	if (p->is64 && machine != EM_X86_64)
		return elf_fail(err, errlen, -ENOEXEC,
				"wrong machine %u for ELF64 (expected %u = x86_64)", machine,
				EM_X86_64);
	if (!p->is64 && machine != EM_386)
		return elf_fail(err, errlen, -ENOEXEC,
				"wrong machine %u for ELF32 (expected %u = i386, PVH only)",
				machine, EM_386);
	if (type != ET_EXEC)
		return elf_fail(
		    err, errlen, -ENOEXEC, "ELF type %u is not ET_EXEC (%u)%s", type, ET_EXEC,
		    type == ET_DYN ? ": position-independent/shared objects are not supported"
				   : "");
	if (version != EV_CURRENT)
		return elf_fail(err, errlen, -EINVAL, "bad ELF version %u (expected %u)", version,
				EV_CURRENT);
	if (phentsize != want_phent)
		return elf_fail(err, errlen, -EINVAL, "bad e_phentsize %u (expected %zu for ELF%d)",
				phentsize, want_phent, p->is64 ? 64 : 32);
	if (nph == 0 || nph > ELF_LOADER_MAX_PHDRS)
		return elf_fail(err, errlen, -EINVAL, "bad e_phnum %u (must be 1..%u)", nph,
				ELF_LOADER_MAX_PHDRS);
	tablesz = (uint64_t)nph * phentsize;
	if (!in_bounds(*phoff, tablesz, size))
		return elf_fail(
		    err, errlen, -EINVAL,
		    "program header table [0x%llx, +0x%llx) lies outside the file (%zu bytes)",
		    (unsigned long long)*phoff, (unsigned long long)tablesz, size);
	*phnum = nph;
	return 0;
}

static void read_phdr(const unsigned char *f, const struct elf_parsed *p, uint64_t phoff,
		      unsigned i, struct elf_seg *s)
{
#define READ_PHDR(T)                                                                               \
	do {                                                                                       \
		T ph;                                                                              \
                                                                                                   \
		memcpy(&ph, f + phoff + (uint64_t)i * sizeof(ph), sizeof(ph));                     \
		s->type = ph.p_type;                                                               \
		s->flags = ph.p_flags;                                                             \
		s->offset = ph.p_offset;                                                           \
		s->paddr = ph.p_paddr;                                                             \
		s->filesz = ph.p_filesz;                                                           \
		s->memsz = ph.p_memsz;                                                             \
		s->align = ph.p_align;                                                             \
	} while (0)
	if (p->is64)
		READ_PHDR(Elf64_Phdr);
	else
		READ_PHDR(Elf32_Phdr);
#undef READ_PHDR
	s->idx = i;
}

static uint32_t rd32(const unsigned char *b)
{
	uint32_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

static uint64_t rd64(const unsigned char *b)
{
	uint64_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

static bool name_is(const unsigned char *name, uint32_t namesz, const char *want)
{
	size_t n = strlen(want) + 1; /* the name includes its NUL */

	return namesz == n && memcmp(name, want, n) == 0;
}

/* Walks the notes of one PT_NOTE segment (already checked to lie inside the file). */
static int parse_notes(const unsigned char *f, const struct elf_seg *s, struct elf_parsed *p,
		       char *err, size_t errlen)
{
	const unsigned char *base = f + s->offset;
	uint64_t len = s->filesz, pos = 0;
	uint64_t align = s->align == 8 ? 8 : 4;

	while (len - pos >= 12) {
		uint32_t namesz = rd32(base + pos), descsz = rd32(base + pos + 4);
		uint32_t type = rd32(base + pos + 8);
		uint64_t name_off = pos + 12, desc_off, next;
		const unsigned char *name, *desc;

		/*
		 * The descriptor and the next note start at the segment's
		 * alignment from the note's start: with 8-byte notes (e.g.
		 * .note.gnu.property) the 12-byte header plus a 4-byte name
		 * needs no padding. namesz/descsz are 32-bit, so the 64-bit
		 * sums cannot overflow.
		 */
		desc_off = (name_off + namesz + align - 1) & ~(align - 1);
		next = (desc_off + descsz + align - 1) & ~(align - 1);
		if (name_off + namesz > len || desc_off > len)
			return elf_fail(
			    err, errlen, -EINVAL,
			    "segment %u: note at offset 0x%llx: namesz %u runs past the end "
			    "of the note segment (%llu bytes)",
			    s->idx, (unsigned long long)pos, namesz, (unsigned long long)len);
		if (desc_off + descsz > len)
			return elf_fail(
			    err, errlen, -EINVAL,
			    "segment %u: note at offset 0x%llx: descsz %u runs past the end "
			    "of the note segment (%llu bytes)",
			    s->idx, (unsigned long long)pos, descsz, (unsigned long long)len);
		name = base + name_off;
		desc = base + desc_off;

		if (name_is(name, namesz, VMM_NOTE_NAME) && type == VMM_NOTE_TYPE_ABI) {
			uint32_t v;

			if (descsz != 4)
				return elf_fail(err, errlen, -EINVAL,
						"vmm ABI note: descriptor is %u bytes, expected 4",
						descsz);
			v = rd32(desc);
			if (v != VMM_ABI_VERSION)
				return elf_fail(
				    err, errlen, -ENOEXEC,
				    "firmware has vmm ABI version %u, this vmm requires "
				    "version %u: rebuild the firmware",
				    v, VMM_ABI_VERSION);
			if (!p->have_vmm) {
				p->have_vmm = true;
				p->abi_version = v;
			}
		} else if (name_is(name, namesz, "Xen") && type == XEN_ELFNOTE_PHYS32_ENTRY) {
			uint64_t e;

			if (descsz != 4 && descsz != 8)
				return elf_fail(err, errlen, -EINVAL,
						"Xen PHYS32_ENTRY note: descriptor is %u bytes, "
						"expected 4 or 8",
						descsz);
			e = descsz == 4 ? rd32(desc) : rd64(desc);
			if (e >= FOUR_GIB)
				return elf_fail(
				    err, errlen, -EINVAL,
				    "Xen PHYS32_ENTRY note: entry 0x%llx is not below 4 GiB",
				    (unsigned long long)e);
			if (!p->have_pvh) {
				p->have_pvh = true;
				p->pvh_entry = e;
			}
		}
		if (next >= len)
			break;
		pos = next;
	}
	return 0;
}

static int check_load(const struct elf_seg *s, size_t size, const struct guest_mem *mem, char *err,
		      size_t errlen)
{
	uint64_t end;
	char ram[32];

	if (!in_bounds(s->offset, s->filesz, size))
		return elf_fail(
		    err, errlen, -EINVAL,
		    "segment %u: file data [0x%llx, +0x%llx) runs past the end of the file "
		    "(%zu bytes)",
		    s->idx, (unsigned long long)s->offset, (unsigned long long)s->filesz, size);
	if (s->filesz > s->memsz)
		return elf_fail(err, errlen, -EINVAL,
				"segment %u: p_filesz 0x%llx is larger than p_memsz 0x%llx", s->idx,
				(unsigned long long)s->filesz, (unsigned long long)s->memsz);
	if (__builtin_add_overflow(s->paddr, s->memsz, &end))
		return elf_fail(err, errlen, -EINVAL,
				"segment %u: p_paddr 0x%llx + p_memsz 0x%llx overflows", s->idx,
				(unsigned long long)s->paddr, (unsigned long long)s->memsz);
	if (s->memsz == 0)
		return 0; /* empty: nothing is loaded, so it may lie anywhere */
	if (s->memsz > mem->size || !guest_mem_ptr(mem, s->paddr, s->memsz))
		return elf_fail(err, errlen, -EINVAL,
				"segment %u: [0x%llx, 0x%llx) lies outside guest RAM (%s)", s->idx,
				(unsigned long long)s->paddr, (unsigned long long)end,
				fmt_size(ram, sizeof(ram), mem->size));
	return 0;
}

int elf_parse(const unsigned char *f, size_t size, const struct guest_mem *mem,
	      struct elf_parsed *p, char *err, size_t errlen)
{
	uint64_t phoff = 0;
	unsigned phnum = 0;
	int ret;

	memset(p, 0, sizeof(*p));
	p->lowest = UINT64_MAX;
	ret = check_ident(f, size, p, err, errlen);
	if (ret)
		return ret;
	ret = parse_headers(f, size, p, &phoff, &phnum, err, errlen);
	if (ret)
		return ret;

	/* Pass 1: every segment and note, no writes. */
	for (unsigned i = 0; i < phnum; i++) {
		struct elf_seg s;

		read_phdr(f, p, phoff, i, &s);
		if (s.type == PT_LOAD) {
			ret = check_load(&s, size, mem, err, errlen);
			if (ret)
				return ret;
			if (s.memsz == 0)
				continue; /* nothing to load */
			for (unsigned j = 0; j < p->nload; j++) {
				const struct elf_seg *o = &p->load[j];

				if (s.paddr < o->paddr + o->memsz && o->paddr < s.paddr + s.memsz)
					return elf_fail(
					    err, errlen, -EINVAL,
					    "segments %u and %u overlap: [0x%llx, 0x%llx) "
					    "and [0x%llx, 0x%llx)",
					    o->idx, s.idx, (unsigned long long)o->paddr,
					    (unsigned long long)(o->paddr + o->memsz),
					    (unsigned long long)s.paddr,
					    (unsigned long long)(s.paddr + s.memsz));
			}
			p->load[p->nload++] = s;
			if (s.paddr < p->lowest)
				p->lowest = s.paddr;
			if (s.paddr + s.memsz > p->highest)
				p->highest = s.paddr + s.memsz;
		} else if (s.type == PT_NOTE) {
			if (!in_bounds(s.offset, s.filesz, size))
				return elf_fail(
				    err, errlen, -EINVAL,
				    "segment %u: note data [0x%llx, +0x%llx) runs past the "
				    "end of the file (%zu bytes)",
				    s.idx, (unsigned long long)s.offset,
				    (unsigned long long)s.filesz, size);
			ret = parse_notes(f, &s, p, err, errlen);
			if (ret)
				return ret;
		}
	}
	if (p->nload == 0)
		return elf_fail(err, errlen, -EINVAL, "no non-empty PT_LOAD segment");
	return 0;
}
