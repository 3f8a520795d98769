/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_elf_loader.c - the ELF loader accepts well-formed vmm/PVH images and
 * refuses every malformation with the right code and a useful one-line
 * message, without writing guest memory. Images are built in memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_loader.h"
#include "guest_mem.h"
#include "vmm_abi.h"

#define MIB (1ull << 20)
#define RAM_SIZE (16 * MIB)
#define SLOT_SIZE (2 * MIB)
#define IMG_CAP 8192

#define FW_BASE 0x100000ull
#define FW_MEMSZ 0x3000ull /* 32 bytes of code + bss: 3 pages */
#define PVH_BASE 0x200000ull
#define PVH_ENTRY 0x200010ull

struct tseg {
	uint32_t type, flags;
	uint64_t paddr, memsz, align;
	const void *data;
	uint64_t filesz;
};

struct img {
	_Alignas(8) unsigned char b[IMG_CAP];
	size_t size;
	uint64_t off[8]; /* file offset of each segment's data */
};

static struct guest_mem mem;
static char err[512];
static struct elf_image out;

static const unsigned char payload[32] = {
	0xf4, 0xeb, 0xfd, 0x90, 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
	13,   14,   15,   16,   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 0xaa,
};

/* One note: header, name (NUL included) and descriptor, each padded to 4. */
static size_t make_note(unsigned char *p, const char *name, uint32_t type, const void *desc,
			uint32_t descsz)
{
	uint32_t namesz = (uint32_t)strlen(name) + 1;
	size_t n = 12;

	memcpy(p, &namesz, 4);
	memcpy(p + 4, &descsz, 4);
	memcpy(p + 8, &type, 4);
	memset(p + 12, 0, (namesz + 3u) & ~3u);
	memcpy(p + 12, name, namesz);
	n += (namesz + 3u) & ~3u;
	memset(p + n, 0, (descsz + 3u) & ~3u);
	memcpy(p + n, desc, descsz);
	n += (descsz + 3u) & ~3u;
	return n;
}

/* Headers, then each segment's data in table order, 8-byte aligned. */
static void build(struct img *im, int cls, uint16_t machine, uint64_t entry,
		  const struct tseg *segs, unsigned n)
{
	size_t ehsz = cls == 64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t phsz = cls == 64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	size_t pos = ehsz + n * phsz;

	memset(im, 0, sizeof(*im));
	for (unsigned i = 0; i < n; i++) {
		pos = (pos + 7) & ~(size_t)7;
		im->off[i] = pos;
		assert_true(pos + segs[i].filesz <= IMG_CAP);
		if (segs[i].data)
			memcpy(im->b + pos, segs[i].data, segs[i].filesz);
		pos += segs[i].filesz;
	}
	im->size = pos;
	if (cls == 64) {
		Elf64_Ehdr *eh = (Elf64_Ehdr *)im->b;
		Elf64_Phdr *ph = (Elf64_Phdr *)(im->b + ehsz);

		memcpy(eh->e_ident, ELFMAG, SELFMAG);
		eh->e_ident[EI_CLASS] = ELFCLASS64;
		eh->e_ident[EI_DATA] = ELFDATA2LSB;
		eh->e_ident[EI_VERSION] = EV_CURRENT;
		eh->e_type = ET_EXEC;
		eh->e_machine = machine;
		eh->e_version = EV_CURRENT;
		eh->e_entry = entry;
		eh->e_phoff = ehsz;
		eh->e_ehsize = (uint16_t)ehsz;
		eh->e_phentsize = (uint16_t)phsz;
		eh->e_phnum = (uint16_t)n;
		for (unsigned i = 0; i < n; i++) {
			ph[i].p_type = segs[i].type;
			ph[i].p_flags = segs[i].flags;
			ph[i].p_offset = im->off[i];
			ph[i].p_vaddr = ph[i].p_paddr = segs[i].paddr;
			ph[i].p_filesz = segs[i].filesz;
			ph[i].p_memsz = segs[i].memsz;
			ph[i].p_align = segs[i].align;
		}
	} else {
		Elf32_Ehdr *eh = (Elf32_Ehdr *)im->b;
		Elf32_Phdr *ph = (Elf32_Phdr *)(im->b + ehsz);

		memcpy(eh->e_ident, ELFMAG, SELFMAG);
		eh->e_ident[EI_CLASS] = ELFCLASS32;
		eh->e_ident[EI_DATA] = ELFDATA2LSB;
		eh->e_ident[EI_VERSION] = EV_CURRENT;
		eh->e_type = ET_EXEC;
		eh->e_machine = machine;
		eh->e_version = EV_CURRENT;
		eh->e_entry = (uint32_t)entry;
		eh->e_phoff = (uint32_t)ehsz;
		eh->e_ehsize = (uint16_t)ehsz;
		eh->e_phentsize = (uint16_t)phsz;
		eh->e_phnum = (uint16_t)n;
		for (unsigned i = 0; i < n; i++) {
			ph[i].p_type = segs[i].type;
			ph[i].p_flags = segs[i].flags;
			ph[i].p_offset = (uint32_t)im->off[i];
			ph[i].p_vaddr = ph[i].p_paddr = (uint32_t)segs[i].paddr;
			ph[i].p_filesz = (uint32_t)segs[i].filesz;
			ph[i].p_memsz = (uint32_t)segs[i].memsz;
			ph[i].p_align = (uint32_t)segs[i].align;
		}
	}
}

