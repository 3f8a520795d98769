/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls_first.c - the target's first bytes as a TLS client's handshake read
 * them, and the plain ERROR record they may be (tls_first.h).
 */
#include "tls_first.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "codec.h"

static long keep(BIO *b, int oper, const char *argp, size_t len, int argi, long argl, int ret,
		 size_t *processed)
{
	struct tls_first *f = (struct tls_first *)BIO_get_callback_arg(b);
	size_t n;

	(void)len;
	(void)argi;
	(void)argl;
	if (oper != (BIO_CB_READ | BIO_CB_RETURN) || ret <= 0 || !processed || !f)
		return ret;
	n = sizeof(f->b) - f->len;
	n = *processed < n ? *processed : n;
	memcpy(f->b + f->len, argp, n);
	f->len += n;
	return ret;
}

void tls_first_watch(BIO *bio, struct tls_first *f)
{
	BIO_set_callback_arg(bio, (char *)f);
	BIO_set_callback_ex(bio, keep);
}

void tls_first_unwatch(BIO *bio)
{
	BIO_set_callback_ex(bio, NULL);
	BIO_set_callback_arg(bio, NULL);
}

/* Exactly len more bytes into buf from the non-blocking fd; false if they do not come. */
static bool read_rest(int fd, uint8_t *buf, size_t len)
{
	while (len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR) ||
			   (errno == EAGAIN && poll(&p, 1, 1000) != 1)) {
			return false;
		}
	}
	return true;
}

bool tls_first_refusal(struct tls_first *f, int fd, char *msg, size_t len)
{
	struct mig_rec_hdr h;
	size_t have = f->len;
	char why[MIG_ERROR_MAX + 1];

	if (!have || (f->b[0] >= 20 && f->b[0] <= 23))
		return false;
	if (have < MIG_REC_HDR_LEN && !read_rest(fd, f->b + have, MIG_REC_HDR_LEN - have))
		return false;
	have = have < MIG_REC_HDR_LEN ? MIG_REC_HDR_LEN : have;
	mig_rec_hdr_decode(f->b, &h);
	if (h.type != MIG_REC_ERROR || h.len > MIG_ERROR_MAX || have > MIG_REC_HDR_LEN + h.len ||
	    !read_rest(fd, f->b + have, MIG_REC_HDR_LEN + h.len - have))
		return false;
	if (mig_error_decode(f->b + MIG_REC_HDR_LEN, h.len, why, sizeof(why), NULL, 0))
		return false;
	/* A vmm target's own refusal: busy, or a target without TLS. */
	snprintf(msg, len, "the target refused the connection before TLS: %s%s", why,
		 strncmp(why, "busy", 4) ? " (does it use TLS?)" : "");
	return true;
}
