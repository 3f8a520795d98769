/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_persist_chain.c - a restore's memory is bounded by a constant, not
 * by what a diff chain's state files declare (issue 36, finding 5;
 * migration/persist/persist_state_read.c). Chains of a full snapshot and
 * 64 diff layers are written with the codec's own encoders, each state
 * file padded with optional sections of a type no build reads: zeros,
 * sparse on disk, declared by the gigabyte. snapshot_image_open() (every
 * check a restore makes before a VM exists) runs in a child process whose
 * peak RSS (wait4()'s ru_maxrss) must stay under 256 MiB whether the chain
 * is accepted or refused:
 *   - 65 layers of ~15 MiB each (975 MiB in all): opened, all 65 layers;
 *   - 65 layers of ~1 GiB each: refused at the second layer's header, by
 *     name (SNAP_CHAIN_STATE_MAX), not after reading what it declares;
 *   - one layer whose kept sections (a raw INDEX for 4 TiB of RAM) exceed
 *     RESTORE_HOLD_MAX: refused from its table, before they are read.
 * Outside AddressSanitizer builds the child also runs under an address
 * space limit, so that a reader that holds what it reads fails (ENOMEM)
 * instead of taking the host's memory.
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "crc32c.h"
#include "le.h"
#include "persist.h"
#include "snapshot.h"

#define RSS_MAX_KIB  (256u << 10)
#define PAD_SEC_MAX  SNAP_SECTION_MAX /* an optional unknown section's largest */
#define LAYERS	     (SNAP_LAYERS_MAX + 1)
#define SECTIONS_MAX 48
#define RAM	     (2u << 20)

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif

static char root[64];
static uint8_t zeros[1u << 20];

/* CRC-32C of len zero bytes after crc (the padding's payload), the last few remembered. */
static uint32_t crc_zeros(uint32_t crc, uint64_t len)
{
	static struct {
		uint32_t from, crc;
		uint64_t len;
	} seen[4];
	static unsigned next;
	uint32_t from = crc;

	for (unsigned i = 0; i < 4; i++)
		if (seen[i].len == len && seen[i].from == crc && len)
			return seen[i].crc;
	for (uint64_t o = 0; o < len; o += sizeof(zeros))
		crc = crc32c(crc, zeros, len - o < sizeof(zeros) ? len - o : sizeof(zeros));
	seen[next % 4].from = from;
	seen[next % 4].len = len;
	seen[next++ % 4].crc = crc;
	return crc;
}

struct layer_spec {
	uint64_t pad;	     /* bytes of padding sections (each at most PAD_SEC_MAX) */
	uint64_t memory;     /* bytes of RAM the layer describes (one slot) */
	bool index_raw;	     /* INDEX uncompressed (its bitmap: zeros, on disk a hole) */
	bool write_memory;   /* the memory file too */
	struct snap_id id;   /* this layer's */
	struct snap_id par;  /* its parent's (generation > 0) */
	uint32_t generation; /* 0: the full snapshot */
	const char *parent_dir;
};

/*
 * A state file written piece by piece: header, table and the small
 * sections with pwrite, the padding and a raw INDEX's bitmap left as
 * holes (zeros), the file's length set by ftruncate.
 */
static void write_layer(const char *dir, const struct layer_spec *L)
{
	static const char config[] = "[vm]\nmemory = 2M\nvcpus = 1\n";
	static const uint8_t blob[16] = "state of a vcpu";
	uint8_t layout[SNAP_SLOT_LEN], cpu[SNAP_CPU_HDR_LEN], index_ent[SNAP_INDEX_ENT_LEN];
	uint8_t idx[SNAP_INDEX_ENT_LEN + 64], *table, hdr[SNAP_HEADER_LEN];
	struct mig_slot_desc slot = {.gpa = 0, .size = L->memory};
	struct snap_sec_in s[SECTIONS_MAX];
	struct snap_header h = {.version_major = SNAP_VERSION_MAJOR,
				.version_minor = SNAP_VERSION_MINOR,
				.header_len = SNAP_HEADER_LEN,
				.id = L->id,
				.parent = L->par,
				.flags = L->generation ? SNAP_F_DIFF : 0,
				.generation = L->generation,
				.memory = L->memory,
				.page_size = MIG_PAGE_SIZE,
				.nslots = 1,
				.nvcpus = 1};
	const uint64_t npages = L->memory / MIG_PAGE_SIZE;
	uint64_t raw = (npages + 63) / 64 * 8, index_len;
	const uint64_t *maps[1];
	uint64_t *bitmap = NULL;
	uint32_t n = 0;
	char path[PATH_MAX];
	int fd;

	h.memory_file_len = snap_layout_encode(layout, &slot, 1);
	snap_cpu_encode(cpu, NULL, 0);
	if (L->index_raw) {
		/* Entry only; the bitmap (raw bytes, all zero) is a hole in the file. */
		le_put64(index_ent, 0);
		le_put32(index_ent + 8, SNAP_INDEX_RAW);
		le_put32(index_ent + 12, (uint32_t)raw);
		s[n++] = snap_sec_required(SNAP_SEC_LAYOUT, 0, layout, SNAP_SLOT_LEN);
		s[n++] = snap_sec_required(SNAP_SEC_INDEX, 0, NULL, SNAP_INDEX_ENT_LEN + raw);
	} else {
		bitmap = calloc(raw / 8, 8);
		assert_non_null(bitmap);
		maps[0] = bitmap;
		index_len = (uint64_t)snap_index_encode(idx, sizeof(idx), maps, &npages, 1,
							SNAP_INDEX_ZSTD);
		assert_true((long long)index_len > 0);
		s[n++] = snap_sec_required(SNAP_SEC_LAYOUT, 0, layout, SNAP_SLOT_LEN);
		s[n++] = snap_sec_required(SNAP_SEC_INDEX, 0, idx, index_len);
		free(bitmap);
	}
	s[n++] = snap_sec_required(SNAP_SEC_CONFIG, 0, config, sizeof(config) - 1);
	s[n++] = snap_sec_required(SNAP_SEC_CPU, 0, cpu, sizeof(cpu));
	s[n++] = snap_sec_required(SNAP_SEC_VM_STATE, 0, blob, sizeof(blob));
	s[n++] = snap_sec_required(SNAP_SEC_VCPU_STATE, 0, blob, sizeof(blob));
	if (L->generation) {
		s[n] = snap_sec_required(SNAP_SEC_PARENT_PATH, 0, L->parent_dir,
					 strlen(L->parent_dir));
		s[n++].sec.flags = 0;
	}
	/* The padding: device-range sections no build reads, optional, zeros. */
	for (uint64_t left = L->pad, k = 0; left; k++) {
		uint64_t len = left < PAD_SEC_MAX ? left : PAD_SEC_MAX;

		assert_true(n < SECTIONS_MAX);
		s[n] = snap_sec_required(SNAP_SEC_DEVICE_FIRST + (uint32_t)k, 0, NULL, len);
		s[n++].sec.flags = 0;
		left -= len;
	}
	assert_int_equal(snap_state_plan(&h, s, n), 0);
	for (uint32_t i = 0; i < n; i++) {
		if (s[i].payload)
			s[i].sec.crc = crc32c(0, s[i].payload, s[i].sec.len);
		else if (s[i].sec.type == SNAP_SEC_INDEX) /* the entry, then raw zero bytes */
			s[i].sec.crc = crc_zeros(crc32c(0, index_ent, sizeof(index_ent)), raw);
		else
			s[i].sec.crc = crc_zeros(0, s[i].sec.len);
	}
	table = calloc(n, SNAP_SEC_LEN);
	assert_non_null(table);
	h.table_crc = snap_table_encode(table, s, n);
	snap_header_encode(hdr, &h);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/state", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)h.state_len), 0);
	assert_int_equal(pwrite(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
	assert_int_equal(pwrite(fd, table, (size_t)n * SNAP_SEC_LEN, SNAP_HEADER_LEN),
			 (ssize_t)n * SNAP_SEC_LEN);
	for (uint32_t i = 0; i < n; i++) {
		const void *p =
		    s[i].sec.type == SNAP_SEC_INDEX && L->index_raw ? index_ent : s[i].payload;
		size_t len = p == index_ent ? sizeof(index_ent) : (size_t)s[i].sec.len;

		if (p)
			assert_int_equal(pwrite(fd, p, len, (off_t)s[i].sec.offset), (ssize_t)len);
	}
	close(fd);
	free(table);
	if (L->write_memory) {
		struct snap_mem_header mh = {.version_major = SNAP_VERSION_MAJOR,
					     .version_minor = SNAP_VERSION_MINOR,
					     .id = L->id,
					     .file_len = h.memory_file_len};
		uint8_t mb[SNAP_MEM_HEADER_LEN];

		snap_mem_header_encode(mb, &mh);
		snprintf(path, sizeof(path), "%s/memory", dir);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, (off_t)mh.file_len), 0);
		assert_int_equal(pwrite(fd, mb, sizeof(mb), 0), (ssize_t)sizeof(mb));
		close(fd);
	}
}

/* A full snapshot and 64 diff layers on it, each padded with pad bytes; returns the top's dir. */
static void write_chain(uint64_t pad, char *top, size_t len)
{
	char dir[LAYERS][PATH_MAX];
	struct layer_spec L = {.pad = pad, .memory = RAM, .write_memory = true};

	for (uint32_t g = 0; g < LAYERS; g++) {
		snprintf(dir[g], sizeof(dir[g]), "%s/layer%02u", root, g);
		L.par = L.id;
		memset(L.id.b, 0, sizeof(L.id.b));
		L.id.b[0] = (uint8_t)(g + 1);
		L.id.b[15] = 0x5a;
		L.generation = g;
		L.parent_dir = g ? dir[g - 1] : NULL;
		write_layer(dir[g], &L);
	}
	snprintf(top, len, "%s", dir[LAYERS - 1]);
}

struct outcome {
	int ret;
	uint32_t depth;
	char err[1024];
	long max_rss_kib;
};

/*
 * snapshot_image_open(dir) in a child: its result, the chain's depth, and
 * the child's peak RSS. Outside ASan it runs within an address space of
 * what it has now plus 512 MiB.
 */
static struct outcome open_in_child(const char *dir)
{
	struct outcome o = {0};
	int pfd[2], status;
	struct rusage ru;
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct snapshot_image *img = NULL;
		struct outcome c = {0};

#ifndef ASAN
		FILE *f = fopen("/proc/self/statm", "r");
		unsigned long pages = 0;
		struct rlimit rl;

		if (f && fscanf(f, "%lu", &pages) == 1) {
			rl.rlim_cur = rl.rlim_max = pages * 4096ul + (512ul << 20);
			setrlimit(RLIMIT_AS, &rl);
		}
		if (f)
			fclose(f);
#endif
		close(pfd[0]);
		c.ret = snapshot_image_open(dir, &img, c.err, sizeof(c.err));
		c.depth = img ? image_depth(img) : 0;
		snapshot_image_close(img);
		_exit(write(pfd[1], &c, sizeof(c)) == (ssize_t)sizeof(c) ? 0 : 1);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &o, sizeof(o)), (ssize_t)sizeof(o));
	close(pfd[0]);
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	o.max_rss_kib = ru.ru_maxrss;
	return o;
}

