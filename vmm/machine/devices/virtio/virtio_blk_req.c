/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_blk_req.c - parsing a virtio-blk request out of a popped chain and
 * doing it against a file. The contracts and the rules are in
 * virtio_blk_req.h.
 */
#include "virtio_blk_req.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "le.h"

int blk_backend_init(struct blk_backend *b, int fd, bool readonly, const char *id)
{
	uint64_t bytes;
	struct stat st;
	char tmp[48];

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		bytes = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &bytes) < 0)
			return -errno;
	} else {
		return -EINVAL;
	}
	/* Every byte offset the guest can name must fit pread's off_t. */
	if (bytes > INT64_MAX)
		return -EINVAL;
	b->fd = fd;
	b->capacity_sectors = bytes / VIRTIO_BLK_SECTOR_SIZE;
	b->readonly = readonly;
	if (!id || !id[0]) {
		snprintf(tmp, sizeof(tmp), "vmm-%llx-%llx", (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
		id = tmp;
	}
	/* strncpy's job exactly: cut to 20 bytes, NUL-padded, not terminated when full. */
	memset(b->id, 0, sizeof(b->id));
	memcpy(b->id, id, strnlen(id, sizeof(b->id)));
	return 0;
}

static int refuse(struct blk_req *r, uint8_t status, int error, const char *why)
{
	r->status = status;
	r->error = error;
	r->why = why;
	return 0;
}

int blk_req_parse(struct blk_req *r, const struct virtq_chain *c, const struct guest_mem *mem,
		  const struct blk_backend *b)
{
	uint8_t hdr[VIRTIO_BLK_HDR_SIZE];
	uint64_t nsect;
	ssize_t got;

	memset(r, 0, sizeof(*r));
	r->status = VIRTIO_BLK_S_OK;
	if (c->write_len == 0) {
		r->status = VIRTIO_BLK_S_IOERR;
		r->error = -EINVAL;
		r->why = "no writable byte for the status";
		return -EINVAL;
	}
	r->status_off = c->write_len - 1;
	/* The one read of the header: the guest may rewrite it while we work. */
	got = virtq_chain_read(c, mem, 0, hdr, sizeof(hdr));
	if (got < 0)
		return refuse(r, VIRTIO_BLK_S_IOERR, (int)got, "header is not guest RAM");
	if (got < (ssize_t)sizeof(hdr))
		return refuse(r, VIRTIO_BLK_S_IOERR, -EINVAL, "header shorter than 16 bytes");
	r->type = le_get32(hdr);
	r->sector = le_get64(hdr + 8);

	switch (r->type) {
	case VIRTIO_BLK_T_IN:
		r->data_len = c->write_len - 1;
		break;
	case VIRTIO_BLK_T_OUT:
		if (b->readonly)
			return refuse(r, VIRTIO_BLK_S_IOERR, -EROFS, "write to a read-only disk");
		r->data_len = c->read_len - VIRTIO_BLK_HDR_SIZE;
		break;
	case VIRTIO_BLK_T_FLUSH:
		return 0;
	case VIRTIO_BLK_T_GET_ID:
		r->data_len = c->write_len - 1;
		return 0;
	default:
		return refuse(r, VIRTIO_BLK_S_UNSUPP, -EOPNOTSUPP, "unsupported request type");
	}

	/* IN and OUT: the data and the sector range. */
	if (r->data_len > BLK_REQ_MAX_DATA)
		return refuse(r, VIRTIO_BLK_S_IOERR, -E2BIG, "data longer than BLK_REQ_MAX_DATA");
	if (r->data_len % VIRTIO_BLK_SECTOR_SIZE)
		return refuse(r, VIRTIO_BLK_S_IOERR, -EINVAL,
			      "data length is not a multiple of 512");
	nsect = r->data_len / VIRTIO_BLK_SECTOR_SIZE;
	if (r->sector > UINT64_MAX - nsect)
		return refuse(r, VIRTIO_BLK_S_IOERR, -EOVERFLOW, "sector range overflows");
	if (r->sector + nsect > b->capacity_sectors)
		return refuse(r, VIRTIO_BLK_S_IOERR, -ERANGE, "sector range past the capacity");
	return 0;
}

static void io_error(struct blk_req *r, int error, const char *why)
{
	r->status = VIRTIO_BLK_S_IOERR;
	r->error = error;
	r->why = why;
}

/*
 * Reads len bytes at off; the part past the file's end is zeros (a file
 * shorter than the capacity, or truncated under us). 0 or -errno.
 */
static int pread_full(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {
			memset(buf + done, 0, len - done);
			break;
		}
		done += (size_t)n;
	}
	return 0;
}

