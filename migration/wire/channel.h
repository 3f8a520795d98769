/* SPDX-License-Identifier: Apache-2.0 */
/*
 * channel.h - one TCP connection of a migration, with framed records.
 *
 * Blocking I/O with a per-socket timeout (SO_RCVTIMEO/SO_SNDTIMEO), and a
 * sticky error: after the first failure every call returns it again, so a
 * run of sends is checked once. Another thread may call chan_abort() to
 * unblock a thread stuck in a send or receive (cancel, failure elsewhere).
 * Byte counters are updated by the thread that owns the direction.
 */
#ifndef VMM_MIGRATION_CHANNEL_H
#define VMM_MIGRATION_CHANNEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "protocol.h"

struct tls_conn;

struct mig_chan {
	int fd;
	int error;             /* sticky -errno */
	uint64_t timeout_ms;   /* 0 = none; TLS waits with poll() for this long */
	struct tls_conn *tls;  /* set by tls_start(): I/O goes through TLS */
	uint64_t bytes_out;
	uint64_t bytes_in;
	char name[32];         /* "main", "data 2": for messages */
};

int chan_connect(struct mig_chan *c, const char *addr, uint64_t timeout_ms, char *err,
		 size_t errlen);
int chan_listen(const char *addr, int *lfd, char *err, size_t errlen);
/* Waits up to timeout_ms (0 = forever) for a connection. */
int chan_accept(int lfd, struct mig_chan *c, uint64_t timeout_ms, char *err, size_t errlen);
void chan_set_timeout(struct mig_chan *c, uint64_t timeout_ms);
void chan_close(struct mig_chan *c);
void chan_abort(struct mig_chan *c);

int chan_write(struct mig_chan *c, const void *buf, size_t len);
int chan_writev(struct mig_chan *c, struct iovec *iov, int iovcnt);
int chan_read(struct mig_chan *c, void *buf, size_t len);

/* A record: header + one or two payload pieces (either may be empty). */
int chan_send_record(struct mig_chan *c, uint32_t type, const void *a, uint32_t alen,
		     const void *b, uint32_t blen);
/* Reads a header and checks len against max for the type; -EPROTO if over. */
int chan_recv_hdr(struct mig_chan *c, struct mig_rec_hdr *h, uint32_t max_len);

int chan_send_hello(struct mig_chan *c, uint64_t session, uint32_t role, uint32_t index);
int chan_recv_hello(struct mig_chan *c, struct mig_hello *h, char *err, size_t errlen);

const char *mig_rec_name(uint32_t type);
/* This host's boot id (16 bytes): tells a local peer from a remote one. */
int host_boot_id(uint8_t id[16]);
/* strerror() for channel errors, naming a truncated stream as such. */
const char *chan_strerror(int err);

#endif /* VMM_MIGRATION_CHANNEL_H */