static Elf64_Ehdr *eh64(struct img *im)
{
	return (Elf64_Ehdr *)im->b;
}

static Elf64_Phdr *ph64(struct img *im, unsigned i)
{
	return (Elf64_Phdr *)(im->b + sizeof(Elf64_Ehdr)) + i;
}

static Elf32_Phdr *ph32(struct img *im, unsigned i)
{
	return (Elf32_Phdr *)(im->b + sizeof(Elf32_Ehdr)) + i;
}

/* The native firmware: phdr 0 = PT_NOTE (vmm note), phdr 1 = PT_LOAD at 1 MiB. */
static void build_vmm_version(struct img *im, uint32_t version)
{
	unsigned char note[64];
	size_t nl = make_note(note, VMM_NOTE_NAME, VMM_NOTE_TYPE_ABI, &version, 4);
	struct tseg segs[] = {
		{PT_NOTE, PF_R, 0, nl, 4, note, nl},
		{PT_LOAD, PF_R | PF_X, FW_BASE, FW_MEMSZ, 0x1000, payload, sizeof(payload)},
	};

	build(im, 64, EM_X86_64, FW_BASE, segs, 2);
}

static void build_vmm(struct img *im)
{
	build_vmm_version(im, VMM_ABI_VERSION);
}

/* A PVH ELF32 (like an i386 vmlinux): PT_NOTE with the Xen note, PT_LOAD at 2 MiB. */
static void build_pvh32(struct img *im, uint32_t entry)
{
	unsigned char note[64];
	size_t nl = make_note(note, "Xen", 18, &entry, 4);
	struct tseg segs[] = {
		{PT_NOTE, PF_R, 0, nl, 4, note, nl},
		{PT_LOAD, PF_R | PF_X, PVH_BASE, 0x1000, 0x1000, payload, sizeof(payload)},
	};

	build(im, 32, EM_386, 0x1234, segs, 2);
}

/* Tests */

static int setup(void **state)
{
	(void)state;
	memset(&out, 0, sizeof(out));
	err[0] = '\0';
	return guest_mem_init(&mem, RAM_SIZE, SLOT_SIZE, MEM_BACKEND_ANON);
}

static int teardown(void **state)
{
	(void)state;
	guest_mem_destroy(&mem);
	return 0;
}

/* Harvests (and clears) every slot's VMM dirty bits; returns how many were set. */
static unsigned take_dirty(uint64_t *first_page)
{
	unsigned n = 0;

	if (first_page)
		*first_page = UINT64_MAX;
	for (uint32_t i = 0; i < mem.nslots; i++) {
		struct memslot *s = &mem.slots[i];
		uint64_t words = (s->npages + 63) / 64;
		uint64_t *bm = calloc(words, 8);

		assert_non_null(bm);
		guest_mem_take_vmm_dirty(s, bm);
		for (uint64_t p = 0; p < s->npages; p++) {
			if (bm[p / 64] & (1ull << (p % 64))) {
				if (first_page && *first_page == UINT64_MAX)
					*first_page = (s->gpa >> GUEST_PAGE_SHIFT) + p;
				n++;
			}
		}
		free(bm);
	}
	return n;
}

static void assert_dirty_clear(void)
{
	assert_int_equal(take_dirty(NULL), 0);
}

static void expect_fail_at(const void *buf, size_t size, int rc, const char *substr, int line)
{
	int ret = elf_load(buf, size, &mem, &out, err, sizeof(err));

	if (ret != rc || !strstr(err, substr))
		fail_msg("line %d: got %d '%s', expected %d with '%s'", line, ret, err, rc, substr);
	if (strchr(err, '\n'))
		fail_msg("line %d: message is not one line: '%s'", line, err);
	assert_dirty_clear();
}
#define expect_fail(buf, size, rc, substr) expect_fail_at(buf, size, rc, substr, __LINE__)

