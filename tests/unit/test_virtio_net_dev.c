/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_virtio_net_dev.c - the virtio-net device as a whole (virtio_net.c on
 * virtio_dev.c) driven through its MMIO window as a guest driver drives it
 * (virtio_dev_driver.h), without KVM or a tap: the backend is one end of a
 * SOCK_SEQPACKET socketpair (one frame per read and write, as a tap moves
 * them) and the test holds the other end, playing the network. Transmit,
 * receive (and waiting for buffers), the config space, and the RARP
 * announce of a loaded device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include "devices.h"
#include "virtio_dev_driver.h"

#define VIRTIO_NET_F_MAC    5
#define VIRTIO_NET_F_STATUS 16
#define NET_FEATURES	    (1ull << VIRTIO_NET_F_MAC | 1ull << VIRTIO_NET_F_STATUS)

#define RXQ	0u
#define TXQ	1u
#define HDR_LEN 12u
#define MAC	"52:54:00:ab:cd:ef"
#define TX_HDR	VDRV_BUF /* transmit: header, then frame */
#define TX_BUF	(VDRV_BUF + 0x100)
#define RX_BUF	(VDRV_BUF + 0x10000) /* receive buffer i at + i * 0x1000 */
#define RX_LEN	2048u

static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0xab, 0xcd, 0xef};

/*
 * A test's resources, freed by the teardown even when an assertion ended
 * the test early (a failure reports only itself: no leaks, no device thread
 * left running). sv[i][0] is device i's backend once it took it (-1 then),
 * sv[i][1] the test's end.
 */
struct fx {
	struct vdrv *v;
	struct vm_config *cfg;
	struct virtio_dev *d[2]; /* a source and a target */
	int sv[2][2];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->v = vdrv_new();
	f->cfg = vdrv_cfg("unitvm");
	strcpy(f->cfg->net_mac, MAC);
	/* Non-blocking, as a tap is (tap_open()). */
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(
		    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, f->sv[i]),
		    0);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	for (unsigned i = 0; i < 2; i++) {
		if (f->d[i])
			virtio_dev_destroy(f->d[i]); /* closes sv[i][0] */
		for (unsigned e = 0; e < 2; e++)
			if (f->sv[i][e] >= 0)
				close(f->sv[i][e]);
	}
	free(f->cfg);
	vdrv_free(f->v);
	free(f);
	return 0;
}

/* Device i on socketpair i, at the window and IRQ devices_create() gives a second device. */
static struct virtio_dev *net_new(struct fx *f, unsigned i, bool parked)
{
	char err[256] = "";

	assert_int_equal(virtio_net_create_on(&f->d[i], f->cfg, &f->v->mem, -1, 1,
					      DEVICES_MMIO_BASE + VIRTIO_MMIO_WINDOW,
					      DEVICES_IRQ_BASE + 1, f->sv[i][0], err, sizeof(err)),
			 0);
	assert_non_null(f->d[i]);
	f->sv[i][0] = -1;
	assert_int_equal(virtio_dev_start(f->d[i], parked, err, sizeof(err)), 0);
	return f->d[i];
}

/* A frame of len bytes: broadcast from mac, then bytes made from seed. */
static void frame(uint8_t *f, size_t len, unsigned seed)
{
	memset(f, 0xff, 6);
	memcpy(f + 6, mac, 6);
	for (size_t i = 12; i < len; i++)
		f[i] = (uint8_t)(i * 13 + seed);
}

/* The next frame on the test's end (bounded wait): its length, or -1. */
static ssize_t recv_frame(int fd, uint8_t *buf, size_t cap)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	if (poll(&p, 1, VDRV_TIMEOUT_MS) != 1)
		return -1;
	return recv(fd, buf, cap, MSG_DONTWAIT);
}

static void send_frame(int fd, size_t len, unsigned seed)
{
	uint8_t f[1514];

	assert_true(len <= sizeof(f));
	frame(f, len, seed);
	assert_int_equal(send(fd, f, len, MSG_DONTWAIT), len);
}

