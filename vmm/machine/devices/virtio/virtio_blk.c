/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_blk.c - the virtio-blk device ([disk]): one request queue served
 * by the device's I/O thread, synchronously, against a file or a block
 * device (virtio 1.2, 5.2). Parsing and executing a request is
 * virtio_blk_req.c's; this file is the device around it: the features and
 * config space it offers, the queue loop, and FLUSH-before-park.
 *
 * Why synchronous. A request is done (pwrite returned, status written,
 * chain pushed) before the thread looks at the next one, so parking the
 * thread between two requests is all a migration's blackout needs: no
 * write is in flight, none is lost and none can be replayed by the target.
 * The cost is one request at a time per disk, which the emulated guests of
 * our hosts cannot tell from more.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices.h"
#include "le.h"
#include "open_beneath.h"
#include "virtio_blk_req.h"

/* Feature bits (5.2.3). */
#define VIRTIO_BLK_F_SIZE_MAX 1
#define VIRTIO_BLK_F_SEG_MAX  2
#define VIRTIO_BLK_F_RO	      5
#define VIRTIO_BLK_F_BLK_SIZE 6
#define VIRTIO_BLK_F_FLUSH    9

#define BLK_QUEUE_SIZE 256u
/* Chains one wakeup serves before it lets the others (park, stop) in. */
#define BLK_BATCH    64u
#define BLK_SIZE_MAX 4096u /* one segment's bytes: with SEG_MAX, bounds a request (see below) */

struct virtio_blk {
	struct virtio_dev dev;
	struct blk_backend b;
	bool dirty; /* an OUT since the last fdatasync */
	struct virtq_chain chain;
	uint8_t bounce[BLK_REQ_MAX_DATA];
};

static void blk_process(struct virtio_dev *d, unsigned q)
{
	struct virtio_blk *blk = d->impl;
	struct virtq *vq = virtio_mmio_queue(&d->t, q);
	uint16_t old_used;
	unsigned n;

	if (!vq || !vq->ready || vq->broken)
		return;
	old_used = vq->next_used_idx;
	for (n = 0; n < BLK_BATCH; n++) {
		enum virtq_pop_result pr = virtq_pop(vq, d->mem, &blk->chain);
		struct blk_req r;
		ssize_t len = 0;

		if (pr == VIRTQ_POP_EMPTY) {
			if (virtio_dev_rearm(d, vq))
				continue;
			break;
		}
		if (pr == VIRTQ_POP_BROKEN) {
			virtio_dev_broken(d, q);
			break;
		}
		if (blk_req_parse(&r, &blk->chain, d->mem, &blk->b) == 0) {
			len = blk_req_execute(&r, &blk->chain, d->mem, &blk->b, blk->bounce,
					      sizeof(blk->bounce));
			if (len < 0)
				len = 0;
			if (r.type == VIRTIO_BLK_T_OUT && r.status == VIRTIO_BLK_S_OK)
				blk->dirty = true;
			if (r.type == VIRTIO_BLK_T_FLUSH && r.status == VIRTIO_BLK_S_OK)
				blk->dirty = false;
			if (r.status != VIRTIO_BLK_S_OK)
				d->errors++;
		} else {
			d->errors++;
		}
		if (virtq_push(vq, d->mem, blk->chain.head, (uint32_t)len) == 0)
			d->requests++;
	}
	virtio_dev_notify(d, q, old_used, false);
	/* More waiting: come back after a look at the control fd (park, stop). */
	if (n == BLK_BATCH && virtq_avail_pending(vq, d->mem))
		virtio_dev_kick(d, q);
}

/*
 * Before a park: what the guest wrote reaches stable storage, so that a
 * target on another host that opens the same shared file reads it even if
 * this host then dies. The guest's own FLUSHes are honoured as they come.
 */
static void blk_quiesce(struct virtio_dev *d)
{
	struct virtio_blk *blk = d->impl;

	if (blk->dirty && !blk->b.readonly) {
		if (fdatasync(blk->b.fd) < 0)
			d->errors++;
		else
			blk->dirty = false;
	}
}

static void blk_destroy(struct virtio_dev *d)
{
	struct virtio_blk *blk = d->impl;

	if (blk->b.fd >= 0) {
		if (!blk->b.readonly)
			fdatasync(blk->b.fd);
		close(blk->b.fd);
	}
	free(blk);
}

static const struct virtio_dev_ops blk_ops = {
    .kind = "blk",
    .state_comp = STATE_COMP_VIRTIO_BLK,
    .process = blk_process,
    .quiesce = blk_quiesce,
    .destroy = blk_destroy,
};

