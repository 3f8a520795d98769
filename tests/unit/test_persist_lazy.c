/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_persist_lazy.c - the lazy restore's filling of guest RAM
 * (migration/persist/persist_lazy.c, white box: its file is included) on a
 * real userfaultfd, without KVM: a snapshot written with the codec, guest
 * RAM of two slots, and threads that touch pages the way vCPUs would.
 *   - every page ends as the snapshot's (present pages) or zero, each
 *     placed once, whoever touched what first; the restore says done;
 *   - RAM that already holds a page is refused before registration;
 *   - a memory file that cannot be read fails the restore, stops the VM
 *     with why, and wakes the threads waiting on missing pages;
 *   - over a chain of two layers, each page comes from the topmost layer
 *     that holds it (a hole there reads as zero), the rest from the base.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "../../migration/persist/persist_lazy.c"
#include "le.h"
#include "vm_struct.h" /* white-box: builds a VM by hand */

#define SLOT_PAGES 512u

static char dir[64], top_dir[80];
static uint64_t map0[8], map1[8]; /* present pages per slot */
static uint64_t top0[8], top1[8]; /* the chain test's top layer */
static uint8_t seed;		  /* 0: the base's pattern; the top's differs */

static uint8_t pat(uint32_t s, uint64_t p)
{
	return (uint8_t)(1 + (s * 31 + p + seed * 7u) % 250);
}

static void write_file(const char *d, const char *name, const void *p, size_t n, off_t at)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", d, name);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, p, n, at), (ssize_t)n);
	close(fd);
}

/*
 * A two-slot snapshot (2 MiB each) in d whose present pages (m0, m1) hold
 * pat(), except those `holes` marks, which stay holes (zero), as a diff
 * layer keeps a page that became zero.
 */
static void make_snapshot_in(const char *d, const uint64_t *m0, const uint64_t *m1,
			     const uint64_t *holes)
{
	struct mig_slot_desc slots[2] = {{0, 2u << 20}, {2u << 20, 2u << 20}};
	uint64_t npages[2] = {SLOT_PAGES, SLOT_PAGES}, off[2];
	const uint64_t *maps[2] = {m0, m1};
	static uint8_t layout[2 * SNAP_SLOT_LEN], index[4096], cpu[8], blob[8], out[1 << 16];
	struct snap_header h = {.version_major = SNAP_VERSION_MAJOR,
				.header_len = SNAP_HEADER_LEN,
				.page_size = MIG_PAGE_SIZE,
				.nslots = 2,
				.nvcpus = 1,
				.memory = 4u << 20};
	struct snap_sec_in s[6];
	struct snap_mem_header mh = {.version_major = SNAP_VERSION_MAJOR};
	uint8_t mhb[SNAP_MEM_HEADER_LEN], pg[GUEST_PAGE_SIZE];
	const char *cfg = "[vm]\nmemory = 4M\n";
	long long il, r;

	memset(h.id.b, 0x42 + seed, 16);
	h.memory_file_len = snap_layout_encode(layout, slots, 2);
	for (int i = 0; i < 2; i++)
		off[i] = le_get64(layout + i * SNAP_SLOT_LEN + 16);
	il = snap_index_encode(index, sizeof(index), maps, npages, 2, SNAP_INDEX_RAW);
	assert_true(il > 0);
	snap_cpu_encode(cpu, NULL, 0);
	s[0] = snap_sec_required(SNAP_SEC_LAYOUT, 0, layout, sizeof(layout));
	s[1] = snap_sec_required(SNAP_SEC_INDEX, 0, index, (uint64_t)il);
	s[2] = snap_sec_required(SNAP_SEC_CONFIG, 0, cfg, strlen(cfg));
	s[3] = snap_sec_required(SNAP_SEC_CPU, 0, cpu, SNAP_CPU_HDR_LEN);
	s[4] = snap_sec_required(SNAP_SEC_VM_STATE, 0, blob, sizeof(blob));
	s[5] = snap_sec_required(SNAP_SEC_VCPU_STATE, 0, blob, sizeof(blob));
	r = snap_state_encode(out, sizeof(out), &h, s, 6);
	assert_true(r > 0);
	write_file(d, "state", out, (size_t)r, 0);
	mh.id = h.id;
	mh.file_len = h.memory_file_len;
	snap_mem_header_encode(mhb, &mh);
	write_file(d, "memory", mhb, sizeof(mhb), 0);
	for (uint32_t sl = 0; sl < 2; sl++)
		for (uint64_t p = 0; p < SLOT_PAGES; p++)
			if (maps[sl][p / 64] >> (p % 64) & 1 &&
			    !(sl == 1 && holes && holes[p / 64] >> (p % 64) & 1)) {
				memset(pg, pat(sl, p), sizeof(pg));
				write_file(d, "memory", pg, sizeof(pg),
					   (off_t)(off[sl] + p * GUEST_PAGE_SIZE));
			}
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/memory", d);
		assert_int_equal(truncate(path, (off_t)h.memory_file_len), 0);
	}
}

