/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_net.c - the virtio-net device ([net]) on a tap (virtio 1.2, 5.1):
 * one receive and one transmit queue, served by the device's I/O thread;
 * no offloads, no mergeable buffers, no control queue. Every frame on a
 * queue is preceded by the 12-byte struct virtio_net_hdr (VERSION_1 always
 * has num_buffers), which the device strips on transmit and writes, all
 * zero but num_buffers = 1, on receive; the tap carries bare frames.
 *
 * Receive is driven by two things: the tap being readable and the driver
 * having buffers. The thread polls the tap only while the receive queue
 * has buffers (d->io_wanted); when they run out it stops, leaving frames in
 * the tap's queue (the kernel drops past txqueuelen, like a full NIC ring),
 * and the driver's next receive-queue kick starts it again.
 *
 * After a migration or restore the device announces the guest's MAC on
 * the tap, as QEMU's announce-self does: RARP broadcasts from that address,
 * so a bridge or switch learns the new port before the guest sends.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "crc32c.h"
#include "devices.h"
#include "le.h"
#include "tap.h"

/* Feature bits (5.1.3). */
#define VIRTIO_NET_F_MAC     5
#define VIRTIO_NET_F_STATUS  16
#define VIRTIO_NET_S_LINK_UP 1u

#define NET_RXQ	       0u
#define NET_TXQ	       1u
#define NET_QUEUE_SIZE 256u
#define NET_HDR_LEN    12u    /* struct virtio_net_hdr with num_buffers (5.1.6) */
#define NET_FRAME_MAX  65550u /* the largest frame a tap may hand us, with room */
#define NET_BATCH      128u   /* frames one wakeup moves per direction */
#define NET_ANNOUNCES  3u     /* RARPs sent after a load */

struct virtio_net {
	struct virtio_dev dev;
	uint8_t mac[6];
	struct virtq_chain chain;
	uint8_t buf[NET_HDR_LEN + NET_FRAME_MAX];
};

/* Guest to tap: one frame per chain, its header dropped. */
static void net_tx(struct virtio_dev *d, struct virtq *vq)
{
	struct virtio_net *n = d->impl;
	uint16_t old_used = vq->next_used_idx;
	unsigned i;

	for (i = 0; i < NET_BATCH; i++) {
		enum virtq_pop_result pr = virtq_pop(vq, d->mem, &n->chain);
		ssize_t len;

		if (pr == VIRTQ_POP_EMPTY) {
			if (virtio_dev_rearm(d, vq))
				continue;
			break;
		}
		if (pr == VIRTQ_POP_BROKEN) {
			virtio_dev_broken(d, NET_TXQ);
			break;
		}
		len = pr == VIRTQ_POP_CHAIN && n->chain.read_len > NET_HDR_LEN &&
			      n->chain.read_len - NET_HDR_LEN <= NET_FRAME_MAX
			  ? virtq_chain_read(&n->chain, d->mem, NET_HDR_LEN, n->buf,
					     n->chain.read_len - NET_HDR_LEN)
			  : -EINVAL;
		/* A full tap queue drops the frame, as a congested link would. */
		if (len <= 0 || write(d->io_fd, n->buf, (size_t)len) < 0)
			d->errors++;
		else
			d->requests++;
		virtq_push(vq, d->mem, n->chain.head, 0);
	}
	virtio_dev_notify(d, NET_TXQ, old_used, false);
	if (i == NET_BATCH && virtq_avail_pending(vq, d->mem))
		virtio_dev_kick(d, NET_TXQ);
}

/* Tap to guest, while the receive queue has buffers. */
static void net_rx(struct virtio_dev *d)
{
	struct virtio_net *n = d->impl;
	struct virtq *vq = virtio_mmio_queue(&d->t, NET_RXQ);
	uint16_t old_used = vq->next_used_idx;

	for (unsigned i = 0; i < NET_BATCH; i++) {
		enum virtq_pop_result pr;
		ssize_t len, put;

		if (!vq->ready || vq->broken ||
		    (!virtq_avail_pending(vq, d->mem) && !virtio_dev_rearm(d, vq))) {
			d->io_wanted = false; /* until the driver adds buffers */
			break;
		}
		len = read(d->io_fd, n->buf + NET_HDR_LEN, NET_FRAME_MAX);
		if (len < 0 && (errno == EAGAIN || errno == EINTR))
			break; /* nothing more for now */
		if (len <= 0) {
			/* The tap went away (deleted, hung up): stop polling it, or poll spins. */
			d->errors++;
			d->io_wanted = false;
			break;
		}
		pr = virtq_pop(vq, d->mem, &n->chain);
		if (pr == VIRTQ_POP_BROKEN) {
			virtio_dev_broken(d, NET_RXQ);
			d->io_wanted = false;
			break;
		}
		if (pr != VIRTQ_POP_CHAIN) { /* a bad chain: the frame is lost with it */
			d->errors++;
			if (pr == VIRTQ_POP_BAD_CHAIN)
				virtq_push(vq, d->mem, n->chain.head, 0);
			continue;
		}
		memset(n->buf, 0, NET_HDR_LEN);
		le_put16(n->buf + 10, 1); /* num_buffers */
		put = virtq_chain_write(&n->chain, d->mem, 0, n->buf, NET_HDR_LEN + (size_t)len);
		/* A buffer too small for the frame: the driver drops what is cut (5.1.6.3). */
		if (put < (ssize_t)(NET_HDR_LEN + (size_t)len))
			d->errors++;
		virtq_push(vq, d->mem, n->chain.head, put > 0 ? (uint32_t)put : 0);
		d->requests++;
	}
	virtio_dev_notify(d, NET_RXQ, old_used, false);
}

