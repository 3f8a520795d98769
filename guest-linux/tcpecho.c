// SPDX-License-Identifier: Apache-2.0
/*
 * tcpecho.c - the TCP echo server of the Linux test guest.
 *
 *   tcpecho PORT
 *
 * Listens on 0.0.0.0:PORT and sends back every byte each client sends, for
 * up to MAX_CLIENTS connections at once (one poll() loop, no threads, no
 * fork: a fork+exec costs ~1 s of emulated kernel code on the CI hosts). A
 * test keeps a connection open through a live migration and checks the echo
 * on the other side. A client's error (a reset, a broken pipe) closes that
 * connection only; the server never exits once it listens. Output lines
 * are specified in docs/linux-guest.md.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CLIENTS 16
#define BUF_SIZE    4096

struct client {
	int fd;
	char peer[32]; /* A.B.C.D:P */
	char buf[BUF_SIZE];
	size_t len, off; /* buf[off..len) is read but not yet sent back */
	unsigned long long echoed;
};

static struct client clients[MAX_CLIENTS];

static void drop(struct client *c, const char *why)
{
	printf("tcpecho: closed %s, %llu bytes echoed%s%s\n", c->peer, c->echoed, why ? ": " : "",
	       why ? why : "");
	close(c->fd);
	c->fd = -1;
}

static void accept_one(int lfd)
{
	struct sockaddr_in sa;
	socklen_t salen = sizeof(sa);
	int fd = accept4(lfd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC),
	    one = 1;
	struct client *c = NULL;

	if (fd < 0) {
		/* A connection reset before we got to it, say: the next one may be fine. */
		printf("tcpecho: accept: %s\n", strerror(errno));
		return;
	}
	for (int i = 0; i < MAX_CLIENTS && !c; i++)
		if (clients[i].fd < 0)
			c = &clients[i];
	/* The listener is not polled while the table is full, so there is a slot. */
	c->fd = fd;
	c->len = c->off = 0;
	c->echoed = 0;
	snprintf(c->peer, sizeof(c->peer), "%s:%u", inet_ntoa(sa.sin_addr),
		 (unsigned)ntohs(sa.sin_port));
	/* Each echo goes out at once, not held back for the ack of the previous one. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	printf("tcpecho: connection from %s\n", c->peer);
}

/*
 * Send what is pending, then read more only once all of it is gone: a
 * client that stops reading stops being read (TCP flow control), and no
 * buffer grows.
 */
static void serve(struct client *c, short revents)
{
	ssize_t n;

	if (c->off < c->len) {
		/* MSG_NOSIGNAL: a peer that went away is an error here, not a SIGPIPE. */
		n = send(c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			drop(c, strerror(errno));
			return;
		}
		if (n > 0) {
			c->off += (size_t)n;
			c->echoed += (unsigned long long)n;
		}
		return;
	}
	if (!(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	n = recv(c->fd, c->buf, sizeof(c->buf), 0);
	if (n == 0) {
		drop(c, NULL);
	} else if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			drop(c, strerror(errno));
	} else {
		c->len = (size_t)n;
		c->off = 0;
		serve(c, 0); /* most echoes go out at once, without another poll */
	}
}

static int listen_on(unsigned port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((unsigned short)port),
				 .sin_addr.s_addr = htonl(INADDR_ANY)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0) {
		printf("tcpecho: socket: %s\n", strerror(errno));
		return -1;
	}
	/* A restarted server may bind while the old connections sit in TIME_WAIT. */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, MAX_CLIENTS)) {
		printf("tcpecho: port %u: %s\n", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	struct pollfd pfd[MAX_CLIENTS + 1];
	struct client *who[MAX_CLIENTS + 1];
	unsigned long port;
	char *end;
	int lfd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	errno = 0;
	port = argc == 2 ? strtoul(argv[1], &end, 10) : 0;
	if (argc != 2 || errno || end == argv[1] || *end || !port || port > 65535) {
		fprintf(stderr, "usage: tcpecho PORT\n");
		return 2;
	}
	lfd = listen_on((unsigned)port);
	if (lfd < 0)
		return 1;
	for (int i = 0; i < MAX_CLIENTS; i++)
		clients[i].fd = -1;
	printf("tcpecho: listening on %lu\n", port);

	for (;;) {
		int n = 0, busy = 0;

		for (int i = 0; i < MAX_CLIENTS; i++) {
			struct client *c = &clients[i];

			if (c->fd < 0)
				continue;
			busy++;
			pfd[n] = (struct pollfd){.fd = c->fd,
						 .events = c->off < c->len ? POLLOUT : POLLIN};
			who[n++] = c;
		}
		/* A full table leaves new connections waiting in the listen backlog. */
		if (busy < MAX_CLIENTS) {
			pfd[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
			who[n++] = NULL;
		}
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno != EINTR)
				printf("tcpecho: poll: %s\n", strerror(errno));
			continue;
		}
		for (int i = 0; i < n; i++) {
			if (!pfd[i].revents)
				continue;
			if (who[i])
				serve(who[i], pfd[i].revents);
			else
				accept_one(lfd);
		}
	}
}
