/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_elf_loader.c - the ELF loader accepts well-formed vmm and PVH images
 * (32- and 64-bit notes, several segments, bss, from a file) and puts each
 * byte where it belongs. The refusals are test_elf_refusals.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "elf_image.h"

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
	assert_int_equal(elf_load_file(dir, &mem, &out, err, sizeof(err)), -EISDIR);
	snprintf(want, sizeof(want), "%s: %s", dir, strerror(EISDIR));
	assert_string_equal(err, want);
	/* A device is refused at once, never read (file_read_max). */
	assert_int_equal(elf_load_file("/dev/zero", &mem, &out, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "/dev/zero: not a regular file (a device)");

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
	    T(test_load_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