static void test_load_vmm(void **state)
{
	struct img im;
	uint8_t *ram;
	uint64_t first;

	(void)state;
	build_vmm(&im);
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, err, sizeof(err)), 0);
	assert_int_equal(out.proto, BOOT_VMM);
	assert_int_equal(out.entry, FW_BASE);
	assert_int_equal(out.abi_version, VMM_ABI_VERSION);
	assert_int_equal(out.load_lowest, FW_BASE);
	assert_int_equal(out.load_end, FW_BASE + FW_MEMSZ);

	ram = guest_mem_ptr(&mem, FW_BASE, FW_MEMSZ);
	assert_non_null(ram);
	assert_memory_equal(ram, payload, sizeof(payload));
	for (uint64_t i = sizeof(payload); i < FW_MEMSZ; i++)
		assert_int_equal(ram[i], 0);
	/* Exactly the three pages of the segment are dirty. */
	assert_int_equal(take_dirty(&first), 3);
	assert_int_equal(first, FW_BASE >> GUEST_PAGE_SHIFT);
}

static void test_reload_zeroes_bss(void **state)
{
	struct img im;
	uint8_t *ram;

	(void)state;
	build_vmm(&im);
	ram = guest_mem_ptr(&mem, FW_BASE, FW_MEMSZ);
	memset(ram, 0x5a, FW_MEMSZ); /* a previous boot left garbage */
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, err, sizeof(err)), 0);
	assert_memory_equal(ram, payload, sizeof(payload));
	for (uint64_t i = sizeof(payload); i < FW_MEMSZ; i++)
		assert_int_equal(ram[i], 0);
	/* Bytes just past the segment are untouched. */
	assert_int_equal(((uint8_t *)guest_mem_ptr(&mem, FW_BASE + FW_MEMSZ, 1))[0], 0);
}

static void test_load_pvh32(void **state)
{
	struct img im;
	uint64_t first;

	(void)state;
	build_pvh32(&im, PVH_ENTRY);
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, err, sizeof(err)), 0);
	assert_int_equal(out.proto, BOOT_PVH);
	assert_int_equal(out.entry, PVH_ENTRY);
	assert_int_equal(out.load_lowest, PVH_BASE);
	assert_int_equal(out.load_end, PVH_BASE + 0x1000);
	assert_memory_equal(guest_mem_ptr(&mem, PVH_BASE, 32), payload, 32);
	assert_int_equal(take_dirty(&first), 1);
	assert_int_equal(first, PVH_BASE >> GUEST_PAGE_SHIFT);
}

/* ELF64 PVH kernels may carry an 8-byte PHYS32_ENTRY descriptor. */
static void test_load_pvh64_desc8(void **state)
{
	struct img im;
	unsigned char note[64];
	uint64_t e = PVH_ENTRY;
	size_t nl = make_note(note, "Xen", 18, &e, 8);
	struct tseg segs[] = {
		{PT_LOAD, PF_R | PF_X, PVH_BASE, 0x2000, 0x1000, payload, sizeof(payload)},
		{PT_NOTE, PF_R, 0, nl, 4, note, nl},
	};

	(void)state;
	build(&im, 64, EM_X86_64, 0xffffffff81000000ull, segs, 2);
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, err, sizeof(err)), 0);
	assert_int_equal(out.proto, BOOT_PVH);
	assert_int_equal(out.entry, PVH_ENTRY);
	assert_int_equal(out.load_end, PVH_BASE + 0x2000);
}

/*
 * An 8-byte aligned PT_NOTE (as .note.gnu.property in every x86_64 binary a
 * recent toolchain links): the descriptor starts at the next multiple of 8
 * from the note's start (12 + 4 = 16, no padding after a 4-byte name), and so
 * does the next note. A parser that pads the name's size instead reads the
 * descriptor 4 bytes late and runs past the segment.
 */
static size_t make_note8(unsigned char *p, const char *name, uint32_t type, const void *desc,
			 uint32_t descsz)
{
	uint32_t namesz = (uint32_t)strlen(name) + 1;
	size_t d = (12 + namesz + 7u) & ~7u, end = (d + descsz + 7u) & ~7u;

	memset(p, 0, end);
	memcpy(p, &namesz, 4);
	memcpy(p + 4, &descsz, 4);
	memcpy(p + 8, &type, 4);
	memcpy(p + 12, name, namesz);
	memcpy(p + d, desc, descsz);
	return end;
}

static void test_load_pvh_notes_align8(void **state)
{
	struct img im;
	_Alignas(8) unsigned char note[96];
	unsigned char prop[16] = {2, 0, 0, 0xc0, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
	uint64_t e = PVH_ENTRY;
	size_t nl = make_note8(note, "GNU", 5, prop, sizeof(prop));

	(void)state;
	assert_int_equal(nl, 32);
	nl += make_note8(note + nl, "Xen", 18, &e, 8);
	struct tseg segs[] = {
		{PT_LOAD, PF_R | PF_X, PVH_BASE, 0x2000, 0x1000, payload, sizeof(payload)},
		{PT_NOTE, PF_R, 0, nl, 8, note, nl},
	};
	build(&im, 64, EM_X86_64, 0xffffffff81000000ull, segs, 2);
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, err, sizeof(err)), 0);
	assert_int_equal(out.proto, BOOT_PVH);
	assert_int_equal(out.entry, PVH_ENTRY);
}

