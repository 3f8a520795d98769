/* SPDX-License-Identifier: Apache-2.0 */
#include "hostport.h"
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tls_ctx {
	SSL_CTX *ctx;
	bool server;
};

struct tls_conn {
	SSL *ssl;
	int fd;		      /* the connected socket, made non-blocking; not owned */
	pthread_mutex_t lock; /* every SSL_* call on ssl */
	char why[160];	      /* the handshake's OpenSSL error, for the message */
	bool accepted;	      /* client: the server's session ticket arrived */
};

/*
 * In TLS 1.3 the client finishes its handshake before the server has
 * checked the client's certificate. The server's one session ticket comes
 * only after that check passed: the client waits for it, so a rejected
 * source learns why at once instead of as a reset connection later.
 */
static int on_ticket(SSL *ssl, SSL_SESSION *sess)
{
	struct tls_conn *tc = SSL_get_app_data(ssl);

	(void)sess;
	if (tc)
		tc->accepted = true;
	return 0; /* not kept: no resumption */
}

/* The newest OpenSSL error as text (the queue is per thread). */
static const char *ssl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_get_error();

	if (!e)
		return "unknown error";
	ERR_error_string_n(e, buf, len);
	ERR_clear_error();
	return buf;
}

int tls_ctx_new(struct tls_ctx **out, bool server, const struct tls_files *cfg, char *err,
		size_t errlen)
{
	struct tls_ctx *t;
	char why[256];
	const char *step;

	*out = NULL;
	if (!cfg->tls_cert[0] && !cfg->tls_key[0] && !cfg->tls_ca[0])
		return 0;
	if (!cfg->tls_cert[0] || !cfg->tls_key[0] || !cfg->tls_ca[0]) {
		snprintf(err, errlen,
			 "TLS needs tls_cert, tls_key and tls_ca together "
			 "(a certificate, its key, and the CA that signs the peer's)");
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->server = server;
	t->ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	step = "creating the TLS context";
	if (!t->ctx)
		goto fail;
	step = "TLS 1.3 only";
	if (!SSL_CTX_set_min_proto_version(t->ctx, TLS1_3_VERSION))
		goto fail;
	step = cfg->tls_cert;
	if (SSL_CTX_use_certificate_chain_file(t->ctx, cfg->tls_cert) != 1)
		goto fail;
	step = cfg->tls_key;
	if (SSL_CTX_use_PrivateKey_file(t->ctx, cfg->tls_key, SSL_FILETYPE_PEM) != 1)
		goto fail;
	step = "the key does not match the certificate";
	if (SSL_CTX_check_private_key(t->ctx) != 1)
		goto fail;
	step = cfg->tls_ca;
	if (SSL_CTX_load_verify_locations(t->ctx, cfg->tls_ca, NULL) != 1)
		goto fail;
	/* Both sides prove who they are: the target only takes a VM from a known source. */
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	/* Long-lived bulk connections: partial writes, buffers that move between retries. */
	SSL_CTX_set_mode(t->ctx,
			 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION);
	if (server) {
		/* Tickets need a session id context once client certificates are verified. */
		SSL_CTX_set_session_id_context(t->ctx, (const unsigned char *)"vmm-migration", 13);
		SSL_CTX_set_num_tickets(t->ctx, 1);
	} else {
		SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_CLIENT |
							   SSL_SESS_CACHE_NO_INTERNAL_STORE);
		SSL_CTX_sess_set_new_cb(t->ctx, on_ticket);
	}
	*out = t;
	return 0;
fail:
	snprintf(err, errlen, "TLS: %s: %s", step, ssl_reason(why, sizeof(why)));
	tls_ctx_free(t);
	return -EINVAL;
}

