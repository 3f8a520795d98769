/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_guest_mem.c - memslot sharding, the hole relocation, the checked
 * gpa accessor, the VMM-side dirty bitmaps and [vm] prealloc's populate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "guest_mem.h"

#define KIB (1ull << 10)
#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define PAGE GUEST_PAGE_SIZE

static void check_slot(const struct guest_mem *m, uint32_t i, uint64_t gpa, uint64_t size,
		       uint64_t ram_offset)
{
	const struct memslot *s = &m->slots[i];

	assert_int_equal(s->id, i);
	assert_int_equal(s->gpa, gpa);
	assert_int_equal(s->size, size);
	assert_int_equal(s->npages, size / PAGE);
	assert_int_equal(s->ram_offset, ram_offset);
	assert_ptr_equal(s->hva, m->base + ram_offset);
	assert_non_null(s->vmm_dirty);
}

/* Every slot: its first and last byte map to it; the byte before/after does not. */
static void check_find_slot_all(const struct guest_mem *m)
{
	for (uint32_t i = 0; i < m->nslots; i++) {
		const struct memslot *s = &m->slots[i];

		assert_ptr_equal(guest_mem_find_slot(m, s->gpa), s);
		assert_ptr_equal(guest_mem_find_slot(m, s->gpa + s->size - 1), s);
		assert_ptr_equal(guest_mem_find_slot(m, s->gpa + s->size / 2), s);
		if (i + 1 < m->nslots && s[1].gpa == s->gpa + s->size)
			assert_ptr_equal(guest_mem_find_slot(m, s->gpa + s->size), s + 1);
		else
			assert_null(guest_mem_find_slot(m, s->gpa + s->size)); /* hole or end */
	}
	assert_null(guest_mem_find_slot(m, m->top));
	assert_null(guest_mem_find_slot(m, UINT64_MAX));
}

/* Counts set bits in a slot's VMM dirty bitmap without clearing it. */
static uint64_t dirty_count(const struct memslot *s)
{
	uint64_t n = 0;

	for (uint64_t p = 0; p < s->npages; p++)
		n += (s->vmm_dirty[p / 64] >> (p % 64)) & 1;
	return n;
}

static bool dirty_bit(const struct memslot *s, uint64_t page)
{
	return (s->vmm_dirty[page / 64] >> (page % 64)) & 1;
}

static uint64_t dirty_total(const struct guest_mem *m)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < m->nslots; i++)
		n += dirty_count(&m->slots[i]);
	return n;
}

static void clear_dirty(struct guest_mem *m)
{
	for (uint32_t i = 0; i < m->nslots; i++) {
		struct memslot *s = &m->slots[i];

		memset(s->vmm_dirty, 0, (s->npages + 63) / 64 * 8);
	}
}

static void test_small_one_slot(void **state)
{
	struct guest_mem m;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 256 * MIB, 512 * MIB, MEM_BACKEND_ANON), 0);
	assert_int_equal(m.nslots, 1);
	assert_int_equal(m.size, 256 * MIB);
	assert_int_equal(m.top, 256 * MIB);
	assert_int_equal(m.memfd, -1);
	check_slot(&m, 0, 0, 256 * MIB, 0);
	check_find_slot_all(&m);
	guest_mem_destroy(&m);
	assert_null(m.slots);
	assert_int_equal(m.nslots, 0);
	assert_int_equal(m.memfd, -1);

	assert_int_equal(guest_mem_init(&m, 512 * MIB, 512 * MIB, MEM_BACKEND_ANON), 0);
	assert_int_equal(m.nslots, 1);
	check_slot(&m, 0, 0, 512 * MIB, 0);
	check_find_slot_all(&m);
	guest_mem_destroy(&m);
}

static void test_4g_hole_relocation(void **state)
{
	struct guest_mem m;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 4 * GIB, 512 * MIB, MEM_BACKEND_ANON), 0);
	assert_int_equal(m.nslots, 8);
	for (uint32_t i = 0; i < 6; i++)
		check_slot(&m, i, i * 512 * MIB, 512 * MIB, i * 512 * MIB);
	/* RAM above 3 GiB is relocated to 4 GiB; host offsets stay contiguous. */
	check_slot(&m, 6, 4 * GIB, 512 * MIB, 3 * GIB);
	check_slot(&m, 7, 4 * GIB + 512 * MIB, 512 * MIB, 3 * GIB + 512 * MIB);
	assert_int_equal(m.top, 5 * GIB);
	check_find_slot_all(&m);
	/* The hole. */
	assert_null(guest_mem_find_slot(&m, 3 * GIB));
	assert_null(guest_mem_find_slot(&m, 3 * GIB + 0x1000));
	assert_null(guest_mem_find_slot(&m, 4 * GIB - 1));
	assert_ptr_equal(guest_mem_find_slot(&m, 3 * GIB - 1), &m.slots[5]);
	assert_ptr_equal(guest_mem_find_slot(&m, 4 * GIB), &m.slots[6]);
	assert_null(guest_mem_find_slot(&m, 5 * GIB));
	guest_mem_destroy(&m);
}