static void net_process(struct virtio_dev *d, unsigned q)
{
	struct virtq *vq = virtio_mmio_queue(&d->t, q);

	if (!vq || !vq->ready || vq->broken)
		return;
	if (q == NET_TXQ) {
		net_tx(d, vq);
		return;
	}
	/* New receive buffers: take what the tap holds, then keep polling it. */
	d->io_wanted = true;
	net_rx(d);
}

static void net_fd_ready(struct virtio_dev *d)
{
	net_rx(d);
}

/* RARP "who am I" from the guest's MAC (what QEMU's announce-self sends). */
static void net_loaded(struct virtio_dev *d)
{
	struct virtio_net *n = d->impl;
	uint8_t f[60] = {0};

	memset(f, 0xff, 6);
	memcpy(f + 6, n->mac, 6);
	f[12] = 0x80, f[13] = 0x35;			      /* ETH_P_RARP */
	f[14] = 0, f[15] = 1;				      /* hardware: Ethernet */
	f[16] = 0x08, f[17] = 0x00;			      /* protocol: IPv4 */
	f[18] = 6, f[19] = 4;				      /* address lengths */
	f[20] = 0, f[21] = 3;				      /* reverse request */
	memcpy(f + 22, n->mac, 6), memcpy(f + 32, n->mac, 6); /* sender and target MAC */
	for (unsigned i = 0; i < NET_ANNOUNCES; i++)
		if (write(d->io_fd, f, sizeof(f)) < 0)
			d->errors++;
}

static void net_reset(struct virtio_dev *d)
{
	d->io_wanted = false;
}

static void net_destroy(struct virtio_dev *d)
{
	struct virtio_net *n = d->impl;

	if (d->io_fd >= 0)
		close(d->io_fd);
	free(n);
}

static const struct virtio_dev_ops net_ops = {
    .kind = "net",
    .state_comp = STATE_COMP_VIRTIO_NET,
    .process = net_process,
    .fd_ready = net_fd_ready,
    .loaded = net_loaded,
    .reset = net_reset,
    .destroy = net_destroy,
};

void virtio_net_default_mac(const char *name, char *out, size_t outlen)
{
	uint32_t h = crc32c(0, name, strlen(name));

	snprintf(out, outlen, "52:54:00:%02x:%02x:%02x", h >> 16 & 0xff, h >> 8 & 0xff, h & 0xff);
}

int virtio_net_create_on(struct virtio_dev **out, const struct vm_config *cfg,
			 struct guest_mem *mem, int vm_fd, unsigned index, uint64_t base,
			 uint32_t irq, int fd, char *err, size_t errlen)
{
	struct virtio_net *n = calloc(1, sizeof(*n));
	struct virtio_mmio_params p = {.device_id = VIRTIO_ID_NET, .nqueues = 2};
	uint8_t config[8];
	int ret;

	if (!n)
		return -ENOMEM;
	/* config_apply_key() checked it; devices_create() filled a default. */
	if (config_mac_parse(cfg->net_mac, n->mac)) {
		snprintf(err, errlen, "[net] mac: bad address '%s'", cfg->net_mac);
		free(n);
		return -EINVAL;
	}
	memcpy(config, n->mac, 6);
	le_put16(config + 6, VIRTIO_NET_S_LINK_UP);
	p.features = 1ull << VIRTIO_NET_F_MAC | 1ull << VIRTIO_NET_F_STATUS |
		     1ull << VIRTIO_F_RING_INDIRECT_DESC | 1ull << VIRTIO_F_RING_EVENT_IDX;
	p.queue_max[NET_RXQ] = p.queue_max[NET_TXQ] = NET_QUEUE_SIZE;
	p.config = config;
	p.config_len = sizeof(config);
	n->dev.ops = &net_ops;
	n->dev.impl = n;
	n->dev.seccomp = cfg->seccomp;
	/* The I/O thread reads it with the device's lock held: it must never block. */
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		ret = -errno;
		snprintf(err, errlen, "[net] tap: cannot make it non-blocking: %s",
			 strerror(errno));
		free(n);
		return ret;
	}
	ret = virtio_dev_init(&n->dev, &p, mem, vm_fd, index, base, irq, err, errlen);
	if (ret) {
		free(n);
		return ret;
	}
	n->dev.io_fd = fd; /* ours from here: net_destroy() closes it */
	*out = &n->dev;
	return 0;
}

int virtio_net_create(struct virtio_dev **out, const struct vm_config *cfg, struct guest_mem *mem,
		      int vm_fd, unsigned index, uint64_t base, uint32_t irq, char *err,
		      size_t errlen)
{
	bool created;
	int fd = tap_open(cfg->net_tap, &created, err, errlen);
	int ret;

	if (fd < 0)
		return fd;
	ret = virtio_net_create_on(out, cfg, mem, vm_fd, index, base, irq, fd, err, errlen);
	if (ret)
		close(fd);
	return ret;
}
