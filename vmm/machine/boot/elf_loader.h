/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf_loader.h - bounded, validating loader for the guest image.
 *
 * Accepts ELF64 (native vmm firmware, identified by the "vmm" ABI note, see
 * include/vmm_abi.h) and ELF32 or ELF64 images carrying the Xen PVH note
 * XEN_ELFNOTE_PHYS32_ENTRY (type 18), like a Linux vmlinux. Every field is
 * checked against the file size and guest RAM before it is used: a
 * truncated file, a segment outside RAM, overlapping or absurd headers, the
 * wrong machine or class, or a missing entry note gives -EINVAL/-ENOEXEC
 * with a one-line reason in `err`; no input may crash the loader.
 */
#ifndef VMM_ELF_LOADER_H
#define VMM_ELF_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"

#define ELF_LOADER_MAX_FILE  (256u << 20) /* refuse images above 256 MiB */
#define ELF_LOADER_MAX_PHDRS 64u

enum boot_protocol {
	BOOT_VMM, /* 64-bit entry, vmm ABI (%rdi = fdt, %rsi = vcpu index) */
	BOOT_PVH, /* 32-bit flat protected mode entry, %ebx = hvm_start_info */
};

struct elf_image {
	enum boot_protocol proto;
	uint64_t entry;	      /* e_entry for BOOT_VMM, the PVH note's address for BOOT_PVH */
	uint64_t load_lowest; /* lowest gpa written */
	uint64_t load_end;    /* one past the highest gpa written (incl. bss) */
	uint32_t abi_version; /* from the vmm note (BOOT_VMM only) */
};

/*
 * Loads the image in `file` (size bytes) into guest memory: copies each
 * PT_LOAD segment's file bytes and zeroes its bss, all through
 * guest_mem_write_ptr(). Nothing is written unless every header checks out.
 */
int elf_load(const void *file, size_t size, struct guest_mem *mem, struct elf_image *out, char *err,
	     size_t errlen);

/* Reads the file (bounded by ELF_LOADER_MAX_FILE) then elf_load(). */
int elf_load_file(const char *path, struct guest_mem *mem, struct elf_image *out, char *err,
		  size_t errlen);

#endif /* VMM_ELF_LOADER_H */