/* Both notes: the native protocol wins; other notes are skipped. */
static void test_both_notes_prefers_vmm(void **state)
{
	struct img im;
	unsigned char note[128];
	uint32_t v = VMM_ABI_VERSION, e = FW_BASE + 4;
	unsigned char gnu[16] = {0};
	size_t nl = make_note(note, "GNU", 3, gnu, 16);

	(void)state;
	nl += make_note(note + nl, "Xen", 18, &e, 4);
	nl += make_note(note + nl, VMM_NOTE_NAME, VMM_NOTE_TYPE_ABI, &v, 4);
	struct tseg segs[] = {
		{PT_NOTE, PF_R, 0, nl, 4, note, nl},
		{PT_LOAD, PF_R | PF_X, FW_BASE, FW_MEMSZ, 0x1000, payload, sizeof(payload)},
	};
	build(&im, 64, EM_X86_64, FW_BASE + 8, segs, 2);
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, err, sizeof(err)), 0);
	assert_int_equal(out.proto, BOOT_VMM);
	assert_int_equal(out.entry, FW_BASE + 8);
}

/* Two PT_LOADs: text + data at a higher address; load_lowest/end span both. */
static void test_two_segments(void **state)
{
	struct img im;
	unsigned char note[64];
	uint32_t v = VMM_ABI_VERSION;
	size_t nl = make_note(note, VMM_NOTE_NAME, VMM_NOTE_TYPE_ABI, &v, 4);
	struct tseg segs[] = {
		{PT_NOTE, PF_R, 0, nl, 4, note, nl},
		{PT_LOAD, PF_R | PF_W, 0x400000, 0x1800, 0x1000, payload, 16},
		{PT_LOAD, PF_R | PF_X, FW_BASE, 0x1000, 0x1000, payload, sizeof(payload)},
		{PT_LOAD, PF_R, 0x800000, 0, 0x1000, NULL, 0}, /* empty: ignored */
	};

	(void)state;
	build(&im, 64, EM_X86_64, FW_BASE, segs, 4);
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, err, sizeof(err)), 0);
	assert_int_equal(out.load_lowest, FW_BASE);
	assert_int_equal(out.load_end, 0x401800);
	assert_memory_equal(guest_mem_ptr(&mem, 0x400000, 16), payload, 16);
	assert_int_equal(take_dirty(NULL), 3);
}

static void test_empty_file(void **state)
{
	(void)state;
	expect_fail("", 0, -ENOEXEC, "empty file");
	expect_fail(NULL, 0, -ENOEXEC, "empty file");
}

static void test_truncated_header(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	expect_fail(im.b, 40, -EINVAL, "truncated ELF header: file is 40 bytes");
	expect_fail(im.b, 8, -EINVAL, "truncated ELF header");
	expect_fail(im.b, 3, -ENOEXEC, "bad magic");
}

static void test_bad_magic(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	im.b[1] = 'F';
	expect_fail(im.b, im.size, -ENOEXEC, "not an ELF file (bad magic");
	expect_fail("#!/bin/sh\necho hi\n", 18, -ENOEXEC, "bad magic");
}

static void test_wrong_class(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	im.b[EI_CLASS] = 3;
	expect_fail(im.b, im.size, -ENOEXEC, "unsupported ELF class 3");
	im.b[EI_CLASS] = ELFCLASSNONE;
	expect_fail(im.b, im.size, -ENOEXEC, "unsupported ELF class 0");
}

/* An ELF32 carrying the vmm note is refused: the native firmware is ELF64. */
static void test_vmm_note_in_elf32(void **state)
{
	struct img im;
	unsigned char note[64];
	uint32_t v = VMM_ABI_VERSION;
	size_t nl = make_note(note, VMM_NOTE_NAME, VMM_NOTE_TYPE_ABI, &v, 4);
	struct tseg segs[] = {
		{PT_NOTE, PF_R, 0, nl, 4, note, nl},
		{PT_LOAD, PF_R | PF_X, FW_BASE, FW_MEMSZ, 0x1000, payload, sizeof(payload)},
	};

	(void)state;
	build(&im, 32, EM_386, FW_BASE, segs, 2);
	expect_fail(im.b, im.size, -ENOEXEC, "vmm firmware must be ELF64");
}

static void test_big_endian(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	im.b[EI_DATA] = ELFDATA2MSB;
	expect_fail(im.b, im.size, -ENOEXEC, "big endian");
}

static void test_bad_ident_version(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	im.b[EI_VERSION] = 2;
	expect_fail(im.b, im.size, -EINVAL, "bad ELF ident version 2");
	build_vmm(&im);
	eh64(&im)->e_version = 7;
	expect_fail(im.b, im.size, -EINVAL, "bad ELF version 7");
}

