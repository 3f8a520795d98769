// SPDX-License-Identifier: Apache-2.0
/*
 * workload_net.c - an ARP and ICMP echo responder on the virtio-net device,
 * so that a ping from the host measures what a migration's switchover
 * costs a network client.
 *
 * vCPU 0 keeps the receive queue full of buffers, answers ARP requests for
 * the ip= of the kernel command line and ICMP echo requests to it
 * (net_proto.c), and ignores everything else. It sends one gratuitous ARP
 * at start so that a bridge learns the MAC, and a heartbeat line every
 * heartbeat-ms with the totals of replies since boot.
 *
 * Only VERSION_1, MAC and STATUS are negotiated: no offloads and no
 * MRG_RXBUF, so every frame, both ways, is one buffer that starts with the
 * 12-byte virtio_net_hdr (virtio 1.2, 5.1.6), all zero on transmit.
 * Transmit buffers come back as the device uses them; when all are in
 * flight an answer is dropped (and counted) rather than waited for, so a
 * stuck transmit queue never stops the receive side.
 */
#include "virtio.h"
#include "net_proto.h"

#define NET_RXQ 0
#define NET_TXQ 1

#define VIRTIO_NET_F_MAC     5
#define VIRTIO_NET_F_STATUS  16
#define VIRTIO_NET_S_LINK_UP 1u
#define NET_CONFIG_STATUS    6u /* u16 after the 6-byte MAC */

#define NET_HDR_LEN 12u
/* >= 12 + 1514 (5.1.6.3.1: 1526 without MRG_RXBUF or GSO), two a page. */
#define NET_BUF		 2048u
#define NET_RX_BUFS	 64u
#define NET_TX_BUFS	 16u
#define NET_HEARTBEAT_MS 1000u /* when vmm,heartbeat-ms is 0 */

static struct {
	struct virtio_dev dev;
	struct virtq rxq, txq;
	struct net_id id;
	uint8_t *tx_free[NET_TX_BUFS];
	uint32_t ntx_free;
	uint64_t replies, arps, dropped, dropped_told;
} net;

/* Where an answer is built when no transmit buffer is free (to know if one was due). */
static uint8_t scratch[NET_BUF];

static __attribute__((noreturn)) void device_error(void)
{
	virtio_fail(&net.dev);
	fw_exit(VMM_GUEST_EXIT_DEVICE);
}

/* The ip= of the kernel command line (/chosen bootargs, or PVH's), or a line and exit. */
static void net_read_ip(void)
{
	const char *args = fw_params.cmdline ? fw_params.cmdline : "";
	int r = net_parse_ip(args, net.id.ip);

	if (r == -1)
		fw_log("net: no ip=A.B.C.D on the kernel command line (\"%s\")", args);
	else if (r)
		fw_log("net: the kernel command line's ip= is not A.B.C.D (\"%s\")", args);
	if (r)
		fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
}

static void net_read_mac(void)
{
	uint64_t r;
	uint32_t i;

	if (net.dev.features >> VIRTIO_NET_F_MAC & 1) {
		virtio_config_read(&net.dev, 0, net.id.mac, ETH_ALEN);
		return;
	}
	/* 5.1.5: without one from the device the driver makes one up (local, unicast). */
	r = rdtsc() * 0x9E3779B97F4A7C15ull;
	net.id.mac[0] = 0x02;
	for (i = 1; i < ETH_ALEN; i++)
		net.id.mac[i] = (uint8_t)(r >> (8 * i));
	fw_log("net: the device has no MAC (VIRTIO_NET_F_MAC not offered): using a random one");
}

static void rx_post(uint8_t *buf)
{
	struct virtq_buf b = {buf, NET_BUF, true};

	if (virtq_add(&net.rxq, &b, 1, buf)) {
		fw_log("net: receive queue full (driver bug)");
		device_error();
	}
}

/* A free transmit buffer (taking back what the device used), or NULL. */
static uint8_t *tx_get(void)
{
	uint32_t len;
	void *t;

	while ((t = virtq_get(&net.txq, &len)))
		net.tx_free[net.ntx_free++] = t;
	return net.ntx_free ? net.tx_free[--net.ntx_free] : NULL;
}

/* Sends the frame built at buf + NET_HDR_LEN. */
static void tx_send(uint8_t *buf, size_t frame_len)
{
	struct virtq_buf b = {buf, (uint32_t)(NET_HDR_LEN + frame_len), false};

	memset(buf, 0, NET_HDR_LEN); /* no checksum offload, no GSO, num_buffers 0 */
	if (virtq_add(&net.txq, &b, 1, buf)) {
		fw_log("net: transmit queue full (driver bug)");
		device_error();
	}
	virtq_kick(&net.txq);
}