/* Writes all len bytes at off. 0 or -errno (-EIO if the file takes nothing). */
static int pwrite_full(int fd, const uint8_t *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		/* POSIX allows 0 only for len 0; looping on it would never end. */
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* IN: the file into the writable segments, piece by piece. Bytes written to the guest, or -EFAULT.
 */
static ssize_t do_in(struct blk_req *r, const struct virtq_chain *c, struct guest_mem *mem,
		     const struct blk_backend *b, uint8_t *bounce, size_t bounce_len)
{
	uint64_t off = r->sector * VIRTIO_BLK_SECTOR_SIZE;
	size_t done = 0;

	while (done < r->data_len) {
		size_t n = r->data_len - done < bounce_len ? r->data_len - done : bounce_len;
		int ret = pread_full(b->fd, bounce, n, off + done);
		ssize_t w;

		if (ret) {
			io_error(r, ret, "read of the disk file failed");
			break;
		}
		w = virtq_chain_write(c, mem, done, bounce, n);
		if (w < 0)
			return w;
		done += (size_t)w;
	}
	return (ssize_t)done;
}

/* OUT: the readable segments after the header into the file. 0 or -EFAULT. */
static int do_out(struct blk_req *r, const struct virtq_chain *c, const struct guest_mem *mem,
		  const struct blk_backend *b, uint8_t *bounce, size_t bounce_len)
{
	uint64_t off = r->sector * VIRTIO_BLK_SECTOR_SIZE;
	size_t done = 0;

	while (done < r->data_len) {
		size_t n = r->data_len - done < bounce_len ? r->data_len - done : bounce_len;
		ssize_t got = virtq_chain_read(c, mem, VIRTIO_BLK_HDR_SIZE + done, bounce, n);
		int ret;

		if (got < 0)
			return (int)got;
		if ((size_t)got != n)
			return -EFAULT; /* parse measured the chain: cannot happen */
		ret = pwrite_full(b->fd, bounce, n, off + done);
		if (ret) {
			io_error(r, ret, "write of the disk file failed");
			break;
		}
		done += n;
	}
	return 0;
}

ssize_t blk_req_execute(struct blk_req *r, const struct virtq_chain *c, struct guest_mem *mem,
			const struct blk_backend *b, uint8_t *bounce, size_t bounce_len)
{
	ssize_t written = 0, w;
	uint8_t status;
	int ret;

	if (bounce_len == 0)
		return -EINVAL;
	if (c->write_len == 0 || r->status_off != c->write_len - 1)
		return -EINVAL; /* not this chain's request */
	if (r->status == VIRTIO_BLK_S_OK) {
		switch (r->type) {
		case VIRTIO_BLK_T_IN:
			written = do_in(r, c, mem, b, bounce, bounce_len);
			if (written < 0)
				return written;
			break;
		case VIRTIO_BLK_T_OUT:
			ret = do_out(r, c, mem, b, bounce, bounce_len);
			if (ret < 0)
				return ret;
			break;
		case VIRTIO_BLK_T_FLUSH:
			/* Nothing of ours to make durable on a read-only disk. */
			if (!b->readonly && fdatasync(b->fd) < 0)
				io_error(r, -errno, "fdatasync of the disk file failed");
			break;
		case VIRTIO_BLK_T_GET_ID:
			written = virtq_chain_write(
			    c, mem, 0, b->id,
			    r->data_len < VIRTIO_BLK_ID_BYTES ? r->data_len : VIRTIO_BLK_ID_BYTES);
			if (written < 0)
				return written;
			break;
		default:
			return -EINVAL; /* parse refuses every other type */
		}
	}
	status = r->status;
	w = virtq_chain_write(c, mem, r->status_off, &status, 1);
	if (w < 0)
		return w;
	if (w != 1)
		return -EFAULT;
	return written + 1;
}
