/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls_conn.h - one TLS connection's state: the TLS transport's own
 * (tls.c), no other file's.
 */
#ifndef VMM_MIGRATION_TLS_CONN_H
#define VMM_MIGRATION_TLS_CONN_H

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>

#include "tls_first.h"

struct tls_conn {
	SSL *ssl;
	int fd;		      /* the connected socket, made non-blocking; not owned */
	pthread_mutex_t lock; /* every SSL_* call on ssl */
	char why[160];	      /* the handshake's OpenSSL error, for the message */
	bool accepted;	      /* client: the server's session ticket arrived */

	/* Client, in its handshake: the target's first bytes (a plain ERROR, if any). */
	struct tls_first first;
};

#endif /* VMM_MIGRATION_TLS_CONN_H */
