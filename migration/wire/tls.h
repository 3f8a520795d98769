/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls.h - TLS 1.3 (OpenSSL) on migration connections.
 *
 * Mutual authentication with X.509: each side presents its certificate and
 * verifies the peer's against a CA. The source (client) also checks that
 * the target's certificate names the host it connects to (DNS name, or IP
 * address for a numeric host). No session resumption, no renegotiation.
 *
 * A connection is used by two threads at once on some channels (a reader
 * and a writer: the target's main and urgent connections), which one SSL
 * object does not allow. So every SSL call runs under the connection's
 * lock on a non-blocking socket, and the waiting for readiness (poll) runs
 * outside it: a reader blocked on an idle connection never holds up a
 * writer. chan_abort()'s shutdown() wakes both.
 */
#ifndef VMM_MIGRATION_TLS_H
#define VMM_MIGRATION_TLS_H

#include <stdbool.h>
#include <stddef.h>

struct mig_chan;
struct tls_ctx;
struct tls_conn;
/* The key files, from the VM's [migration] tls_cert/tls_key/tls_ca. */
struct tls_files {
	const char *tls_cert; /* this host's certificate chain, PEM */
	const char *tls_key;  /* its private key, PEM */
	const char *tls_ca;   /* CA certificates that sign the peer's, PEM */
};

/*
 * Loads and checks the three files, all three or none ("" each). None:
 * *out = NULL (plain TCP), 0. server: the target side.
 */
int tls_ctx_new(struct tls_ctx **out, bool server, const struct tls_files *cfg, char *err,
		size_t errlen);
void tls_ctx_free(struct tls_ctx *t);

/*
 * Handshake on a connected channel (its timeout applies). peer_addr is the
 * "host:port" the client connected to, for the name check; NULL on the
 * server. From then on the channel's reads and writes go through TLS.
 */
int tls_start(struct mig_chan *c, struct tls_ctx *t, const char *peer_addr, char *err,
	      size_t errlen);

/* For channel.c: one read or write, > 0 bytes or -errno (-ENODATA: EOF). */
long tls_read(struct mig_chan *c, void *buf, size_t len);
long tls_write(struct mig_chan *c, const void *buf, size_t len);
void tls_conn_free(struct tls_conn *tc);

#endif /* VMM_MIGRATION_TLS_H */