static void test_wrong_machine(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	eh64(&im)->e_machine = EM_AARCH64;
	expect_fail(im.b, im.size, -ENOEXEC, "wrong machine 183");
	/* ELF32 must be i386; ELF64 must be x86_64. */
	build_pvh32(&im, PVH_ENTRY);
	((Elf32_Ehdr *)im.b)->e_machine = EM_X86_64;
	expect_fail(im.b, im.size, -ENOEXEC, "wrong machine 62 for ELF32");
	build_vmm(&im);
	eh64(&im)->e_machine = EM_386;
	expect_fail(im.b, im.size, -ENOEXEC, "wrong machine 3 for ELF64");
}

static void test_et_dyn(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	eh64(&im)->e_type = ET_DYN;
	expect_fail(im.b, im.size, -ENOEXEC, "ELF type 3 is not ET_EXEC");
	eh64(&im)->e_type = ET_REL;
	expect_fail(im.b, im.size, -ENOEXEC, "ELF type 1 is not ET_EXEC");
}

static void test_phnum(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	eh64(&im)->e_phnum = 0;
	expect_fail(im.b, im.size, -EINVAL, "bad e_phnum 0 (must be 1..64)");
	eh64(&im)->e_phnum = ELF_LOADER_MAX_PHDRS + 1;
	expect_fail(im.b, im.size, -EINVAL, "bad e_phnum 65");
	eh64(&im)->e_phnum = PN_XNUM;
	expect_fail(im.b, im.size, -EINVAL, "bad e_phnum 65535");
}

static void test_phentsize(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	eh64(&im)->e_phentsize = sizeof(Elf32_Phdr);
	expect_fail(im.b, im.size, -EINVAL, "bad e_phentsize 32 (expected 56");
	eh64(&im)->e_phentsize = 0;
	expect_fail(im.b, im.size, -EINVAL, "bad e_phentsize 0");
}

static void test_phdrs_past_eof(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	eh64(&im)->e_phoff = im.size - 60;
	expect_fail(im.b, im.size, -EINVAL, "program header table");
	eh64(&im)->e_phoff = UINT64_MAX - 8; /* offset + size overflows */
	expect_fail(im.b, im.size, -EINVAL, "lies outside the file");
	build_vmm(&im);
	eh64(&im)->e_phnum = 64; /* table is 64 * 56 bytes, file is smaller */
	expect_fail(im.b, im.size, -EINVAL, "program header table [0x40, +0xe00)");
}

static void test_segment_past_eof(void **state)
{
	struct img im;
	char want[128];

	(void)state;
	build_vmm(&im);
	ph64(&im, 1)->p_filesz += 1;
	snprintf(want, sizeof(want), "segment 1: file data [0x%llx, +0x21) runs past the end "
		 "of the file (%zu bytes)", (unsigned long long)im.off[1], im.size);
	expect_fail(im.b, im.size, -EINVAL, want);
	build_vmm(&im);
	ph64(&im, 1)->p_offset = UINT64_MAX - 4; /* overflows */
	expect_fail(im.b, im.size, -EINVAL, "runs past the end of the file");
	build_vmm(&im);
	ph64(&im, 0)->p_filesz = im.size; /* the note segment */
	expect_fail(im.b, im.size, -EINVAL, "segment 0: note data");
	build_vmm(&im);
	ph64(&im, 0)->p_offset = UINT64_MAX;
	expect_fail(im.b, im.size, -EINVAL, "segment 0: note data");
}

static void test_filesz_gt_memsz(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	ph64(&im, 1)->p_memsz = 16;
	expect_fail(im.b, im.size, -EINVAL,
		    "segment 1: p_filesz 0x20 is larger than p_memsz 0x10");
}

static void test_segment_outside_ram(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	ph64(&im, 1)->p_paddr = 32 * MIB;
	eh64(&im)->e_entry = 32 * MIB;
	expect_fail(im.b, im.size, -EINVAL,
		    "segment 1: [0x2000000, 0x2003000) lies outside guest RAM (16 MiB)");
	/* A memsz larger than all of RAM. */
	build_vmm(&im);
	ph64(&im, 1)->p_memsz = 0x5000000;
	expect_fail(im.b, im.size, -EINVAL,
		    "segment 1: [0x100000, 0x5100000) lies outside guest RAM (16 MiB)");
}

static void test_segment_straddles_ram_end(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	ph64(&im, 1)->p_paddr = RAM_SIZE - 0x1000;
	eh64(&im)->e_entry = RAM_SIZE - 0x1000;
	expect_fail(im.b, im.size, -EINVAL,
		    "segment 1: [0xfff000, 0x1002000) lies outside guest RAM (16 MiB)");
	/* Ending exactly at the end of RAM is fine. */
	build_vmm(&im);
	ph64(&im, 1)->p_paddr = RAM_SIZE - FW_MEMSZ;
	eh64(&im)->e_entry = RAM_SIZE - FW_MEMSZ;
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, err, sizeof(err)), 0);
	assert_int_equal(out.load_end, RAM_SIZE);
}

