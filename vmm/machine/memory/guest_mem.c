/* SPDX-License-Identifier: Apache-2.0 */
#include "guest_mem.h"
#include "bitmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Counts the slots of one RAM region [gpa, gpa+len) cut into slot_size pieces.
 * Not (len + slot_size - 1) / slot_size: that overflows for huge slot sizes.
 */
static uint64_t region_slots(uint64_t len, uint64_t slot_size)
{
	return len / slot_size + (len % slot_size != 0);
}

static int add_region(struct guest_mem *mem, uint64_t gpa, uint64_t ram_offset, uint64_t len,
		      uint64_t slot_size)
{
	while (len > 0) {
		struct memslot *s = &mem->slots[mem->nslots];
		uint64_t n = len < slot_size ? len : slot_size;

		s->id = mem->nslots;
		s->gpa = gpa;
		s->size = n;
		s->npages = n >> GUEST_PAGE_SHIFT;
		s->ram_offset = ram_offset;
		s->hva = mem->base + ram_offset;
		s->vmm_dirty = calloc(bitmap_words(s->npages), sizeof(uint64_t));
		if (!s->vmm_dirty)
			return -ENOMEM;
		mem->nslots++;
		gpa += n;
		ram_offset += n;
		len -= n;
	}
	mem->top = gpa;
	return 0;
}

/* The host mapping (of mem->memfd when >= 0) and the slot table. */
static int map_ram(struct guest_mem *mem, uint64_t size, uint64_t slot_size)
{
	uint64_t low = size < GUEST_MEM_HOLE_START ? size : GUEST_MEM_HOLE_START;
	uint64_t high = size - low;
	uint64_t nslots = region_slots(low, slot_size) + region_slots(high, slot_size);
	int flags = mem->memfd >= 0 ? MAP_SHARED | MAP_NORESERVE
				    : MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	int ret;

	mem->base = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, mem->memfd, 0);
	if (mem->base == MAP_FAILED) {
		mem->base = NULL;
		return -errno;
	}
	/* Guest RAM can be huge and holds guest secrets: keep it out of core dumps. */
	madvise(mem->base, size, MADV_DONTDUMP);
	mem->size = size;

	mem->slots = calloc(nslots, sizeof(*mem->slots));
	if (!mem->slots)
		return -ENOMEM;
	ret = add_region(mem, 0, 0, low, slot_size);
	if (!ret && high)
		ret = add_region(mem, GUEST_MEM_HIGH_START, low, high, slot_size);
	return ret;
}

/* 0 when size and slot_size make a layout whose slot ids fit in 32 bits. */
static int check_layout(uint64_t size, uint64_t slot_size)
{
	uint64_t low, high;

	if (size == 0 || size % GUEST_PAGE_SIZE || slot_size == 0 || slot_size % GUEST_PAGE_SIZE)
		return -EINVAL;
	low = size < GUEST_MEM_HOLE_START ? size : GUEST_MEM_HOLE_START;
	high = size - low;
	/* mem->nslots and the slot ids are 32-bit */
	return region_slots(low, slot_size) + region_slots(high, slot_size) > UINT32_MAX ? -EINVAL
											 : 0;
}

int guest_mem_init(struct guest_mem *mem, uint64_t size, uint64_t slot_size,
		   enum mem_backend backend)
{
	int ret;