static void make_snapshot(void)
{
	map0[0] = 0x5;
	map0[7] = 1ull << 63;
	map1[0] = ~0ull; /* a whole word: the prefetch's run */
	map1[4] = 1ull << (300 - 256);
	seed = 0;
	make_snapshot_in(dir, map0, map1, NULL);
}

struct fixture {
	struct vm vm;
	struct snapshot_image *img;
	struct snapshot_lazy *l;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[512] = "";

	assert_non_null(f);
	snprintf(dir, sizeof(dir), "/tmp/test_persist_lazy.XXXXXX");
	assert_non_null(mkdtemp(dir));
	make_snapshot();
	assert_int_equal(snapshot_image_open(dir, &f->img, err, sizeof(err)), 0);
	pthread_mutex_init(&f->vm.lock, NULL);
	pthread_cond_init(&f->vm.cond, NULL);
	f->vm.end_fd = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(guest_mem_init(&f->vm.mem, 4u << 20, 2u << 20, MEM_BACKEND_ANON), 0);
	f->l = calloc(1, sizeof(*f->l));
	f->l->vm = &f->vm;
	f->l->uffd = f->l->stop_fd = f->l->done_fd = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	snapshot_lazy_free(f->l);
	snapshot_image_close(f->img);
	guest_mem_destroy(&f->vm.mem);
	close(f->vm.end_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

struct touch {
	struct fixture *f;
	uint32_t slot;
	uint64_t page;
	uint8_t seen;
};

static void *toucher(void *arg)
{
	struct touch *t = arg;

	t->seen = *(volatile uint8_t *)(t->f->vm.mem.slots[t->slot].hva + t->page * 4096);
	return NULL;
}

static bool wait_end(struct snapshot_lazy *l, struct snapshot_lazy_progress *p)
{
	for (int i = 0; i < 10000; i++) {
		snapshot_lazy_get(l, p);
		if (p->done || p->failed)
			return true;
		usleep(1000);
	}
	return false;
}

static void fills_every_page_once(void **state)
{
	struct fixture *f = *state;
	const uint64_t *maps[2] = {map0, map1};
	struct snapshot_lazy_progress p;
	struct touch t[16];
	pthread_t th[16];
	char err[512] = "";

	assert_int_equal(lazy_start(f->l, f->img, err, sizeof(err)), 0);
	for (int i = 0; i < 16; i++) {
		/* present and absent pages, some twice, while the prefetch runs */
		t[i] = (struct touch){f, (uint32_t)(i % 2), (uint64_t)(i * 37) % 80, 0};
		assert_int_equal(pthread_create(&th[i], NULL, toucher, &t[i]), 0);
	}
	for (int i = 0; i < 16; i++) {
		bool present = maps[t[i].slot][t[i].page / 64] >> (t[i].page % 64) & 1;

		pthread_join(th[i], NULL);
		assert_int_equal(t[i].seen, present ? pat(t[i].slot, t[i].page) : 0);
	}
	assert_true(wait_end(f->l, &p));
	assert_true(p.done && !p.failed);
	assert_int_equal(p.pages_in, 68);
	assert_int_equal(p.pages_total, 68);
	for (uint32_t sl = 0; sl < 2; sl++)
		for (uint64_t pg = 0; pg < SLOT_PAGES; pg++) {
			const uint8_t *m = f->vm.mem.slots[sl].hva + pg * GUEST_PAGE_SIZE;
			uint8_t want = maps[sl][pg / 64] >> (pg % 64) & 1 ? pat(sl, pg) : 0;

			for (size_t b = 0; b < GUEST_PAGE_SIZE; b += 511)
				assert_int_equal(m[b], want);
		}
}

/*
 * A page already there would never fault, and the guest would see it
 * instead of the snapshot's: anonymous RAM is emptied first (this one
 * holds nothing in the snapshot, so it must read as zero again, and a
 * read-only touch, which maps the zero page, goes too).
 */
static void discards_early_pages(void **state)
{
	struct fixture *f = *state;
	struct guest_mem *m = &f->vm.mem;
	const struct memslot *last = &m->slots[m->nslots - 1];
	struct snapshot_lazy_progress p;
	unsigned char vec;
	char err[512] = "";

	f->vm.mem.slots[1].hva[5 * 4096 + 16] = 0x77; /* as a stray VMM write would */
	(void)*(volatile uint8_t *)(last->hva + (last->npages - 1) * GUEST_PAGE_SIZE);
	assert_int_equal(empty_ram(&f->vm, err, sizeof(err)), 0);
	assert_int_equal(mincore(last->hva + (last->npages - 1) * GUEST_PAGE_SIZE, 4096, &vec), 0);
	assert_false(vec & 1);
	assert_int_equal(lazy_start(f->l, f->img, err, sizeof(err)), 0);
	assert_true(wait_end(f->l, &p));
	assert_true(p.done && !p.failed);
	assert_int_equal(f->vm.mem.slots[1].hva[5 * 4096 + 16], map1[0] >> 5 & 1 ? pat(1, 5) : 0);
}

/* A memfd cannot be emptied: a page in it is refused, in O(1) (its allocated blocks). */
static void refuses_populated_memfd(void **state)
{
	struct fixture *f = *state;
	struct guest_mem *m = &f->vm.mem;
	char err[512] = "";

	guest_mem_destroy(m);
	assert_int_equal(guest_mem_init(m, 4u << 20, 2u << 20, MEM_BACKEND_MEMFD), 0);
	assert_true(m->memfd >= 0);
	assert_int_equal(empty_ram(&f->vm, err, sizeof(err)), 0);
	m->slots[1].hva[3 * GUEST_PAGE_SIZE] = 1;
	assert_int_equal(lazy_start(f->l, f->img, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "guest RAM already holds pages"));
}

/* [vm] prealloc populates RAM on purpose: --lazy says so and what to do. */
static void refuses_prealloc(void **state)
{
	struct fixture *f = *state;
	char err[512] = "";

	f->vm.cfg.prealloc = true;
	assert_int_equal(lazy_start(f->l, f->img, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "vm.prealloc=false"));
}

/* The memory file cut under the restore: it fails, says why, and nobody waits for ever. */
static void failure_wakes_waiters(void **state)
{
	struct fixture *f = *state;
	struct snapshot_lazy_progress p;
	struct touch t = {f, 1, 300, 0xee};
	char err[512] = "", path[128];
	pthread_t th;

	snprintf(path, sizeof(path), "%s/memory", dir);
	assert_int_equal(truncate(path, 4096), 0);
	assert_int_equal(lazy_start(f->l, f->img, err, sizeof(err)), 0);
	assert_int_equal(pthread_create(&th, NULL, toucher, &t), 0);
	assert_true(wait_end(f->l, &p));
	assert_true(p.failed && !p.done);
	pthread_join(th, NULL); /* woken by the unregister: returns */
	assert_int_equal(f->vm.end_reason, VM_END_ERROR);
	assert_non_null(strstr(f->vm.end_message, "lazy restore: cannot place page"));
}

/*
 * A chain of two layers (the top's parent set by hand: the pages, not the
 * chain's checks, are what this tests): the top holds slot 0 page 0 and
 * slot 1 pages 1..3 (page 2 a hole) and page 400 (in no base page), with
 * another pattern; every other page comes from the base or is zero.
 */
static void chain_takes_the_topmost_layer(void **state)
{
	struct fixture *f = *state;
	struct snapshot_image *top;
	struct snapshot_lazy_progress p;
	uint64_t holes[8] = {0};
	char err[512] = "";

	memset(top0, 0, sizeof(top0));
	memset(top1, 0, sizeof(top1));
	top0[0] = 0x1;
	top1[0] = 0xe;
	top1[6] = 1ull << (400 - 384);
	holes[0] = 0x4;
	snprintf(top_dir, sizeof(top_dir), "%s/top", dir);
	assert_int_equal(mkdir(top_dir, 0700), 0);
	seed = 1;
	make_snapshot_in(top_dir, top0, top1, holes);
	seed = 0;
	assert_int_equal(snapshot_image_open(top_dir, &top, err, sizeof(err)), 0);
	top->parent = f->img;
	f->img = top; /* the teardown closes the chain */
	assert_int_equal(lazy_start(f->l, f->img, err, sizeof(err)), 0);
	assert_int_equal(f->l->nlayers, 2);
	assert_true(wait_end(f->l, &p));
	assert_true(p.done && !p.failed);
	assert_int_equal(p.pages_total, 69); /* 68 in the base, page 400 only in the top */
	for (uint32_t sl = 0; sl < 2; sl++)
		for (uint64_t pg = 0; pg < SLOT_PAGES; pg++) {
			const uint64_t *tm = sl ? top1 : top0, *bm = sl ? map1 : map0;
			const uint8_t *m = f->vm.mem.slots[sl].hva + pg * GUEST_PAGE_SIZE;
			uint8_t want = 0;

			if (tm[pg / 64] >> (pg % 64) & 1) {
				seed = 1;
				want = sl == 1 && pg == 2 ? 0 : pat(sl, pg);
				seed = 0;
			} else if (bm[pg / 64] >> (pg % 64) & 1) {
				want = pat(sl, pg);
			}
			for (size_t b = 0; b < GUEST_PAGE_SIZE; b += 511)
				assert_int_equal(m[b], want);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(fills_every_page_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(discards_early_pages, setup, teardown),
	    cmocka_unit_test_setup_teardown(refuses_populated_memfd, setup, teardown),
	    cmocka_unit_test_setup_teardown(refuses_prealloc, setup, teardown),
	    cmocka_unit_test_setup_teardown(failure_wakes_waiters, setup, teardown),
	    cmocka_unit_test_setup_teardown(chain_takes_the_topmost_layer, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