static void test_paddr_memsz_overflow(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	ph64(&im, 1)->p_paddr = UINT64_MAX - 0xfff;
	eh64(&im)->e_entry = UINT64_MAX - 0xfff;
	expect_fail(im.b, im.size, -EINVAL,
		    "segment 1: p_paddr 0xfffffffffffff000 + p_memsz 0x3000 overflows");
	build_vmm(&im);
	ph64(&im, 1)->p_memsz = UINT64_MAX;
	expect_fail(im.b, im.size, -EINVAL, "overflows");
}

static void test_overlapping_segments(void **state)
{
	struct img im;
	unsigned char note[64];
	uint32_t v = VMM_ABI_VERSION;
	size_t nl = make_note(note, VMM_NOTE_NAME, VMM_NOTE_TYPE_ABI, &v, 4);
	struct tseg segs[] = {
		{PT_NOTE, PF_R, 0, nl, 4, note, nl},
		{PT_LOAD, PF_R | PF_X, FW_BASE, FW_MEMSZ, 0x1000, payload, sizeof(payload)},
		{PT_LOAD, PF_R | PF_W, FW_BASE + FW_MEMSZ - 1, 0x1000, 0x1000, payload, 8},
	};

	(void)state;
	build(&im, 64, EM_X86_64, FW_BASE, segs, 3);
	expect_fail(im.b, im.size, -EINVAL,
		    "segments 1 and 2 overlap: [0x100000, 0x103000) and [0x102fff, 0x103fff)");
	/* The same, with the second segment entirely inside the first. */
	ph64(&im, 2)->p_paddr = FW_BASE + 0x1000;
	ph64(&im, 2)->p_memsz = 8;
	expect_fail(im.b, im.size, -EINVAL, "segments 1 and 2 overlap");
	/* Adjacent is fine. */
	ph64(&im, 2)->p_paddr = FW_BASE + FW_MEMSZ;
	ph64(&im, 2)->p_memsz = 0x1000;
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, err, sizeof(err)), 0);
}

static void test_no_note(void **state)
{
	struct img im;
	unsigned char note[128];
	unsigned char desc[4] = {1, 2, 3, 4};
	uint32_t v = VMM_ABI_VERSION;
	struct tseg load = {PT_LOAD, PF_R | PF_X, FW_BASE, FW_MEMSZ, 0x1000, payload, 32};
	const char *want = "not a vmm firmware or PVH image (no 'vmm' or Xen PHYS32_ENTRY note)";

	(void)state;
	build(&im, 64, EM_X86_64, FW_BASE, &load, 1);
	expect_fail(im.b, im.size, -ENOEXEC, want);

	/* Notes that look close but are not ours. */
	size_t nl = make_note(note, "GNU", VMM_NOTE_TYPE_ABI, desc, 4);
	nl += make_note(note + nl, VMM_NOTE_NAME, 1, &v, 4);  /* wrong type */
	nl += make_note(note + nl, "vmmx", VMM_NOTE_TYPE_ABI, &v, 4); /* wrong name */
	nl += make_note(note + nl, "Xen", 17, &v, 4);
	struct tseg segs[] = {{PT_NOTE, PF_R, 0, nl, 4, note, nl}, load};
	build(&im, 64, EM_X86_64, FW_BASE, segs, 2);
	expect_fail(im.b, im.size, -ENOEXEC, want);

	/* No PT_LOAD at all. */
	build_vmm(&im);
	ph64(&im, 1)->p_type = PT_NULL;
	expect_fail(im.b, im.size, -EINVAL, "no non-empty PT_LOAD segment");
}

