/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_virtio_blk_req.c - virtio-blk requests (virtio_blk_req.h) on a fake
 * guest (virtq_driver.h) over a temporary file: writes read back, sparse
 * and past-EOF reads are zeros, FLUSH, GET_ID, every refusal with its status
 * byte and used length, a chain cut at odd places, I/O errors of the file,
 * small bounce buffers, and the VMM-side dirty bitmap of what the device
 * wrote. Each request goes the I/O thread's way: pop, parse, execute, push.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "virtq_driver.h"
#include "virtio_blk_req.h"

#define FILE_BYTES (4ull << 20) /* 8192 sectors */
#define HDR	   0x100008ull	/* a header not at a page start */
#define DATA	   0x102000ull	/* data buffers: up to 1 MiB + 4 KiB */
#define STATUS	   0x300010ull
#define CANARY	   0xaa

struct fx {
	struct drv *d;
	struct blk_backend b;
	int fd;
	uint8_t *bounce;
	size_t bounce_len;
};

struct seg {
	uint64_t gpa;
	uint32_t len;
	bool write;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char path[] = "/tmp/vmm-blk-XXXXXX";

	assert_non_null(f);
	f->d = drv_new(16, 0, 0);
	f->fd = mkstemp(path);
	assert_true(f->fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(f->fd, (off_t)FILE_BYTES), 0);
	assert_int_equal(blk_backend_init(&f->b, f->fd, false, "vm1-disk0"), 0);
	f->bounce_len = BLK_REQ_MAX_DATA;
	f->bounce = malloc(f->bounce_len);
	assert_non_null(f->bounce);
	/* The driver's buffers start as canaries: a refused request must not touch them. */
	memset(drv_host(f->d, DATA, BLK_REQ_MAX_DATA + 4096), CANARY, BLK_REQ_MAX_DATA + 4096);
	*drv_host(f->d, STATUS, 1) = 0xee;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	close(f->fd);
	drv_free(f->d);
	free(f->bounce);
	free(f);
	return 0;
}

static void put_hdr(struct fx *f, uint64_t gpa, uint32_t type, uint64_t sector)
{
	uint8_t *p = drv_host(f->d, gpa, 16);

	le_put32(p, type);
	le_put32(p + 4, 0);
	le_put64(p + 8, sector);
}

/* Lays segs out as descriptors 0..n-1 and pops them as one chain. */
static void make_chain(struct fx *f, const struct seg *s, int n)
{
	for (int i = 0; i < n; i++)
		drv_desc(f->d, (uint16_t)i, s[i].gpa, s[i].len,
			 (uint16_t)((s[i].write ? VIRTQ_DESC_F_WRITE : 0) |
				    (i + 1 < n ? VIRTQ_DESC_F_NEXT : 0)),
			 (uint16_t)(i + 1));
	drv_avail(f->d, 0);
	assert_int_equal(virtq_pop(&f->d->q, &f->d->mem, &f->d->c), VIRTQ_POP_CHAIN);
}

/*
 * The I/O thread's path for the chain just popped: parse, execute, push.
 * Checks the used element against execute's answer; returns the used
 * length, *r holds the request.
 */
static uint32_t complete(struct fx *f, struct blk_req *r)
{
	uint16_t k = f->d->q.next_used_idx;
	uint32_t id, len, used = 0;
	ssize_t n;

	if (blk_req_parse(r, &f->d->c, &f->d->mem, &f->b) == 0) {
		n = blk_req_execute(r, &f->d->c, &f->d->mem, &f->b, f->bounce, f->bounce_len);
		assert_true(n >= 1);
		used = (uint32_t)n;
	}
	assert_int_equal(virtq_push(&f->d->q, &f->d->mem, f->d->c.head, used), 0);
	drv_used_elem(f->d, k, &id, &len);
	assert_int_equal(id, f->d->c.head);
	assert_int_equal(len, used);
	return used;
}

/* A request of three segments: header, data (len bytes, either direction), status. */
static uint32_t simple(struct fx *f, uint32_t type, uint64_t sector, uint32_t len, bool data_write,
		       struct blk_req *r)
{
	struct seg s[3] = {{HDR, 16, false}, {DATA, len, data_write}, {STATUS, 1, true}};

	put_hdr(f, HDR, type, sector);
	if (len) {
		make_chain(f, s, 3);
	} else {
		s[1] = s[2];
		make_chain(f, s, 2);
	}
	return complete(f, r);
}

