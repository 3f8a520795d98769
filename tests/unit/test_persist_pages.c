/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_persist_pages.c - the snapshot engine's page pass (migration/persist,
 * page_io_run()) on guest RAM without KVM: what it writes is exactly the
 * pages that hold data, at their fixed offsets (holes elsewhere), with
 * their present bits; reading it back into fresh RAM gives the same RAM,
 * with 1 and several workers; a memory file cut short is a one-line error
 * naming the slot and the offset; RAM full of data goes out whole across
 * chunk and slot ends; a failed write or a cancel ends the pass on every
 * worker; the pass through O_DIRECT ([snapshot] direct_io) reads back the
 * same; and CPU feature sets become sorted raw words.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bitmap.h"
#include "cpu_features.h"
#include "guest_mem.h"
#include "persist.h"

#define RAM  (40ull << 20) /* slots of 16, 16 and 8 MiB */
#define SLOT (16ull << 20)

struct env {
	struct guest_mem mem;
	uint64_t off[8];
	uint64_t file_len;
	int fd;
	char path[64];
};

/* Pages with data: a scattered pattern that crosses chunk ends and slot ends. */
static bool has_data(uint32_t slot, uint64_t p, uint64_t npages)
{
	return p == 0 || p == 511 || p == 512 || p == npages - 1 || (p % 97 == slot) ||
	       (p >= 1000 && p < 1100);
}

static void fill(struct guest_mem *m)
{
	for (uint32_t s = 0; s < m->nslots; s++)
		for (uint64_t p = 0; p < m->slots[s].npages; p++)
			if (has_data(s, p, m->slots[s].npages)) {
				uint8_t *pg = m->slots[s].hva + p * GUEST_PAGE_SIZE;

				memset(pg, (int)(1 + (s * 7 + p) % 250), GUEST_PAGE_SIZE);
				pg[p % GUEST_PAGE_SIZE] = (uint8_t)s;
			}
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct mig_slot_desc d[8];
	uint8_t layout[8 * SNAP_SLOT_LEN];

	assert_non_null(e);
	assert_int_equal(guest_mem_init(&e->mem, RAM, SLOT, MEM_BACKEND_ANON), 0);
	assert_true(e->mem.nslots >= 3 && e->mem.nslots <= 8);
	persist_slots(&e->mem, d);
	e->file_len = snap_layout_encode(layout, d, e->mem.nslots);
	for (uint32_t s = 0; s < e->mem.nslots; s++) {
		struct snap_slot sl;

		memcpy(&sl.file_offset, layout + s * SNAP_SLOT_LEN + 16,
		       8); /* little endian host */
		e->off[s] = sl.file_offset;
	}
	snprintf(e->path, sizeof(e->path), "/tmp/test_persist_pages.XXXXXX");
	e->fd = mkstemp(e->path);
	assert_true(e->fd >= 0);
	assert_int_equal(ftruncate(e->fd, (off_t)e->file_len), 0);
	fill(&e->mem);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	close(e->fd);
	unlink(e->path);
	guest_mem_destroy(&e->mem);
	free(e);
	return 0;
}

static uint64_t write_all(struct env *e, unsigned threads, uint64_t **present)
{
	uint64_t done = 0, moved = 0;
	struct page_io io = {.mem = &e->mem,
			     .fd = e->fd,
			     .slot_off = e->off,
			     .present = present,
			     .writing = true,
			     .done = &done,
			     .moved = &moved};
	char err[256] = "";

	assert_int_equal(page_io_run(&io, threads, err, sizeof(err)), 0);
	assert_int_equal(done, RAM / GUEST_PAGE_SIZE);
	return moved;
}

static void check_roundtrip(void **state, unsigned threads)
{
	struct env *e = *state;
	uint64_t **present = page_bitmaps_new(&e->mem), want = 0, moved, read = 0;
	struct guest_mem back;
	struct stat st;
	char err[256] = "";

	assert_non_null(present);
	moved = write_all(e, threads, present);
	for (uint32_t s = 0; s < e->mem.nslots; s++)
		for (uint64_t p = 0; p < e->mem.slots[s].npages; p++) {
			bool d = has_data(s, p, e->mem.slots[s].npages);
			uint8_t buf[GUEST_PAGE_SIZE];

			want += d;
			assert_int_equal(bitmap_test(present[s], p), d);
			if (!d)
				continue;
			assert_int_equal(pread(e->fd, buf, sizeof(buf),
					       (off_t)(e->off[s] + p * GUEST_PAGE_SIZE)),
					 (ssize_t)sizeof(buf));
			assert_memory_equal(buf, e->mem.slots[s].hva + p * GUEST_PAGE_SIZE,
					    sizeof(buf));
		}
	assert_int_equal(moved, want);
	/* Holes where the pages were zero: far fewer blocks than the file's length. */
	assert_int_equal(fstat(e->fd, &st), 0);
	assert_true((uint64_t)st.st_blocks * 512 < e->file_len / 4);

	assert_int_equal(guest_mem_init(&back, RAM, SLOT, MEM_BACKEND_ANON), 0);
	struct page_io rd = {
	    .mem = &back, .fd = e->fd, .slot_off = e->off, .present = present, .moved = &read};
	assert_int_equal(page_io_run(&rd, threads, err, sizeof(err)), 0);
	assert_int_equal(read, want);
	assert_memory_equal(back.base, e->mem.base, RAM);
	guest_mem_destroy(&back);
	page_bitmaps_free(present, &e->mem);
}