static void rss_bounded(const struct outcome *o)
{
	if (getenv("TEST_VERBOSE"))
		printf("peak RSS %ld KiB: %d %s\n", o->max_rss_kib, o->ret, o->err);
	if (o->max_rss_kib >= RSS_MAX_KIB)
		fail_msg("peak RSS %ld KiB, the bound is %u KiB (ret %d: %s)", o->max_rss_kib,
			 RSS_MAX_KIB, o->ret, o->err);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/test_persist_chain.XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* 65 layers, 975 MiB of padding among them: all opened, the memory held small. */
static void test_chain_64_layers_opens(void **state)
{
	char top[PATH_MAX];
	struct outcome o;

	(void)state;
	write_chain(15ull << 20, top, sizeof(top));
	o = open_in_child(top);
	if (o.ret)
		fail_msg("a valid chain of %u layers was refused: %d %s", LAYERS, o.ret, o.err);
	assert_int_equal(o.depth, LAYERS);
	rss_bounded(&o);
}

/* 65 layers declaring ~1 GiB each: refused by name when the total passes the cap. */
static void test_chain_64_gigabyte_layers_refused(void **state)
{
	char top[PATH_MAX];
	struct outcome o;

	(void)state;
	write_chain(SNAP_STATE_MAX - (1u << 20), top, sizeof(top));
	o = open_in_child(top);
	if (o.ret != -EPROTO || !strstr(o.err, "declare at most 1024 MiB together") ||
	    strchr(o.err, '\n'))
		fail_msg("want the chain's declared state refused, got %d: %s", o.ret, o.err);
	rss_bounded(&o);
}

/* A layer whose kept sections alone pass RESTORE_HOLD_MAX: refused from its table. */
static void test_held_sections_capped(void **state)
{
	char dir[PATH_MAX];
	struct layer_spec L = {.memory = 4ull << 40, .index_raw = true};
	struct outcome o;

	(void)state;
	memset(L.id.b, 0x11, sizeof(L.id.b));
	snprintf(dir, sizeof(dir), "%s/raw-index", root);
	write_layer(dir, &L);
	o = open_in_child(dir);
	if (o.ret != -EPROTO || !strstr(o.err, "at most 128 MiB") || strchr(o.err, '\n'))
		fail_msg("want the held state refused, got %d: %s", o.ret, o.err);
	rss_bounded(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_chain_64_layers_opens, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_64_gigabyte_layers_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_held_sections_capped, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
