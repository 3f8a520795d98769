// SPDX-License-Identifier: Apache-2.0
/*
 * blkverify.c - the verifying disk workload of the Linux test guest.
 *
 *   blkverify DEVICE BLOCKS HEARTBEAT_MS
 *
 * Keeps rewriting the first BLOCKS 4 KiB blocks of DEVICE (/dev/vda) with
 * O_DIRECT, forever, in passes. Pass p, for each block b in order: read b
 * and check it still holds the generation of its last acknowledged write
 * (none in pass 1), write it at generation p (blkverify_block.h), and count
 * the write acknowledged when pwrite() returns; then fdatasync() and read
 * every block back. The generations live in this process's memory, which a
 * live migration moves with the VM, so on the target every write that the
 * source acknowledged is checked before it is overwritten: a write the
 * migration lost (or a stale disk image on the target) shows as a
 * CORRUPTION. O_DIRECT bypasses the guest's page cache, so every check
 * reads what the virtio-blk device returns.
 *
 * Exit status: 1 on the first corruption, 2 on an I/O error or bad
 * arguments; it never stops otherwise. docs/linux-guest.md specifies the
 * output lines exactly: tests parse them.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blkverify_block.h"

static const char *device;
static uint64_t run_id;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Different for every start, without getrandom(): the guest's entropy pool
 * may not be ready this early, and the call would block. The monotonic
 * clock's nanoseconds at this point differ from boot to boot.
 */
static uint64_t make_run_id(void)
{
	struct timespec mono, real;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	return mv_splitmix64(
	    (uint64_t)mono.tv_nsec ^ ((uint64_t)mono.tv_sec << 32) ^
	    mv_splitmix64((uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec) ^
	    (uint64_t)getpid());
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || end == s || *end || *s == '-' ? -1 : 0;
}

static void io_error(const char *op, uint64_t block, ssize_t got)
{
	if (got >= 0)
		printf("blkverify: %s block %llu: short transfer (%zd of %u bytes)\n", op,
		       (unsigned long long)block, got, BV_BLOCK_SIZE);
	else
		printf("blkverify: %s block %llu: %s\n", op, (unsigned long long)block,
		       strerror(errno));
	exit(2);
}

static void read_block(int fd, uint64_t *buf, uint64_t block)
{
	ssize_t got;

	do
		got = pread(fd, buf, BV_BLOCK_SIZE, (off_t)(block * BV_BLOCK_SIZE));
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)BV_BLOCK_SIZE)
		io_error("read", block, got);
}

static void write_block(int fd, const uint64_t *buf, uint64_t block)
{
	ssize_t got;

	do
		got = pwrite(fd, buf, BV_BLOCK_SIZE, (off_t)(block * BV_BLOCK_SIZE));
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)BV_BLOCK_SIZE)
		io_error("write", block, got);
}

static void verify_block(int fd, uint64_t *buf, uint64_t block, uint64_t gen)
{
	uint64_t expected;
	int w;

	read_block(fd, buf, block);
	w = bv_block_check(buf, block, gen, run_id, &expected);
	if (w < 0)
		return;
	printf("CORRUPTION blkverify block %llu word %d: read 0x%016llx expected 0x%016llx "
	       "(gen %llu)\n",
	       (unsigned long long)block, w, (unsigned long long)buf[w],
	       (unsigned long long)expected, (unsigned long long)gen);
	/* What the block holds instead: an older generation is a lost write. */
	printf("blkverify: block %llu holds block %llu gen %llu run 0x%016llx (this run "
	       "0x%016llx)\n",
	       (unsigned long long)block, (unsigned long long)buf[0], (unsigned long long)buf[1],
	       (unsigned long long)buf[2], (unsigned long long)run_id);
	exit(1);
}

/* BLOCKS blocks must fit; a regular file (a host test) grows instead. */
static int check_size(int fd, uint64_t blocks)
{
	struct stat st;
	uint64_t bytes;

	if (fstat(fd, &st) || !S_ISBLK(st.st_mode))
		return 0;
	if (ioctl(fd, BLKGETSIZE64, &bytes)) {
		printf("blkverify: %s: BLKGETSIZE64: %s\n", device, strerror(errno));
		return -1;
	}
	if (bytes / BV_BLOCK_SIZE < blocks) {
		printf("blkverify: %s has %llu bytes, fewer than %llu blocks of %u\n", device,
		       (unsigned long long)bytes, (unsigned long long)blocks, BV_BLOCK_SIZE);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t blocks, hb_ms, *gen, *buf, b, pass, done = 0, last_hb;
	void *mem;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4 || parse_u64(argv[2], &blocks) || !blocks || blocks > (1ull << 32) ||
	    parse_u64(argv[3], &hb_ms) || hb_ms > 86400000) {
		fprintf(stderr, "usage: blkverify DEVICE BLOCKS HEARTBEAT_MS\n");
		return 2;
	}
	device = argv[1];
	run_id = make_run_id();
	gen = calloc(blocks, sizeof(*gen));
	/* O_DIRECT wants the buffer aligned to the device's logical block size. */
	if (!gen || posix_memalign(&mem, BV_BLOCK_SIZE, BV_BLOCK_SIZE)) {
		printf("blkverify: cannot allocate for %llu blocks\n", (unsigned long long)blocks);
		return 2;
	}
	buf = mem;
	fd = open(device, O_RDWR | O_DIRECT);
	if (fd < 0) {
		printf("blkverify: open %s: %s\n", device, strerror(errno));
		return 2;
	}
	if (check_size(fd, blocks))
		return 2;
	printf("blkverify: %s, %llu blocks of %u, O_DIRECT\n", device, (unsigned long long)blocks,
	       BV_BLOCK_SIZE);

	last_hb = now_ns();
	for (pass = 1;; pass++) {
		for (b = 0; b < blocks; b++) {
			/* gen 0: not written by this run yet, the contents are unknown. */
			if (gen[b])
				verify_block(fd, buf, b, gen[b]);
			bv_block_fill(buf, b, pass, run_id);
			write_block(fd, buf, b);
			gen[b] = pass;
		}
		if (fdatasync(fd)) {
			printf("blkverify: fdatasync: %s\n", strerror(errno));
			return 2;
		}
		for (b = 0; b < blocks; b++)
			verify_block(fd, buf, b, gen[b]);
		done += blocks;
		/* The first pass always reports, so a test sees the disk work early. */
		if (pass == 1 || now_ns() - last_hb >= hb_ms * 1000000ull) {
			printf("blkverify: pass %llu ok, %llu blocks written and verified\n",
			       (unsigned long long)pass, (unsigned long long)done);
			last_hb = now_ns();
		}
	}
}
