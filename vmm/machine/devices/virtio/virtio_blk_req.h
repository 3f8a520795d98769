/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_blk_req.h - one virtio-blk request (virtio 1.2, 5.2 "Block
 * Device"): parsing a popped chain into a request (blk_req_parse(), pure:
 * it only reads the chain's readable bytes) apart from doing it against a
 * file (blk_req_execute()), as Firecracker's block/request.rs sits apart
 * from its io/ backends. No device here: the block device (not written
 * yet) owns the queue, the backend and an I/O thread that pops, parses,
 * executes and pushes. docs/architecture.md "virtio-blk requests" lists
 * the rules.
 *
 * A request on the ring (5.2.6; with VERSION_1 the layout is independent
 * of how the driver cuts it into descriptors, 2.7.4):
 *   readable   {le32 type, le32 reserved, le64 sector} (16 bytes)
 *   readable   data, OUT only
 *   writable   data, IN and GET_ID only
 *   writable   u8 status, the last writable byte
 * The header may be split over several readable segments and the data may
 * begin inside the header's last segment; the status byte is the last byte
 * of the writable area (chain->write_len - 1), whatever segment holds it.
 * Bytes of the other direction than a type uses (readable bytes after an
 * IN's header, writable bytes before an OUT's status, a FLUSH's data) are
 * ignored and left alone.
 *
 * The rules (refusals in the order they are checked). No writable byte at
 * all (this includes a chain virtq_pop() refused, which has no segments):
 * blk_req_parse() returns -EINVAL and the caller completes the chain with
 * virtq_push(len 0); there is nowhere to put a status. Otherwise a refusal
 * is a status the request carries (r->status, with r->error and r->why):
 *   header shorter than 16 bytes                      IOERR   -EINVAL
 *   type not IN, OUT, FLUSH, GET_ID                   UNSUPP  -EOPNOTSUPP
 *   OUT on a read-only backend                        IOERR   -EROFS
 *   IN/OUT data longer than BLK_REQ_MAX_DATA          IOERR   -E2BIG
 *   IN/OUT data not a multiple of 512                 IOERR   -EINVAL
 *   sector + data sectors overflows 64 bits           IOERR   -EOVERFLOW
 *   sector + data sectors past capacity_sectors       IOERR   -ERANGE
 * A FLUSH's and GET_ID's sector is not checked (5.2.6.1: it is unused for
 * them). An IN or OUT of 0 bytes is a valid no-op at a sector <= capacity.
 *
 * Why BLK_REQ_MAX_DATA (1 MiB). The I/O thread copies through one bounce
 * buffer it owns (the data moves only through the checked chain copies,
 * never through raw host pointers into guest RAM), so the cap bounds the
 * time one request holds the thread and, above all, the time a migration's
 * blackout waits for the request in flight to settle. A Linux guest never
 * reaches it when the device offers SEG_MAX = VIRTQ_CHAIN_MAX_SEGS - 2 (254)
 * and SIZE_MAX = 4096: a request is then at most 254 * 4 KiB = 1016 KiB.
 *
 * Threads and locks. Both functions are called by the device's I/O thread
 * only, between virtq_pop() and virtq_push() on the same chain; nothing here
 * takes a lock, keeps a global, allocates or prints. The guest may change
 * its buffers at any time: the header is read once into the struct blk_req
 * and only that copy is used. blk_req_execute() is synchronous: when it
 * returns, an OUT has reached the file (pwrite, not yet fdatasync'ed), an
 * IN's data and every status byte are in guest RAM, dirty in the VMM-side
 * bitmap (virtq_chain_write() uses guest_mem_write_ptr()). So a request is
 * settled once execute returns and its chain is pushed: a migration's
 * blackout parks the I/O thread between two requests, never inside one,
 * and no write is lost or replayed.
 *
 * Errors: library calls return 0 or -errno; an I/O error of the file is not
 * an error of the call but the request's IOERR status (r->error, r->why).
 */
#ifndef VMM_VIRTIO_BLK_REQ_H
#define VMM_VIRTIO_BLK_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "guest_mem.h"
#include "virtq.h"

/* Request types (5.2.6). */
#define VIRTIO_BLK_T_IN	    0u
#define VIRTIO_BLK_T_OUT    1u
#define VIRTIO_BLK_T_FLUSH  4u
#define VIRTIO_BLK_T_GET_ID 8u

/* Status byte values (5.2.6). */
#define VIRTIO_BLK_S_OK	    0u
#define VIRTIO_BLK_S_IOERR  1u
#define VIRTIO_BLK_S_UNSUPP 2u

#define VIRTIO_BLK_SECTOR_SIZE 512u
#define VIRTIO_BLK_HDR_SIZE    16u
#define VIRTIO_BLK_ID_BYTES    20u /* GET_ID's answer: a string, NUL-padded, not terminated */

/* The most data one IN or OUT may carry (see "Why BLK_REQ_MAX_DATA" above). */
#define BLK_REQ_MAX_DATA (1u << 20)

/*
 * The file behind a disk. fd is open read-write, or read-only when readonly
 * (the device then offers VIRTIO_BLK_F_RO); the backend does not own it.
 * capacity_sectors is what the guest sees (the config's capacity); the file
 * may be shorter (a read past its end is zeros) but not longer than
 * INT64_MAX bytes. id is GET_ID's answer (blk_backend_init()).
 */
struct blk_backend {
	int fd;
	uint64_t capacity_sectors;
	bool readonly;
	char id[VIRTIO_BLK_ID_BYTES];
};

/*
 * Fills b for fd: the capacity from the file's size (a regular file's
 * st_size, a block device's BLKGETSIZE64) rounded down to whole sectors,
 * and the id: `id` (e.g. the VM's name and the disk's index, which the
 * source and the target share, so the serial a guest reads does not change
 * when it migrates), cut to 20 bytes, NUL-padded; when id is NULL or empty,
 * "vmm-<st_dev hex>-<st_ino hex>" (cut to 20 bytes): stable on one host
 * only, since a target may see another device number for a shared file.
 * -errno of fstat/ioctl, or -EINVAL for a file that is neither regular nor
 * a block device.
 */
int blk_backend_init(struct blk_backend *b, int fd, bool readonly, const char *id);

/* A parsed request: what blk_req_parse() read once from the guest. */
struct blk_req {
	uint32_t type;	     /* the header's type */
	uint64_t sector;     /* the header's sector */
	uint32_t data_len;   /* IN/OUT/GET_ID: bytes of data; else 0 */
	uint32_t status_off; /* the status byte, bytes into the writable area */
	uint8_t status;	     /* OK: execute it; IOERR/UNSUPP: refused, only the status is written */
	int error;	     /* 0, or the -errno of the refusal or of the failed I/O */
	const char *why;     /* a static one-line reason when error != 0, else NULL */
};

/*
 * Parses a chain virtq_pop() gave (VIRTQ_POP_CHAIN or VIRTQ_POP_BAD_CHAIN)
 * for backend b (its capacity and readonly). 0: *r is the request; it may
 * carry a refusal (r->status != VIRTIO_BLK_S_OK), which blk_req_execute()
 * completes by writing only the status. -EINVAL: the chain has no writable
 * byte for a status (r->why says so); complete it with virtq_push(len 0).
 * Reads only the header from guest memory; writes nothing there.
 */
int blk_req_parse(struct blk_req *r, const struct virtq_chain *c, const struct guest_mem *mem,
		  const struct blk_backend *b);

/*
 * Does r (from blk_req_parse() on the same chain c) against b and writes
 * the status byte. IN: pread into `bounce`, copied into the writable
 * segments; OUT: copied from the readable segments into `bounce`, pwrite;
 * both in pieces of at most bounce_len bytes (bounce_len > 0; the I/O
 * thread's buffer, BLK_REQ_MAX_DATA is one piece per request), looping on
 * short transfers and EINTR; the part of an IN past the file's end reads
 * zeros. FLUSH: fdatasync (nothing to do on a read-only backend). GET_ID:
 * min(data_len, 20) bytes of b->id. A failed syscall makes the status
 * IOERR (r->error, r->why), the data already moved stays moved.
 * Returns the used length for virtq_push(): the bytes written into the
 * guest (an IN's or GET_ID's data, as far as it got) plus 1 for the status;
 * or -EFAULT when a chain copy fails (a chain not popped from guest RAM),
 * then the caller pushes len 0.
 */
ssize_t blk_req_execute(struct blk_req *r, const struct virtq_chain *c, struct guest_mem *mem,
			const struct blk_backend *b, uint8_t *bounce, size_t bounce_len);

#endif /* VMM_VIRTIO_BLK_REQ_H */
