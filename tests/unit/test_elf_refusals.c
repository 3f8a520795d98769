/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_elf_refusals.c - the ELF loader refuses every malformed image (the
 * header, the program headers, the segments against guest RAM, the notes,
 * the entry point) with the right code and a one-line message, and writes
 * no guest memory. Mutated images are test_elf_mutations.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "elf_image.h"

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
	snprintf(want, sizeof(want),
		 "segment 1: file data [0x%llx, +0x21) runs past the end "
		 "of the file (%zu bytes)",
		 (unsigned long long)im.off[1], im.size);
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
	expect_fail(im.b, im.size, -EINVAL, "segment 1: p_filesz 0x20 is larger than p_memsz 0x10");
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
	nl += make_note(note + nl, VMM_NOTE_NAME, 1, &v, 4);	      /* wrong type */
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

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
