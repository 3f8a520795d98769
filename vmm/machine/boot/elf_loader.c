/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf_loader.c - bounded, validating ELF loader (see elf_loader.h).
 *
 * Two passes: the first (elf_parse.c) parses and checks every header,
 * segment and note against the file size and guest RAM without touching
 * guest memory; here the entry point and boot protocol are chosen, and
 * the second pass copies the PT_LOAD segments and zeroes their bss through
 * the checked guest_mem accessors. Also reading the image file, bounded.
 */
#include "elf_loader.h"
#include "elf_parse.h"
#include "file_read.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The PT_LOAD segment holding gpa (optionally executable), or NULL. */
static const struct elf_seg *load_holding(const struct elf_parsed *p, uint64_t gpa, bool exec)
{
	for (unsigned i = 0; i < p->nload; i++) {
		const struct elf_seg *s = &p->load[i];

		if (gpa >= s->paddr && gpa - s->paddr < s->memsz && (!exec || (s->flags & PF_X)))
			return s;
	}
	return NULL;
}

int elf_load(const void *file, size_t size, struct guest_mem *mem, struct elf_image *out, char *err,
	     size_t errlen)
{
	const unsigned char *f = file;
	struct elf_parsed p;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!f && size)
		return elf_fail(err, errlen, -EINVAL, "no image buffer");
	ret = elf_parse(f, size, mem, &p, err, errlen);
	if (ret)
		return ret;

	if (p.have_vmm) {
		if (!p.is64)
			return elf_fail(err, errlen, -ENOEXEC,
					"vmm firmware must be ELF64, this image is ELF32");
		if (!load_holding(&p, p.entry, true))
			return elf_fail(
			    err, errlen, -EINVAL,
			    "entry point 0x%llx is not inside a loaded executable segment",
			    (unsigned long long)p.entry);
		out->proto = BOOT_VMM;
		out->entry = p.entry;
		out->abi_version = p.abi_version;
	} else if (p.have_pvh) {
		if (!load_holding(&p, p.pvh_entry, false))
			return elf_fail(err, errlen, -EINVAL,
					"PVH entry 0x%llx (Xen PHYS32_ENTRY note) is not inside a "
					"loaded segment",
					(unsigned long long)p.pvh_entry);
		out->proto = BOOT_PVH;
		out->entry = p.pvh_entry;
		out->abi_version = 0;
	} else {
		return elf_fail(
		    err, errlen, -ENOEXEC,
		    "not a vmm firmware or PVH image (no 'vmm' or Xen PHYS32_ENTRY note)");
	}

	/* Pass 2: copy and zero. The checks above make these infallible. */
	for (unsigned i = 0; i < p.nload; i++) {
		const struct elf_seg *s = &p.load[i];
		uint64_t bss = s->memsz - s->filesz;

		if (s->filesz && guest_mem_write(mem, s->paddr, f + s->offset, s->filesz))
			return elf_fail(err, errlen, -EFAULT, "segment %u: write to 0x%llx failed",
					s->idx, (unsigned long long)s->paddr);
		if (bss) {
			void *z = guest_mem_write_ptr(mem, s->paddr + s->filesz, bss);

			if (!z)
				return elf_fail(err, errlen, -EFAULT,
						"segment %u: zeroing bss at 0x%llx failed", s->idx,
						(unsigned long long)(s->paddr + s->filesz));
			memset(z, 0, bss);
		}
	}
	out->load_lowest = p.lowest;
	out->load_end = p.highest;
	return 0;
}

int elf_load_file(const char *path, struct guest_mem *mem, struct elf_image *out, char *err,
		  size_t errlen)
{
	char why[512];
	char *buf;
	size_t size;
	int ret;

	/* Bounded, and a FIFO or device refused at once (file_read.h). */
	ret = file_read_max(path, ELF_LOADER_MAX_FILE, &buf, &size, why, sizeof(why));
	if (ret)
		return elf_fail(err, errlen, ret, "%s: %s", path, why);
	ret = elf_load((const unsigned char *)buf, size, mem, out, why, sizeof(why));
	free(buf);
	if (ret)
		return elf_fail(err, errlen, ret, "%s: %s", path, why);
	return 0;
}