static void roundtrip_one_worker(void **state)
{
	check_roundtrip(state, 1);
}

static void roundtrip_workers(void **state)
{
	check_roundtrip(state, 5);
}

/* A memory file cut under the reader: the error names the slot and where. */
static void short_file_is_an_error(void **state)
{
	struct env *e = *state;
	uint64_t **present = page_bitmaps_new(&e->mem);
	struct guest_mem back;
	char err[256] = "";
	uint32_t last = e->mem.nslots - 1;

	write_all(e, 2, present);
	assert_int_equal(ftruncate(e->fd, (off_t)e->off[last]), 0);
	assert_int_equal(guest_mem_init(&back, RAM, SLOT, MEM_BACKEND_ANON), 0);
	struct page_io rd = {.mem = &back, .fd = e->fd, .slot_off = e->off, .present = present};
	assert_int_equal(page_io_run(&rd, 3, err, sizeof(err)), -EIO);
	char want[64];
	snprintf(want, sizeof(want), "reading slot %u's pages at offset ", last);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "of the memory file"));
	guest_mem_destroy(&back);
	page_bitmaps_free(present, &e->mem);
}

/*
 * Every page holding data: the writer gathers the runs across chunk and
 * slot ends into large writes (persist_write.c); what reaches the file is
 * still each page at its offset, and nothing between the slots.
 */
static void dense_ram_across_slots(void **state)
{
	struct env *e = *state;
	uint64_t **present = page_bitmaps_new(&e->mem), moved;
	uint8_t *back = malloc(SLOT);

	assert_non_null(present);
	assert_non_null(back);
	for (uint32_t s = 0; s < e->mem.nslots; s++)
		for (uint64_t p = 0; p < e->mem.slots[s].npages; p++)
			memset(e->mem.slots[s].hva + p * GUEST_PAGE_SIZE, (int)(1 + (p + s) % 200),
			       GUEST_PAGE_SIZE);
	moved = write_all(e, 3, present);
	assert_int_equal(moved, RAM / GUEST_PAGE_SIZE);
	for (uint32_t s = 0; s < e->mem.nslots; s++) {
		uint64_t len = e->mem.slots[s].size;

		assert_int_equal(bitmap_count(present[s], bitmap_words(e->mem.slots[s].npages)),
				 e->mem.slots[s].npages);
		assert_int_equal(pread(e->fd, back, len, (off_t)e->off[s]), (ssize_t)len);
		assert_memory_equal(back, e->mem.slots[s].hva, len);
	}
	free(back);
	page_bitmaps_free(present, &e->mem);
}

/*
 * A write that fails (here: a file opened read-only) ends the pass with
 * one line naming where, whatever the other workers were doing: every
 * claimed chunk still passes its turn, so none waits forever.
 */
static void write_error_ends_the_pass(void **state)
{
	struct env *e = *state;
	uint64_t **present = page_bitmaps_new(&e->mem);
	int ro = open(e->path, O_RDONLY);
	char err[256] = "";

	assert_true(ro >= 0);
	for (unsigned threads = 1; threads <= 4; threads += 3) {
		struct page_io io = {.mem = &e->mem,
				     .fd = ro,
				     .slot_off = e->off,
				     .present = present,
				     .writing = true};

		assert_int_equal(page_io_run(&io, threads, err, sizeof(err)), -EBADF);
		assert_non_null(strstr(err, "writing slot 0's pages at offset 2097152 of the "
					    "memory file"));
		assert_null(strchr(err, '\n'));
	}
	close(ro);
	page_bitmaps_free(present, &e->mem);
}

/* A pass cancelled (the VM going away) stops at its next chunk, on every worker. */
static void cancelled_pass_stops(void **state)
{
	struct env *e = *state;
	uint64_t **present = page_bitmaps_new(&e->mem), moved = 0;
	bool cancel = true;
	char err[256] = "";
	struct page_io io = {.mem = &e->mem,
			     .fd = e->fd,
			     .slot_off = e->off,
			     .present = present,
			     .writing = true,
			     .cancel = &cancel,
			     .moved = &moved};

	assert_int_equal(page_io_run(&io, 4, err, sizeof(err)), -ECANCELED);
	assert_non_null(strstr(err, "stopped at slot 0, page 0"));
	assert_int_equal(moved, 0);
	page_bitmaps_free(present, &e->mem);
}

