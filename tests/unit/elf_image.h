/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf_image.h - ELF images built in memory for the loader's tests
 * (test_elf_loader.c, test_elf_refusals.c, test_elf_mutations.c), the guest memory they load into,
 * and the checks both use: nothing loaded is left dirty on a refusal, and a
 * refusal is one line. One test program includes it once.
 */
#ifndef VMM_TEST_ELF_IMAGE_H
#define VMM_TEST_ELF_IMAGE_H

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

#define MIB	  (1ull << 20)
#define RAM_SIZE  (16 * MIB)
#define SLOT_SIZE (2 * MIB)
#define IMG_CAP	  8192

#define FW_BASE	  0x100000ull
#define FW_MEMSZ  0x3000ull /* 32 bytes of code + bss: 3 pages */
#define PVH_BASE  0x200000ull
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
    0xf4, 0xeb, 0xfd, 0x90, 1,	2,  3,	4,  5,	6,  7,	8,  9,	10, 11, 12,
    13,	  14,	15,   16,   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 0xaa,
};

/* One note: header, name (NUL included) and descriptor, each padded to 4. */
static inline size_t make_note(unsigned char *p, const char *name, uint32_t type, const void *desc,
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
static inline void build(struct img *im, int cls, uint16_t machine, uint64_t entry,
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

static inline Elf64_Ehdr *eh64(struct img *im)
{
	return (Elf64_Ehdr *)im->b;
}

static inline Elf64_Phdr *ph64(struct img *im, unsigned i)
{
	return (Elf64_Phdr *)(im->b + sizeof(Elf64_Ehdr)) + i;
}

static inline Elf32_Phdr *ph32(struct img *im, unsigned i)
{
	return (Elf32_Phdr *)(im->b + sizeof(Elf32_Ehdr)) + i;
}

/* The native firmware: phdr 0 = PT_NOTE (vmm note), phdr 1 = PT_LOAD at 1 MiB. */
static inline void build_vmm_version(struct img *im, uint32_t version)
{
	unsigned char note[64];
	size_t nl = make_note(note, VMM_NOTE_NAME, VMM_NOTE_TYPE_ABI, &version, 4);
	struct tseg segs[] = {
	    {PT_NOTE, PF_R, 0, nl, 4, note, nl},
	    {PT_LOAD, PF_R | PF_X, FW_BASE, FW_MEMSZ, 0x1000, payload, sizeof(payload)},
	};

	build(im, 64, EM_X86_64, FW_BASE, segs, 2);
}

static inline void build_vmm(struct img *im)
{
	build_vmm_version(im, VMM_ABI_VERSION);
}

/* A PVH ELF32 (like an i386 vmlinux): PT_NOTE with the Xen note, PT_LOAD at 2 MiB. */
static inline void build_pvh32(struct img *im, uint32_t entry)
{
	unsigned char note[64];
	size_t nl = make_note(note, "Xen", 18, &entry, 4);
	struct tseg segs[] = {
	    {PT_NOTE, PF_R, 0, nl, 4, note, nl},
	    {PT_LOAD, PF_R | PF_X, PVH_BASE, 0x1000, 0x1000, payload, sizeof(payload)},
	};

	build(im, 32, EM_386, 0x1234, segs, 2);
}

static inline int setup(void **state)
{
	(void)state;
	memset(&out, 0, sizeof(out));
	err[0] = '\0';
	return guest_mem_init(&mem, RAM_SIZE, SLOT_SIZE, MEM_BACKEND_ANON);
}

static inline int teardown(void **state)
{
	(void)state;
	guest_mem_destroy(&mem);
	return 0;
}

/* Harvests (and clears) every slot's VMM dirty bits; returns how many were set. */
static inline unsigned take_dirty(uint64_t *first_page)
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

static inline void assert_dirty_clear(void)
{
	assert_int_equal(take_dirty(NULL), 0);
}

static inline void expect_fail_at(const void *buf, size_t size, int rc, const char *substr,
				  int line)
{
	int ret = elf_load(buf, size, &mem, &out, err, sizeof(err));

	if (ret != rc || !strstr(err, substr))
		fail_msg("line %d: got %d '%s', expected %d with '%s'", line, ret, err, rc, substr);
	if (strchr(err, '\n'))
		fail_msg("line %d: message is not one line: '%s'", line, err);
	assert_dirty_clear();
}
#define expect_fail(buf, size, rc, substr) expect_fail_at(buf, size, rc, substr, __LINE__)

#endif /* VMM_TEST_ELF_IMAGE_H */