void tls_ctx_free(struct tls_ctx *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

void tls_conn_free(struct tls_conn *tc)
{
	if (!tc)
		return;
	/* No close_notify: END records frame the stream, and a peer that peeks for EOF sees one. */
	SSL_free(tc->ssl);
	pthread_mutex_destroy(&tc->lock);
	free(tc);
}

/* Waits for the socket to be readable or writable; 0, -ETIMEDOUT or -errno. */
static int wait_io(int fd, uint64_t timeout_ms, short events)
{
	struct pollfd p = {.fd = fd, .events = events};
	int n;

	do
		n = poll(&p, 1, timeout_ms ? (int)timeout_ms : -1);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return -ETIMEDOUT;
	return n < 0 ? -errno : 0;
}

/*
 * An OpenSSL error from the peer's alert: certificate alerts (TLS 1.3
 * servers reject a client certificate only after the client finished its
 * handshake, so the client learns it on its next read or write) become
 * -EKEYREJECTED, anything else -EPROTO.
 */
static int ssl_failure(void)
{
	unsigned long e = ERR_peek_last_error();
	int reason = ERR_GET_REASON(e);

	ERR_clear_error();
	/* OpenSSL 3 reports a peer that closed without close_notify this way. */
	if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)
		return -ENODATA;
	if (reason > SSL_AD_REASON_OFFSET) {
		int alert = reason - SSL_AD_REASON_OFFSET;

		if ((alert >= SSL_AD_BAD_CERTIFICATE && alert <= SSL_AD_UNKNOWN_CA) ||
		    alert == SSL_AD_ACCESS_DENIED || alert == SSL_AD_CERTIFICATE_REQUIRED)
			return -EKEYREJECTED;
	}
	return -EPROTO;
}

/* After a reset: the peer may have said why in an alert that is still queued. */
static int alert_behind_reset(struct tls_conn *tc, int err)
{
	uint8_t b[64];
	size_t n;
	int r;

	pthread_mutex_lock(&tc->lock);
	r = SSL_read_ex(tc->ssl, b, sizeof(b), &n);
	r = r > 0 ? SSL_ERROR_NONE : SSL_get_error(tc->ssl, r);
	pthread_mutex_unlock(&tc->lock);
	if (r == SSL_ERROR_SSL) {
		int why = ssl_failure();

		return why == -ENODATA ? err : why;
	}
	ERR_clear_error();
	return err;
}

enum ssl_op { OP_HANDSHAKE, OP_READ, OP_WRITE, OP_AWAIT_TICKET };

/*
 * One SSL call under the lock; on WANT_READ/WANT_WRITE waits outside it and
 * retries. Returns > 0 bytes (1 for a finished handshake or an arrived
 * ticket) or -errno. OP_AWAIT_TICKET peeks (no application data is
 * consumed) until the server's ticket came: see on_ticket().
 */
static long ssl_call(struct tls_conn *tc, uint64_t timeout_ms, enum ssl_op op, void *buf,
		     size_t len)
{
	for (;;) {
		size_t done = 0;
		int r, e, ret;

		pthread_mutex_lock(&tc->lock);
		if (op == OP_HANDSHAKE)
			r = SSL_do_handshake(tc->ssl);
		else if (op == OP_READ)
			r = SSL_read_ex(tc->ssl, buf, len, &done);
		else if (op == OP_WRITE)
			r = SSL_write_ex(tc->ssl, buf, len, &done);
		else
			r = SSL_peek_ex(tc->ssl, buf, len, &done);
		e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(tc->ssl, r);
		if (e == SSL_ERROR_SSL && (op == OP_HANDSHAKE || op == OP_AWAIT_TICKET))
			ERR_error_string_n(ERR_peek_last_error(), tc->why, sizeof(tc->why));
		pthread_mutex_unlock(&tc->lock);
		/* The ticket is processed inside the peek, which then wants more. */
		if (op == OP_AWAIT_TICKET && tc->accepted)
			return 1;
		switch (e) {
		case SSL_ERROR_NONE:
			return op == OP_READ || op == OP_WRITE ? (long)done : 1;
		case SSL_ERROR_WANT_READ:
			ret = wait_io(tc->fd, timeout_ms, POLLIN);
			break;
		case SSL_ERROR_WANT_WRITE:
			ret = wait_io(tc->fd, timeout_ms, POLLOUT);
			break;
		case SSL_ERROR_ZERO_RETURN:
			return -ENODATA;
		case SSL_ERROR_SYSCALL: {
			/* errno 0: the peer closed without close_notify. */
			int err = errno && errno != EAGAIN ? -errno : -ENODATA;

			ERR_clear_error();
			if (op == OP_WRITE && (err == -ECONNRESET || err == -EPIPE))
				return alert_behind_reset(tc, err);
			return err;
		}
		default:
			return ssl_failure();
		}
		if (ret)
			return ret;
	}
}

