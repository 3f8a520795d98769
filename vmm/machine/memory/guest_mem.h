/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guest_mem.h - guest RAM: one host mapping, sharded into memslots.
 *
 * Layout: RAM starts at gpa 0; the part above GUEST_MEM_HOLE_START is
 * relocated above 4 GiB, leaving [3 GiB, 4 GiB) for the LAPIC/IOAPIC.
 * Slots are `slot_size` long (the last one in each region may be shorter)
 * and never cross the hole. The slot table is sized by the slots in use
 * and sorted by gpa, so lookups are O(log n) and nothing walks KVM's
 * 32764-entry limit (KVM_CAP_NR_MEMSLOTS; see the "KVM: Dynamic sized kvm
 * memslots array" patch for what walking all of it costs).
 *
 * Every guest address the VMM touches goes through guest_mem_ptr() /
 * guest_mem_write_ptr(), which refuse ranges that are not entirely RAM.
 * guest_mem_write_ptr() also records the pages in the slot's VMM-side dirty
 * bitmap, because KVM's dirty log never sees writes made by the VMM.
 *
 * Thread safety: the layout is immutable after guest_mem_init(); the
 * vmm_dirty bitmaps are updated with atomic ORs and may be harvested
 * (guest_mem_take_vmm_dirty) concurrently.
 */
#ifndef VMM_GUEST_MEM_H
#define VMM_GUEST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define GUEST_PAGE_SHIFT     12
#define GUEST_PAGE_SIZE	     (1ull << GUEST_PAGE_SHIFT)
#define GUEST_MEM_HOLE_START (3ull << 30)
#define GUEST_MEM_HIGH_START (4ull << 30)

struct memslot {
	uint32_t id;	     /* KVM slot number (index in the table) */
	uint64_t gpa;	     /* first guest-physical address */
	uint64_t size;	     /* bytes, multiple of GUEST_PAGE_SIZE */
	uint64_t npages;     /* size / GUEST_PAGE_SIZE */
	uint8_t *hva;	     /* host address of gpa */
	uint64_t ram_offset; /* offset of gpa in the host mapping */
	uint64_t *vmm_dirty; /* npages bits: pages the VMM wrote */
};

struct guest_mem {
	uint8_t *base; /* host mapping of all RAM */
	uint64_t size; /* bytes of RAM */
	int memfd;     /* -1 unless MEM_BACKEND_MEMFD */
	enum mem_backend backend;
	struct memslot *slots;
	uint32_t nslots;
	uint64_t top; /* highest gpa + 1 */
};

/*
 * Maps `size` bytes (MAP_NORESERVE: untouched memory costs nothing).
 * MEM_BACKEND_MEMFD: a memfd sealed against shrinking and growing, so it
 * can be handed to another vmm (guest_mem_init_fd) that maps all of it.
 */
int guest_mem_init(struct guest_mem *mem, uint64_t size, uint64_t slot_size,
		   enum mem_backend backend);
/*
 * Whether fd can be a local upgrade's guest RAM (guest_mem_init_fd): a
 * regular file of exactly `size` bytes sealed against shrinking and
 * growing (not against writing), in a layout of slot_size memslots. 0, or
 * -EINVAL with err saying why. fd is left open. Any thread.
 */
int guest_mem_check_fd(int fd, uint64_t size, uint64_t slot_size, char *err, size_t errlen);
/*
 * A local upgrade's target: guest RAM is `fd`, another vmm's memfd with
 * the guest's memory in it, mapped shared (nothing is copied or zeroed).
 * Refused (-EINVAL, err says why) unless fd is a regular file of exactly
 * `size` bytes sealed against shrinking and growing. Takes fd: it is
 * closed on failure and by guest_mem_destroy().
 */
int guest_mem_init_fd(struct guest_mem *mem, int fd, uint64_t size, uint64_t slot_size, char *err,
		      size_t errlen);
void guest_mem_destroy(struct guest_mem *mem);

/*
 * [vm] prealloc (guest_mem_populate.c). guest_mem_room() refuses a size
 * the host cannot hold (MemAvailable, the cgroup v2 memory.max) with a
 * message and -ENOMEM: call it before guest_mem_init(). guest_mem_populate()
 * then makes every page of the mapping resident (MADV_POPULATE_WRITE, a
 * few threads); it blocks for as long as that takes (about 1 s per GiB on
 * a nested host). Call it before the guest runs and before any other
 * thread uses `mem`. guest_mem_host_available() is MemAvailable in bytes,
 * 0 when /proc/meminfo cannot be read.
 */
uint64_t guest_mem_host_available(void);
int guest_mem_room(uint64_t size, char *err, size_t errlen);
int guest_mem_populate(struct guest_mem *mem, char *err, size_t errlen);

/* The slot holding gpa, or NULL. O(log nslots). */
const struct memslot *guest_mem_find_slot(const struct guest_mem *mem, uint64_t gpa);

/*
 * The slot whose host mapping holds hva, with the page's index in the slot
 * in *page; NULL when hva is not guest RAM. O(log nslots). For host
 * addresses that come back from the kernel (userfaultfd faults).
 */
const struct memslot *guest_mem_slot_of_hva(const struct guest_mem *mem, uint64_t hva,
					    uint64_t *page);

/*
 * Host pointer for [gpa, gpa+len), or NULL if any byte is not RAM or the
 * range crosses the hole. len may be 0 (then gpa must still be RAM).
 */
void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa, uint64_t len);

/* As guest_mem_ptr(), and marks the pages dirty in the VMM-side bitmap. */
void *guest_mem_write_ptr(struct guest_mem *mem, uint64_t gpa, uint64_t len);

/* Copies into guest memory through the checked accessor; -EFAULT if out of range. */
int guest_mem_write(struct guest_mem *mem, uint64_t gpa, const void *src, uint64_t len);

/* Marks [gpa, gpa+len) dirty in the VMM-side bitmaps (range must be RAM). */
void guest_mem_mark_dirty(struct guest_mem *mem, uint64_t gpa, uint64_t len);

/*
 * ORs the slot's VMM-side dirty bits into `bitmap` (npages bits) and clears
 * them, atomically per word.
 */
void guest_mem_take_vmm_dirty(struct memslot *slot, uint64_t *bitmap);

/* One memslot of a described layout: where it starts and how long it is. */
struct mem_slot_shape {
	uint64_t gpa;
	uint64_t size;
};

/*
 * Whether slots[0..n) - the layout a migration source or a snapshot
 * describes; `whose` names that side in the message ("the source", "the
 * snapshot") - is exactly mem's: the same memory in the same number of
 * slots, each at the same address with the same size. A vmm builds the
 * same layout from the same config, so a difference means another vmm,
 * another config or a forged description, and nothing of that guest may
 * be loaded into this one. The one check of it for migrations and
 * restores. 0, or -EPROTO with the first difference in err: "WHOSE has N
 * bytes in S slots, this VM N' bytes in S'" or "slot I is [gpa, +size) in
 * WHOSE, [gpa', +size') in this VM". Any thread: reads only the table.
 */
int guest_mem_layout_check(const struct guest_mem *mem, const struct mem_slot_shape *slots,
			   uint32_t n, const char *whose, char *err, size_t errlen);

#endif /* VMM_GUEST_MEM_H */