static void test_bad_note_sizes(void **state)
{
	struct img im;
	uint32_t huge = 0xffffffffu;

	(void)state;
	/* The note starts at im.off[0]: namesz, descsz, type. */
	build_vmm(&im);
	memcpy(im.b + im.off[0], &huge, 4);
	expect_fail(im.b, im.size, -EINVAL, "note at offset 0x0: namesz 4294967295 runs past");
	build_vmm(&im);
	memcpy(im.b + im.off[0] + 4, &huge, 4);
	expect_fail(im.b, im.size, -EINVAL, "descsz 4294967295 runs past");
	build_vmm(&im);
	huge = 0xfffffffdu; /* rounds up to exactly 4 GiB */
	memcpy(im.b + im.off[0], &huge, 4);
	expect_fail(im.b, im.size, -EINVAL, "namesz 4294967293");
	/* descsz just one past the segment. */
	build_vmm(&im);
	huge = 5;
	memcpy(im.b + im.off[0] + 4, &huge, 4);
	expect_fail(im.b, im.size, -EINVAL, "descsz 5 runs past the end of the note segment");
	/* The note segment shorter than the note (but inside the file). */
	build_vmm(&im);
	ph64(&im, 0)->p_filesz = 18;
	expect_fail(im.b, im.size, -EINVAL, "descsz 4 runs past the end of the note segment (18");
	/* Shorter than a note header: ignored, so no note at all. */
	ph64(&im, 0)->p_filesz = 11;
	expect_fail(im.b, im.size, -ENOEXEC, "no 'vmm' or Xen");
	/* A vmm note with an 8-byte descriptor. */
	unsigned char note[64], desc[8] = {1};
	size_t nl = make_note(note, VMM_NOTE_NAME, VMM_NOTE_TYPE_ABI, desc, 8);
	struct tseg segs[] = {
		{PT_NOTE, PF_R, 0, nl, 4, note, nl},
		{PT_LOAD, PF_R | PF_X, FW_BASE, FW_MEMSZ, 0x1000, payload, sizeof(payload)},
	};
	build(&im, 64, EM_X86_64, FW_BASE, segs, 2);
	expect_fail(im.b, im.size, -EINVAL, "vmm ABI note: descriptor is 8 bytes, expected 4");
	/* A Xen note with a 2-byte descriptor. */
	nl = make_note(note, "Xen", 18, desc, 2);
	segs[0].memsz = segs[0].filesz = nl;
	build(&im, 64, EM_X86_64, FW_BASE, segs, 2);
	expect_fail(im.b, im.size, -EINVAL, "Xen PHYS32_ENTRY note: descriptor is 2 bytes");
}

static void test_wrong_abi_version(void **state)
{
	struct img im;
	char has[64], wants[64];

	(void)state;
	snprintf(has, sizeof(has), "firmware has vmm ABI version %u", VMM_ABI_VERSION + 1);
	snprintf(wants, sizeof(wants), "this vmm requires version %u", VMM_ABI_VERSION);
	build_vmm_version(&im, VMM_ABI_VERSION + 1);
	expect_fail(im.b, im.size, -ENOEXEC, has);
	expect_fail(im.b, im.size, -ENOEXEC, wants);
	build_vmm_version(&im, 0);
	expect_fail(im.b, im.size, -ENOEXEC, "vmm ABI version 0");
}

static void test_vmm_entry_outside(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	eh64(&im)->e_entry = FW_BASE + FW_MEMSZ;
	expect_fail(im.b, im.size, -EINVAL,
		    "entry point 0x103000 is not inside a loaded executable segment");
	build_vmm(&im);
	ph64(&im, 1)->p_flags = PF_R | PF_W; /* not executable */
	expect_fail(im.b, im.size, -EINVAL, "entry point 0x100000");
}

static void test_pvh_entry_outside(void **state)
{
	struct img im;
	unsigned char note[64];
	uint64_t e = 5ull << 30;
	size_t nl;

	(void)state;
	build_pvh32(&im, PVH_BASE + 0x1000);
	expect_fail(im.b, im.size, -EINVAL,
		    "PVH entry 0x201000 (Xen PHYS32_ENTRY note) is not inside a loaded segment");
	build_pvh32(&im, 0);
	expect_fail(im.b, im.size, -EINVAL, "PVH entry 0x0");
	/* 8-byte entry above 4 GiB. */
	nl = make_note(note, "Xen", 18, &e, 8);
	struct tseg segs[] = {
		{PT_NOTE, PF_R, 0, nl, 4, note, nl},
		{PT_LOAD, PF_R | PF_X, PVH_BASE, 0x1000, 0x1000, payload, sizeof(payload)},
	};
	build(&im, 64, EM_X86_64, 0, segs, 2);
	expect_fail(im.b, im.size, -EINVAL, "entry 0x140000000 is not below 4 GiB");
}

/* The ELF32 phdr fields are read as 32-bit values. */
static void test_pvh32_segment_outside(void **state)
{
	struct img im;

	(void)state;
	build_pvh32(&im, PVH_ENTRY);
	ph32(&im, 1)->p_memsz = 0xffffffffu;
	expect_fail(im.b, im.size, -EINVAL,
		    "segment 1: [0x200000, 0x1001fffff) lies outside guest RAM (16 MiB)");
}

