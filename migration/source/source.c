/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The source side's state machine, run on the migration thread:
 *
 *   SETUP      connect the main and data connections, describe the VM,
 *              enable dirty logging (nothing is write-protected up front)
 *   PRECOPY    pass after pass: harvest the dirty log of all slots
 *              concurrently, decide whether to switch over, send the
 *              pending pages on the data connections
 *   SWITCHOVER pause the vCPUs, final concurrent harvest, send the last
 *              pages, the device/VM/vCPU state and END, wait for ACK
 *   COMPLETED  the target runs the VM; the source VM ends (VM_END_MIGRATED)
 *   FAILED / CANCELLED  anything before the ACK: the source VM resumes with
 *              all of its memory (guest RAM is only ever read here)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "digest.h"
#include "migration_internal.h"
#include "state_buf.h"
#include "tls.h"
#include "vcpu_state.h"
#include "vm.h"
#include "vm_state.h"

void set_state(struct migration *m, enum migration_state s)
{
	pthread_mutex_lock(&m->lock);
	m->progress.state = s;
	pthread_mutex_unlock(&m->lock);
}

bool migration_cancelled(struct migration *m)
{
	return __atomic_load_n(&m->cancel, __ATOMIC_RELAXED);
}

static void abort_channels(struct migration *m)
{
	chan_abort(&m->main);
	chan_abort(&m->urgent);
	for (unsigned i = 0; i < m->nsenders; i++)
		chan_abort(&m->senders[i].chan);
}

/*
 * A target that gives up sends ERROR on the main connection before it
 * closes the others, so a reset data connection is often only the symptom.
 * Peeks (never consumes) at the main connection for that record.
 */
static bool target_said(struct migration *m, char *msg, size_t len)
{
	uint8_t buf[sizeof(struct mig_rec_hdr) + MIG_ERROR_MAX];
	struct mig_rec_hdr h;
	ssize_t n;

	if (m->main.fd < 0)
		return false;
	n = recv(m->main.fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n < (ssize_t)sizeof(h))
		return false;
	memcpy(&h, buf, sizeof(h));
	if (h.type != MIG_REC_ERROR || h.len > MIG_ERROR_MAX || (size_t)n < sizeof(h) + h.len)
		return false;
	snprintf(msg, len, "%.*s", (int)h.len, (const char *)buf + sizeof(h));
	return true;
}

void migration_fail(struct migration *m, int err, const char *fmt, ...)
{
	char said[MIG_ERROR_MAX + 1];
	va_list ap;

	pthread_mutex_lock(&m->lock);
	if (!m->progress.error[0]) {
		if (target_said(m, said, sizeof(said))) {
			snprintf(m->progress.error, sizeof(m->progress.error),
				 "the target failed: %.200s", said);
		} else {
			va_start(ap, fmt);
			vsnprintf(m->progress.error, sizeof(m->progress.error), fmt, ap);
			va_end(ap);
		}
	}
	pthread_mutex_unlock(&m->lock);
	(void)err;
	/* Stops every engine thread at its next check and unblocks their I/O. */
	__atomic_store_n(&m->cancel, true, __ATOMIC_RELAXED);
	abort_channels(m);
}

/* Any swap device means "not resident" no longer implies "never written". */
static bool host_has_swap(void)
{
	FILE *f = fopen("/proc/swaps", "r");
	char line[256];
	int lines = 0;

	if (!f)
		return true;
	while (fgets(line, sizeof(line), f))
		lines++;
	fclose(f);
	return lines > 1;
}

static int send_vm_desc(struct migration *m)
{
	struct vm *vm = m->vm;
	struct mig_vm_desc d = {
		.memory = vm->mem.size,
		.page_size = GUEST_PAGE_SIZE,
		.nslots = vm->mem.nslots,
		.nvcpus = vm->nvcpus,
		.nconnections = m->nsenders,
		.shard_pages = m->params.clear_chunk_pages,
	};
	size_t slots_len = (size_t)d.nslots * sizeof(struct mig_slot_desc);
	size_t cap = slots_len + 16384;
	char *buf = malloc(cap);
	int len, ret;

	if (!buf)
		return -ENOMEM;
	for (uint32_t i = 0; i < d.nslots; i++) {
		struct mig_slot_desc sd = {.gpa = vm->mem.slots[i].gpa,
					   .size = vm->mem.slots[i].size};

		memcpy(buf + i * sizeof(sd), &sd, sizeof(sd));
	}
	len = config_format(&vm->cfg, buf + slots_len, cap - slots_len);
	if (len < 0) {
		free(buf);
		return len;
	}
	d.config_len = (uint32_t)len;
	if (sizeof(d) + slots_len + (size_t)len > MIG_VM_DESC_MAX) {
		free(buf);
		return -E2BIG;
	}
	ret = chan_send_record(&m->main, MIG_REC_VM_DESC, &d, sizeof(d), buf,
			       (uint32_t)(slots_len + (size_t)len));
	free(buf);
	return ret;
}

