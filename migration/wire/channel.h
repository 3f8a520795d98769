/* SPDX-License-Identifier: Apache-2.0 */
/*
 * channel.h - one TCP connection of a migration, with framed records.
 *
 * Blocking I/O bounded by deadlines (deadline.h), and a sticky error: after
 * the first failure every call returns it again, so a run of sends is
 * checked once. Another thread may call chan_abort() to unblock a thread
 * stuck in a send or receive (cancel, failure elsewhere). Byte counters
 * are updated by the thread that owns the direction.
 *
 * Deadlines, not timeouts: a peer that sends (or takes) one byte just
 * before each read (or write) would time out must not extend a wait
 * without end. So timeout_ms bounds each call as a whole (chan_read(),
 * chan_readv(), chan_write(), chan_writev(), chan_recv_record(): header
 * and payload, chan_start_tls(): the handshake) from the moment it starts,
 * and chan_set_deadline() bounds a wait of several calls (a reply, a
 * heartbeat, an exchange) by a time fixed when it starts; a read ends by
 * the nearer of the two. Either passing fails the call with -ETIMEDOUT,
 * sticky as any error. A call without either (timeout 0, no deadline)
 * blocks until bytes come, the connection ends or chan_abort().
 *
 * Records are framed with the codec (codec.h): chan_recv_rec() bounds
 * every header through the record table for the channel's role and the
 * direction it receives, both learnt from the hello (chan_send_hello():
 * we are the source; chan_recv_hello(): we are the target) or set with
 * chan_set_role(). TLS (tls.h) is a transport under the channel.
 */
#ifndef VMM_MIGRATION_CHANNEL_H
#define VMM_MIGRATION_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "codec.h"
#include "protocol.h"

struct tls_conn;
struct tls_ctx;

struct mig_chan {
	int fd;
	int error;	     /* sticky -errno */
	uint64_t timeout_ms; /* 0 = none; each call ends within it from its start */
	/*
	 * 0 = none: the now_ns() by which every read ends (chan_set_deadline).
	 * The reading thread's: writes never look at it, so a reader's wait
	 * does not bound another thread's sends on the same connection.
	 */
	uint64_t deadline_ns;
	struct tls_conn *tls; /* set by chan_start_tls(): I/O goes through TLS */
	uint64_t bytes_out;   /* this connection's, by its sending thread */
	uint64_t bytes_in;
	/*
	 * Records read whole (header and payload): by chan_recv_record(), or
	 * by hand and noted (chan_note_record()). Relaxed atomic: the target's
	 * gate watches a handshake worker's connection for its first complete
	 * record after the hello (gate_admit.c).
	 */
	uint32_t records_in;
	/*
	 * Optional: a counter shared by several connections, to which every
	 * write also adds (relaxed atomic), so a progress reader on another
	 * thread sees each byte as it leaves. The owner sets it after
	 * chan_connect()/chan_accept(), which clear the struct.
	 */
	uint64_t *total_out;
	char name[32];	/* "main", "data 2": for messages */
	uint32_t role;	/* MIG_ROLE_*, once framed */
	uint8_t framed; /* 0: no hello yet; else 1 + the enum mig_dir we receive */
};

/*
 * Connects by a deadline timeout_ms (0 = none) from the call's start, every
 * address of a name included; the channel's timeout is then timeout_ms.
 */
int chan_connect(struct mig_chan *c, const char *addr, uint64_t timeout_ms, char *err,
		 size_t errlen);
int chan_listen(const char *addr, int *lfd, char *err, size_t errlen);
/* Waits for a connection by a deadline timeout_ms (0 = none) from the call's start. */
int chan_accept(int lfd, struct mig_chan *c, uint64_t timeout_ms, char *err, size_t errlen);
/* Each call from now on ends within timeout_ms (0 = none) of its start. */
void chan_set_timeout(struct mig_chan *c, uint64_t timeout_ms);
/*
 * Every read from now on ends by deadline_ns (a now_ns() time; 0 clears
 * it), whatever timeout_ms leaves: the wait that sets it ends then. The
 * reading thread only.
 */
void chan_set_deadline(struct mig_chan *c, uint64_t deadline_ns);
/*
 * Handshake on a connected channel, bounded as a whole by its timeout
 * (and, on the server, its deadline). peer_addr is the
 * "host:port" the client connected to, for the name check; NULL on the
 * server. From then on the channel's reads and writes go through TLS.
 */
int chan_start_tls(struct mig_chan *c, struct tls_ctx *t, const char *peer_addr, char *err,
		   size_t errlen);
void chan_close(struct mig_chan *c);
void chan_abort(struct mig_chan *c);
/*
 * What a decision proof on c is bound to (proof.h): c's TLS exporter for
 * MIG_BIND_LABEL, or MIG_BIND_LEN zero bytes on a plain channel (or should
 * the export fail: then no proof made with TLS verifies). Any thread.
 */
void chan_binding(const struct mig_chan *c, uint8_t out[MIG_BIND_LEN]);
/*
 * Test hooks only: the link dies here. chan_abort(), and every later call
 * fails with -ECONNRESET, even a read of bytes the kernel had already
 * received (a shut-down TCP socket still returns those). The channel's own
 * thread only.
 */
void chan_cut(struct mig_chan *c);

int chan_write(struct mig_chan *c, const void *buf, size_t len);
int chan_writev(struct mig_chan *c, struct iovec *iov, int iovcnt);
int chan_read(struct mig_chan *c, void *buf, size_t len);
/*
 * Reads exactly the bytes the pieces hold, in order, with as few system
 * calls as the socket allows (one recvmsg() for a whole PAGES record when it
 * has arrived); the pieces are advanced past what was read, so a caller
 * keeps no use for them afterwards. Same errors as chan_read().
 */
