// SPDX-License-Identifier: Apache-2.0
/*
 * test_net_proto.c - host unit test of the firmware's net_proto.c (the net
 * workload's ARP/ICMP answers, checksum and ip= parsing), compiled for the
 * host with the same source the firmware uses: that file depends on the
 * compiler's freestanding headers only. Built with the host's flags, so an
 * ASan build checks that no malformed or truncated frame is read past its
 * end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net_proto.h"

static const struct net_id me = {
    .mac = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56},
    .ip = {10, 0, 2, 15},
};
static const uint8_t peer_mac[6] = {0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};
static const uint8_t peer_ip[4] = {10, 0, 2, 2};
static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static unsigned get16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/* An ARP request from the peer asking for `tpa`, to `dst`. Returns 42. */
static size_t arp_request(uint8_t *f, const uint8_t *dst, const uint8_t *tpa)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, peer_mac, 6);
	put16(f + 12, 0x0806);
	put16(f + 14, 1);
	put16(f + 16, 0x0800);
	f[18] = 6;
	f[19] = 4;
	put16(f + 20, 1);
	memcpy(f + 22, peer_mac, 6);
	memcpy(f + 28, peer_ip, 4);
	memset(f + 32, 0, 6);
	memcpy(f + 38, tpa, 4);
	return 42;
}

/*
 * An ICMP echo request from the peer to us with `opt` bytes of IP options
 * (a multiple of 4) and `data` bytes of payload, checksums right. Returns
 * its length.
 */
static size_t echo_request(uint8_t *f, size_t opt, size_t data)
{
	uint8_t *ip = f + 14, *icmp;
	size_t ihl = 20 + opt, i;

	memcpy(f, me.mac, 6);
	memcpy(f + 6, peer_mac, 6);
	put16(f + 12, 0x0800);
	ip[0] = (uint8_t)(0x40 | ihl / 4);
	ip[1] = 0;
	put16(ip + 2, (unsigned)(ihl + 8 + data));
	put16(ip + 4, 0x1234);
	put16(ip + 6, 0x4000); /* DF: not a fragment */
	ip[8] = 64;
	ip[9] = 1;
	put16(ip + 10, 0);
	memcpy(ip + 12, peer_ip, 4);
	memcpy(ip + 16, me.ip, 4);
	memset(ip + 20, 1, opt); /* NOP options */
	put16(ip + 10, net_checksum(ip, ihl));
	icmp = ip + ihl;
	icmp[0] = 8;
	icmp[1] = 0;
	put16(icmp + 2, 0);
	put16(icmp + 4, 0xbeef); /* identifier */
	put16(icmp + 6, 7);	 /* sequence */
	for (i = 0; i < data; i++)
		icmp[8 + i] = (uint8_t)(i * 7 + 3);
	put16(icmp + 2, net_checksum(icmp, 8 + data));
	return 14 + ihl + 8 + data;
}

static void test_checksum(void **state)
{
	/* RFC 1071 section 3's example: the sum is 0xddf2. */
	const uint8_t rfc[8] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
	const uint8_t odd[3] = {0x12, 0x34, 0x56};
	uint8_t withsum[10];

	(void)state;
	assert_int_equal(net_checksum(rfc, 8), (uint16_t)~0xddf2);
	assert_int_equal(net_checksum(odd, 3), (uint16_t) ~(0x1234 + 0x5600));
	assert_int_equal(net_checksum(rfc, 0), 0xffff);
	memcpy(withsum, rfc, 8);
	put16(withsum + 8, net_checksum(rfc, 8));
	assert_int_equal(net_checksum(withsum, 10), 0);
}

