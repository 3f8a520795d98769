/* SPDX-License-Identifier: Apache-2.0 */
#include "deadline.h"
#include "file_read.h"
#include "hostport.h"
#include "tls.h"
#include "tls_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
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

/*
 * The three PEM files are read by us, bounded (file_read_max(),
 * TLS_FILE_MAX), and parsed from memory: OpenSSL's *_file() loaders would
 * read /dev/zero forever and wait on a FIFO.
 */
static BIO *pem_open(const char *path, char **text, char *err, size_t errlen)
{
	char why[128];
	size_t len;
	BIO *b;
	int ret;

	ret = file_read_max(path, TLS_FILE_MAX, text, &len, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "TLS: %s: cannot read: %s", path, why);
		return NULL;
	}
	b = BIO_new_mem_buf(*text, (int)len);
	if (!b) {
		snprintf(err, errlen, "TLS: %s: out of memory", path);
		free(*text);
		*text = NULL;
	}
	return b;
}

static void pem_close(BIO *b, char *text)
{
	BIO_free(b);
	free(text);
}

/* True when the queue's newest error is the end of the PEM input (not a bad block). */
static bool pem_at_end(void)
{
	unsigned long e = ERR_peek_last_error();

	return ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
}

/* SSL_CTX_use_certificate_chain_file() from memory: the leaf, then its chain. */
static int use_chain(SSL_CTX *ctx, BIO *b)
{
	X509 *x = PEM_read_bio_X509_AUX(b, NULL, NULL, NULL);
	int ok;

	if (!x)
		return 0;
	ok = SSL_CTX_use_certificate(ctx, x) == 1 && SSL_CTX_clear_chain_certs(ctx) == 1;
	X509_free(x);
	while (ok && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		ok = SSL_CTX_add0_chain_cert(ctx, x) == 1;
		if (!ok)
			X509_free(x);
	}
	if (ok && !pem_at_end())
		return 0;
	ERR_clear_error();
	return ok;
}

static int use_key(SSL_CTX *ctx, BIO *b)
{
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, SSL_CTX_get_default_passwd_cb(ctx),
					      SSL_CTX_get_default_passwd_cb_userdata(ctx));
	int ok;

	if (!k)
		return 0;
	ok = SSL_CTX_use_PrivateKey(ctx, k) == 1;
	EVP_PKEY_free(k);
	return ok;
}

/* SSL_CTX_load_verify_locations(ctx, file, NULL) from memory: certificates and CRLs. */
static int use_ca(SSL_CTX *ctx, BIO *b)
{
	STACK_OF(X509_INFO) *infos = PEM_X509_INFO_read_bio(b, NULL, NULL, NULL);
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	int count = 0, ok = 1;

	if (!infos)
		return 0;
	for (int i = 0; ok && i < sk_X509_INFO_num(infos); i++) {
		X509_INFO *inf = sk_X509_INFO_value(infos, i);

		if (inf->x509) {
			ok = X509_STORE_add_cert(store, inf->x509) == 1;
			count++;
		}
		if (ok && inf->crl) {
			ok = X509_STORE_add_crl(store, inf->crl) == 1;
			count++;
		}
	}
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	if (ok && !count) {
		ERR_raise(ERR_LIB_PEM, PEM_R_NO_START_LINE);
		return 0;
	}
	return ok;
}

/* One file through its loader; 0 or -EINVAL with err set. */
static int load_pem(SSL_CTX *ctx, const char *path, int (*use)(SSL_CTX *, BIO *), char *err,
		    size_t errlen)
{
	char *text = NULL, why[256];
	BIO *b = pem_open(path, &text, err, errlen);
	int ok;

	if (!b)
		return -EINVAL;
	ok = use(ctx, b);
	pem_close(b, text);
	if (!ok) {
		snprintf(err, errlen, "TLS: %s: %s", path, ssl_reason(why, sizeof(why)));
		return -EINVAL;
	}
	return 0;
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
	if (load_pem(t->ctx, cfg->tls_cert, use_chain, err, errlen) ||
	    load_pem(t->ctx, cfg->tls_key, use_key, err, errlen)) {
		tls_ctx_free(t);
		return -EINVAL;
	}
	step = "the key does not match the certificate";
	if (SSL_CTX_check_private_key(t->ctx) != 1)
		goto fail;
	if (load_pem(t->ctx, cfg->tls_ca, use_ca, err, errlen)) {
		tls_ctx_free(t);
		return -EINVAL;
	}
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

int tls_export(struct tls_conn *tc, const char *label, uint8_t *out, size_t len)
{
	int ok;

	pthread_mutex_lock(&tc->lock);
	ok = SSL_export_keying_material(tc->ssl, out, len, label, strlen(label), NULL, 0, 0);
	pthread_mutex_unlock(&tc->lock);
	return ok == 1 ? 0 : -EIO;
}

/* Waits until the deadline for the socket to be readable or writable; 0, -ETIMEDOUT or -errno. */
static int wait_io(int fd, uint64_t deadline_ns, short events)
{
	struct pollfd p = {.fd = fd, .events = events};
	int n = deadline_poll(&p, 1, deadline_ns);

	return n > 0 ? 0 : n == 0 ? -ETIMEDOUT : n;
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
static long ssl_call(struct tls_conn *tc, uint64_t deadline_ns, enum ssl_op op, void *buf,
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
			ret = wait_io(tc->fd, deadline_ns, POLLIN);
			break;
		case SSL_ERROR_WANT_WRITE:
			ret = wait_io(tc->fd, deadline_ns, POLLOUT);
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

long tls_read(struct tls_conn *tc, uint64_t deadline_ns, void *buf, size_t len)
{
	return ssl_call(tc, deadline_ns, OP_READ, buf, len);
}

long tls_write(struct tls_conn *tc, uint64_t deadline_ns, const void *buf, size_t len)
{
	return ssl_call(tc, deadline_ns, OP_WRITE, (void *)buf, len);
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

int tls_conn_start(struct tls_conn **out, int fd, uint64_t deadline_ns, struct tls_ctx *t,
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
	if (t->server) {
		SSL_set_accept_state(tc->ssl);
	} else {
		SSL_set_connect_state(tc->ssl);
		tls_first_watch(SSL_get_rbio(tc->ssl), &tc->first);
	}
	SSL_set_app_data(tc->ssl, tc);
	r = ssl_call(tc, deadline_ns, OP_HANDSHAKE, NULL, 0);
	if (!t->server)
		tls_first_unwatch(SSL_get_rbio(tc->ssl));
	if (r < 0 && !t->server && tls_first_refusal(&tc->first, fd, err, errlen)) {
		tls_conn_free(tc);
		return -ECONNREFUSED;
	}
	if (r > 0 && !t->server && !tc->accepted) {
		uint8_t b;

		r = ssl_call(tc, deadline_ns, OP_AWAIT_TICKET, &b, 1);
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

bool tls_pending(struct tls_conn *tc)
{
	bool r;

	pthread_mutex_lock(&tc->lock);
	r = SSL_pending(tc->ssl) > 0;
	pthread_mutex_unlock(&tc->lock);
	return r;
}