/*
 * The config space (5.2.4): capacity, size_max, seg_max, geometry (0),
 * blk_size. size_max * seg_max bounds a request at 254 * 4 KiB, inside
 * BLK_REQ_MAX_DATA (virtio_blk_req.h says why that bound exists).
 */
static uint32_t blk_config(uint8_t *c, const struct blk_backend *b)
{
	memset(c, 0, 24);
	le_put64(c + 0, b->capacity_sectors);
	le_put32(c + 8, BLK_SIZE_MAX);
	le_put32(c + 12, VIRTQ_CHAIN_MAX_SEGS - 2);
	le_put32(c + 20, VIRTIO_BLK_SECTOR_SIZE);
	return 24;
}

/*
 * The disk's file. A migrating VM's own path, which this target's
 * [migration] allow_disk_dirs allowed (config_bind_devices() named the
 * directory in disk_beneath), is opened below that directory without
 * following a symbolic link: the stream chose the name, the operator only
 * the directory. Any other path is this host's own choice and opened as is.
 */
static int open_disk(const struct vm_config *cfg, char *err, size_t errlen)
{
	int flags = cfg->disk_readonly ? O_RDONLY : O_RDWR;
	const char *how = cfg->disk_readonly ? " read-only" : " for reading and writing";
	int fd;

	if (!cfg->disk_beneath[0]) {
		fd = open(cfg->disk_path, flags | O_CLOEXEC);
		if (fd < 0) {
			fd = -errno;
			snprintf(err, errlen, "[disk] path: cannot open '%s'%s: %s", cfg->disk_path,
				 how, strerror(errno));
		}
		return fd;
	}
	fd = open_beneath(cfg->disk_beneath, cfg->disk_path, flags);
	if (fd < 0)
		snprintf(err, errlen,
			 "[disk] path: cannot open the migrating VM's '%s'%s below '%s' "
			 "([migration] allow_disk_dirs): %s%s",
			 cfg->disk_path, how, cfg->disk_beneath, strerror(-fd),
			 fd == -ELOOP || fd == -ENOTDIR
			     ? " (no symbolic link below an allowed directory is followed)"
			     : "");
	return fd;
}

int virtio_blk_create(struct virtio_dev **out, const struct vm_config *cfg, struct guest_mem *mem,
		      int vm_fd, unsigned index, uint64_t base, uint32_t irq, char *err,
		      size_t errlen)
{
	struct virtio_blk *blk = calloc(1, sizeof(*blk));
	struct virtio_mmio_params p = {.device_id = VIRTIO_ID_BLOCK, .nqueues = 1};
	uint8_t config[24];
	char id[CONFIG_NAME_MAX + 16]; /* cut to VIRTIO_BLK_ID_BYTES by blk_backend_init() */
	int fd, ret;

	if (!blk)
		return -ENOMEM;
	fd = open_disk(cfg, err, errlen);
	if (fd < 0) {
		free(blk);
		return fd;
	}
	/* The serial a guest reads: the VM's name, the same on a target. */
	snprintf(id, sizeof(id), "%s-disk%u", cfg->name, index);
	ret = blk_backend_init(&blk->b, fd, cfg->disk_readonly, id);
	if (ret) {
		snprintf(err, errlen, "[disk] path: '%s': %s", cfg->disk_path,
			 ret == -EINVAL ? "neither a regular file nor a block device"
					: strerror(-ret));
		close(fd);
		free(blk);
		return ret;
	}
	p.features = 1ull << VIRTIO_BLK_F_SIZE_MAX | 1ull << VIRTIO_BLK_F_SEG_MAX |
		     1ull << VIRTIO_BLK_F_BLK_SIZE | 1ull << VIRTIO_BLK_F_FLUSH |
		     1ull << VIRTIO_F_RING_INDIRECT_DESC | 1ull << VIRTIO_F_RING_EVENT_IDX |
		     (cfg->disk_readonly ? 1ull << VIRTIO_BLK_F_RO : 0);
	p.queue_max[0] = BLK_QUEUE_SIZE;
	p.config_len = blk_config(config, &blk->b);
	p.config = config;
	blk->dev.ops = &blk_ops;
	blk->dev.impl = blk;
	blk->dev.seccomp = cfg->seccomp;
	ret = virtio_dev_init(&blk->dev, &p, mem, vm_fd, index, base, irq, err, errlen);
	if (ret) {
		close(fd);
		free(blk);
		return ret;
	}
	*out = &blk->dev;
	return 0;
}