static void test_parse_ip(void **state)
{
	uint8_t ip[4] = {0};

	(void)state;
	assert_int_equal(net_parse_ip("console=ttyS0 ip=10.0.2.15", ip), 0);
	assert_memory_equal(ip, ((uint8_t[]){10, 0, 2, 15}), 4);
	assert_int_equal(
	    net_parse_ip("ip=192.168.1.200:10.0.2.2::255.255.255.0::eth0:off quiet", ip), 0);
	assert_memory_equal(ip, ((uint8_t[]){192, 168, 1, 200}), 4);
	assert_int_equal(net_parse_ip("a  ip=0.0.0.255\tb", ip), 0);
	assert_memory_equal(ip, ((uint8_t[]){0, 0, 0, 255}), 4);
	assert_int_equal(net_parse_ip("", ip), -1);
	assert_int_equal(net_parse_ip("console=ttyS0 vmip=1.2.3.4 ipx=1.2.3.4", ip), -1);
	assert_int_equal(net_parse_ip("ip=dhcp", ip), -2);
	assert_int_equal(net_parse_ip("ip=", ip), -2);
	assert_int_equal(net_parse_ip("ip=:1.2.3.4", ip), -2);
	assert_int_equal(net_parse_ip("ip=1.2.3", ip), -2);
	assert_int_equal(net_parse_ip("ip=1.2.3.4.5", ip), -2);
	assert_int_equal(net_parse_ip("ip=1.2.3.", ip), -2);
	assert_int_equal(net_parse_ip("ip=1..3.4", ip), -2);
	assert_int_equal(net_parse_ip("ip=256.1.1.1", ip), -2);
	assert_int_equal(net_parse_ip("ip=1.2.3.4x", ip), -2);
	assert_int_equal(net_parse_ip("ip=0001.2.3.4", ip), -2);
}

static void test_arp_reply(void **state)
{
	uint8_t in[64], out[1600];
	enum net_answer_kind kind;
	size_t n;

	(void)state;
	n = arp_request(in, bcast, me.ip);
	assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 60);
	assert_int_equal(kind, NET_ANSWER_ARP);
	assert_memory_equal(out, peer_mac, 6);
	assert_memory_equal(out + 6, me.mac, 6);
	assert_int_equal(get16(out + 12), 0x0806);
	assert_int_equal(get16(out + 14), 1);
	assert_int_equal(get16(out + 16), 0x0800);
	assert_int_equal(out[18], 6);
	assert_int_equal(out[19], 4);
	assert_int_equal(get16(out + 20), 2); /* reply */
	assert_memory_equal(out + 22, me.mac, 6);
	assert_memory_equal(out + 28, me.ip, 4);
	assert_memory_equal(out + 32, peer_mac, 6);
	assert_memory_equal(out + 38, peer_ip, 4);
	for (n = 42; n < 60; n++)
		assert_int_equal(out[n], 0);

	/* Unicast to us (a cache refresh) is answered too. */
	n = arp_request(in, me.mac, me.ip);
	assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 60);

	/* Not for us: another IP, another MAC, truncated, a reply, no room. */
	n = arp_request(in, bcast, peer_ip);
	assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 0);
	assert_int_equal(kind, NET_ANSWER_NONE);
	n = arp_request(in, peer_mac, me.ip);
	assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 0);
	n = arp_request(in, bcast, me.ip);
	assert_int_equal(net_answer(&me, in, n - 1, out, sizeof(out), &kind), 0);
	put16(in + 20, 2);
	assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 0);
	n = arp_request(in, bcast, me.ip);
	assert_int_equal(net_answer(&me, in, n, out, 59, &kind), 0);
	/* Someone else claiming our IP, or a multicast sender. */
	memcpy(in + 28, me.ip, 4);
	assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 0);
	n = arp_request(in, bcast, me.ip);
	in[6] |= 1;
	assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 0);
}

