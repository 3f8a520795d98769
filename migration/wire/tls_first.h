/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls_first.h - a TLS client's view of the target's first bytes (tls.c's,
 * internal to the wire): a vmm target that refuses a connection at its
 * accept (busy) answers with a plain ERROR record before any TLS, and so
 * does a target without TLS to the ClientHello. OpenSSL gives up on the
 * first bytes of it (a TLS record starts with a type, 20 to 23; an ERROR
 * record with 7) while the rest waits in the socket; kept, they tell the
 * source why it was refused, not just that the handshake failed.
 */
#ifndef VMM_MIGRATION_TLS_FIRST_H
#define VMM_MIGRATION_TLS_FIRST_H

#include <openssl/bio.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

struct tls_first {
	uint8_t b[MIG_REC_HDR_LEN + MIG_ERROR_MAX];
	size_t len;
};

/*
 * Keeps the first bytes read through bio (the client's read BIO) in *f,
 * zeroed by the caller, until tls_first_unwatch(): for the handshake only,
 * nothing on the data path. The thread that runs the handshake.
 */
void tls_first_watch(BIO *bio, struct tls_first *f);
void tls_first_unwatch(BIO *bio);
/*
 * After a failed handshake: whether the target's bytes were a plain ERROR
 * record (its rest read from fd, a non-blocking socket, waiting at most a
 * second for each piece); the source's one-line error saying so in msg
 * (busy is said as busy; any other refusal asks whether the target uses TLS).
 */
bool tls_first_refusal(struct tls_first *f, int fd, char *msg, size_t len);

#endif /* VMM_MIGRATION_TLS_FIRST_H */