/* TCP, then the TLS handshake when the VM's config names key files. */
static int connect_one(struct migration *m, struct mig_chan *c, const char *to, char *err,
		       size_t errlen)
{
	int ret = chan_connect(c, to, m->params.timeout_ms, err, errlen);

	if (!ret && m->tls)
		ret = tls_start(c, m->tls, to, err, errlen);
	return ret;
}

int connect_all(struct migration *m, uint32_t main_role)
{
	const char *to = main_role == MIG_ROLE_MAIN_RESUME ? m->resume_to : m->params.to;
	char err[256] = "";
	int ret;

	ret = connect_one(m, &m->main, to, err, sizeof(err));
	if (ret) {
		migration_fail(m, ret, "%s", err);
		return ret;
	}
	snprintf(m->main.name, sizeof(m->main.name), "main");
	ret = chan_send_hello(&m->main, m->session, main_role, 0);
	if (!ret && main_role == MIG_ROLE_MAIN)
		ret = send_vm_desc(m);
	if (ret) {
		migration_fail(m, ret, "sending the VM description: %s", chan_strerror(ret));
		return ret;
	}
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

uint64_t now_ms_since(uint64_t t0)
{
	return (now_ns() - t0) / 1000000ull;
}

static void update_live(struct migration *m, uint64_t t_start)
{
	pthread_mutex_lock(&m->lock);
	m->progress.bytes_sent = __atomic_load_n(&m->wire_bytes, __ATOMIC_RELAXED) +
				 m->main.bytes_out;
	m->progress.pages_sent = __atomic_load_n(&m->pages_sent, __ATOMIC_RELAXED);
	m->progress.zero_pages = __atomic_load_n(&m->zero_pages, __ATOMIC_RELAXED);
	m->progress.skipped_pages = __atomic_load_n(&m->skipped_pages, __ATOMIC_RELAXED);
	m->progress.total_ms = now_ms_since(t_start);
	pthread_mutex_unlock(&m->lock);
}

int wait_reply(struct migration *m, uint32_t type, void *payload, uint32_t len, const char *what)
{
	struct mig_rec_hdr h;
	char msg[MIG_ERROR_MAX + 1];
	int ret = chan_recv_hdr(&m->main, &h, MIG_ERROR_MAX);

	if (!ret && h.type == type && h.len == len) {
		ret = len ? chan_read(&m->main, payload, len) : 0;
		if (!ret)
			return 0;
	} else if (!ret && h.type == MIG_REC_ERROR) {
		ret = chan_read(&m->main, msg, h.len);
		msg[ret ? 0 : h.len] = '\0';
		migration_fail(m, -EPROTO, "the target failed: %s", msg);
		return -EPROTO;
	} else if (!ret) {
		migration_fail(m, -EPROTO, "expected %s from the target, got %s (%u bytes)",
			       mig_rec_name(type), mig_rec_name(h.type), h.len);
		return -EPROTO;
	}
	migration_fail(m, ret, "%s: %s", what, chan_strerror(ret));
	return ret;
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

static int run_send_pass(struct migration *m)
{
	if (!m->blackout)
		m->sync_seq++;
	team_run(&m->send_team, false);
	if (migration_cancelled(m))
		return -ECANCELED;
	for (unsigned i = 0; i < m->nsenders; i++)
		if (m->senders[i].error)
			return m->senders[i].error;
	return m->blackout ? 0 : wait_sync(m);
}

static int harvest(struct migration *m, struct harvest_stats *st)
{
	int ret = harvest_run(&m->harvest, false, st);

	if (ret) {
		migration_fail(m, ret, "harvesting the dirty log: %s", chan_strerror(ret));
		return ret;
	}
	pthread_mutex_lock(&m->lock);
	m->progress.harvest_us_last = st->wall_ns / 1000;
	m->progress.harvest_us_total += st->wall_ns / 1000;
	m->progress.bytes_remaining = st->pending * GUEST_PAGE_SIZE;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

enum { PRECOPY_STOP_AND_COPY = 0, PRECOPY_TO_POSTCOPY = 1 };

/*
 * Precopy passes until the rest fits the downtime limit. Returns
 * PRECOPY_STOP_AND_COPY, PRECOPY_TO_POSTCOPY (mode postcopy after
 * postcopy_after passes; mode auto when precopy does not converge), or -errno. Switching over early while the dirty set still halves
 * each pass would waste downtime, so we also wait for it to stop shrinking.
 */
static int precopy(struct migration *m, uint64_t t_start)
{
	struct migration_params *p = &m->params;
	uint64_t prev_pending = UINT64_MAX, page_rate = 0;
	uint64_t pass_ns = 0;

	for (unsigned pass = 0;; pass++) {
		struct harvest_stats st;
		uint64_t t0, w0, pages0, est_us;
		int ret = harvest(m, &st);

		if (ret)
			return ret;
		/*
		 * Pages per second, not bytes: compressed pages are cheap on the
		 * wire, and what the blackout pays is reading, compressing and
		 * applying each one.
		 */
		est_us = page_rate ? st.pending * 1000000 / page_rate : UINT64_MAX;
		pthread_mutex_lock(&m->lock);
		m->progress.pass = pass;
		m->progress.expected_downtime_ms = page_rate ? est_us / 1000 : 0;
		if (pass_ns)
			m->progress.dirty_rate_pps = st.pending * 1000000000ull / pass_ns;
		pthread_mutex_unlock(&m->lock);
		if (p->mode == MIGRATION_MODE_POSTCOPY && pass >= p->postcopy_after)
			return PRECOPY_TO_POSTCOPY;
		if (pass > 0) {
			bool fits = est_us <= p->downtime_ms * 1000;
			/* Still halving and not yet tiny: one more pass shortens the blackout. */
			bool shrinking = st.pending * 2 <= prev_pending && est_us >= 1000;
			/* auto: three passes that do not shrink the rest by a fifth will not converge. */
			bool stuck = pass >= 3 && st.pending * 5 > prev_pending * 4;

			if (fits && !shrinking) {
				m->progress.converged = true;
				return PRECOPY_STOP_AND_COPY;
			}
			if (p->mode == MIGRATION_MODE_AUTO && !fits &&
			    (stuck || pass >= p->max_passes ||
			     now_ms_since(t_start) >= p->max_time_ms))
				return PRECOPY_TO_POSTCOPY;
			if (pass >= p->max_passes || now_ms_since(t_start) >= p->max_time_ms) {
				if (p->no_converge == MIGRATION_NO_CONVERGE_FAIL) {
					migration_fail(m, -ETIMEDOUT,
						       "precopy did not converge in %u passes / %llu ms "
						       "(expected downtime %llu ms > limit %llu ms)",
						       pass, (unsigned long long)now_ms_since(t_start),
						       (unsigned long long)(est_us / 1000),
						       (unsigned long long)p->downtime_ms);
					return -ETIMEDOUT;
				}
				m->progress.converged = false;
				return PRECOPY_STOP_AND_COPY;
			}
		}
		prev_pending = st.pending;
		m->first_pass = pass == 0;
		m->first_pass_pending = false;
		t0 = now_ns();
		w0 = __atomic_load_n(&m->wire_bytes, __ATOMIC_RELAXED);
		pages0 = __atomic_load_n(&m->pages_sent, __ATOMIC_RELAXED) +
			 __atomic_load_n(&m->zero_pages, __ATOMIC_RELAXED);
		ret = run_send_pass(m);
		if (ret)
			return ret;
		pass_ns = now_ns() - t0 + 1;
		{
			uint64_t bytes = __atomic_load_n(&m->wire_bytes, __ATOMIC_RELAXED) - w0;
			uint64_t pages = __atomic_load_n(&m->pages_sent, __ATOMIC_RELAXED) +
					 __atomic_load_n(&m->zero_pages, __ATOMIC_RELAXED) - pages0;

			/* A small pass measures latency, not throughput: keep the last real one. */
			if (pages >= 1024 || !page_rate)
				page_rate = pages * 1000000000ull / pass_ns + 1;
			pthread_mutex_lock(&m->lock);
			m->progress.throughput_bps = bytes * 1000000000ull / pass_ns;
			pthread_mutex_unlock(&m->lock);
		}
		update_live(m, t_start);
	}
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

/* CHANNEL_END on every data connection: what each carried. */
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

/* END on the main connection, with the PAGES records sent on each data connection. */
int send_end(struct migration *m)
{
	struct mig_end end = {.nconnections = m->nsenders};
	uint64_t counts[MIGRATION_MAX_CONNECTIONS];
	int ret;

	for (unsigned i = 0; i < m->nsenders; i++)
		counts[i] = m->senders[i].records;
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

int wait_ack(struct migration *m, struct mig_ack *ack)
{
	struct mig_rec_hdr h;
	char msg[MIG_ERROR_MAX + 1];
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
	if (h.type == MIG_REC_ERROR) {
		ret = chan_read(&m->main, msg, h.len);
		msg[ret ? 0 : h.len] = '\0';
		migration_fail(m, -EPROTO, "the target failed: %s", msg);
		return -EPROTO;
	}
	migration_fail(m, -EPROTO, "expected ACK from the target, got %s (%u bytes)",
		       mig_rec_name(h.type), h.len);
	return -EPROTO;
}

void record_downtime(struct migration *m, uint64_t t_pause, const struct mig_ack *ack)
{
	uint8_t id[16];
	uint64_t now = now_ns();

	m->progress.downtime_ack_us = (now - t_pause) / 1000;
	m->progress.downtime_us = m->progress.downtime_ack_us;
	/* Same host: the target's clock says when the guest ran again. */
	if (!host_boot_id(id) && !memcmp(id, ack->boot_id, sizeof(id)) &&
	    ack->resume_mono_ns > t_pause && ack->resume_mono_ns <= now)
		m->progress.downtime_us = (ack->resume_mono_ns - t_pause) / 1000;
	m->progress.downtime_ms = m->progress.downtime_us / 1000;
}

int blackout_begin(struct migration *m, uint64_t *t_pause)
{
	struct vm *vm = m->vm;

	/* A cancel is decided under the same lock: it lands before this or not at all. */
	pthread_mutex_lock(&m->lock);
	if (__atomic_load_n(&m->cancel, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&m->lock);
		return -ECANCELED;
	}
	m->progress.state = MIGRATION_SWITCHOVER;
	pthread_mutex_unlock(&m->lock);
	*t_pause = now_ns();
	vm_pause(vm);
	m->progress.blackout_pause_us = (now_ns() - *t_pause) / 1000;
	if (__atomic_load_n(&vm->stopping, __ATOMIC_ACQUIRE)) {
		migration_fail(m, -ESRCH, "the VM stopped during migration: %s", vm->end_message);
		return -ESRCH;
	}
	m->blackout = true;
	m->first_pass = false;
	return 0;
}

/* Stop-and-copy. On failure the caller resumes the vCPUs. */
static int switchover(struct migration *m, uint64_t t_start, uint64_t *t_pause)
{
	struct harvest_stats st;
	struct mig_switchover so = {.pass = m->progress.pass};
	struct mig_ack *ack = &m->ack;
	uint64_t t1, t2, t3;
	int ret;

	ret = blackout_begin(m, t_pause);
	if (ret)
		return ret;
	ret = harvest(m, &st);
	if (ret)
		return ret;
	pthread_mutex_lock(&m->lock);
	m->progress.harvest_us_final = st.wall_ns / 1000;
	pthread_mutex_unlock(&m->lock);
	ret = chan_send_record(&m->main, MIG_REC_SWITCHOVER, &so, sizeof(so), NULL, 0);
	if (ret) {
		migration_fail(m, ret, "sending SWITCHOVER: %s", chan_strerror(ret));
		return ret;
	}
	t1 = now_ns();
	ret = run_send_pass(m);
	t2 = now_ns();
	if (!ret)
		ret = send_state(m);
	if (!ret)
		ret = finish_channels(m);
	t3 = now_ns();
	if (!ret)
		ret = wait_ack(m, ack);
	pthread_mutex_lock(&m->lock);
	m->progress.blackout_send_us = (t2 - t1) / 1000;
	m->progress.blackout_state_us = (t3 - t2) / 1000;
	m->progress.blackout_ack_us = (now_ns() - t3) / 1000;
	m->progress.target_restore_us = ack->restore_us;
	if (!ret)
		record_downtime(m, *t_pause, ack);
	pthread_mutex_unlock(&m->lock);
	update_live(m, t_start);
	return ret;
}

/*
 * INITIALLY_SET (shared/seeds/002) spares a guest whose memory is mostly in
 * use the up-front write protection of all of it. For a sparse guest it is
 * the wrong trade: every never-touched page starts "dirty" in KVM and must
 * be cleared once (~10 ns a page here: 160 ms for 64 GiB), while
 * write-protecting the few mapped pages costs next to nothing. So a guest
 * with less than half of its RAM resident gets plain manual protect and a
 * first pass over exactly its resident pages.
 */
static int setup_dirty_log(struct migration *m)
{
	struct vm *vm = m->vm;
	uint64_t total = vm->mem.size / GUEST_PAGE_SIZE, resident = total;
	int ret = 0;

	m->check_residency = !host_has_swap();
	ret = harvest_init(&m->harvest, vm, &m->dl, m->params.harvest_threads);
	if (!ret && m->check_residency)
		ret = harvest_mark_resident(&m->harvest, &resident);
	if (ret)
		return ret;
	m->sparse = m->check_residency && resident * 2 < total;
	ret = dirtylog_enable(&m->dl, vm, !m->sparse);
	if (ret)
		return ret;
	if (!m->dl.first_pass_all) {
		/* KVM reports every page in the first GET: start from nothing. */
		for (uint32_t i = 0; i < m->harvest.nslots; i++)
			memset(m->harvest.slots[i].pending, 0,
			       bitmap_words(vm->mem.slots[i].npages) * 8);
		return 0;
	}
	if (!m->check_residency) {
		harvest_mark_all(&m->harvest);
		return 0;
	}
	/* After enabling: a page first written from now on is in KVM's log. */
	ret = harvest_mark_resident(&m->harvest, &resident);
	__atomic_fetch_add(&m->skipped_pages, total - resident, __ATOMIC_RELAXED);
	return ret;
}

static int setup(struct migration *m, uint64_t t_start)
{
	int ret = connect_all(m, MIG_ROLE_MAIN);

	if (ret)
		return ret;
	ret = setup_dirty_log(m);
	if (ret) {
		migration_fail(m, ret, "enabling dirty logging: %s", strerror(-ret));
		return ret;
	}
	ret = team_init(&m->send_team, m->nsenders, ram_send_pass, m);
	if (ret) {
		migration_fail(m, ret, "starting engine threads: %s", strerror(-ret));
		return ret;
	}
	pthread_mutex_lock(&m->lock);
	m->progress.manual_protect = m->dl.manual_protect;
	m->progress.initially_set = m->dl.initially_set;
	m->progress.sparse_guest = m->sparse;
	m->progress.harvest_threads = m->harvest.nthreads;
	m->progress.setup_ms = now_ms_since(t_start);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

void *migration_thread(void *arg)
{
	struct migration *m = arg;
	struct vm *vm = m->vm;
	uint64_t t_start = now_ns(), t_pause = 0;
	int ret;

	m->first_pass_pending = true;
	ret = setup(m, t_start);
	if (!ret) {
		set_state(m, MIGRATION_PRECOPY);
		ret = precopy(m, t_start);
	}
	if (ret == PRECOPY_TO_POSTCOPY) {
		/* Returns only when the target has every page; never resumes here after its ACK. */
		ret = postcopy_source_run(m, &t_pause);
	} else if (!ret) {
		ret = switchover(m, t_start, &t_pause);
	}
	if (t_pause && ret) {
		/* Nothing was lost: guest RAM was only read. Run again at once. */
		m->blackout = false;
		vm_resume(vm);
	}
	if (ret)
		dirtylog_disable(&m->dl);
	update_live(m, t_start);
	pthread_mutex_lock(&m->lock);
	m->progress.total_ms = now_ms_since(t_start);
	if (!ret) {
		m->progress.state = MIGRATION_COMPLETED;
	} else if (m->user_cancelled) {
		m->progress.state = MIGRATION_CANCELLED;
	} else {
		m->progress.state = MIGRATION_FAILED;
		if (!m->progress.error[0])
			snprintf(m->progress.error, sizeof(m->progress.error), "%s",
				 chan_strerror(ret));
	}
	pthread_mutex_unlock(&m->lock);
	if (!ret)
		vm_request_stop(vm, VM_END_MIGRATED, 0, "migrated to %s", m->params.to);
	return NULL;
}
