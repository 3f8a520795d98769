/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net_proto.h - the net workload's protocol code: ARP and ICMP echo
 * answers, the Internet checksum, and the ip= of the kernel command line.
 *
 * Pure functions over byte buffers, with no firmware dependency (only the
 * compiler's freestanding headers), so the host unit test
 * (test_net_proto.c) compiles this file as it is. Frames are Ethernet II
 * without FCS. Every input is untrusted: each length is checked before a
 * byte is read, and anything unexpected is ignored (no answer).
 */
#ifndef FW_NET_PROTO_H
#define FW_NET_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETH_ALEN      6u
#define ETH_HLEN      14u
#define ETH_MIN_FRAME 60u   /* shorter frames are padded to this (no FCS) */
#define ETH_MAX_FRAME 1514u /* 1500 bytes of payload */

#define ETH_P_IP  0x0800u
#define ETH_P_ARP 0x0806u

/* Who we are: the device's MAC and the ip= address. */
struct net_id {
	uint8_t mac[ETH_ALEN];
	uint8_t ip[4];
};

enum net_answer_kind {
	NET_ANSWER_NONE,
	NET_ANSWER_ARP,	 /* an ARP reply for our IP */
	NET_ANSWER_ICMP, /* an ICMP echo reply */
};

/*
 * The answer to the frame in[0..len), written to out[0..cap) (not
 * overlapping in): returns its length (at least ETH_MIN_FRAME, padded with
 * zeros) and sets *kind, or returns 0 (*kind NET_ANSWER_NONE) for a frame
 * that gets none: not an ARP request for our IP nor an ICMP echo request to
 * it, malformed, a fragment, bad checksums, from a multicast source, to a
 * multicast address (except ARP's broadcast), or an answer over cap.
 */
size_t net_answer(const struct net_id *me, const uint8_t *in, size_t len, uint8_t *out, size_t cap,
		  enum net_answer_kind *kind);

/*
 * A gratuitous ARP (a broadcast request for our own IP, RFC 5227 2.4
 * announcement) so that a bridge learns where our MAC is. Returns its
 * length, or 0 when cap is too small.
 */
size_t net_gratuitous_arp(const struct net_id *me, uint8_t *out, size_t cap);

/*
 * The Internet checksum (RFC 1071) of p[0..len): the one's complement of
 * the one's complement sum of its big-endian 16-bit words (an odd last
 * byte padded with zero). Over data that holds a valid checksum it is 0.
 */
uint16_t net_checksum(const uint8_t *p, size_t len);

/*
 * The IPv4 address of the first `ip=` word of a kernel command line, as
 * Linux's ip=<client-ip>:<server-ip>:... reads it (only the first field).
 * 0 and ip set; -1 when there is no ip= word; -2 when its first field is
 * not a dotted quad A.B.C.D (each 0..255).
 */
int net_parse_ip(const char *cmdline, uint8_t ip[4]);

#endif /* FW_NET_PROTO_H */
