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

int chan_send_record_fds(struct mig_chan *c, uint32_t type, const void *p, uint32_t len,
			 const int *fds, unsigned nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * MIG_CHAN_FDS_MAX)];
	} ctl;
	uint8_t h[MIG_REC_HDR_LEN];
	struct iovec iov[3];
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	struct cmsghdr *cm;
	ssize_t n;

	if (c->error)
		return c->error;
	if (c->tls || nfds == 0 || nfds > MIG_CHAN_FDS_MAX)
		return -EINVAL;
	chan_frame_record(h, iov, type, p, len, NULL, 0);
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
	if (n < 0) {
		c->error = errno == EAGAIN ? -ETIMEDOUT : -errno;
		return c->error;
	}
	c->bytes_out += (uint64_t)n;
	if (c->total_out)
		__atomic_fetch_add(c->total_out, (uint64_t)n, __ATOMIC_RELAXED);
	/* The descriptors went with the first byte; the rest, if any, is plain data. */
	if ((size_t)n < MIG_REC_HDR_LEN + len) {
		uint8_t all[MIG_REC_HDR_LEN + 64];

		if (len > 64)
			return -EINVAL;
		memcpy(all, h, MIG_REC_HDR_LEN);
		memcpy(all + MIG_REC_HDR_LEN, p, len);
		return chan_write(c, all + n, MIG_REC_HDR_LEN + len - (size_t)n);
	}
	return 0;
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
		c->error = n == 0 ? -ENODATA : errno == EAGAIN ? -ETIMEDOUT : -errno;
		snprintf(err, errlen, "reading %s: %s", mig_rec_name(type),
			 chan_strerror(c->error));
		return c->error;
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
