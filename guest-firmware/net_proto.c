// SPDX-License-Identifier: Apache-2.0
/*
 * net_proto.c - ARP and ICMP echo answers (see net_proto.h).
 *
 * Byte-wise on purpose: the frame sits 12 bytes into its buffer (after the
 * virtio-net header), so no field is aligned, and the firmware has no libc
 * (hence the local copy and fill loops).
 */
#include "net_proto.h"

#define ARP_LEN		28u /* Ethernet/IPv4 ARP */
#define ARP_HTYPE_ETHER 1u
#define ARP_OP_REQUEST	1u
#define ARP_OP_REPLY	2u

#define IP_HLEN_MIN	  20u
#define IP_PROTO_ICMP	  1u
#define IP_FRAG_MASK	  0x3fffu /* MF and the fragment offset */
#define IP_TTL		  64u
#define ICMP_HLEN	  8u
#define ICMP_ECHO_REPLY	  0u
#define ICMP_ECHO_REQUEST 8u

static void copy(uint8_t *d, const uint8_t *s, size_t n)
{
	while (n--)
		*d++ = *s++;
}

static void fill(uint8_t *d, uint8_t c, size_t n)
{
	while (n--)
		*d++ = c;
}

static bool same(const uint8_t *a, const uint8_t *b, size_t n)
{
	while (n--)
		if (*a++ != *b++)
			return false;
	return true;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static bool is_multicast(const uint8_t *mac)
{
	return mac[0] & 1u; /* the group bit; broadcast included */
}

static bool is_broadcast(const uint8_t *mac)
{
	static const uint8_t bcast[ETH_ALEN] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

	return same(mac, bcast, ETH_ALEN);
}

uint16_t net_checksum(const uint8_t *p, size_t len)
{
	uint64_t sum = 0;

	for (; len > 1; p += 2, len -= 2)
		sum += get16(p);
	if (len)
		sum += (uint32_t)p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffffu) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Pads a frame to the Ethernet minimum; returns its final length. */
static size_t pad(uint8_t *out, size_t len)
{
	if (len < ETH_MIN_FRAME) {
		fill(out + len, 0, ETH_MIN_FRAME - len);
		len = ETH_MIN_FRAME;
	}
	return len;
}

static void eth_header(uint8_t *out, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	copy(out, dst, ETH_ALEN);
	copy(out + ETH_ALEN, src, ETH_ALEN);
	put16(out + 12, type);
}

/* An Ethernet/IPv4 ARP packet at a: operation, sender and target. */
static void arp_body(uint8_t *a, uint16_t op, const uint8_t *sha, const uint8_t *spa,
		     const uint8_t *tha, const uint8_t *tpa)
{
	put16(a, ARP_HTYPE_ETHER);
	put16(a + 2, ETH_P_IP);
	a[4] = ETH_ALEN;
	a[5] = 4;
	put16(a + 6, op);
	copy(a + 8, sha, ETH_ALEN);
	copy(a + 14, spa, 4);
	copy(a + 18, tha, ETH_ALEN);
	copy(a + 24, tpa, 4);
}

static size_t answer_arp(const struct net_id *me, const uint8_t *in, size_t len, uint8_t *out,
			 size_t cap)
{
	const uint8_t *a = in + ETH_HLEN, *sha = a + 8, *spa = a + 14, *tpa = a + 24;

	if (len < ETH_HLEN + ARP_LEN || cap < ETH_MIN_FRAME)
		return 0;
	if (!is_broadcast(in) && !same(in, me->mac, ETH_ALEN))
		return 0;
	if (get16(a) != ARP_HTYPE_ETHER || get16(a + 2) != ETH_P_IP || a[4] != ETH_ALEN ||
	    a[5] != 4 || get16(a + 6) != ARP_OP_REQUEST)
		return 0;
	/* Only for our IP; a request from our own IP is a conflict, not a question. */
	if (!same(tpa, me->ip, 4) || same(spa, me->ip, 4) || is_multicast(sha))
		return 0;
	eth_header(out, sha, me->mac, ETH_P_ARP);
	arp_body(out + ETH_HLEN, ARP_OP_REPLY, me->mac, me->ip, sha, spa);
	return pad(out, ETH_HLEN + ARP_LEN);
}

static size_t answer_icmp(const struct net_id *me, const uint8_t *in, size_t len, uint8_t *out,
			  size_t cap)
{
	const uint8_t *ip = in + ETH_HLEN, *icmp;
	size_t ihl, total, ilen, n;
	uint8_t *rip, *ricmp;

	if (len < ETH_HLEN + IP_HLEN_MIN || !same(in, me->mac, ETH_ALEN))
		return 0; /* pings to broadcast or multicast get no answer */
	ihl = (size_t)(ip[0] & 0xfu) * 4u;
	total = get16(ip + 2);
	if (ip[0] >> 4 != 4 || ihl < IP_HLEN_MIN || total < ihl || total > len - ETH_HLEN)
		return 0;
	if ((get16(ip + 6) & IP_FRAG_MASK) || ip[9] != IP_PROTO_ICMP || !same(ip + 16, me->ip, 4))
		return 0;
	/* No answer to 0.0.0.0, multicast, broadcast or class E sources. */
	if (ip[12] == 0 || ip[12] >= 224 || net_checksum(ip, ihl))
		return 0;
	icmp = ip + ihl;
	ilen = total - ihl; /* the frame may carry padding after the datagram */
	if (ilen < ICMP_HLEN || icmp[0] != ICMP_ECHO_REQUEST || icmp[1] != 0 ||
	    net_checksum(icmp, ilen))
		return 0;
	n = ETH_HLEN + IP_HLEN_MIN + ilen;
	if (n > cap || cap < ETH_MIN_FRAME)
		return 0;

	eth_header(out, in + ETH_ALEN, me->mac, ETH_P_IP);
	/* A fresh 20-byte header: the request's options are not echoed. */
	rip = out + ETH_HLEN;
	rip[0] = 0x45;
	rip[1] = ip[1]; /* TOS */
	put16(rip + 2, (uint32_t)(IP_HLEN_MIN + ilen));
	copy(rip + 4, ip + 4, 2); /* identification */
	put16(rip + 6, 0);
	rip[8] = IP_TTL;
	rip[9] = IP_PROTO_ICMP;
	put16(rip + 10, 0);
	copy(rip + 12, me->ip, 4);
	copy(rip + 16, ip + 12, 4);
	put16(rip + 10, net_checksum(rip, IP_HLEN_MIN));

	/* Identifier, sequence number and data as they came. */
	ricmp = rip + IP_HLEN_MIN;
	copy(ricmp, icmp, ilen);
	ricmp[0] = ICMP_ECHO_REPLY;
	ricmp[1] = 0;
	put16(ricmp + 2, 0);
	put16(ricmp + 2, net_checksum(ricmp, ilen));
	return pad(out, n);
}

size_t net_answer(const struct net_id *me, const uint8_t *in, size_t len, uint8_t *out, size_t cap,
		  enum net_answer_kind *kind)
{
	size_t n = 0;

	*kind = NET_ANSWER_NONE;
	if (len < ETH_HLEN || len > ETH_MAX_FRAME || is_multicast(in + ETH_ALEN))
		return 0;
	switch (get16(in + 12)) {
	case ETH_P_ARP:
		n = answer_arp(me, in, len, out, cap);
		if (n)
			*kind = NET_ANSWER_ARP;
		break;
	case ETH_P_IP:
		n = answer_icmp(me, in, len, out, cap);
		if (n)
			*kind = NET_ANSWER_ICMP;
		break;
	}
	return n;
}

size_t net_gratuitous_arp(const struct net_id *me, uint8_t *out, size_t cap)
{
	static const uint8_t bcast[ETH_ALEN] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t zero[ETH_ALEN];

	if (cap < ETH_MIN_FRAME)
		return 0;
	eth_header(out, bcast, me->mac, ETH_P_ARP);
	arp_body(out + ETH_HLEN, ARP_OP_REQUEST, me->mac, me->ip, zero, me->ip);
	return pad(out, ETH_HLEN + ARP_LEN);
}

/* One dotted-quad field [s, end): 0 and ip set, or -1. */
static int parse_quad(const char *s, const char *end, uint8_t ip[4])
{
	uint32_t part = 0, v = 0, digits = 0;

	for (; s <= end; s++) {
		if (s < end && *s >= '0' && *s <= '9') {
			v = v * 10u + (uint32_t)(*s - '0');
			if (++digits > 3 || v > 255)
				return -1;
			continue;
		}
		if (!digits || (s < end && *s != '.') || (s == end && part != 3))
			return -1;
		ip[part++] = (uint8_t)v;
		v = 0;
		digits = 0;
		if (s < end && part == 4)
			return -1; /* a fifth part */
	}
	return 0;
}

int net_parse_ip(const char *c, uint8_t ip[4])
{
	while (*c) {
		const char *w = c, *f;

		while (*c && *c != ' ' && *c != '\t' && *c != '\n')
			c++;
		if (c - w >= 3 && w[0] == 'i' && w[1] == 'p' && w[2] == '=') {
			for (f = w + 3; f < c && *f != ':'; f++)
				;
			return parse_quad(w + 3, f, ip) ? -2 : 0;
		}
		while (*c == ' ' || *c == '\t' || *c == '\n')
			c++;
	}
	return -1;
}
