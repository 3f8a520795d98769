/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The session's connections and the records every phase sends or awaits
 * on them: connecting main, data and urgent (TCP, then TLS when the VM's
 * config names key files), the VM and vCPU state, CHANNEL_END and END, the
 * target's replies and ACK, and one send round of the sender team ended by
 * SYNC / SYNC_ACK. Every record is built and parsed with the codec
 * (codec.h), and every length, sent or received, is bounded through its
 * record table. Contracts in session.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "clock.h"
#include "codec.h"
#include "deadline.h"
#include "digest.h"
#include "hostport.h"
#include "session.h"
#include "tls.h"
#include "vm.h"
#include "vm_state.h"

/*
 * chan_frame_record() of one outgoing record (type, a, b) into h and iov,
 * once the record table allows it on c's role and direction
 * (mig_rec_check's error and message when it does not).
 */
static int frame_rec(struct mig_chan *c, uint32_t type, uint8_t h[MIG_REC_HDR_LEN],
		     struct iovec iov[3], const void *a, uint32_t alen, const void *b,
		     uint32_t blen, char *err, size_t errlen)
{
	uint64_t len = (uint64_t)alen + blen;
	struct mig_rec_hdr hdr = {.type = type,
				  .len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len};
	int ret = mig_rec_check(&hdr, c->role, MIG_DIR_S2T, 0, err, errlen);

	if (!ret)
		chan_frame_record(h, iov, type, a, alen, b, blen);
	return ret;
}

int send_rec(struct mig_chan *c, uint32_t type, const void *a, uint32_t alen, const void *b,
	     uint32_t blen, char *err, size_t errlen)
{
	uint8_t h[MIG_REC_HDR_LEN];
	struct iovec iov[3];
	int ret = frame_rec(c, type, h, iov, a, alen, b, blen, err, errlen);

	if (ret)
		return ret;
	ret = chan_writev(c, iov, 3);
	if (ret)
		snprintf(err, errlen, "%s", chan_strerror(ret));
	return ret;
}

uint32_t pages_frame(uint8_t out[PAGES_FRAME_LEN], const struct mig_pages_hdr *ph)
{
	uint32_t len = (uint32_t)mig_pages_len(ph);

	mig_rec_hdr_encode(out, MIG_REC_PAGES, len);
	mig_pages_hdr_encode(out + MIG_REC_HDR_LEN, ph);
	return len;
}

int session_connect(struct migration *m, struct mig_chan *c, const char *to, char *err,
		    size_t errlen)
{
	/* The connect and its TLS handshake, whole, by one deadline. */
	uint64_t end = deadline_at(now_ns(), m->params.timeout_ms);
	int ret = chan_connect(c, to, m->params.timeout_ms, err, errlen);

	/* Every byte on every connection counts in the progress (wire_bytes). */
	if (!ret)
		c->total_out = &m->wire_bytes;
	/* A UNIX socket carries no TLS: the socket file and the peer's uid guard it. */
	if (!ret && m->tls && !hostport_unix_path(to)) {
		chan_set_deadline(c, end);
		ret = chan_start_tls(c, m->tls, to, err, errlen);
		chan_set_deadline(c, 0);
	}
	return ret;
}

/* resume_to is written by migration_resume() before it wakes the migration thread. */
static const char *destination(struct migration *m, uint32_t main_role)
{
	return main_role == MIG_ROLE_MAIN_RESUME ? m->pc.resume_to : m->params.to;
}

const char *main_send_error(const struct migration *m, int ret, const char *what)
{
	if ((ret == -ECONNRESET || ret == -EPIPE) && !m->tls)
		return "the target closed the connection (does it require TLS?)";
	return what;
}

int connect_main(struct migration *m, uint32_t role)
{
	char err[256] = "";
	int ret = session_connect(m, &m->main, destination(m, role), err, sizeof(err));

	if (ret) {
		migration_fail(m, ret, "%s", err);
		return ret;
	}
	snprintf(m->main.name, sizeof(m->main.name), "main");
	ret = chan_send_hello(&m->main, m->session, role,
			      role == MIG_ROLE_MAIN_RESUME ? MIG_HELLO_SET_ATTEMPT(0, m->pc.attempt)
							   : 0);
	if (ret)
		migration_fail(m, ret, "sending the hello: %s",
			       main_send_error(m, ret, chan_strerror(ret)));
	return ret;
}