/* The file against RAM: present pages hold RAM's data, the others read as zero. */
static void file_matches(struct env *e, int fd, uint64_t **present, uint8_t *back)
{
	static const uint8_t zero[GUEST_PAGE_SIZE];

	for (uint32_t s = 0; s < e->mem.nslots; s++) {
		uint64_t len = e->mem.slots[s].size;

		assert_int_equal(pread(fd, back, len, (off_t)e->off[s]), (ssize_t)len);
		for (uint64_t p = 0; p < e->mem.slots[s].npages; p++)
			assert_memory_equal(back + p * GUEST_PAGE_SIZE,
					    bitmap_test(present[s], p)
						? e->mem.slots[s].hva + p * GUEST_PAGE_SIZE
						: zero,
					    GUEST_PAGE_SIZE);
	}
}

/*
 * [snapshot] direct_io: the same passes through an O_DIRECT file (guest
 * RAM and every offset page aligned, as the device needs), the small gaps
 * between runs written too (zeros, or an earlier pass's pages): a full
 * pass, then a dirty pass over scattered pages among written ones, each
 * read back whole. Skipped where the build directory's file system has no
 * O_DIRECT (tmpfs before Linux 6.6).
 */
static void direct_io_roundtrip(void **state)
{
	struct env *e = *state;
	uint64_t **present = page_bitmaps_new(&e->mem), moved = 0;
	char path[512], err[256] = "";
	uint8_t *back = aligned_alloc(GUEST_PAGE_SIZE, SLOT);
	int fd;

	assert_non_null(present);
	assert_non_null(back);
	snprintf(path, sizeof(path), "%s/test_persist_pages.direct.XXXXXX", TEST_BINARY_DIR);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	fd = open(path, O_RDWR | O_DIRECT);
	unlink(path);
	if (fd < 0 && errno == EINVAL) {
		free(back);
		page_bitmaps_free(present, &e->mem);
		skip();
	}
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)e->file_len), 0);
	{
		struct page_io io = {.mem = &e->mem,
				     .fd = fd,
				     .slot_off = e->off,
				     .present = present,
				     .writing = true,
				     .direct = true,
				     .moved = &moved};
		uint64_t **only = page_bitmaps_new(&e->mem);

		assert_int_equal(page_io_run(&io, 3, err, sizeof(err)), 0);
		assert_true(moved > 0);
		file_matches(e, fd, present, back);
		/* A later pass: every 3rd page of 1000..1099 rewritten, the others' gaps kept. */
		assert_non_null(only);
		for (uint32_t s = 0; s < e->mem.nslots; s++)
			for (uint64_t p = 1000; p < 1100; p += 3) {
				memset(e->mem.slots[s].hva + p * GUEST_PAGE_SIZE, 0x77,
				       GUEST_PAGE_SIZE);
				bitmap_set(only[s], p);
			}
		io.only = only;
		assert_int_equal(page_io_run(&io, 2, err, sizeof(err)), 0);
		file_matches(e, fd, present, back);
		page_bitmaps_free(only, &e->mem);
	}
	close(fd);
	free(back);
	page_bitmaps_free(present, &e->mem);
}

static void cpu_words_sorted(void **state)
{
	struct snap_cpu_word w[SNAP_CPU_WORDS_MAX];
	struct cpu_features f;
	uint32_t n;
	char err[128];

	(void)state;
	assert_int_equal(cpu_features_parse("lm,sse2,avx2,fpu,syscall", &f, err, sizeof(err)), 0);
	assert_int_equal(persist_cpu_words(&f, w, &n), 0);
	/* 1.0:edx (fpu 0, sse2 26), 7.0:ebx (avx2 5), 0x80000001.0:edx (syscall 11, lm 29) */
	assert_int_equal(n, 3);
	assert_true(w[0].leaf == 1 && w[0].reg == SNAP_CPU_EDX);
	assert_int_equal(w[0].bits, (1u << 0) | (1u << 26));
	assert_true(w[1].leaf == 7 && w[1].subleaf == 0 && w[1].reg == SNAP_CPU_EBX);
	assert_int_equal(w[1].bits, 1u << 5);
	assert_true(w[2].leaf == 0x80000001u && w[2].reg == SNAP_CPU_EDX);
	assert_int_equal(w[2].bits, (1u << 11) | (1u << 29));
	assert_int_equal(cpu_features_parse("", &f, err, sizeof(err)), 0);
	assert_int_equal(persist_cpu_words(&f, w, &n), 0);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(roundtrip_one_worker, setup, teardown),
	    cmocka_unit_test_setup_teardown(roundtrip_workers, setup, teardown),
	    cmocka_unit_test_setup_teardown(short_file_is_an_error, setup, teardown),
	    cmocka_unit_test_setup_teardown(dense_ram_across_slots, setup, teardown),
	    cmocka_unit_test_setup_teardown(write_error_ends_the_pass, setup, teardown),
	    cmocka_unit_test_setup_teardown(cancelled_pass_stops, setup, teardown),
	    cmocka_unit_test_setup_teardown(direct_io_roundtrip, setup, teardown),
	    cmocka_unit_test(cpu_words_sorted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
