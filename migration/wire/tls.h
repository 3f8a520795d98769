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
 * writer. A shutdown() of the socket (chan_abort()) wakes both.
 *
 * A transport under the channel: it knows a socket, a deadline and its own
 * struct tls_conn, never the channel (channel.c calls down into it). Every
 * wait ends by the caller's deadline (deadline.h, 0 = none), however many
 * TLS records or partial reads it takes: a peer that trickles a record
 * byte by byte cannot extend it.
 */
#ifndef VMM_MIGRATION_TLS_H
#define VMM_MIGRATION_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The most a certificate, key or CA file may hold: a PEM file of ours is a
 * few KiB, the system's whole CA bundle about 200 KiB. Past it (or not a
 * regular file: /dev/zero, a FIFO) the file is refused unread.
 */
#define TLS_FILE_MAX (1 << 20)

struct tls_ctx;
struct tls_conn;
/*
 * The key files: this host's [migration] tls_cert/tls_key/tls_ca, which
 * the front end passes in (struct migration_host), never the VM's config.
 */
struct tls_files {
	const char *tls_cert; /* this host's certificate chain, PEM */
	const char *tls_key;  /* its private key, PEM */
	const char *tls_ca;   /* CA certificates that sign the peer's, PEM */
};

/*
 * Loads and checks the three files, all three or none ("" each). None:
 * *out = NULL (plain TCP), 0. server: the target side. Each is read whole,
 * bounded by TLS_FILE_MAX; -EINVAL with "TLS: <path>: ..." in err.
 */
int tls_ctx_new(struct tls_ctx **out, bool server, const struct tls_files *cfg, char *err,
		size_t errlen);
void tls_ctx_free(struct tls_ctx *t);

/*
 * Handshake on a connected socket, the whole of it (and the client's wait
 * for the server's ticket) ending by deadline_ns (0 = none); makes fd
 * non-blocking. peer_addr is the "host:port" the client
 * connected to, for the name check; NULL on the server. On success *out
 * is the connection (the socket stays the caller's: tls_conn_free() does
 * not close it). Channels call this through chan_start_tls() (channel.h).
 */
int tls_conn_start(struct tls_conn **out, int fd, uint64_t deadline_ns, struct tls_ctx *t,
		   const char *peer_addr, char *err, size_t errlen);

/*
 * One read or write, > 0 bytes or -errno (-ENODATA: EOF, -ETIMEDOUT:
 * nothing by deadline_ns, 0 = none; -EKEYREJECTED: the peer refused our
 * certificate). One reader and one writer may call at once.
 */
long tls_read(struct tls_conn *tc, uint64_t deadline_ns, void *buf, size_t len);
long tls_write(struct tls_conn *tc, uint64_t deadline_ns, const void *buf, size_t len);
void tls_conn_free(struct tls_conn *tc);
/*
 * Whether decrypted bytes wait in the connection already (a read returns
 * them without touching the socket). The reader's thread.
 */
bool tls_pending(struct tls_conn *tc);
/*
 * The connection's keying material (RFC 8446 section 7.5) for `label`, no
 * context: len bytes that only the two ends of this TLS session know.
 * 0, or -EIO. Any thread (under the connection's lock).
 */
int tls_export(struct tls_conn *tc, const char *label, uint8_t *out, size_t len);

#endif /* VMM_MIGRATION_TLS_H */