static void net_setup(void)
{
	uint8_t *rx, *tx;
	uint32_t i, n;
	uint16_t status;

	if (virtio_find(VIRTIO_ID_NET, &net.dev)) {
		fw_log("net: no virtio-net device");
		fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
	}
	net_read_ip();
	if (virtio_start(&net.dev, 1ull << VIRTIO_NET_F_MAC | 1ull << VIRTIO_NET_F_STATUS) ||
	    virtq_init(&net.rxq, &net.dev, NET_RXQ, NET_RX_BUFS) ||
	    virtq_init(&net.txq, &net.dev, NET_TXQ, NET_TX_BUFS) || virtio_driver_ok(&net.dev))
		device_error();
	net_read_mac();
	if (net.dev.features >> VIRTIO_NET_F_STATUS & 1) {
		virtio_config_read(&net.dev, NET_CONFIG_STATUS, &status, sizeof(status));
		if (!(status & VIRTIO_NET_S_LINK_UP))
			fw_log(
			    "net: the device says the link is down (status 0x%x); answering anyway",
			    status);
	}

	/* Buffers after DRIVER_OK: the device ignores a notify before it. */
	n = net.rxq.size;
	rx = fw_alloc_pages((n * NET_BUF + VMM_PAGE_SIZE - 1) / VMM_PAGE_SIZE);
	for (i = 0; i < n; i++)
		rx_post(rx + i * NET_BUF);
	virtq_kick(&net.rxq);
	n = net.txq.size < NET_TX_BUFS ? net.txq.size : NET_TX_BUFS;
	tx = fw_alloc_pages((n * NET_BUF + VMM_PAGE_SIZE - 1) / VMM_PAGE_SIZE);
	for (i = 0; i < n; i++)
		net.tx_free[net.ntx_free++] = tx + i * NET_BUF;
}

/* One received buffer: len counts the virtio_net_hdr. */
static void net_frame(const uint8_t *buf, uint32_t len)
{
	enum net_answer_kind kind;
	uint8_t *tx, *out;
	size_t n;

	/* Shorter than a header or longer than the buffer: the device's bug; drop it. */
	if (len < NET_HDR_LEN || len > NET_BUF)
		return;
	tx = tx_get();
	out = tx ? tx + NET_HDR_LEN : scratch;
	n = net_answer(&net.id, buf + NET_HDR_LEN, len - NET_HDR_LEN, out, NET_BUF - NET_HDR_LEN,
		       &kind);
	if (!n) {
		if (tx)
			net.tx_free[net.ntx_free++] = tx;
		return;
	}
	if (!tx) {
		net.dropped++;
		return;
	}
	tx_send(tx, n);
	if (kind == NET_ANSWER_ARP)
		net.arps++;
	else
		net.replies++;
}

/* Every heartbeat interval of TSC time: a line; vmm,passes of them end the run. */
static void heartbeat(uint64_t *last, uint64_t *pass)
{
	uint64_t ms = fw_params.heartbeat_ms ? fw_params.heartbeat_ms : NET_HEARTBEAT_MS;
	uint64_t now = rdtsc();

	if (now < *last) { /* the TSC went back (a restore): count from here */
		*last = now;
		return;
	}
	if (now - *last < ms_to_tsc(ms))
		return;
	*last = now; /* not += interval: after a long stop, one line, not a burst */
	++*pass;
	if (net.dropped != net.dropped_told) {
		fw_log("net: %lu answers dropped so far: no free transmit buffer", net.dropped);
		net.dropped_told = net.dropped;
	}
	fw_log("net: pass %lu: %lu replies, %lu arp", *pass, net.replies, net.arps);
	if (fw_params.passes && *pass >= fw_params.passes) {
		fw_log("net: done after %lu passes", *pass);
		fw_exit(VMM_GUEST_EXIT_OK);
	}
}

void workload_net(uint32_t index)
{
	uint64_t last, pass = 0;
	uint8_t *tx;
	uint32_t len, k;
	size_t n;
	void *t;

	if (index)
		halt_forever(); /* as idle: vCPU 0 alone drives the device */
	net_setup();
	tx = tx_get();
	n = net_gratuitous_arp(&net.id, tx + NET_HDR_LEN, NET_BUF - NET_HDR_LEN);
	tx_send(tx, n);
	fw_log("net: mac %02x:%02x:%02x:%02x:%02x:%02x ip %u.%u.%u.%u up", net.id.mac[0],
	       net.id.mac[1], net.id.mac[2], net.id.mac[3], net.id.mac[4], net.id.mac[5],
	       net.id.ip[0], net.id.ip[1], net.id.ip[2], net.id.ip[3]);
	fw_release_secondaries();

	last = rdtsc();
	for (;;) {
		bool posted = false;

		/* At most a ring's worth per round, so a flood still lets the heartbeat run. */
		for (k = 0; k < net.rxq.size && (t = virtq_get(&net.rxq, &len)); k++) {
			net_frame(t, len);
			rx_post(t);
			posted = true;
		}
		if (posted)
			virtq_kick(&net.rxq);
		heartbeat(&last, &pass);
		cpu_relax();
	}
}
