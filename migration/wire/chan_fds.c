/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chan_fds.c - the one kind of record that carries file descriptors: a
 * local handover's RAM_FD, whose first byte brings guest RAM's memfd as
 * SCM_RIGHTS ancillary data. UNIX channels only (chan_unix.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"

/* The largest payload chan_send_record_fds() takes (RAM_FD's is 16 bytes). */
#define FDS_PAYLOAD_MAX 64u

int chan_send_record_fds(struct mig_chan *c, uint32_t type, const void *p, uint32_t len,
			 const int *fds, unsigned nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * MIG_CHAN_FDS_MAX)];
	} ctl;
	uint8_t rec[MIG_REC_HDR_LEN + FDS_PAYLOAD_MAX];
	size_t total = MIG_REC_HDR_LEN + (size_t)len;
	struct iovec iov = {.iov_base = rec, .iov_len = total};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	ssize_t n;

	if (c->error)
		return c->error;
	if (c->tls || nfds == 0 || nfds > MIG_CHAN_FDS_MAX || len > FDS_PAYLOAD_MAX)
		return -EINVAL;
	/* The record in one piece: its first byte carries the descriptors. */
	mig_rec_hdr_encode(rec, type, len);
	memcpy(rec + MIG_REC_HDR_LEN, p, len);
	memset(&ctl, 0, sizeof(ctl));
	mh.msg_control = ctl.buf;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	do
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return chan_io_error(c, errno);
	chan_count_out(c, (uint64_t)n);
	/* What a short send left is plain data. */
	return (size_t)n < total ? chan_write(c, rec + n, total - (size_t)n) : 0;
}

/* The descriptors of one SCM_RIGHTS message into fds (closing any past max). */
static unsigned take_fds(struct msghdr *mh, int *fds, unsigned max)
{
	unsigned got = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (got < max)
				fds[got++] = fd;
			else
				close(fd);
		}
	}
	return got;
}

int chan_recv_rec_fds(struct mig_chan *c, uint32_t type, void *buf, uint32_t len, int *fds,
		      unsigned maxfds, unsigned *nfds, char *err, size_t errlen)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * MIG_CHAN_FDS_MAX)];
	} ctl;
	uint8_t hb[MIG_REC_HDR_LEN];
	struct iovec iov = {.iov_base = hb, .iov_len = sizeof(hb)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct mig_rec_hdr h;
	ssize_t n;
	int ret;

	*nfds = 0;
	if (c->error)
		return c->error;
	if (c->tls || maxfds > MIG_CHAN_FDS_MAX)
		return -EINVAL;
	/*
	 * The descriptors ride on the record's first byte: the header is read
	 * with recvmsg() and room for them (a plain read would drop them).
	 */
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	do
		n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		/* EOF before the record: the stream ended (ENODATA), as in chan_readv(). */
		ret = chan_io_error(c, n == 0 ? ENODATA : errno);
		snprintf(err, errlen, "reading %s: %s", mig_rec_name(type), chan_strerror(ret));
		return ret;
	}
	*nfds = take_fds(&mh, fds, maxfds);
	c->bytes_in += (uint64_t)n;
	ret = (size_t)n < sizeof(hb) ? chan_read(c, hb + n, sizeof(hb) - (size_t)n) : 0;
	if (ret) {
		snprintf(err, errlen, "reading %s: %s", mig_rec_name(type), chan_strerror(ret));
		goto fail;
	}
	mig_rec_hdr_decode(hb, &h);
	ret = mig_rec_check(&h, c->role, (enum mig_dir)(c->framed - 1), 0, err, errlen);
	if (!ret && (h.type != type || h.len != len)) {
		snprintf(err, errlen, "expected %s (%u bytes), got %s (%u bytes)",
			 mig_rec_name(type), len, mig_rec_name(h.type), h.len);
		ret = -EPROTO;
	}
	if (!ret && (mh.msg_flags & MSG_CTRUNC)) {
		snprintf(err, errlen, "%s: more descriptors than the %u expected",
			 mig_rec_name(type), maxfds);
		ret = -EPROTO;
	}
	if (!ret)
		ret = chan_read(c, buf, len);
	if (!ret)
		return 0;
	if (!err[0] || ret != -EPROTO)
		snprintf(err, errlen, "reading %s: %s", mig_rec_name(type), chan_strerror(ret));
fail:
	for (unsigned i = 0; i < *nfds; i++)
		close(fds[i]);
	*nfds = 0;
	if (!c->error)
		c->error = ret;
	return ret;
}