/* Checks out[0..n) is the echo reply to the request in `in`. */
static void check_echo_reply(const uint8_t *in, size_t opt, size_t data, const uint8_t *out,
			     size_t n)
{
	const uint8_t *ip = out + 14, *icmp = ip + 20, *req_icmp = in + 14 + 20 + opt;
	size_t want = 14 + 20 + 8 + data;

	assert_int_equal(n, want < 60 ? 60 : want);
	assert_memory_equal(out, peer_mac, 6);
	assert_memory_equal(out + 6, me.mac, 6);
	assert_int_equal(get16(out + 12), 0x0800);
	assert_int_equal(ip[0], 0x45);
	assert_int_equal(get16(ip + 2), 20 + 8 + data);
	assert_int_equal(get16(ip + 6) & 0x3fff, 0);
	assert_true(ip[8] > 0);
	assert_int_equal(ip[9], 1);
	assert_memory_equal(ip + 12, me.ip, 4);
	assert_memory_equal(ip + 16, peer_ip, 4);
	assert_int_equal(net_checksum(ip, 20), 0);
	assert_int_equal(icmp[0], 0);
	assert_int_equal(icmp[1], 0);
	assert_memory_equal(icmp + 4, req_icmp + 4, 4 + data); /* id, seq, data */
	assert_int_equal(net_checksum(icmp, 8 + data), 0);
}

static void test_echo_reply(void **state)
{
	static const size_t opts[] = {0, 4, 40};
	static const size_t datas[] = {0, 1, 56, 57, 1472 - 40};
	uint8_t in[1600], out[1600];
	enum net_answer_kind kind;
	size_t i, j, n, r;

	(void)state;
	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		for (j = 0; j < sizeof(datas) / sizeof(datas[0]); j++) {
			n = echo_request(in, opts[i], datas[j]);
			memset(out, 0xa5, sizeof(out));
			r = net_answer(&me, in, n, out, sizeof(out), &kind);
			assert_int_equal(kind, NET_ANSWER_ICMP);
			check_echo_reply(in, opts[i], datas[j], out, r);
		}

	/* The largest frame, 1514 bytes; one byte more is dropped. */
	n = echo_request(in, 0, 1472);
	assert_int_equal(n, 1514);
	r = net_answer(&me, in, n, out, sizeof(out), &kind);
	check_echo_reply(in, 0, 1472, out, r);
	n = echo_request(in, 0, 1473);
	assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 0);
	/* An answer larger than the buffer is not written. */
	n = echo_request(in, 0, 100);
	assert_int_equal(net_answer(&me, in, n, out, 14 + 20 + 8 + 99, &kind), 0);

	/* Ethernet padding after the datagram is not echoed. */
	n = echo_request(in, 0, 4);
	memset(in + n, 0xee, 60 - n);
	r = net_answer(&me, in, 60, out, sizeof(out), &kind);
	check_echo_reply(in, 0, 4, out, r);
}

static void test_echo_ignored(void **state)
{
	uint8_t in[1600], out[1600];
	enum net_answer_kind kind;
	size_t n;

	(void)state;
#define EXPECT_NONE(mutate)                                                                        \
	do {                                                                                       \
		n = echo_request(in, 4, 32);                                                       \
		mutate;                                                                            \
		assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 0);              \
		assert_int_equal(kind, NET_ANSWER_NONE);                                           \
	} while (0)
	EXPECT_NONE(in[14 + 10] ^= 1);		      /* bad IP header checksum */
	EXPECT_NONE(in[14 + 24 + 8] ^= 1);	      /* bad ICMP checksum */
	EXPECT_NONE(memcpy(in, bcast, 6));	      /* to broadcast */
	EXPECT_NONE(in[0] = 0x01);		      /* to multicast */
	EXPECT_NONE(in[6] |= 1);		      /* from multicast */
	EXPECT_NONE(in[14 + 19] = 16);		      /* to another IP (checksum off too) */
	EXPECT_NONE(put16(in + 12, 0x86dd));	      /* IPv6 */
	EXPECT_NONE(in[14] = 0x65);		      /* version 6 */
	EXPECT_NONE(in[14] = 0x44);		      /* IHL 4 */
	EXPECT_NONE(in[14] = 0x4f);		      /* IHL past the datagram */
	EXPECT_NONE(put16(in + 14 + 2, 23));	      /* total length below IHL */
	EXPECT_NONE(put16(in + 14 + 2, (unsigned)n)); /* total length past the frame */
	EXPECT_NONE(n -= 1);			      /* truncated frame */
	EXPECT_NONE(n = 14 + 19);		      /* not even an IP header */
	EXPECT_NONE(n = 13);			      /* not even an Ethernet header */
	EXPECT_NONE(in[14 + 24] = 0);		      /* an echo reply, not a request */
	EXPECT_NONE(in[14 + 9] = 17);		      /* UDP */
	EXPECT_NONE(in[14 + 12] = 224);		      /* from a multicast IP */
	EXPECT_NONE(in[14 + 12] = 0);		      /* from 0.x.x.x */
