/* SPDX-License-Identifier: Apache-2.0 */
/* Contracts in guest_prefill.h. */
#include "guest_prefill.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmm_abi.h"

#define FREE_ALIGN (2ull << 20)
#define CHUNK	   (1u << 20)

static int read_at(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n = pread(fd, buf, len, off);

	return n == (ssize_t)len ? 0 : (n < 0 ? -errno : -EIO);
}

int prefill_pvh_free_start(const char *elf_path, uint64_t *free_start, char *err, size_t errlen)
{
	Elf64_Ehdr eh;
	uint64_t end = 0;
	int fd = open(elf_path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", elf_path, strerror(errno));
		return ret;
	}
	ret = read_at(fd, &eh, sizeof(eh), 0);
	if (!ret && (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
		     eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 64))
		ret = -ENOEXEC;
	for (unsigned i = 0; !ret && i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		ret = read_at(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph)));
		if (!ret && ph.p_type == PT_LOAD && ph.p_paddr + ph.p_memsz > end)
			end = ph.p_paddr + ph.p_memsz;
	}
	close(fd);
	if (!ret && !end)
		ret = -ENOEXEC;
	if (ret) {
		snprintf(err, errlen, "%s: not a 64-bit ELF with a PT_LOAD segment (%s)", elf_path,
			 strerror(-ret));
		return ret;
	}
	*free_start = (end + FREE_ALIGN - 1) & ~(FREE_ALIGN - 1);
	return 0;
}

int prefill_ram_file(const char *path, uint64_t ram_bytes, uint64_t free_start, uint64_t ws_bytes,
		     char *err, size_t errlen)
{
	uint64_t *buf = malloc(CHUNK);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), ret = 0;

	if (!buf || fd < 0) {
		ret = buf ? -errno : -ENOMEM;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		goto out;
	}
	if (free_start + ws_bytes > ram_bytes) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s: a working set of %llu bytes at 0x%llx does not fit %llu",
			 path, (unsigned long long)ws_bytes, (unsigned long long)free_start,
			 (unsigned long long)ram_bytes);
		goto out;
	}
	if (ftruncate(fd, (off_t)ram_bytes)) {
		ret = -errno;
		snprintf(err, errlen, "%s: ftruncate: %s", path, strerror(errno));
		goto out;
	}
	for (uint64_t off = 0; off < ws_bytes && !ret; off += CHUNK) {
		size_t len = ws_bytes - off < CHUNK ? (size_t)(ws_bytes - off) : CHUNK;
		uint64_t gpa = free_start + off;

		for (size_t i = 0; i < len / 8; i++)
			buf[i] = vmm_fill_word(gpa + i * 8);
		if (pwrite(fd, buf, len, (off_t)gpa) != (ssize_t)len) {
			ret = -EIO;
			snprintf(err, errlen, "%s: writing the fill: %s", path, strerror(errno));
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}