int connect_data(struct migration *m, uint32_t main_role)
{
	const char *to = destination(m, main_role);
	uint32_t attempt = main_role == MIG_ROLE_MAIN_RESUME ? m->pc.attempt : 0;
	char err[256] = "";
	int ret;

	for (unsigned i = 0; i < m->connections; i++) {
		struct ram_sender *s = &m->senders[i];

		ret = session_connect(m, &s->chan, to, err, sizeof(err));
		if (!ret)
			ret = chan_send_hello(&s->chan, m->session, MIG_ROLE_DATA,
					      MIG_HELLO_SET_ATTEMPT(i, attempt));
		if (ret) {
			migration_fail(m, ret, "data connection %u: %s", i,
				       err[0] ? err : chan_strerror(ret));
			return ret;
		}
		snprintf(s->chan.name, sizeof(s->chan.name), "data %u", i);
	}
	/* Idle until a postcopy: then page requests must never queue behind bulk data. */
	ret = session_connect(m, &m->pc.urgent, to, err, sizeof(err));
	if (!ret)
		ret = chan_send_hello(&m->pc.urgent, m->session, MIG_ROLE_URGENT,
				      MIG_HELLO_SET_ATTEMPT(0, attempt));
	if (ret) {
		migration_fail(m, ret, "urgent connection: %s", err[0] ? err : chan_strerror(ret));
		return ret;
	}
	snprintf(m->pc.urgent.name, sizeof(m->pc.urgent.name), "urgent");
	return 0;
}

/* One state record per vCPU and one for the VM: their blobs, headers and pieces. */
struct state_out {
	struct vm_saved saved;
	uint8_t hdr[CONFIG_MAX_VCPUS + 1][MIG_REC_HDR_LEN];
	uint8_t vh[CONFIG_MAX_VCPUS][MIG_VCPU_STATE_HDR_LEN];
	struct iovec iov[(CONFIG_MAX_VCPUS + 1) * 3];
};

/* The machine's whole save (vm_save_whole()): the records name what failed. */
static int save_states(struct migration *m, struct state_out *o, char *err, size_t errlen)
{
	char e[200];
	int failed, ret = vm_save_whole(m->vm, &m->form, &o->saved, &failed, e, sizeof(e));

	if (ret && failed == VM_WHOLE_VM)
		snprintf(err, errlen, "saving VM state: %s", e);
	else if (ret)
		snprintf(err, errlen, "saving vCPU %d state: %s", failed, e);
	return ret;
}

static int frame_states(struct migration *m, struct state_out *o, char *err, size_t errlen)
{
	const struct vm_saved *sv = &o->saved;
	/* VM_STATE has no header: its payload is the blob. */
	int ret = frame_rec(&m->main, MIG_REC_VM_STATE, o->hdr[0], o->iov, sv->vm.data,
			    (uint32_t)sv->vm.len, NULL, 0, err, errlen);

	for (unsigned i = 0; i < sv->nvcpus && !ret; i++) {
		mig_vcpu_state_hdr_encode(o->vh[i], i);
		ret = frame_rec(&m->main, MIG_REC_VCPU_STATE, o->hdr[i + 1], o->iov + 3 * (i + 1),
				o->vh[i], sizeof(o->vh[i]), sv->vcpu[i].data,
				(uint32_t)sv->vcpu[i].len, err, errlen);
	}
	return ret;
}

int send_state(struct migration *m)
{
	struct state_out *o = calloc(1, sizeof(*o));
	unsigned n = vm_nvcpus(m->vm);
	char err[256];
	int ret;

	if (!o) {
		migration_fail(m, -ENOMEM, "saving the VM state: out of memory");
		return -ENOMEM;
	}
	ret = save_states(m, o, err, sizeof(err));
	if (!ret)
		ret = frame_states(m, o, err, sizeof(err));
	/* One write for all of them: on loopback every send costs the receiver's wakeup too. */
	if (!ret) {
		ret = chan_writev(&m->main, o->iov, (int)(n + 1) * 3);
		if (ret)
			snprintf(err, sizeof(err), "sending the VM state: %s", chan_strerror(ret));
	}
	if (ret)
		migration_fail(m, ret, "%s", err);
	vm_saved_free(&o->saved);
	free(o);
	return ret;
}

int end_data_channels(struct migration *m)
{
	char err[256];
	int ret = 0;

	for (unsigned i = 0; i < m->connections && !ret; i++) {
		struct ram_sender *s = &m->senders[i];
		uint8_t ce[MIG_CHANNEL_END_LEN];

		mig_channel_end_encode(ce, &(struct mig_channel_end){.records = s->records});
		ret = send_rec(&s->chan, MIG_REC_CHANNEL_END, ce, sizeof(ce), NULL, 0, err,
			       sizeof(err));
	}
	if (ret)
		migration_fail(m, ret, "ending the data connections: %s", err);
	return ret;
}

int send_end(struct migration *m)
{
	/* The target waits this long for the decision before it reports the outcome unknown. */
	struct mig_end end = {.connections = m->connections,
			      .commit_timeout_ms = (uint32_t)m->params.timeout_ms};
	uint8_t eb[MIG_END_LEN], counts[MIGRATION_MAX_CONNECTIONS * 8];
	char err[256];
	int ret;

	for (unsigned i = 0; i < m->connections; i++)
		le_put64(counts + i * 8, m->senders[i].records);
	/*
	 * The digest covers every page; a postcopy target lacks some (and
	 * reading them there would block on userfaultfd before the commit).
	 */
	if (m->hooks.digest && !m->pc.active && !m->pc.switching)
		end.memory_digest = memory_digest(vm_mem(m->vm));
	mig_end_encode(eb, &end);
	ret = send_rec(&m->main, MIG_REC_END, eb, sizeof(eb), counts, m->connections * 8, err,
		       sizeof(err));
	if (ret)
		migration_fail(m, ret, "ending the stream: %s", err);
	return ret;
}

