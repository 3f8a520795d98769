/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The session's connections and the records every phase sends or awaits
 * on them: connecting main, data and urgent (TCP, then TLS when the VM's
 * config names key files), the VM and vCPU state, CHANNEL_END and END, the
 * target's replies and ACK, and one send round of the sender team ended by
 * SYNC / SYNC_ACK. Contracts in session.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "digest.h"
#include "session.h"
#include "state_buf.h"
#include "tls.h"
#include "vcpu_state.h"
#include "vm.h"
#include "vm_state.h"

/* TCP, then the TLS handshake when the VM's config names key files. */
static int connect_one(struct migration *m, struct mig_chan *c, const char *to, char *err,
		       size_t errlen)
{
	int ret = chan_connect(c, to, m->params.timeout_ms, err, errlen);

	if (!ret && m->tls)
		ret = tls_start(c, m->tls, to, err, errlen);
	return ret;
}

/* resume_to is written by migration_resume() before it wakes the migration thread. */
static const char *destination(struct migration *m, uint32_t main_role)
{
	return main_role == MIG_ROLE_MAIN_RESUME ? m->resume_to : m->params.to;
}

int connect_main(struct migration *m, uint32_t role)
{
	char err[256] = "";
	int ret = connect_one(m, &m->main, destination(m, role), err, sizeof(err));

	if (ret) {
		migration_fail(m, ret, "%s", err);
		return ret;
	}
	snprintf(m->main.name, sizeof(m->main.name), "main");
	ret = chan_send_hello(&m->main, m->session, role, 0);
	if (ret)
		migration_fail(m, ret, "sending the VM description: %s", chan_strerror(ret));
	return ret;
}

int connect_data(struct migration *m, uint32_t main_role)
{
	const char *to = destination(m, main_role);
	char err[256] = "";
	int ret;

	for (unsigned i = 0; i < m->nsenders; i++) {
		struct ram_sender *s = &m->senders[i];

		ret = connect_one(m, &s->chan, to, err, sizeof(err));
		if (!ret)
			ret = chan_send_hello(&s->chan, m->session, MIG_ROLE_DATA, i);
		if (ret) {
			migration_fail(m, ret, "data connection %u: %s", i,
				       err[0] ? err : chan_strerror(ret));
			return ret;
		}
		snprintf(s->chan.name, sizeof(s->chan.name), "data %u", i);
	}
	/* Idle until a postcopy: then page requests must never queue behind bulk data. */
	ret = connect_one(m, &m->urgent, to, err, sizeof(err));
	if (!ret)
		ret = chan_send_hello(&m->urgent, m->session, MIG_ROLE_URGENT, 0);
	if (ret) {
		migration_fail(m, ret, "urgent connection: %s", err[0] ? err : chan_strerror(ret));
		return ret;
	}
	snprintf(m->urgent.name, sizeof(m->urgent.name), "urgent");
	return 0;
}

int send_state(struct migration *m)
{
	struct vm *vm = m->vm;
	struct state_buf b;
	char err[256];
	int ret;

	state_buf_init(&b);
	ret = vm_state_save_err(vm, &b, err, sizeof(err));
	if (ret) {
		migration_fail(m, ret, "saving VM state: %s", err);
		goto out;
	}
	ret = chan_send_record(&m->main, MIG_REC_VM_STATE, b.data, (uint32_t)b.len, NULL, 0);
	for (unsigned i = 0; i < vm->nvcpus && !ret; i++) {
		struct mig_vcpu_state_hdr vh = {.index = i};

		b.len = 0;
		ret = vcpu_state_save_err(&vm->vcpus[i], &b, err, sizeof(err));
		if (ret) {
			migration_fail(m, ret, "saving vCPU %u state: %s", i, err);
			goto out;
		}
		ret = chan_send_record(&m->main, MIG_REC_VCPU_STATE, &vh, sizeof(vh), b.data,
				       (uint32_t)b.len);
	}
	if (ret)
		migration_fail(m, ret, "sending the VM state: %s", chan_strerror(ret));
out:
	state_buf_free(&b);
	return ret;
}

int end_data_channels(struct migration *m)
{
	int ret = 0;

	for (unsigned i = 0; i < m->nsenders && !ret; i++) {
		struct ram_sender *s = &m->senders[i];
		struct mig_channel_end ce = {.records = s->records};

		ret = chan_send_record(&s->chan, MIG_REC_CHANNEL_END, &ce, sizeof(ce), NULL, 0);
	}
	if (ret)
		migration_fail(m, ret, "ending the data connections: %s", chan_strerror(ret));
	return ret;
}