static uint8_t status(struct fx *f)
{
	return *drv_host(f->d, STATUS, 1);
}

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7 + i / 511);
}

static void assert_canary(struct fx *f, uint64_t gpa, size_t len)
{
	const uint8_t *p = drv_host(f->d, gpa, len);

	for (size_t i = 0; i < len; i++)
		assert_int_equal(p[i], CANARY);
}

static void assert_file_zero(struct fx *f, uint64_t off, size_t len)
{
	uint8_t buf[4096];

	assert_true(len <= sizeof(buf));
	assert_int_equal(pread(f->fd, buf, len, (off_t)off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(buf[i], 0);
}

static void test_backend_init(void **state)
{
	struct fx *f = *state;
	struct blk_backend b;
	char id[VIRTIO_BLK_ID_BYTES] = "vm1-disk0";
	int dir;

	assert_int_equal(f->b.capacity_sectors, FILE_BYTES / 512);
	assert_false(f->b.readonly);
	assert_memory_equal(f->b.id, id, sizeof(id)); /* NUL-padded */
	/* A tail shorter than a sector is not visible; a long id is cut, not terminated. */
	assert_int_equal(ftruncate(f->fd, (off_t)FILE_BYTES + 100), 0);
	assert_int_equal(blk_backend_init(&b, f->fd, true, "a-very-long-vm-name-and-disk-index"),
			 0);
	assert_int_equal(b.capacity_sectors, FILE_BYTES / 512);
	assert_true(b.readonly);
	assert_memory_equal(b.id, "a-very-long-vm-name-", 20);
	/* No id: from the file's device and inode. */
	assert_int_equal(blk_backend_init(&b, f->fd, false, NULL), 0);
	assert_memory_equal(b.id, "vmm-", 4);
	assert_int_equal(blk_backend_init(&b, -1, false, NULL), -EBADF);
	dir = open("/tmp", O_RDONLY | O_DIRECTORY);
	assert_true(dir >= 0);
	assert_int_equal(blk_backend_init(&b, dir, false, NULL), -EINVAL);
	close(dir);
}

static void test_write_then_read(void **state)
{
	struct fx *f = *state;
	uint8_t want[4096], got[4096];
	struct blk_req r;

	fill(want, sizeof(want), 3);
	memcpy(drv_host(f->d, DATA, sizeof(want)), want, sizeof(want));
	assert_int_equal(simple(f, VIRTIO_BLK_T_OUT, 8, sizeof(want), false, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_int_equal(r.error, 0);
	assert_int_equal(pread(f->fd, got, sizeof(got), 8 * 512), (ssize_t)sizeof(got));
	assert_memory_equal(got, want, sizeof(want));
	assert_file_zero(f, 0, 8 * 512); /* the sectors before are untouched */
	assert_file_zero(f, 16 * 512, 512);

	memset(drv_host(f->d, DATA, sizeof(want)), CANARY, sizeof(want));
	*drv_host(f->d, STATUS, 1) = 0xee;
	assert_int_equal(simple(f, VIRTIO_BLK_T_IN, 8, sizeof(want), true, &r), 4097);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(drv_host(f->d, DATA, sizeof(want)), want, sizeof(want));

	/* The last sector of the disk, and 0 bytes at the capacity: both valid. */
	assert_int_equal(simple(f, VIRTIO_BLK_T_OUT, FILE_BYTES / 512 - 1, 512, false, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_int_equal(pread(f->fd, got, 512, (off_t)FILE_BYTES - 512), 512);
	assert_memory_equal(got, want, 512);
	assert_int_equal(simple(f, VIRTIO_BLK_T_IN, FILE_BYTES / 512, 0, true, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
}

/* A bounce buffer smaller than the request: the data goes in pieces. */
static void test_small_bounce(void **state)
{
	struct fx *f = *state;
	uint8_t want[8192];
	struct blk_req r;
	size_t lens[] = {512, 1000, 4096};

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		f->bounce_len = lens[i];
		fill(want, sizeof(want), (uint8_t)(i + 40));
		memcpy(drv_host(f->d, DATA, sizeof(want)), want, sizeof(want));
		assert_int_equal(simple(f, VIRTIO_BLK_T_OUT, 100, sizeof(want), false, &r), 1);
		memset(drv_host(f->d, DATA, sizeof(want)), 0, sizeof(want));
		assert_int_equal(simple(f, VIRTIO_BLK_T_IN, 100, sizeof(want), true, &r),
				 sizeof(want) + 1);
		assert_int_equal(status(f), VIRTIO_BLK_S_OK);
		assert_memory_equal(drv_host(f->d, DATA, sizeof(want)), want, sizeof(want));
	}
	assert_int_equal(blk_req_execute(&r, &f->d->c, &f->d->mem, &f->b, f->bounce, 0), -EINVAL);
}

static void test_sparse_and_eof_reads(void **state)
{
	struct fx *f = *state;
	struct blk_req r;

	/* A hole of the sparse file. */
	assert_int_equal(simple(f, VIRTIO_BLK_T_IN, 4000, 8192, true, &r), 8193);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	for (size_t i = 0; i < 8192; i++)
		assert_int_equal(drv_host(f->d, DATA, 8192)[i], 0);

	/*
	 * A file shorter than the capacity (truncated under us): past its end
	 * is zeros, not what the bounce buffer held from an earlier request.
	 */
	memset(drv_host(f->d, DATA, 4096), CANARY, 4096);
	memset(f->bounce, 0xcc, f->bounce_len);
	assert_int_equal(ftruncate(f->fd, (off_t)FILE_BYTES - 1024), 0);
	assert_int_equal(simple(f, VIRTIO_BLK_T_IN, FILE_BYTES / 512 - 8, 4096, true, &r), 4097);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	for (size_t i = 0; i < 4096; i++)
		assert_int_equal(drv_host(f->d, DATA, 4096)[i], 0);
}

static void test_flush(void **state)
{
	struct fx *f = *state;
	int fd = f->b.fd, p[2];
	struct blk_req r;

	/* The sector of a FLUSH is unused: not checked. */
	assert_int_equal(simple(f, VIRTIO_BLK_T_FLUSH, UINT64_MAX, 0, false, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_int_equal(r.error, 0);
	/* A FLUSH with (ignored) data: only the status is written. */
	*drv_host(f->d, STATUS, 1) = 0xee;
	assert_int_equal(simple(f, VIRTIO_BLK_T_FLUSH, 0, 512, true, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_canary(f, DATA, 512);
	/* fdatasync fails (a pipe cannot be synced): IOERR with its errno. */
	assert_int_equal(pipe(p), 0);
	f->b.fd = p[1];
	assert_int_equal(simple(f, VIRTIO_BLK_T_FLUSH, 0, 0, false, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	assert_int_equal(r.error, -EINVAL);
	/* Read-only: nothing to sync, so no fdatasync and OK. */
	f->b.readonly = true;
	assert_int_equal(simple(f, VIRTIO_BLK_T_FLUSH, 0, 0, false, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	f->b.fd = fd;
	close(p[0]);
	close(p[1]);
}

static void test_get_id(void **state)
{
	struct fx *f = *state;
	struct blk_req r;
	char want[20] = "vm1-disk0";

	assert_int_equal(simple(f, VIRTIO_BLK_T_GET_ID, 0, 20, true, &r), 21);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_memory_equal(drv_host(f->d, DATA, 20), want, 20);
	/* A shorter buffer gets what fits, a longer one 20 bytes. */
	memset(drv_host(f->d, DATA, 64), CANARY, 64);
	assert_int_equal(simple(f, VIRTIO_BLK_T_GET_ID, 0, 4, true, &r), 5);
	assert_memory_equal(drv_host(f->d, DATA, 4), "vm1-", 4);
	assert_canary(f, DATA + 4, 60);
	assert_int_equal(simple(f, VIRTIO_BLK_T_GET_ID, 0, 64, true, &r), 21);
	assert_memory_equal(drv_host(f->d, DATA, 20), want, 20);
	assert_canary(f, DATA + 20, 44);
	/* GET_ID of a read-only disk. */
	f->b.readonly = true;
	assert_int_equal(simple(f, VIRTIO_BLK_T_GET_ID, 0, 20, true, &r), 21);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
}

/* A refused request: its status, used length 1, the error, the guest's data untouched. */
static void refused(struct fx *f, uint32_t type, uint64_t sector, uint32_t len, bool data_write,
		    uint8_t want_status, int want_error)
{
	struct blk_req r;

	*drv_host(f->d, STATUS, 1) = 0xee;
	if (data_write)
		memset(drv_host(f->d, DATA, 4096), CANARY, 4096);
	assert_int_equal(simple(f, type, sector, len, data_write, &r), 1);
	assert_int_equal(status(f), want_status);
	assert_int_equal(r.status, want_status);
	assert_int_equal(r.error, want_error);
	assert_non_null(r.why);
	if (data_write)
		assert_canary(f, DATA, len < 4096 ? len : 4096);
}

static void test_refusals(void **state)
{
	struct fx *f = *state;
	uint64_t cap = FILE_BYTES / 512;
	uint8_t *data = drv_host(f->d, DATA, 4096);

	refused(f, VIRTIO_BLK_T_IN, 0, 1000, true, VIRTIO_BLK_S_IOERR, -EINVAL);
	refused(f, VIRTIO_BLK_T_IN, 0, 513, true, VIRTIO_BLK_S_IOERR, -EINVAL);
	refused(f, VIRTIO_BLK_T_IN, cap - 1, 1024, true, VIRTIO_BLK_S_IOERR, -ERANGE);
	refused(f, VIRTIO_BLK_T_IN, cap + 1, 0, true, VIRTIO_BLK_S_IOERR, -ERANGE);
	refused(f, VIRTIO_BLK_T_IN, UINT64_MAX, 512, true, VIRTIO_BLK_S_IOERR, -EOVERFLOW);
	refused(f, VIRTIO_BLK_T_IN, UINT64_MAX - 1, 1024, true, VIRTIO_BLK_S_IOERR, -EOVERFLOW);
	/* UINT64_MAX - 1 + 1 does not overflow: just past the end. */
	refused(f, VIRTIO_BLK_T_IN, UINT64_MAX - 1, 512, true, VIRTIO_BLK_S_IOERR, -ERANGE);
	refused(f, VIRTIO_BLK_T_IN, 0, BLK_REQ_MAX_DATA + 512, true, VIRTIO_BLK_S_IOERR, -E2BIG);
	refused(f, 2, 0, 512, true, VIRTIO_BLK_S_UNSUPP, -EOPNOTSUPP);
	refused(f, 11, 0, 0, true, VIRTIO_BLK_S_UNSUPP, -EOPNOTSUPP);
	refused(f, 0x80000000u, 0, 0, true, VIRTIO_BLK_S_UNSUPP, -EOPNOTSUPP);

	/* Refused writes leave the file alone. */
	memset(data, 0x5a, 4096);
	refused(f, VIRTIO_BLK_T_OUT, 0, 1000, false, VIRTIO_BLK_S_IOERR, -EINVAL);
	refused(f, VIRTIO_BLK_T_OUT, cap - 1, 1024, false, VIRTIO_BLK_S_IOERR, -ERANGE);
	refused(f, VIRTIO_BLK_T_OUT, UINT64_MAX, 512, false, VIRTIO_BLK_S_IOERR, -EOVERFLOW);
	refused(f, VIRTIO_BLK_T_OUT, 0, BLK_REQ_MAX_DATA + 512, false, VIRTIO_BLK_S_IOERR, -E2BIG);
	assert_file_zero(f, 0, 4096);
	assert_file_zero(f, FILE_BYTES - 512, 512);
	f->b.readonly = true;
	refused(f, VIRTIO_BLK_T_OUT, 0, 512, false, VIRTIO_BLK_S_IOERR, -EROFS);
	assert_file_zero(f, 0, 512);
	/* A read-only disk still reads. */
	refused(f, VIRTIO_BLK_T_IN, 0, 1000, true, VIRTIO_BLK_S_IOERR, -EINVAL);
}

/* The cap itself is allowed: exactly BLK_REQ_MAX_DATA both ways. */
static void test_max_data(void **state)
{
	struct fx *f = *state;
	struct blk_req r;
	uint8_t *data = drv_host(f->d, DATA, BLK_REQ_MAX_DATA);

	fill(data, BLK_REQ_MAX_DATA, 9);
	assert_int_equal(simple(f, VIRTIO_BLK_T_OUT, 16, BLK_REQ_MAX_DATA, false, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	memset(data, 0, BLK_REQ_MAX_DATA);
	assert_int_equal(simple(f, VIRTIO_BLK_T_IN, 16, BLK_REQ_MAX_DATA, true, &r),
			 BLK_REQ_MAX_DATA + 1);
	for (size_t i = 0; i < BLK_REQ_MAX_DATA; i += 4099)
		assert_int_equal(data[i], (uint8_t)(9 + i * 7 + i / 511));
}

static void test_short_header(void **state)
{
	struct fx *f = *state;
	struct seg s[3] = {{HDR, 8, false}, {HDR + 8, 7, false}, {STATUS, 1, true}};
	struct blk_req r;

	put_hdr(f, HDR, VIRTIO_BLK_T_IN, 0);
	*drv_host(f->d, STATUS, 1) = 0xee;
	make_chain(f, s, 3);
	assert_int_equal(complete(f, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
	assert_int_equal(r.error, -EINVAL);
	/* No header at all: only a writable status. */
	*drv_host(f->d, STATUS, 1) = 0xee;
	make_chain(f, s + 2, 1);
	assert_int_equal(complete(f, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_IOERR);
}

static void test_no_status(void **state)
{
	struct fx *f = *state;
	struct seg s[2] = {{HDR, 16, false}, {DATA, 512, false}};
	struct blk_req r;

	put_hdr(f, HDR, VIRTIO_BLK_T_OUT, 0);
	*drv_host(f->d, DATA, 1) = 0x77;
	make_chain(f, s, 2);
	assert_int_equal(blk_req_parse(&r, &f->d->c, &f->d->mem, &f->b), -EINVAL);
	assert_non_null(r.why);
	/* execute refuses a chain without a status too */
	assert_int_equal(blk_req_execute(&r, &f->d->c, &f->d->mem, &f->b, f->bounce, f->bounce_len),
			 -EINVAL);
	assert_int_equal(complete(f, &r), 0);
	assert_file_zero(f, 0, 512); /* nothing was written */

	/* A chain virtq_pop() refused (next out of range): no segments, len 0. */
	drv_desc(f->d, 0, HDR, 16, VIRTQ_DESC_F_NEXT, 99);
	drv_avail(f->d, 0);
	assert_int_equal(virtq_pop(&f->d->q, &f->d->mem, &f->d->c), VIRTQ_POP_BAD_CHAIN);
	assert_int_equal(complete(f, &r), 0);
}

/*
 * The header cut 3 + 5 + 8 with the data starting in the header's last
 * segment, segments crossing pages, the status sharing its segment with
 * the end of an IN's data.
 */
static void test_odd_split(void **state)
{
	struct fx *f = *state;
	uint8_t want[1024], hdr[16], got[1024];
	struct seg out[5] = {{0x200ffd, 3, false},
			     {0x201ffb, 5, false},
			     {0x202ff8, 8 + 100, false},
			     {0x204001, 924, false},
			     {STATUS, 1, true}};
	struct seg in[5] = {{0x205ff1, 16, false},
			    {0x206ffd, 7, true},
			    {0x207ffe, 0, true},
			    {0x208abc, 1000, true},
			    {0x209ff3, 18, true}};
	struct blk_req r;

	fill(want, sizeof(want), 77);
	le_put32(hdr, VIRTIO_BLK_T_OUT);
	le_put32(hdr + 4, 0);
	le_put64(hdr + 8, 33);
	memcpy(drv_host(f->d, 0x200ffd, 3), hdr, 3);
	memcpy(drv_host(f->d, 0x201ffb, 5), hdr + 3, 5);
	memcpy(drv_host(f->d, 0x202ff8, 8), hdr + 8, 8);
	memcpy(drv_host(f->d, 0x202ff8 + 8, 100), want, 100);
	memcpy(drv_host(f->d, 0x204001, 924), want + 100, 924);
	make_chain(f, out, 5);
	assert_int_equal(complete(f, &r), 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_int_equal(r.sector, 33);
	assert_int_equal(r.data_len, 1024);
	assert_int_equal(pread(f->fd, got, sizeof(got), 33 * 512), (ssize_t)sizeof(got));
	assert_memory_equal(got, want, sizeof(want));

	put_hdr(f, 0x205ff1, VIRTIO_BLK_T_IN, 33);
	*drv_host(f->d, 0x209ff3 + 17, 1) = 0xee;
	make_chain(f, in, 5);
	assert_int_equal(complete(f, &r), 1025);
	assert_int_equal(*drv_host(f->d, 0x209ff3 + 17, 1), VIRTIO_BLK_S_OK);
	assert_memory_equal(drv_host(f->d, 0x206ffd, 7), want, 7);
	assert_memory_equal(drv_host(f->d, 0x208abc, 1000), want + 7, 1000);
	assert_memory_equal(drv_host(f->d, 0x209ff3, 17), want + 1007, 17);
}

/* A file the backend cannot write or read: IOERR with the syscall's errno. */
static void test_io_errors(void **state)
{
	struct fx *f = *state;
	struct blk_backend b = f->b;
	char path[] = "/tmp/vmm-blk-XXXXXX";
	int rd, wr;

	wr = mkstemp(path);
	assert_true(wr >= 0);
	assert_int_equal(ftruncate(wr, (off_t)FILE_BYTES), 0);
	rd = open(path, O_RDONLY);
	assert_true(rd >= 0);
	close(wr);
	wr = open(path, O_WRONLY);
	assert_true(wr >= 0);
	unlink(path);

	f->b.fd = rd; /* not read-only to the device, but the fd is */
	refused(f, VIRTIO_BLK_T_OUT, 0, 512, false, VIRTIO_BLK_S_IOERR, -EBADF);
	f->b.fd = wr;
	refused(f, VIRTIO_BLK_T_IN, 0, 4096, true, VIRTIO_BLK_S_IOERR, -EBADF);
	/* The error stops an IN after what was read: with 512-byte pieces, none. */
	f->bounce_len = 512;
	refused(f, VIRTIO_BLK_T_IN, 0, 4096, true, VIRTIO_BLK_S_IOERR, -EBADF);
	f->b = b;
	close(rd);
	close(wr);
}

/* What the device wrote is dirty in the VMM-side bitmap, and only that. */
static void test_dirty(void **state)
{
	struct fx *f = *state;
	struct blk_req r;

	drv_clear_dirty(f->d);
	assert_int_equal(simple(f, VIRTIO_BLK_T_IN, 0, 8192, true, &r), 8193);
	assert_true(drv_dirty(f->d, DATA));
	assert_true(drv_dirty(f->d, DATA + 4096));
	assert_true(drv_dirty(f->d, DATA + 8191));
	assert_true(drv_dirty(f->d, STATUS));
	assert_false(drv_dirty(f->d, DATA + 8192));
	assert_false(drv_dirty(f->d, HDR));

	drv_clear_dirty(f->d);
	assert_int_equal(simple(f, VIRTIO_BLK_T_OUT, 0, 8192, false, &r), 1);
	assert_true(drv_dirty(f->d, STATUS));
	assert_false(drv_dirty(f->d, DATA));
	assert_false(drv_dirty(f->d, DATA + 4096));
	assert_false(drv_dirty(f->d, HDR));

	drv_clear_dirty(f->d);
	assert_int_equal(simple(f, VIRTIO_BLK_T_GET_ID, 0, 20, true, &r), 21);
	assert_true(drv_dirty(f->d, DATA));
	assert_true(drv_dirty(f->d, STATUS));

	/* A refusal writes only its status. */
	drv_clear_dirty(f->d);
	refused(f, VIRTIO_BLK_T_IN, 0, 1000, true, VIRTIO_BLK_S_IOERR, -EINVAL);
	assert_true(drv_dirty(f->d, STATUS));
	assert_false(drv_dirty(f->d, DATA));
}

/* The header is read once: rewriting it after parse changes nothing. */
static void test_header_read_once(void **state)
{
	struct fx *f = *state;
	struct seg s[3] = {{HDR, 16, false}, {DATA, 512, false}, {STATUS, 1, true}};
	struct blk_req r;
	ssize_t n;

	memset(drv_host(f->d, DATA, 512), 0x31, 512);
	put_hdr(f, HDR, VIRTIO_BLK_T_OUT, 5);
	make_chain(f, s, 3);
	assert_int_equal(blk_req_parse(&r, &f->d->c, &f->d->mem, &f->b), 0);
	put_hdr(f, HDR, VIRTIO_BLK_T_OUT, UINT64_MAX); /* the guest races */
	n = blk_req_execute(&r, &f->d->c, &f->d->mem, &f->b, f->bounce, f->bounce_len);
	assert_int_equal(n, 1);
	assert_int_equal(status(f), VIRTIO_BLK_S_OK);
	assert_int_equal(virtq_push(&f->d->q, &f->d->mem, f->d->c.head, 1), 0);
	assert_file_zero(f, 0, 512);
	assert_file_zero(f, 4 * 512, 512);
	{
		uint8_t got[512];

		assert_int_equal(pread(f->fd, got, 512, 5 * 512), 512);
		assert_int_equal(got[0], 0x31);
		assert_int_equal(got[511], 0x31);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_backend_init, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_then_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_small_bounce, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sparse_and_eof_reads, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flush, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_get_id, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_max_data, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_short_header, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_status, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_odd_split, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_io_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dirty, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_header_read_once, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