#undef EXPECT_NONE

	/* A fragment (MF, or an offset), its checksum made right. */
	n = echo_request(in, 0, 32);
	put16(in + 14 + 6, 0x2000);
	put16(in + 14 + 10, 0);
	put16(in + 14 + 10, net_checksum(in + 14, 20));
	assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 0);
	/* An ICMP message shorter than its 8-byte header, checksums right. */
	n = echo_request(in, 0, 0);
	put16(in + 14 + 2, 20 + 6);
	put16(in + 14 + 10, 0);
	put16(in + 14 + 10, net_checksum(in + 14, 20));
	assert_int_equal(net_answer(&me, in, n, out, sizeof(out), &kind), 0);
}

/* Every prefix of valid and of random frames: no answer to a cut one, no read past it. */
static void test_truncated_and_random(void **state)
{
	enum net_answer_kind kind;
	uint8_t out[1600];
	size_t n, len, i;
	unsigned seed = 1;

	(void)state;
	for (int which = 0; which < 2; which++) {
		uint8_t full[1600];

		n = which ? arp_request(full, bcast, me.ip) : echo_request(full, 8, 64);
		for (len = 0; len < n; len++) {
			/* An exact-size heap copy, so ASan sees a read past len. */
			uint8_t *cut = malloc(len ? len : 1);

			memcpy(cut, full, len);
			assert_int_equal(net_answer(&me, cut, len, out, sizeof(out), &kind), 0);
			free(cut);
		}
	}
	for (i = 0; i < 20000; i++) {
		uint8_t *f;

		len = (size_t)rand_r(&seed) % 1600;
		f = malloc(len ? len : 1);
		for (n = 0; n < len; n++)
			f[n] = (uint8_t)rand_r(&seed);
		if (len >= 14) {
			memcpy(f, i & 1 ? me.mac : bcast, 6);
			put16(f + 12, i & 2 ? 0x0800 : 0x0806);
		}
		if (len >= 15 && (i & 2))
			f[14] = (uint8_t)(0x40 | (f[14] & 0xf));
		if (net_answer(&me, f, len, out, sizeof(out), &kind))
			assert_true(kind != NET_ANSWER_NONE);
		free(f);
	}
}

static void test_gratuitous_arp(void **state)
{
	uint8_t out[64];
	static const uint8_t zero[6];

	(void)state;
	assert_int_equal(net_gratuitous_arp(&me, out, 59), 0);
	assert_int_equal(net_gratuitous_arp(&me, out, sizeof(out)), 60);
	assert_memory_equal(out, bcast, 6);
	assert_memory_equal(out + 6, me.mac, 6);
	assert_int_equal(get16(out + 12), 0x0806);
	assert_int_equal(get16(out + 20), 1);
	assert_memory_equal(out + 22, me.mac, 6);
	assert_memory_equal(out + 28, me.ip, 4);
	assert_memory_equal(out + 32, zero, 6);
	assert_memory_equal(out + 38, me.ip, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_checksum),	   cmocka_unit_test(test_parse_ip),
	    cmocka_unit_test(test_arp_reply),	   cmocka_unit_test(test_echo_reply),
	    cmocka_unit_test(test_echo_ignored),   cmocka_unit_test(test_truncated_and_random),
	    cmocka_unit_test(test_gratuitous_arp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