static void test_short_last_slot(void **state)
{
	struct guest_mem m;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 10 * MIB, 4 * MIB, MEM_BACKEND_ANON), 0);
	assert_int_equal(m.nslots, 3);
	check_slot(&m, 0, 0, 4 * MIB, 0);
	check_slot(&m, 1, 4 * MIB, 4 * MIB, 4 * MIB);
	check_slot(&m, 2, 8 * MIB, 2 * MIB, 8 * MIB);
	assert_int_equal(m.top, 10 * MIB);
	check_find_slot_all(&m);
	guest_mem_destroy(&m);

	/* Not a MiB multiple: the last slot is a single page. */
	assert_int_equal(guest_mem_init(&m, 2 * MIB + PAGE, 2 * MIB, MEM_BACKEND_ANON), 0);
	assert_int_equal(m.nslots, 2);
	check_slot(&m, 1, 2 * MIB, PAGE, 2 * MIB);
	check_find_slot_all(&m);
	guest_mem_destroy(&m);

	/*
	 * 3.5 GiB with 2 GiB slots: both regions end in a short slot and no
	 * slot crosses the hole: [0,2G) [2G,3G) [4G,4.5G).
	 */
	assert_int_equal(guest_mem_init(&m, 3 * GIB + 512 * MIB, 2 * GIB, MEM_BACKEND_ANON), 0);
	assert_int_equal(m.nslots, 3);
	check_slot(&m, 0, 0, 2 * GIB, 0);
	check_slot(&m, 1, 2 * GIB, 1 * GIB, 2 * GIB);
	check_slot(&m, 2, 4 * GIB, 512 * MIB, 3 * GIB);
	assert_int_equal(m.top, 4 * GIB + 512 * MIB);
	check_find_slot_all(&m);
	guest_mem_destroy(&m);

	/* Exactly 3 GiB: nothing above the hole. */
	assert_int_equal(guest_mem_init(&m, 3 * GIB, 1 * GIB, MEM_BACKEND_ANON), 0);
	assert_int_equal(m.nslots, 3);
	assert_int_equal(m.top, 3 * GIB);
	assert_null(guest_mem_find_slot(&m, 4 * GIB));
	guest_mem_destroy(&m);
}

static void test_init_rejects(void **state)
{
	struct guest_mem m;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 0, 2 * MIB, MEM_BACKEND_ANON), -EINVAL);
	assert_int_equal(guest_mem_init(&m, 16 * MIB + 1, 2 * MIB, MEM_BACKEND_ANON), -EINVAL);
	assert_int_equal(guest_mem_init(&m, 16 * MIB, 0, MEM_BACKEND_ANON), -EINVAL);
	assert_int_equal(guest_mem_init(&m, 16 * MIB, 2 * MIB + 1, MEM_BACKEND_ANON), -EINVAL);
	assert_int_equal(m.memfd, -1);
	assert_null(m.slots);
	/* Destroying a failed init is harmless. */
	guest_mem_destroy(&m);
}

/* A slot size near 2^64 must not overflow the slot count (one slot per region). */
static void test_huge_slot_size(void **state)
{
	struct guest_mem m;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 16 * MIB, UINT64_MAX & ~(PAGE - 1), MEM_BACKEND_ANON),
			 0);
	assert_int_equal(m.nslots, 1);
	check_slot(&m, 0, 0, 16 * MIB, 0);
	guest_mem_destroy(&m);
}

/* More slots than a uint32_t can count is refused up front, not truncated. */
static void test_too_many_slots(void **state)
{
	struct guest_mem m;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 1ull << 46, PAGE, MEM_BACKEND_ANON), -EINVAL);
	assert_null(m.slots);
}