long tls_read(struct tls_conn *tc, uint64_t timeout_ms, void *buf, size_t len)
{
	return ssl_call(tc, timeout_ms, OP_READ, buf, len);
}

long tls_write(struct tls_conn *tc, uint64_t timeout_ms, const void *buf, size_t len)
{
	return ssl_call(tc, timeout_ms, OP_WRITE, (void *)buf, len);
}

/* The client checks the name it dialled: an IP address, or a DNS name (also sent as SNI). */
static int expect_peer(SSL *ssl, const char *peer_addr)
{
	char host[256], port[16];
	unsigned char ip[16];

	if (hostport_split(peer_addr, host, sizeof(host), port, sizeof(port)))
		return -EINVAL;
	if (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1)
		return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -EINVAL;
	if (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1)
		return -EINVAL;
	return 0;
}

int tls_conn_start(struct tls_conn **out, int fd, uint64_t timeout_ms, struct tls_ctx *t,
		   const char *peer_addr, char *err, size_t errlen)
{
	struct tls_conn *tc = calloc(1, sizeof(*tc));
	char why[256];
	long r;
	int flags;

	*out = NULL;
	if (!tc)
		return -ENOMEM;
	pthread_mutex_init(&tc->lock, NULL);
	tc->fd = fd;
	tc->ssl = SSL_new(t->ctx);
	flags = fcntl(fd, F_GETFL);
	if (!tc->ssl || SSL_set_fd(tc->ssl, fd) != 1 || flags < 0 ||
	    fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    (!t->server && expect_peer(tc->ssl, peer_addr))) {
		snprintf(err, errlen, "TLS setup: %s", ssl_reason(why, sizeof(why)));
		tls_conn_free(tc);
		return -EINVAL;
	}
	if (t->server)
		SSL_set_accept_state(tc->ssl);
	else
		SSL_set_connect_state(tc->ssl);
	SSL_set_app_data(tc->ssl, tc);
	r = ssl_call(tc, timeout_ms, OP_HANDSHAKE, NULL, 0);
	if (r > 0 && !t->server && !tc->accepted) {
		uint8_t b;

		r = ssl_call(tc, timeout_ms, OP_AWAIT_TICKET, &b, 1);
	}
	if (r < 0) {
		long v = SSL_get_verify_result(tc->ssl);
		const char *why = tc->why[0] ? tc->why : "failed";

		/*
		 * Say who refused whom: -EKEYREJECTED is the peer's alert about our
		 * certificate, a verify result is our verdict on the peer's.
		 */
		if (r == -EKEYREJECTED && t->server)
			snprintf(err, errlen,
				 "TLS: the source rejected this target's certificate (%s)",
				 tc->why[0] ? tc->why : "certificate alert");
		else if (r == -EKEYREJECTED)
			snprintf(err, errlen,
				 "TLS: the target rejected this source's certificate (%s)",
				 tc->why[0] ? tc->why : "certificate alert");
		else if (v != X509_V_OK && t->server)
			snprintf(err, errlen,
				 "TLS: not authenticated: this target rejected the source's "
				 "certificate: %s",
				 X509_verify_cert_error_string(v));
		else if (v != X509_V_OK)
			snprintf(err, errlen,
				 "TLS: this source rejected the target's certificate: %s",
				 X509_verify_cert_error_string(v));
		else if (t->server && r == -EPROTO)
			snprintf(err, errlen, "TLS: not authenticated: %s", why);
		else if (r == -EPROTO)
			snprintf(err, errlen, "TLS handshake: %s", why);
		else
			snprintf(err, errlen, "%s: %s",
				 t->server ? "TLS: not authenticated" : "TLS handshake",
				 r == -ENODATA ? "the peer closed the connection (does it use TLS?)"
					       : strerror((int)-r));
		tls_conn_free(tc);
		return (int)r;
	}
	*out = tc;
	return 0;
}
