/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_elf.c - the guest image loader (elf_load(): ELF64 vmm firmware and
 * ELF32/ELF64 PVH images) on arbitrary bytes, into 16 MiB of guest RAM
 * (anonymous, no KVM). The image is a heap copy of exactly the input, so
 * ASan sees any read past the file; guest_mem's checked accessors are the
 * only way into RAM, so a write outside it is a crash too. A load that
 * succeeds must report a range inside RAM.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elf_loader.h"
#include "guest_mem.h"

#define RAM_SIZE  (16ull << 20)
#define SLOT_SIZE (2ull << 20)

static struct guest_mem mem;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (guest_mem_init(&mem, RAM_SIZE, SLOT_SIZE, MEM_BACKEND_ANON))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_image img;
	char err[256];
	uint8_t *file = malloc(size ? size : 1);

	if (!file)
		abort();
	memcpy(file, data, size);
	if (elf_load(file, size, &mem, &img, err, sizeof(err)) == 0) {
		if (img.load_lowest > img.load_end || img.load_end > RAM_SIZE ||
		    img.entry >= RAM_SIZE)
			abort();
	}
	free(file);
	return 0;
}