/* Truncation at every length is refused; no single-byte change crashes. */
static void fuzz_image(const struct img *orig)
{
	unsigned char *cut;

	for (size_t len = 0; len < orig->size; len++) {
		/* An exact-size heap copy, so ASan catches any read past the end. */
		cut = malloc(len ? len : 1);
		assert_non_null(cut);
		memcpy(cut, orig->b, len);
		int ret = elf_load(cut, len, &mem, &out, err, sizeof(err));
		if (ret == 0)
			fail_msg("image truncated to %zu of %zu bytes was accepted", len,
				 orig->size);
		assert_true(ret == -EINVAL || ret == -ENOEXEC);
		assert_non_null(strchr(err, '\0'));
		assert_true(err[0] != '\0');
		assert_dirty_clear();
		free(cut);
	}
	for (size_t off = 0; off < orig->size; off++) {
		for (int mode = 0; mode < 3; mode++) {
			unsigned char *b = malloc(orig->size);

			assert_non_null(b);
			memcpy(b, orig->b, orig->size);
			b[off] = mode == 0 ? b[off] ^ 0xff : mode == 1 ? 0xff : 0x00;
			int ret = elf_load(b, orig->size, &mem, &out, err, sizeof(err));
			if (ret != 0) {
				assert_true(ret == -EINVAL || ret == -ENOEXEC);
				assert_true(err[0] != '\0');
				assert_dirty_clear();
			} else {
				take_dirty(NULL);
			}
			free(b);
		}
	}
}

static void test_fuzz_vmm(void **state)
{
	struct img im;

	(void)state;
	build_vmm(&im);
	fuzz_image(&im);
}

static void test_fuzz_pvh32(void **state)
{
	struct img im;

	(void)state;
	build_pvh32(&im, PVH_ENTRY);
	fuzz_image(&im);
}

static void test_small_errlen(void **state)
{
	struct img im;
	char tiny[8];

	(void)state;
	build_vmm(&im);
	im.b[0] = 0;
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, tiny, sizeof(tiny)), -ENOEXEC);
	assert_int_equal(strlen(tiny), 7);
	assert_int_equal(elf_load(im.b, im.size, &mem, &out, NULL, 0), -ENOEXEC);
}

static void write_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static void test_load_file(void **state)
{
	char dir[] = "/tmp/test_elf_loader.XXXXXX";
	char path[128], want[256];
	struct img im;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fw.elf", dir);

	build_vmm(&im);
	write_file(path, im.b, im.size);
	assert_int_equal(elf_load_file(path, &mem, &out, err, sizeof(err)), 0);
	assert_int_equal(out.proto, BOOT_VMM);
	assert_memory_equal(guest_mem_ptr(&mem, FW_BASE, 32), payload, 32);
	take_dirty(NULL);

	/* Errors from elf_load() are prefixed with the path. */
	build_vmm_version(&im, 9);
	write_file(path, im.b, im.size);
	assert_int_equal(elf_load_file(path, &mem, &out, err, sizeof(err)), -ENOEXEC);
	snprintf(want, sizeof(want), "%s: firmware has vmm ABI version 9", path);
	assert_string_equal(strstr(err, path), err);
	assert_non_null(strstr(err, want));
	assert_dirty_clear();

	write_file(path, "", 0);
	assert_int_equal(elf_load_file(path, &mem, &out, err, sizeof(err)), -ENOEXEC);
	snprintf(want, sizeof(want), "%s: empty file", path);
	assert_non_null(strstr(err, want));

	/* A directory is not a regular file. */
	assert_int_equal(elf_load_file(dir, &mem, &out, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: not a regular file", dir);
	assert_string_equal(err, want);

	/* Too large: a sparse file just over the limit. */
	assert_int_equal(truncate(path, (off_t)ELF_LOADER_MAX_FILE + 1), 0);
	assert_int_equal(elf_load_file(path, &mem, &out, err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "limit is 256 MiB"));
	assert_int_equal(unlink(path), 0);

	/* Missing file. */
	assert_int_equal(elf_load_file(path, &mem, &out, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, path));
	assert_int_equal(rmdir(dir), 0);
	assert_dirty_clear();
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_load_vmm),
		T(test_reload_zeroes_bss),
		T(test_load_pvh32),
		T(test_load_pvh64_desc8),
	T(test_load_pvh_notes_align8),
		T(test_both_notes_prefers_vmm),
		T(test_two_segments),
		T(test_empty_file),
		T(test_truncated_header),
		T(test_bad_magic),
		T(test_wrong_class),
		T(test_vmm_note_in_elf32),
		T(test_big_endian),
		T(test_bad_ident_version),
		T(test_wrong_machine),
		T(test_et_dyn),
		T(test_phnum),
		T(test_phentsize),
		T(test_phdrs_past_eof),
		T(test_segment_past_eof),
		T(test_filesz_gt_memsz),
		T(test_segment_outside_ram),
		T(test_segment_straddles_ram_end),
		T(test_paddr_memsz_overflow),
		T(test_overlapping_segments),
		T(test_no_note),
		T(test_bad_note_sizes),
		T(test_wrong_abi_version),
		T(test_vmm_entry_outside),
		T(test_pvh_entry_outside),
		T(test_pvh32_segment_outside),
		T(test_fuzz_vmm),
		T(test_fuzz_pvh32),
		T(test_small_errlen),
		T(test_load_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
