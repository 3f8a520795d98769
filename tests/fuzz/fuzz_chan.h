/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_chan.h - feeds a fuzz input to the migration channel reader as the
 * bytes a peer sent: the input goes into one end of an AF_UNIX socketpair,
 * whose write side is then shut, and a struct mig_chan reads the other, so
 * chan_recv_hello(), chan_recv_rec(), chan_recv_record() and chan_read()
 * run exactly as on a TCP connection (recv() needs a socket: no pipe).
 * The end of the input is the peer closing the connection (-ENODATA).
 *
 * One input at a time (libFuzzer calls its targets from one thread).
 */
#ifndef VMM_FUZZ_CHAN_H
#define VMM_FUZZ_CHAN_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"

/*
 * Inputs stay far below the socket buffer (fuzz.sh sets -max_len), so one
 * write never blocks; a longer input is cut where the buffer is full.
 */
static inline int fuzz_chan_open(struct mig_chan *c, const uint8_t *data, size_t size,
				 const char *name)
{
	int sv[2], buf = 4 << 20;
	size_t off = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("fuzz: socketpair");
		abort(); /* the harness, not the input: stop loudly */
	}
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	while (off < size) {
		ssize_t n = send(sv[1], data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(sv[1]);
	memset(c, 0, sizeof(*c));
	c->fd = sv[0];
	snprintf(c->name, sizeof(c->name), "%s", name);
	return 0;
}

#endif /* VMM_FUZZ_CHAN_H */