static void test_memfd_backend(void **state)
{
	struct guest_mem m;
	uint8_t *p;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 8 * MIB, 2 * MIB, MEM_BACKEND_MEMFD), 0);
	assert_true(m.memfd >= 0);
	assert_int_equal(m.backend, MEM_BACKEND_MEMFD);
	assert_int_equal(m.nslots, 4);
	p = guest_mem_write_ptr(&m, 8 * MIB - 1, 1);
	assert_non_null(p);
	*p = 0x42;
	assert_int_equal(m.base[8 * MIB - 1], 0x42);
	guest_mem_destroy(&m);
	assert_int_equal(m.memfd, -1);
}

static void test_ptr_ranges(void **state)
{
	struct guest_mem m;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 4 * GIB, 512 * MIB, MEM_BACKEND_ANON), 0);

	assert_ptr_equal(guest_mem_ptr(&m, 0, 1), m.base);
	assert_ptr_equal(guest_mem_ptr(&m, 0x1234, 0), m.base + 0x1234);
	/* Within one slot, and crossing slot boundaries inside the low region. */
	assert_ptr_equal(guest_mem_ptr(&m, 512 * MIB - 8, 16), m.base + 512 * MIB - 8);
	assert_ptr_equal(guest_mem_ptr(&m, 100, 3 * GIB - 100), m.base + 100);
	assert_ptr_equal(guest_mem_ptr(&m, 0, 3 * GIB), m.base);
	assert_null(guest_mem_ptr(&m, 0, 3 * GIB + 1));
	/* Crossing slots in the high region, up to the exact end. */
	assert_ptr_equal(guest_mem_ptr(&m, 4 * GIB + 512 * MIB - 1, 2),
			 m.base + 3 * GIB + 512 * MIB - 1);
	assert_ptr_equal(guest_mem_ptr(&m, 4 * GIB, 1 * GIB), m.base + 3 * GIB);
	assert_ptr_equal(guest_mem_ptr(&m, 5 * GIB - 1, 1), m.base + 4 * GIB - 1);
	/* Crossing or inside the hole. */
	assert_null(guest_mem_ptr(&m, 3 * GIB - 1, 2));
	assert_null(guest_mem_ptr(&m, 3 * GIB - 4096, 1 * GIB + 8192));
	assert_null(guest_mem_ptr(&m, 3 * GIB, 1));
	assert_null(guest_mem_ptr(&m, 3 * GIB, 0));
	assert_null(guest_mem_ptr(&m, 4 * GIB - 1, 2));
	/* Past the end. */
	assert_null(guest_mem_ptr(&m, 5 * GIB - 1, 2));
	assert_null(guest_mem_ptr(&m, 5 * GIB, 0));
	assert_null(guest_mem_ptr(&m, 5 * GIB, 1));
	assert_null(guest_mem_ptr(&m, 4 * GIB, 1 * GIB + 1));
	/* Length overflow. */
	assert_null(guest_mem_ptr(&m, UINT64_MAX - 1, 16));
	assert_null(guest_mem_ptr(&m, UINT64_MAX, 1));
	assert_null(guest_mem_ptr(&m, 0x1000, UINT64_MAX));
	assert_null(guest_mem_ptr(&m, 0x1000, UINT64_MAX - 0xfff));
	assert_null(guest_mem_ptr(&m, 4 * GIB, UINT64_MAX));
	assert_null(guest_mem_write_ptr(&m, 0x1000, UINT64_MAX));
	/* Refused ranges mark nothing dirty. */
	assert_null(guest_mem_write_ptr(&m, 3 * GIB - 1, 2));
	assert_null(guest_mem_write_ptr(&m, 5 * GIB - 1, 2));
	assert_int_equal(dirty_total(&m), 0);
	assert_int_equal(guest_mem_write(&m, 5 * GIB - 2, "abcd", 4), -EFAULT);
	assert_int_equal(dirty_total(&m), 0);
	guest_mem_destroy(&m);
}