int send_end(struct migration *m)
{
	struct mig_end end = {.nconnections = m->nsenders};
	uint64_t counts[MIGRATION_MAX_CONNECTIONS];
	int ret;

	for (unsigned i = 0; i < m->nsenders; i++)
		counts[i] = m->senders[i].records;
	/* The digest covers every page; after a postcopy switchover the target lacks some. */
	if (m->hooks.digest && !m->postcopy)
		end.memory_digest = memory_digest(&m->vm->mem);
	ret = chan_send_record(&m->main, MIG_REC_END, &end, sizeof(end), counts,
			       m->nsenders * (uint32_t)sizeof(uint64_t));
	if (ret)
		migration_fail(m, ret, "ending the stream: %s", chan_strerror(ret));
	return ret;
}

int finish_channels(struct migration *m)
{
	int ret = end_data_channels(m);

	return ret ? ret : send_end(m);
}

/* The target's ERROR record, whose header was read: fails with its message. */
static int target_error(struct migration *m, uint32_t len)
{
	char msg[MIG_ERROR_MAX + 1];
	int ret = chan_read(&m->main, msg, len);

	msg[ret ? 0 : len] = '\0';
	migration_fail(m, -EPROTO, "the target failed: %s", msg);
	return -EPROTO;
}

int wait_reply(struct migration *m, uint32_t type, void *payload, uint32_t len, const char *what)
{
	struct mig_rec_hdr h;
	int ret = chan_recv_hdr(&m->main, &h, MIG_ERROR_MAX);

	if (!ret && h.type == type && h.len == len) {
		ret = len ? chan_read(&m->main, payload, len) : 0;
		if (!ret)
			return 0;
	} else if (!ret && h.type == MIG_REC_ERROR) {
		return target_error(m, h.len);
	} else if (!ret) {
		migration_fail(m, -EPROTO, "expected %s from the target, got %s (%u bytes)",
			       mig_rec_name(type), mig_rec_name(h.type), h.len);
		return -EPROTO;
	}
	migration_fail(m, ret, "%s: %s", what, chan_strerror(ret));
	return ret;
}

int wait_ack(struct migration *m, struct mig_ack *ack)
{
	struct mig_rec_hdr h;
	int ret;

	/*
	 * Generous: giving up while a slow target (dropping stale pages of a
	 * huge guest, starting threads) still acknowledges would leave the VM
	 * running twice. A target that died resets the connection at once.
	 */
	chan_set_timeout(&m->main, 3 * m->params.timeout_ms);
	ret = chan_recv_hdr(&m->main, &h, MIG_ERROR_MAX);
	if (ret) {
		migration_fail(m, ret, "waiting for the target's acknowledgement: %s",
			       ret == -EPROTO ? "oversized record" : chan_strerror(ret));
		return ret;
	}
	if (h.type == MIG_REC_ACK && h.len == sizeof(*ack))
		return chan_read(&m->main, ack, sizeof(*ack));
	if (h.type == MIG_REC_ERROR)
		return target_error(m, h.len);
	migration_fail(m, -EPROTO, "expected ACK from the target, got %s (%u bytes)",
		       mig_rec_name(h.type), h.len);
	return -EPROTO;
}

static int wait_sync(struct migration *m)
{
	struct mig_sync sync;
	int ret = wait_reply(m, MIG_REC_SYNC_ACK, &sync, sizeof(sync),
			     "waiting for the target to apply the pass");

	if (!ret && sync.seq != m->sync_seq) {
		migration_fail(m, -EPROTO, "SYNC_ACK %llu, expected %llu",
			       (unsigned long long)sync.seq, (unsigned long long)m->sync_seq);
		return -EPROTO;
	}
	return ret;
}

int send_pass(struct migration *m)
{
	int err;

	if (!m->blackout)
		m->sync_seq++;
	team_run(&m->send_team, false);
	if (migration_cancelled(m)) {
		err = migration_error(m);
		return err ? err : -ECANCELED;
	}
	for (unsigned i = 0; i < m->nsenders; i++)
		if (m->senders[i].error)
			return m->senders[i].error;
	return m->blackout ? 0 : wait_sync(m);
}