int chan_readv(struct mig_chan *c, struct iovec *iov, int iovcnt);

/*
 * Appends len bytes at p to the n pieces of iov, as part of the last piece
 * when they follow it in memory (guest pages in index order: one piece per
 * run of neighbours, fewer for the kernel to walk). iov has room for one more.
 */
static inline void chan_iov_append(struct iovec *iov, int *n, void *p, size_t len)
{
	if (*n && (char *)iov[*n - 1].iov_base + iov[*n - 1].iov_len == (char *)p)
		iov[*n - 1].iov_len += len;
	else
		iov[(*n)++] = (struct iovec){.iov_base = p, .iov_len = len};
}

/*
 * A record as three pieces for chan_writev(): its header, encoded into h
 * (which must outlive the write), then a and b. Several framed records can
 * go out in one chan_writev(). Not checked against the table.
 */
void chan_frame_record(uint8_t h[MIG_REC_HDR_LEN], struct iovec iov[3], uint32_t type,
		       const void *a, uint32_t alen, const void *b, uint32_t blen);
/*
 * A record: header + one or two payload pieces (either may be empty), the
 * pieces already encoded (codec.h). Not checked against the table: test
 * peers send malformed records with it.
 */
int chan_send_record(struct mig_chan *c, uint32_t type, const void *a, uint32_t alen, const void *b,
		     uint32_t blen);

/*
 * Reads a record header and checks it with mig_rec_check() for this
 * channel's role, receiving direction and the caller's ctx_max (0: the
 * table's limit). Then the caller reads h->len payload bytes with
 * chan_read(). -EPROTO (sticky, err names the record and the rule) for a
 * header the table refuses or a channel without a hello; an I/O error
 * (sticky) with err = chan_strerror(). err may be NULL.
 */
int chan_recv_rec(struct mig_chan *c, uint32_t ctx_max, struct mig_rec_hdr *h, char *err,
		  size_t errlen);
/*
 * chan_recv_rec() and the payload into buf: for small records. A payload
 * longer than cap is refused (-EPROTO) before it is read. The record as a
 * whole, header and payload, ends within the channel's timeout from the
 * start (and by its deadline). A record read whole counts in c->records_in.
 */
int chan_recv_record(struct mig_chan *c, uint32_t ctx_max, struct mig_rec_hdr *h, void *buf,
		     size_t cap, char *err, size_t errlen);
/*
 * A record its reader read by hand (its header and payload with chan_read(),
 * to refuse it for what it is): counts in c->records_in as one that
 * chan_recv_record() read would.
 */
void chan_note_record(struct mig_chan *c);
/* Sets what the hello would: the channel's role and the direction we receive. */
void chan_set_role(struct mig_chan *c, uint32_t role, enum mig_dir receives);

/* The source's hello; the channel then receives target-to-source records. */
int chan_send_hello(struct mig_chan *c, uint64_t session, uint32_t role, uint32_t index);
/* Reads and checks a hello (mig_hello_decode()); then receives source-to-target records. */
int chan_recv_hello(struct mig_chan *c, struct mig_hello *h, char *err, size_t errlen);

/*
 * UNIX sockets (chan_unix.c), -errno. chan_connect() and chan_listen()
 * take "unix:PATH" (hostport.h) and come here; no TLS runs over them.
 * chan_unix_listen() removes a stale socket file (nothing answers on it),
 * refuses a live one (-EADDRINUSE) or a non-socket (-EEXIST), and makes
 * the socket 0600. chan_unix_connect() ends within timeout_ms (0: none)
 * when the listener's backlog is full (-ETIMEDOUT).
 */
int chan_unix_connect(const char *path, uint64_t timeout_ms, int *fd);
int chan_unix_listen(const char *path, int *lfd);
/* Whether fd is a UNIX socket. */
bool chan_is_unix(int fd);
/*
 * A UNIX peer's credentials as "unix:pid P uid U" in name; true when its
 * uid is ours or root's (the only peers that may hand a VM over).
 */
bool chan_unix_peer_ok(int fd, char *name, size_t namelen);

/*
 * For the channel's own files (chan_fds.c): records an I/O error as the
 * sticky one (EAGAIN, a timeout, as -ETIMEDOUT) and returns it; counts
 * bytes that left on c (its count and the shared total_out).
 */
int chan_io_error(struct mig_chan *c, int e);
void chan_count_out(struct mig_chan *c, uint64_t n);

/* At most this many descriptors ride on one record. */
#define MIG_CHAN_FDS_MAX 4u
/*
 * chan_fds.c: a record whose first byte carries nfds descriptors
 * (SCM_RIGHTS), in one sendmsg(); the payload is at most 64 bytes. UNIX
 * channels only.
 */
int chan_send_record_fds(struct mig_chan *c, uint32_t type, const void *p, uint32_t len,
			 const int *fds, unsigned nfds);
/*
 * Reads the record chan_send_record_fds() sent: the header with recvmsg()
 * (the descriptors come with it, close-on-exec), checked by the table and
 * required to be `type` with exactly `len` payload bytes, then the
 * payload into buf. Up to maxfds descriptors land in fds (*nfds of them,
 * the caller's to close); more are closed and refused. On an error none is
 * left open. UNIX channels only.
 */
int chan_recv_rec_fds(struct mig_chan *c, uint32_t type, void *buf, uint32_t len, int *fds,
		      unsigned maxfds, unsigned *nfds, char *err, size_t errlen);

/* This host's boot id (16 bytes): tells a local peer from a remote one. */
int host_boot_id(uint8_t id[16]);
/* strerror() for channel errors, naming a truncated stream as such. */
const char *chan_strerror(int err);

#endif /* VMM_MIGRATION_CHANNEL_H */