/* Nothing (more) arrives on the test's end. */
static void assert_no_frame(int fd)
{
	uint8_t b[64];

	vdrv_sleep_ms(VDRV_QUIET_MS);
	assert_int_equal(recv(fd, b, sizeof(b), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
}

/* Posts receive buffer i (RX_LEN writable bytes, poisoned) and kicks the receive queue. */
static void post_rx(struct vdrv *v, uint16_t i)
{
	memset(vdrv_host(v, RX_BUF + i * 0x1000ull, RX_LEN), 0xaa, RX_LEN);
	vdrv_desc(v, RXQ, i, RX_BUF + i * 0x1000ull, RX_LEN, VIRTQ_DESC_F_WRITE, 0);
	vdrv_avail(v, RXQ, i);
	vdrv_notify(v, RXQ);
}

/* Transmit frame(len, seed) from descriptor `head`, header and frame in one buffer, and kick. */
static void post_tx(struct vdrv *v, uint16_t head, size_t len, unsigned seed)
{
	memset(vdrv_host(v, TX_BUF, HDR_LEN), 0, HDR_LEN);
	frame(vdrv_host(v, TX_BUF + HDR_LEN, len), len, seed);
	vdrv_desc(v, TXQ, head, TX_BUF, (uint32_t)(HDR_LEN + len), 0, 0);
	vdrv_avail(v, TXQ, head);
	vdrv_notify(v, TXQ);
}

/* Used entry k of the receive queue is buffer `head` holding frame(len, seed). */
static void assert_rx(struct vdrv *v, uint16_t k, uint16_t head, size_t len, unsigned seed)
{
	static const uint8_t hdr[HDR_LEN] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
	uint8_t want[1514];
	uint32_t id, ulen;
	uint8_t *b = vdrv_host(v, RX_BUF + head * 0x1000ull, RX_LEN);

	vdrv_used_elem(v, RXQ, k, &id, &ulen);
	assert_int_equal(id, head);
	assert_int_equal(ulen, HDR_LEN + len);
	assert_memory_equal(b, hdr, HDR_LEN); /* all zero but num_buffers = 1 */
	frame(want, len, seed);
	assert_memory_equal(b + HDR_LEN, want, len);
	assert_int_equal(b[HDR_LEN + len], 0xaa); /* nothing written past the frame */
}

static void test_config_space(void **state)
{
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint64_t feat;

	v->d = net_new(f, 0, false);
	assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_NET);
	feat = vdrv_device_features(v);
	assert_true(feat >> VIRTIO_NET_F_MAC & 1);
	assert_true(feat >> VIRTIO_NET_F_STATUS & 1);
	assert_true(feat & VDRV_VERSION_1);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(vdrv_rd_len(v, VIRTIO_MMIO_CONFIG + i, 1), mac[i]);
	assert_int_equal(vdrv_rd_len(v, VIRTIO_MMIO_CONFIG + 6, 2), 1); /* link up */
	assert_int_equal(vdrv_rd(v, VIRTIO_MMIO_CONFIG), 0x00005452u | (uint32_t)0xab << 24);
	assert_int_equal(vdrv_rd_len(v, VIRTIO_MMIO_CONFIG + 8, 1), 0); /* past the config */
	vdrv_init(v, 2, NET_FEATURES);
}

/* A MAC that is no MAC is refused, and the fd stays the caller's. */
static void test_bad_mac_refused(void **state)
{
	struct fx *f = *state;
	char err[256] = "";

	strcpy(f->cfg->net_mac, "52:54:00:zz:00:01");
	assert_int_equal(virtio_net_create_on(&f->d[0], f->cfg, &f->v->mem, -1, 1,
					      DEVICES_MMIO_BASE, 6, f->sv[0][0], err, sizeof(err)),
			 -EINVAL);
	f->d[0] = NULL;
	assert_non_null(strstr(err, "mac"));
	assert_true(fcntl(f->sv[0][0], F_GETFD) >= 0); /* still open: the teardown closes it */
}

static void test_tx(void **state)
{
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint8_t want[60], got[2048];
	uint32_t id, len;
	int net = f->sv[0][1];

	v->d = net_new(f, 0, false);
	vdrv_init(v, 2, NET_FEATURES);
	vdrv_irqs(v->d);

	/* {12-byte zero header} -> {60-byte frame}: the network sees the frame alone. */
	memset(vdrv_host(v, TX_HDR, HDR_LEN), 0, HDR_LEN);
	frame(vdrv_host(v, TX_BUF, 60), 60, 1);
	vdrv_desc(v, TXQ, 0, TX_HDR, HDR_LEN, VIRTQ_DESC_F_NEXT, 1);
	vdrv_desc(v, TXQ, 1, TX_BUF, 60, 0, 0);
	vdrv_avail(v, TXQ, 0);
	vdrv_notify(v, TXQ);
	assert_int_equal(vdrv_wait_used(v, TXQ, 1), 1);
	vdrv_used_elem(v, TXQ, 0, &id, &len);
	assert_int_equal(id, 0);
	assert_int_equal(len, 0); /* the device writes nothing into a transmit buffer */
	assert_int_equal(recv_frame(net, got, sizeof(got)), 60);
	frame(want, 60, 1);
	assert_memory_equal(got, want, 60);
	assert_true(vdrv_wait_irqs(v->d) >= 1);

	/* Header and frame in one descriptor: the same frame. */
	post_tx(v, 2, 60, 2);
	assert_int_equal(vdrv_wait_used(v, TXQ, 2), 2);
	assert_int_equal(recv_frame(net, got, sizeof(got)), 60);
	frame(want, 60, 2);
	assert_memory_equal(got, want, 60);

	/* A chain of a header only carries no frame: completed, nothing sent. */
	vdrv_desc(v, TXQ, 3, TX_HDR, HDR_LEN, 0, 0);
	vdrv_avail(v, TXQ, 3);
	vdrv_notify(v, TXQ);
	assert_int_equal(vdrv_wait_used(v, TXQ, 3), 3);
	assert_no_frame(net);
}

static void test_rx(void **state)
{
	static const size_t lens[3] = {60, 1514, 100};
	struct fx *f = *state;
	struct vdrv *v = f->v;

	v->d = net_new(f, 0, false);
	vdrv_init(v, 2, NET_FEATURES);
	for (uint16_t i = 0; i < 4; i++)
		post_rx(v, i);
	vdrv_irqs(v->d);
	for (unsigned i = 0; i < 3; i++)
		send_frame(f->sv[0][1], lens[i], 10 + i);
	assert_int_equal(vdrv_wait_used(v, RXQ, 3), 3);
	for (uint16_t i = 0; i < 3; i++)
		assert_rx(v, i, i, lens[i], 10 + i);
	assert_true(vdrv_wait_irqs(v->d) >= 1);
	assert_int_equal(vdrv_quiet(v, RXQ, 3), 0); /* 3 frames, 3 entries: the 4th buffer waits */
}

/*
 * Without a receive buffer a frame waits in the backend, not lost, until one
 * is posted. With EVENT_IDX the device, out of buffers, asks for the
 * driver's next notification (avail_event = the next entry), or a driver
 * that honours it would never notify and the frame would wait for ever.
 */
static void rx_waits_for_buffers(struct fx *f, bool event_idx)
{
	struct vdrv *v = f->v;
	int dev_end = f->sv[0][0], net = f->sv[0][1];
	uint8_t peek[128];

	v->d = net_new(f, 0, false);
	vdrv_init(v, 2, NET_FEATURES | (event_idx ? 1ull << VIRTIO_F_RING_EVENT_IDX : 0));
	send_frame(net, 100, 1);
	assert_int_equal(vdrv_quiet(v, RXQ, 0), 0);
	/* Still queued at the device's end (a peek does not take it). */
	assert_int_equal(recv(dev_end, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT), 100);
	assert_int_equal(vdrv_avail_event(v, RXQ), 0);
	post_rx(v, 0);
	assert_int_equal(vdrv_wait_used(v, RXQ, 1), 1);
	assert_rx(v, 0, 0, 100, 1);

	/* The buffers ran out again: the next frame waits too. */
	send_frame(net, 200, 2);
	assert_int_equal(vdrv_quiet(v, RXQ, 1), 0);
	assert_int_equal(vdrv_avail_event(v, RXQ), event_idx ? 1 : 0);
	post_rx(v, 1);
	assert_int_equal(vdrv_wait_used(v, RXQ, 2), 2);
	assert_rx(v, 1, 1, 200, 2);
}

static void test_rx_waits_for_buffers(void **state)
{
	rx_waits_for_buffers(*state, false);
}

static void test_rx_waits_for_buffers_event_idx(void **state)
{
	rx_waits_for_buffers(*state, true);
}

/* The RARP "who am I" of a loaded device, from the guest's MAC (QEMU's announce-self). */
static void assert_rarp(const uint8_t *f, ssize_t len)
{
	static const uint8_t arp[8] = {0, 1, 0x08, 0x00, 6, 4, 0, 3};

	assert_int_equal(len, 60);
	assert_memory_equal(f, "\xff\xff\xff\xff\xff\xff", 6);
	assert_memory_equal(f + 6, mac, 6);
	assert_int_equal(f[12], 0x80);
	assert_int_equal(f[13], 0x35);
	assert_memory_equal(f + 14, arp, sizeof(arp));
	assert_memory_equal(f + 22, mac, 6);
	assert_memory_equal(f + 32, mac, 6);
}

static void test_load_announces(void **state)
{
	struct fx *f = *state;
	struct vdrv *v = f->v;
	uint8_t got[2048],
	    blob[VIRTIO_MMIO_STATE_FIXED + VIRTIO_MMIO_MAX_QUEUES * VIRTQ_STATE_SIZE];
	char err[256] = "";
	size_t n;

	v->d = net_new(f, 0, false);
	vdrv_init(v, 2, NET_FEATURES);
	post_rx(v, 0);
	post_rx(v, 1);
	send_frame(f->sv[0][1], 80, 3);
	assert_int_equal(vdrv_wait_used(v, RXQ, 1), 1);

	virtio_dev_park(f->d[0]);
	n = virtio_dev_state_size(f->d[0]);
	assert_true(n <= sizeof(blob));
	assert_int_equal(virtio_dev_save(f->d[0], blob), n);
	/* The target on its own backend: started parked, loaded, let go. */
	v->d = net_new(f, 1, true);
	assert_int_equal(virtio_dev_load(f->d[1], blob, n, err, sizeof(err)), 0);
	virtio_dev_unpark(f->d[1]);
	for (unsigned i = 0; i < 3; i++)
		assert_rarp(got, recv_frame(f->sv[1][1], got, sizeof(got)));
	assert_no_frame(f->sv[1][1]);
	assert_no_frame(f->sv[0][1]); /* the source announces nothing */

	/* The target carries on: the receive buffer posted to the source takes its next frame... */
	send_frame(f->sv[1][1], 90, 4);
	assert_int_equal(vdrv_wait_used(v, RXQ, 2), 2);
	assert_rx(v, 1, 1, 90, 4);
	/* ...and it transmits. */
	post_tx(v, 0, 64, 5);
	assert_int_equal(vdrv_wait_used(v, TXQ, 1), 1);
	assert_int_equal(recv_frame(f->sv[1][1], got, sizeof(got)), 64);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_config_space),
	    T(test_bad_mac_refused),
	    T(test_tx),
	    T(test_rx),
	    T(test_rx_waits_for_buffers),
	    T(test_rx_waits_for_buffers_event_idx),
	    T(test_load_announces),
	};

	alarm(VDRV_ALARM_S); /* a wedged device thread fails the run instead of hanging it */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
