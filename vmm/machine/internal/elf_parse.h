/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf_parse.h - inside the ELF loader (elf_loader.h): pass 1, which reads
 * and checks every header, program header and note of an image against
 * the file size and guest RAM and writes nothing. elf_loader.c then picks
 * the entry and boot protocol and copies the segments (pass 2).
 * Private to vmm/machine.
 *
 * Pure functions over a buffer the caller owns; any thread. Headers are
 * copied out of the file with memcpy, so a misaligned e_phoff or note
 * cannot cause an unaligned access.
 */
#ifndef VMM_MACHINE_ELF_PARSE_H
#define VMM_MACHINE_ELF_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf_loader.h"

/* One program header, normalised from ELF32 or ELF64. */
struct elf_seg {
	uint32_t type;
	uint32_t flags;
	uint64_t offset;
	uint64_t paddr;
	uint64_t filesz;
	uint64_t memsz;
	uint64_t align;
	unsigned idx; /* index in the program header table, for messages */
};

/* What pass 1 found. */
struct elf_parsed {
	bool is64;
	uint16_t machine;
	uint64_t entry; /* e_entry */
	unsigned nload; /* non-empty PT_LOAD segments, no two overlap */
	struct elf_seg load[ELF_LOADER_MAX_PHDRS];
	uint64_t lowest, highest; /* [lowest, highest) spans them */
	bool have_vmm, have_pvh;  /* the first of each note counts */
	uint32_t abi_version;	  /* from the vmm note */
	uint64_t pvh_entry;	  /* from the Xen PHYS32_ENTRY note */
};

/*
 * Checks the ELF identification and header, every program header, every
 * PT_LOAD against the file and guest RAM (mem is only looked up), and
 * every note. 0 with *p filled, or -EINVAL / -ENOEXEC with one line in err.
 */
int elf_parse(const unsigned char *f, size_t size, const struct guest_mem *mem,
	      struct elf_parsed *p, char *err, size_t errlen);

/* Writes the message to err (if any) and returns rc. */
__attribute__((format(printf, 4, 5))) int elf_fail(char *err, size_t errlen, int rc,
						   const char *fmt, ...);

#endif /* VMM_MACHINE_ELF_PARSE_H */