static void test_write_ptr_dirty_bits(void **state)
{
	struct guest_mem m;
	const struct memslot *s0, *s1;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 16 * MIB, 2 * MIB, MEM_BACKEND_ANON), 0);
	s0 = &m.slots[0];
	s1 = &m.slots[1];

	/* len 0 marks nothing. */
	assert_non_null(guest_mem_write_ptr(&m, 0x5000, 0));
	assert_int_equal(dirty_total(&m), 0);

	/* One byte: one page. */
	assert_non_null(guest_mem_write_ptr(&m, 0x5fff, 1));
	assert_int_equal(dirty_total(&m), 1);
	assert_true(dirty_bit(s0, 5));
	clear_dirty(&m);

	/* An exact page: only that page. */
	assert_non_null(guest_mem_write_ptr(&m, 0x1000, PAGE));
	assert_int_equal(dirty_total(&m), 1);
	assert_true(dirty_bit(s0, 1));
	clear_dirty(&m);

	/* Two bytes straddling a page boundary: both pages. */
	assert_non_null(guest_mem_write_ptr(&m, 0x1fff, 2));
	assert_int_equal(dirty_total(&m), 2);
	assert_true(dirty_bit(s0, 1));
	assert_true(dirty_bit(s0, 2));
	clear_dirty(&m);

	/* Across a 64-page bitmap word. */
	assert_non_null(guest_mem_write_ptr(&m, 63 * PAGE, 2 * PAGE));
	assert_int_equal(dirty_total(&m), 2);
	assert_true(dirty_bit(s0, 63));
	assert_true(dirty_bit(s0, 64));
	clear_dirty(&m);

	/* Spanning two slots: last 2 pages of slot 0, first 3 of slot 1. */
	assert_non_null(guest_mem_write_ptr(&m, 2 * MIB - 2 * PAGE + 10, 5 * PAGE - 20));
	assert_int_equal(dirty_count(s0), 2);
	assert_int_equal(dirty_count(s1), 3);
	assert_true(dirty_bit(s0, s0->npages - 1));
	assert_true(dirty_bit(s0, s0->npages - 2));
	assert_true(dirty_bit(s1, 0));
	assert_true(dirty_bit(s1, 2));
	assert_int_equal(dirty_total(&m), 5);
	clear_dirty(&m);

	/* Ending exactly at a slot boundary does not touch the next slot. */
	assert_non_null(guest_mem_write_ptr(&m, 2 * MIB - PAGE, PAGE));
	assert_int_equal(dirty_count(s0), 1);
	assert_int_equal(dirty_count(s1), 0);
	clear_dirty(&m);

	/* All of RAM: every page of every slot. */
	assert_non_null(guest_mem_write_ptr(&m, 0, 16 * MIB));
	assert_int_equal(dirty_total(&m), 16 * MIB / PAGE);
	clear_dirty(&m);

	/* guest_mem_write copies and marks. */
	assert_int_equal(guest_mem_write(&m, 4 * MIB + 3, "hello", 5), 0);
	assert_memory_equal(m.base + 4 * MIB + 3, "hello", 5);
	assert_int_equal(dirty_total(&m), 1);
	assert_true(dirty_bit(&m.slots[2], 0));

	/* guest_mem_ptr (read access) marks nothing. */
	clear_dirty(&m);
	assert_non_null(guest_mem_ptr(&m, 0, 16 * MIB));
	assert_int_equal(dirty_total(&m), 0);
	guest_mem_destroy(&m);
}

/* The same across the hole's high side: gpa 4 GiB maps to host offset 3 GiB. */
static void test_dirty_high_region(void **state)
{
	struct guest_mem m;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 4 * GIB, 512 * MIB, MEM_BACKEND_ANON), 0);
	assert_non_null(guest_mem_write_ptr(&m, 4 * GIB + 512 * MIB - PAGE, 2 * PAGE));
	assert_int_equal(dirty_count(&m.slots[6]), 1);
	assert_true(dirty_bit(&m.slots[6], m.slots[6].npages - 1));
	assert_int_equal(dirty_count(&m.slots[7]), 1);
	assert_true(dirty_bit(&m.slots[7], 0));
	assert_int_equal(dirty_total(&m), 2);
	guest_mem_destroy(&m);
}

static void test_take_vmm_dirty(void **state)
{
	struct guest_mem m;
	struct memslot *s;
	uint64_t *bm;
	uint64_t words;

	(void)state;
	assert_int_equal(guest_mem_init(&m, 4 * MIB, 2 * MIB, MEM_BACKEND_ANON), 0);
	s = &m.slots[0];
	words = (s->npages + 63) / 64;
	bm = calloc(words, sizeof(*bm));
	assert_non_null(bm);

	bm[0] = 1ull << 7;                 /* KVM's dirty log already had page 7 */
	bm[words - 1] = 1ull << 63;        /* and the last page */
	guest_mem_mark_dirty(&m, 3 * PAGE, 1);
	guest_mem_mark_dirty(&m, 7 * PAGE, 1); /* already set in bm */
	guest_mem_mark_dirty(&m, 130 * PAGE, PAGE);
	guest_mem_take_vmm_dirty(s, bm);
	assert_int_equal(bm[0], (1ull << 3) | (1ull << 7));
	assert_int_equal(bm[2], 1ull << 2);
	assert_int_equal(bm[words - 1], 1ull << 63);
	for (uint64_t i = 0; i < words; i++) {
		if (i != 0 && i != 2 && i != words - 1)
			assert_int_equal(bm[i], 0);
	}
	/* The slot's bits are cleared. */
	assert_int_equal(dirty_count(s), 0);

	/* A second harvest adds nothing. */
	memset(bm, 0, words * sizeof(*bm));
	guest_mem_take_vmm_dirty(s, bm);
	for (uint64_t i = 0; i < words; i++)
		assert_int_equal(bm[i], 0);
	/* Other slots are untouched by harvesting slot 0. */
	guest_mem_mark_dirty(&m, 2 * MIB, 1);
	guest_mem_take_vmm_dirty(s, bm);
	assert_int_equal(bm[0], 0);
	assert_int_equal(dirty_count(&m.slots[1]), 1);
	free(bm);
	guest_mem_destroy(&m);
}