int finish_channels(struct migration *m)
{
	int ret = end_data_channels(m);

	return ret ? ret : send_end(m);
}

/* Every reply the source waits for fits REPLY_MAX by its own table limit. */
_Static_assert(MIG_COMMITTED_LEN <= REPLY_MAX && MIG_PREPARED_LEN <= REPLY_MAX &&
		   MIG_RECOVER_STATE_LEN <= REPLY_MAX && MIG_SYNC_LEN <= REPLY_MAX &&
		   MIG_POSTCOPY_DONE_LEN <= REPLY_MAX && MIG_ERROR_MAX <= REPLY_MAX &&
		   MIG_CAPS_MAX <= REPLY_MAX,
	       "a reply is larger than wait_reply's buffer");

static int read_reply(struct migration *m, uint32_t type, uint8_t buf[REPLY_MAX], uint32_t *len,
		      const char *what)
{
	const struct mig_rec_info *want = mig_rec_lookup(type);
	struct mig_rec_hdr h;
	char err[256], msg[MIG_ERROR_MAX + 1];
	int ret;

	/* A caller's mistake, not the target's: a record with a larger limit is no reply. */
	if (!want || want->max_len > REPLY_MAX) {
		migration_fail(m, -EINVAL, "%s: %s is not a reply", what, mig_rec_name(type));
		return -EINVAL;
	}
	/*
	 * The header is bounded by the table alone (ctx_max 0: each type by its
	 * own limit, and the error names it); a record of another type is
	 * refused before its payload is read, so nothing here is limited by
	 * the size of this buffer.
	 */
	ret = chan_recv_rec(&m->main, 0, &h, err, sizeof(err));
	if (ret) {
		migration_fail(m, ret, "%s: %s", what, err);
		return ret;
	}
	if (h.type != type && h.type != MIG_REC_ERROR) {
		migration_fail(m, -EPROTO, "expected %s from the target, got %s (%u bytes)",
			       mig_rec_name(type), mig_rec_name(h.type), h.len);
		return -EPROTO;
	}
	/* ERROR's limit and want's are at most REPLY_MAX (checked above). */
	ret = chan_read(&m->main, buf, h.len);
	if (ret) {
		migration_fail(m, ret, "%s: %s: %s", what, mig_rec_name(h.type),
			       chan_strerror(ret));
		return ret;
	}
	if (h.type == MIG_REC_ERROR) {
		mig_error_decode(buf, h.len, msg, sizeof(msg), NULL, 0);
		migration_fail(m, -EPROTO, "the target failed: %s", msg);
		return -EPROTO;
	}
	*len = h.len;
	return 0;
}

int wait_reply(struct migration *m, uint32_t type, uint8_t buf[REPLY_MAX], uint32_t *len,
	       const char *what)
{
	uint64_t wait = m->main.deadline_ns;
	int ret;

	/* The reply, header and payload, within main's timeout from now: one deadline. */
	chan_set_deadline(&m->main, deadline_min(wait, deadline_at(now_ns(), m->main.timeout_ms)));
	ret = read_reply(m, type, buf, len, what);
	chan_set_deadline(&m->main, wait);
	return ret;
}

/* A decoder's verdict on a reply: fails the migration with its message. */
static int decoded(struct migration *m, int ret, const char *what, const char *err)
{
	if (ret)
		migration_fail(m, ret, "%s: %s", what, err);
	return ret;
}

static int wait_sync(struct migration *m)
{
	static const char what[] = "waiting for the target to apply the pass";
	struct mig_sync sync;
	uint8_t buf[REPLY_MAX];
	char err[256];
	uint32_t len;
	int ret = wait_reply(m, MIG_REC_SYNC_ACK, buf, &len, what);

	if (!ret)
		ret = decoded(m, mig_sync_decode(buf, len, &sync, err, sizeof(err)), what, err);
	if (!ret && sync.seq != m->sync_seq) {
		migration_fail(m, -EPROTO, "SYNC_ACK %llu, expected %llu",
			       (unsigned long long)sync.seq, (unsigned long long)m->sync_seq);
		return -EPROTO;
	}
	return ret;
}

void send_pass_start(struct migration *m)
{
	if (!m->blackout)
		m->sync_seq++;
	team_start(&m->send_team);
}

int send_pass_finish(struct migration *m)
{
	uint64_t t0;
	int err;

	team_wait(&m->send_team);
	if (migration_cancelled(m)) {
		err = migration_error(m);
		return err ? err : -ECANCELED;
	}
	for (unsigned i = 0; i < m->connections; i++)
		if (m->senders[i].error)
			return m->senders[i].error;
	if (m->blackout)
		return 0;
	/* A round trip and the target's tail: what precopy takes the commit's round trips for. */
	t0 = now_ns();
	err = wait_sync(m);
	m->sync_wait_ns = now_ns() - t0;
	return err;
}

int send_pass(struct migration *m)
{
	send_pass_start(m);
	return send_pass_finish(m);
}