	memset(mem, 0, sizeof(*mem));
	mem->memfd = -1;
	ret = check_layout(size, slot_size);
	if (ret)
		return ret;
	mem->backend = backend;
	if (backend == MEM_BACKEND_MEMFD) {
		/*
		 * Sealed against shrinking and growing once sized: a vmm that
		 * is handed this memfd (a local upgrade) maps all of it and
		 * must never take SIGBUS because someone truncated it.
		 */
		mem->memfd = memfd_create("vmm-guest-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (mem->memfd < 0)
			return -errno;
		if (ftruncate(mem->memfd, (off_t)size) < 0 ||
		    fcntl(mem->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
			ret = -errno;
			goto fail;
		}
	}
	ret = map_ram(mem, size, slot_size);
	if (ret)
		goto fail;
	return 0;
fail:
	guest_mem_destroy(mem);
	return ret;
}

int guest_mem_check_fd(int fd, uint64_t size, uint64_t slot_size, char *err, size_t errlen)
{
	const int need = F_SEAL_SHRINK | F_SEAL_GROW;
	struct stat st = {0};
	int seals;

	if (check_layout(size, slot_size)) {
		snprintf(err, errlen, "a RAM layout of %llu bytes in %llu-byte memslots",
			 (unsigned long long)size, (unsigned long long)slot_size);
		return -EINVAL;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || seals < 0 || (seals & need) != need ||
	    (seals & F_SEAL_WRITE) || (uint64_t)st.st_size != size) {
		snprintf(err, errlen,
			 "the guest RAM descriptor is not a memfd of %llu bytes sealed against "
			 "shrinking and growing (%s, size %lld, seals 0x%x)",
			 (unsigned long long)size,
			 S_ISREG(st.st_mode)   ? "a file"
			 : S_ISCHR(st.st_mode) ? "a character device"
					       : "not a file",
			 (long long)st.st_size, seals < 0 ? 0 : seals);
		return -EINVAL;
	}
	return 0;
}

int guest_mem_init_fd(struct guest_mem *mem, int fd, uint64_t size, uint64_t slot_size, char *err,
		      size_t errlen)
{
	int ret;

	memset(mem, 0, sizeof(*mem));
	mem->memfd = -1;
	ret = guest_mem_check_fd(fd, size, slot_size, err, errlen);
	if (ret) {
		close(fd);
		return ret;
	}
	mem->memfd = fd;
	mem->backend = MEM_BACKEND_MEMFD;
	ret = map_ram(mem, size, slot_size);
	if (ret) {
		snprintf(err, errlen, "mapping the guest RAM descriptor (%llu MiB): %s",
			 (unsigned long long)(size >> 20), strerror(-ret));
		guest_mem_destroy(mem);
	}
	return ret;
}

void guest_mem_destroy(struct guest_mem *mem)
{
	for (uint32_t i = 0; i < mem->nslots; i++)
		free(mem->slots[i].vmm_dirty);
	free(mem->slots);
	if (mem->base)
		munmap(mem->base, mem->size);
	if (mem->memfd >= 0)
		close(mem->memfd);
	memset(mem, 0, sizeof(*mem));
	mem->memfd = -1;
}

const struct memslot *guest_mem_find_slot(const struct guest_mem *mem, uint64_t gpa)
{
	uint32_t lo = 0, hi = mem->nslots;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct memslot *s = &mem->slots[mid];

		if (gpa < s->gpa)
			hi = mid;
		else if (gpa - s->gpa >= s->size)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

const struct memslot *guest_mem_slot_of_hva(const struct guest_mem *mem, uint64_t hva,
					    uint64_t *page)
{
	uint64_t off;
	uint32_t lo = 0, hi = mem->nslots;

	if (hva < (uint64_t)(uintptr_t)mem->base)
		return NULL;
	off = hva - (uint64_t)(uintptr_t)mem->base;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct memslot *s = &mem->slots[mid];

		if (off < s->ram_offset)
			hi = mid;
		else if (off - s->ram_offset >= s->size)
			lo = mid + 1;
		else {
			*page = (off - s->ram_offset) / GUEST_PAGE_SIZE;
			return s;
		}
	}
	return NULL;
}

void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	const struct memslot *s = guest_mem_find_slot(mem, gpa);
	uint64_t off, avail;

	if (!s)
		return NULL;
	off = gpa - s->gpa;
	/*
	 * Slots of one region are contiguous in both gpa and host memory, so a
	 * range may span slots as long as it stays inside the region.
	 */
	avail = s->size - off;
	for (const struct memslot *n = s + 1; avail < len && n < mem->slots + mem->nslots; n++) {
		if (n->gpa != n[-1].gpa + n[-1].size)
			break;
		avail += n->size;
	}
	if (len > avail)
		return NULL;
	return s->hva + off;
}

void guest_mem_mark_dirty(struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	uint64_t end = gpa + len;

	while (gpa < end) {
		const struct memslot *s = guest_mem_find_slot(mem, gpa);
		uint64_t first, last;

		if (!s)
			return;
		first = (gpa - s->gpa) >> GUEST_PAGE_SHIFT;
		last = end - s->gpa >= s->size ? s->npages - 1
					       : (end - 1 - s->gpa) >> GUEST_PAGE_SHIFT;
		for (uint64_t p = first; p <= last; p++)
			__atomic_fetch_or(&s->vmm_dirty[p / 64], 1ull << (p % 64),
					  __ATOMIC_RELAXED);
		gpa = s->gpa + ((last + 1) << GUEST_PAGE_SHIFT);
	}
}

void *guest_mem_write_ptr(struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	void *p = guest_mem_ptr(mem, gpa, len);

	if (p && len)
		guest_mem_mark_dirty(mem, gpa, len);
	return p;
}

int guest_mem_write(struct guest_mem *mem, uint64_t gpa, const void *src, uint64_t len)
{
	void *p = guest_mem_write_ptr(mem, gpa, len);

	if (!p)
		return -EFAULT;
	memcpy(p, src, len);
	return 0;
}

void guest_mem_take_vmm_dirty(struct memslot *slot, uint64_t *bitmap)
{
	uint64_t n = bitmap_words(slot->npages);

	for (uint64_t i = 0; i < n; i++) {
		if (__atomic_load_n(&slot->vmm_dirty[i], __ATOMIC_RELAXED))
			bitmap[i] |= __atomic_exchange_n(&slot->vmm_dirty[i], 0, __ATOMIC_RELAXED);
	}
}

int guest_mem_layout_check(const struct guest_mem *mem, const struct mem_slot_shape *slots,
			   uint32_t n, const char *whose, char *err, size_t errlen)
{
	uint64_t theirs = 0, ours = 0;

	for (uint32_t i = 0; i < n; i++)
		theirs += slots[i].size;
	for (uint32_t i = 0; i < mem->nslots; i++)
		ours += mem->slots[i].size;
	if (theirs != ours || n != mem->nslots) {
		snprintf(err, errlen, "%s has %llu bytes in %u slots, this VM %llu bytes in %u",
			 whose, (unsigned long long)theirs, n, (unsigned long long)ours,
			 mem->nslots);
		return -EPROTO;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct memslot *m = &mem->slots[i];

		if (slots[i].gpa != m->gpa || slots[i].size != m->size) {
			snprintf(err, errlen,
				 "slot %u is [0x%llx, +0x%llx) in %s, [0x%llx, +0x%llx) in this VM",
				 i, (unsigned long long)slots[i].gpa,
				 (unsigned long long)slots[i].size, whose,
				 (unsigned long long)m->gpa, (unsigned long long)m->size);
			return -EPROTO;
		}
	}
	return 0;
}