/* Pages of [base, base+len) that are resident, by mincore(). */
static uint64_t resident_pages(const uint8_t *base, uint64_t len)
{
	uint64_t n = len / PAGE, count = 0;
	unsigned char *vec = malloc(n);

	assert_non_null(vec);
	assert_int_equal(mincore((void *)base, len, vec), 0);
	for (uint64_t i = 0; i < n; i++)
		count += vec[i] & 1;
	free(vec);
	return count;
}

/* Both backends, a size that is not a multiple of the 64 MiB piece. */
static void test_populate(void **state)
{
	static const enum mem_backend backends[] = {MEM_BACKEND_ANON, MEM_BACKEND_MEMFD};
	char err[256] = "";
	(void)state;

	for (unsigned b = 0; b < 2; b++) {
		struct guest_mem m;

		assert_int_equal(guest_mem_init(&m, 130 * MIB, 32 * MIB, backends[b]), 0);
		assert_true(resident_pages(m.base, m.size) < m.size / PAGE / 2);
		assert_int_equal(guest_mem_populate(&m, err, sizeof(err)), 0);
		assert_int_equal(resident_pages(m.base, m.size), m.size / PAGE);
		/* Populated memory reads as zero: a target relies on it for pages never sent. */
		assert_int_equal(m.base[0] | m.base[m.size - 1] | m.base[77 * MIB], 0);
		guest_mem_destroy(&m);
	}
}

/* More than the host has is refused with a message, before anything is touched. */
static void test_room_refuses(void **state)
{
	char err[256] = "";
	(void)state;

	assert_int_equal(guest_mem_room(1ull << 50, err, sizeof(err)), -ENOMEM);
	assert_non_null(strstr(err, "1073741824 MiB of guest RAM to preallocate, but"));
	assert_int_equal(guest_mem_room(4 * MIB, err, sizeof(err)), 0);
}

static void test_64g_sparse(void **state)
{
	struct guest_mem m;
	struct timespec a, b;
	double ms;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(guest_mem_init(&m, 64 * GIB, 512 * MIB, MEM_BACKEND_ANON), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	assert_true(ms < 1000.0);

	assert_int_equal(m.nslots, 128);
	assert_int_equal(m.top, 65 * GIB);
	check_slot(&m, 5, 5 * 512 * MIB, 512 * MIB, 5 * 512 * MIB);
	check_slot(&m, 6, 4 * GIB, 512 * MIB, 3 * GIB);
	check_slot(&m, 127, 65 * GIB - 512 * MIB, 512 * MIB, 64 * GIB - 512 * MIB);
	check_find_slot_all(&m);
	/* Touch the last byte only: memory stays sparse. */
	uint8_t *p = guest_mem_write_ptr(&m, 65 * GIB - 1, 1);
	assert_ptr_equal(p, m.base + 64 * GIB - 1);
	*p = 1;
	assert_int_equal(dirty_count(&m.slots[127]), 1);
	guest_mem_destroy(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_one_slot),
		cmocka_unit_test(test_4g_hole_relocation),
		cmocka_unit_test(test_short_last_slot),
		cmocka_unit_test(test_init_rejects),
		cmocka_unit_test(test_huge_slot_size),
		cmocka_unit_test(test_too_many_slots),
		cmocka_unit_test(test_memfd_backend),
		cmocka_unit_test(test_ptr_ranges),
		cmocka_unit_test(test_write_ptr_dirty_bits),
		cmocka_unit_test(test_dirty_high_region),
		cmocka_unit_test(test_take_vmm_dirty),
		cmocka_unit_test(test_64g_sparse),
		cmocka_unit_test(test_populate),
		cmocka_unit_test(test_room_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
