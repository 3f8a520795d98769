/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target side: accept one migration, check the VM description before
 * allocating anything, create the VM, receive pages on the data
 * connections and state on the main connection, verify that every channel
 * delivered what the source says it sent, then load the state. The caller
 * starts the vCPUs and acknowledges. Any failure discards the VM and tells
 * the source (ERROR record) so it resumes.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "digest.h"
#include <zstd.h>

#include "harvest.h"
#include "incoming.h"
#include "migration.h"
#include "tls.h"
#include "vcpu_state.h"
#include "vm.h"
#include "vm_state.h"

#define DATA_ACCEPT_TIMEOUT_MS 10000
#define MAX_SLOTS 32764u /* KVM's limit on our hosts; checked again at vm_create */

/* The main connection idles through precopy: notice a vanished source anyway. */
static void keepalive(int fd)
{
	int on = 1, idle = 5, intvl = 1, cnt = 5;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

struct desc {
	struct mig_vm_desc d;
	struct mig_slot_desc *slots;
	char *config;
};

static int read_desc(struct incoming *in, struct desc *ds, char *err, size_t errlen)
{
	struct mig_rec_hdr h;
	uint64_t total = 0;
	size_t slots_len;
	int ret = chan_recv_hdr(&in->main, &h, MIG_VM_DESC_MAX);

	if (ret) {
		snprintf(err, errlen, "VM_DESC: %s",
			 ret == -EPROTO ? "record larger than 1 MiB" : chan_strerror(ret));
		return ret;
	}
	if (h.type != MIG_REC_VM_DESC || h.len < sizeof(ds->d)) {
		snprintf(err, errlen, "expected VM_DESC first, got %s (%u bytes)",
			 mig_rec_name(h.type), h.len);
		return -EPROTO;
	}
	ret = chan_read(&in->main, &ds->d, sizeof(ds->d));
	if (ret) {
		snprintf(err, errlen, "VM_DESC: %s", chan_strerror(ret));
		return ret;
	}
	if (ds->d.page_size != GUEST_PAGE_SIZE || ds->d.nslots == 0 || ds->d.nslots > MAX_SLOTS ||
	    ds->d.nvcpus == 0 || ds->d.nvcpus > CONFIG_MAX_VCPUS || ds->d.nconnections == 0 ||
	    ds->d.nconnections > MIGRATION_MAX_CONNECTIONS || ds->d.shard_pages < 64 ||
	    ds->d.shard_pages > 65536 || (ds->d.shard_pages & (ds->d.shard_pages - 1)) ||
	    ds->d.config_len == 0 || ds->d.config_len >= MIG_VM_DESC_MAX) {
		snprintf(err, errlen,
			 "VM_DESC: bad values (page size %u, %u slots, %u vCPUs, %u connections, "
			 "config %u bytes, shard of %u pages)",
			 ds->d.page_size, ds->d.nslots, ds->d.nvcpus, ds->d.nconnections,
			 ds->d.config_len, ds->d.shard_pages);
		return -EPROTO;
	}
	slots_len = (size_t)ds->d.nslots * sizeof(struct mig_slot_desc);
	if ((uint64_t)h.len != sizeof(ds->d) + slots_len + ds->d.config_len) {
		snprintf(err, errlen, "VM_DESC: length %u does not match %u slots and %u bytes of config",
			 h.len, ds->d.nslots, ds->d.config_len);
		return -EPROTO;
	}
	ds->slots = malloc(slots_len);
	ds->config = malloc(ds->d.config_len + 1);
	if (!ds->slots || !ds->config)
		return -ENOMEM;
	ret = chan_read(&in->main, ds->slots, slots_len);
	if (!ret)
		ret = chan_read(&in->main, ds->config, ds->d.config_len);
	if (ret) {
		snprintf(err, errlen, "VM_DESC: %s", chan_strerror(ret));
		return ret;
	}
	ds->config[ds->d.config_len] = '\0';
	for (uint32_t i = 0; i < ds->d.nslots; i++) {
		const struct mig_slot_desc *s = &ds->slots[i];

		if (!s->size || s->size % GUEST_PAGE_SIZE || s->gpa % GUEST_PAGE_SIZE ||
		    s->gpa + s->size < s->gpa ||
		    (i > 0 && s->gpa < ds->slots[i - 1].gpa + ds->slots[i - 1].size)) {
			snprintf(err, errlen, "VM_DESC: slot %u [0x%llx, +0x%llx) is malformed", i,
				 (unsigned long long)s->gpa, (unsigned long long)s->size);
			return -EPROTO;
		}
		total += s->size;
	}
	if (total != ds->d.memory) {
		snprintf(err, errlen, "VM_DESC: slots add up to %llu bytes, memory is %llu",
			 (unsigned long long)total, (unsigned long long)ds->d.memory);
		return -EPROTO;
	}
	return 0;
}

/* The config from the stream, with this host's [console] and [api]. */
static int build_config(const struct desc *ds, const struct vm_config *local, struct vm_config *cfg,
			char *err, size_t errlen)
{
	char e[CONFIG_ERR_MAX];

	config_defaults(cfg);
	if (config_load_string(cfg, ds->config, "migration stream", e, sizeof(e))) {
		snprintf(err, errlen, "VM_DESC: %s", e);
		return -EPROTO;
	}
	if (cfg->memory != ds->d.memory || cfg->vcpus != ds->d.nvcpus) {
		snprintf(err, errlen, "VM_DESC: config (%llu bytes, %u vCPUs) disagrees with the "
			 "description (%llu bytes, %u vCPUs)",
			 (unsigned long long)cfg->memory, cfg->vcpus,
			 (unsigned long long)ds->d.memory, ds->d.nvcpus);
		return -EPROTO;
	}
	memcpy(cfg->console_output, local->console_output, sizeof(cfg->console_output));
	memcpy(cfg->api_socket, local->api_socket, sizeof(cfg->api_socket));
	memcpy(cfg->tls_cert, local->tls_cert, sizeof(cfg->tls_cert));
	memcpy(cfg->tls_key, local->tls_key, sizeof(cfg->tls_key));
	memcpy(cfg->tls_ca, local->tls_ca, sizeof(cfg->tls_ca));
	return 0;
}

static int check_layout(const struct vm *vm, const struct desc *ds, char *err, size_t errlen)
{
	if (vm->mem.nslots != ds->d.nslots)
		goto bad;
	for (uint32_t i = 0; i < ds->d.nslots; i++)
		if (vm->mem.slots[i].gpa != ds->slots[i].gpa ||
		    vm->mem.slots[i].size != ds->slots[i].size)
			goto bad;
	return 0;
bad:
	snprintf(err, errlen, "VM_DESC: the memslot layout differs from what this vmm builds for "
		 "the same config");
	return -EPROTO;
}

int incoming_secure(struct incoming *in, struct mig_chan *c, char *err, size_t errlen)
{
	uint64_t keep = c->timeout_ms;
	int ret;

	if (!in->tls)
		return 0;
	chan_set_timeout(c, 10000);
	ret = tls_start(c, in->tls, NULL, err, errlen);
	chan_set_timeout(c, keep);
	return ret;
}

/* The data connections and the urgent one, in any order. */
static int accept_data(struct incoming *in, int lfd, uint64_t session, char *err, size_t errlen)
{
	bool urgent = false;

	for (unsigned n = 0; n < in->nchans + 1; n++) {
		struct mig_chan c;
		struct mig_hello h;
		int ret = chan_accept(lfd, &c, DATA_ACCEPT_TIMEOUT_MS, err, errlen);

		if (ret)
			return ret;
		ret = incoming_secure(in, &c, err, errlen);
		if (ret) {
			chan_close(&c);
			return ret;
		}
		chan_set_timeout(&c, 0);
		ret = chan_recv_hello(&c, &h, err, errlen);
		if (!ret && h.session_id == session && h.role == MIG_ROLE_URGENT && !urgent) {
			in->urgent.chan = c;
			snprintf(in->urgent.chan.name, sizeof(c.name), "urgent");
			urgent = true;
			continue;
		}
		if (!ret && (h.role != MIG_ROLE_DATA || h.session_id != session ||
			     h.index >= in->nchans || in->chans[h.index].chan.fd >= 0)) {
			snprintf(err, errlen, "unexpected connection (role %u, index %u, %s session)",
				 h.role, h.index, h.session_id == session ? "same" : "other");
			ret = -EPROTO;
		}
		if (ret) {
			chan_close(&c);
			return ret;
		}
		in->chans[h.index].chan = c;
		snprintf(in->chans[h.index].chan.name, sizeof(c.name), "data %u", h.index);
	}
	return 0;
}

struct states {
	uint8_t *vm;
	uint32_t vm_len;
	uint8_t **vcpu;
	uint32_t *vcpu_len;
	struct mig_end end;
	uint64_t counts[MIGRATION_MAX_CONNECTIONS];
};

static int read_blob(struct incoming *in, uint32_t len, uint8_t **out, char *err, size_t errlen,
		     const char *what)
{
	int ret;

	*out = malloc(len ? len : 1);
	if (!*out)
		return -ENOMEM;
	ret = chan_read(&in->main, *out, len);
	if (ret)
		snprintf(err, errlen, "%s: %s", what, chan_strerror(ret));
	return ret;
}

/* Main connection: SWITCHOVER, VM_STATE, VCPU_STATE x n, END. */
static int read_main(struct incoming *in, struct states *st, char *err, size_t errlen)
{
	unsigned nvcpus = in->vm->nvcpus;
	uint64_t main_max = MIG_STATE_MAX + 8;

	/* A BITMAP record holds one slot's compressed bitmap. */
	for (uint32_t i = 0; i < in->vm->mem.nslots; i++) {
		uint64_t b = ZSTD_compressBound(bitmap_words(in->vm->mem.slots[i].npages) * 8) + 32;

		if (b > main_max)
			main_max = b;
	}
	if (main_max > UINT32_MAX)
		main_max = UINT32_MAX;

	for (;;) {
		struct mig_rec_hdr h;
		int ret = chan_recv_hdr(&in->main, &h, main_max);

		if (ret) {
			if (__atomic_load_n(&in->abort, __ATOMIC_RELAXED))
				return -EPIPE; /* a data connection failed; its error wins */
			snprintf(err, errlen, "main connection: %s",
				 ret == -EPROTO ? "record larger than 1 MiB" : chan_strerror(ret));
			return ret;
		}
		switch (h.type) {
		case MIG_REC_SWITCHOVER: {
			struct mig_switchover so;

			if (h.len != sizeof(so))
				goto bad_len;
			ret = chan_read(&in->main, &so, sizeof(so));
			break;
		}
		case MIG_REC_VM_STATE:
			if (st->vm) {
				snprintf(err, errlen, "VM_STATE sent twice");
				return -EPROTO;
			}
			st->vm_len = h.len;
			ret = read_blob(in, h.len, &st->vm, err, errlen, "VM_STATE");
			break;
		case MIG_REC_VCPU_STATE: {
			struct mig_vcpu_state_hdr vh;

			if (h.len < sizeof(vh))
				goto bad_len;
			ret = chan_read(&in->main, &vh, sizeof(vh));
			if (ret)
				break;
			if (vh.index >= nvcpus || st->vcpu[vh.index]) {
				snprintf(err, errlen, "VCPU_STATE for vCPU %u (%u vCPUs, or sent twice)",
					 vh.index, nvcpus);
				return -EPROTO;
			}
			st->vcpu_len[vh.index] = h.len - (uint32_t)sizeof(vh);
			ret = read_blob(in, st->vcpu_len[vh.index], &st->vcpu[vh.index], err, errlen,
					"VCPU_STATE");
			break;
		}
		case MIG_REC_END:
			if (h.len != sizeof(st->end) + in->nchans * sizeof(uint64_t))
				goto bad_len;
			ret = chan_read(&in->main, &st->end, sizeof(st->end));
			if (!ret)
				ret = chan_read(&in->main, st->counts, in->nchans * sizeof(uint64_t));
			if (!ret && st->end.nconnections != in->nchans) {
				snprintf(err, errlen, "END for %u connections, %u were opened",
					 st->end.nconnections, in->nchans);
				return -EPROTO;
			}
			return ret;
		case MIG_REC_POSTCOPY:
		case MIG_REC_BITMAP:
		case MIG_REC_BITMAP_END:
			ret = postcopy_target_record(in, &h, err, errlen);
			break;
		default:
			snprintf(err, errlen, "unexpected %s record (type %u, %u bytes) on the main "
				 "connection", mig_rec_name(h.type), h.type, h.len);
			return -EPROTO;
		}
		if (ret) {
			if (!err[0])
				snprintf(err, errlen, "main connection: %s", chan_strerror(ret));
			return ret;
		}
		continue;
bad_len:
		snprintf(err, errlen, "%s record with bad length %u", mig_rec_name(h.type), h.len);
		return -EPROTO;
	}
}

static int load_state(struct incoming *in, struct states *st, char *err, size_t errlen)
{
	struct vm *vm = in->vm;
	char e[256];
	int ret;

	if (!st->vm) {
		snprintf(err, errlen, "the stream ended without VM_STATE");
		return -EPROTO;
	}
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		if (!st->vcpu[i]) {
			snprintf(err, errlen, "the stream ended without VCPU_STATE for vCPU %u", i);
			return -EPROTO;
		}
	}
	/* VM-wide first (irqchip, PIT, clock), then each vCPU: LAPICs route through the irqchip. */
	ret = vm_state_load(vm, st->vm, st->vm_len, e, sizeof(e));
	if (ret) {
		snprintf(err, errlen, "VM_STATE: %s", e);
		return ret;
	}
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		ret = vcpu_state_load(&vm->vcpus[i], st->vcpu[i], st->vcpu_len[i], e, sizeof(e));
		if (ret) {
			snprintf(err, errlen, "VCPU_STATE %u: %s", i, e);
			return ret;
		}
	}
	return 0;
}

static void free_states(struct states *st, unsigned nvcpus)
{
	free(st->vm);
	for (unsigned i = 0; st->vcpu && i < nvcpus; i++)
		free(st->vcpu[i]);
	free(st->vcpu);
	free(st->vcpu_len);
}

/* Joins the receivers; the first receiver error becomes the migration's. */
static int join_receivers(struct incoming *in, char *err, size_t errlen)
{
	int ret = 0;

	for (unsigned i = 0; i < in->nchans; i++) {
		struct recv_chan *rc = &in->chans[i];

		if (!rc->started)
			continue;
		if (__atomic_load_n(&in->abort, __ATOMIC_RELAXED))
			chan_abort(&rc->chan);
		pthread_join(rc->thread, NULL);
		rc->started = false;
		if (rc->error && !ret) {
			ret = rc->error;
			snprintf(err, errlen, "%s", rc->err);
		}
	}
	return ret;
}

static void incoming_free(struct incoming *in)
{
	if (!in)
		return;
	__atomic_store_n(&in->abort, true, __ATOMIC_RELAXED);
	test_hook_watch_stop(&in->kill_watch);
	if (in->postcopy)
		postcopy_target_stop(in);
	for (unsigned i = 0; in->chans && i < in->nchans; i++)
		chan_abort(&in->chans[i].chan);
	for (unsigned i = 0; in->chans && i < in->nchans; i++) {
		if (in->chans[i].started)
			pthread_join(in->chans[i].thread, NULL);
		recv_chan_destroy(&in->chans[i]);
	}
	free(in->chans);
	recv_chan_destroy(&in->urgent);
	for (uint32_t i = 0; in->written && i < in->nwritten; i++) {
		free(in->written[i]);
		if (in->missing)
			free(in->missing[i]);
		if (in->stale)
			free(in->stale[i]);
		if (in->requested)
			free(in->requested[i]);
	}
	free(in->written);
	free(in->missing);
	free(in->stale);
	free(in->requested);
	free(in->reqtab);
	free(in->lat_us);
	free(in->drop_queue);
	free(in->bitmap_scratch);
	free(in->drop_todo);
	ZSTD_freeDCtx(in->bitmap_dctx);
	if (in->uffd >= 0)
		close(in->uffd);
	if (in->stop_fd >= 0)
		close(in->stop_fd);
	if (in->lfd >= 0)
		close(in->lfd);
	chan_close(&in->main);
	pthread_mutex_destroy(&in->main_wlock);
	pthread_mutex_destroy(&in->urgent_wlock);
	pthread_mutex_destroy(&in->pc_lock);
	pthread_mutex_destroy(&in->resume_lock);
	tls_ctx_free(in->tls);
	pthread_mutex_destroy(&in->drop_lock);
	pthread_cond_destroy(&in->drop_cond);
	free(in);
}

static void kill_self(void *arg)
{
	(void)arg;
	raise(SIGKILL);
}

static int receive(struct incoming *in, int lfd, const struct vm_config *local_cfg, int console_fd,
		   const struct incoming_hook *hook, char *err, size_t errlen)
{
	struct mig_hello hello;
	struct desc ds = {0};
	struct vm_config cfg;
	struct states st = {0};
	uint64_t t0;
	int ret;

	ret = chan_recv_hello(&in->main, &hello, err, errlen);
	if (!ret && hello.role != MIG_ROLE_MAIN) {
		snprintf(err, errlen, "the first connection must be the main one (role %u)",
			 hello.role);
		ret = -EPROTO;
	}
	if (!ret)
		ret = read_desc(in, &ds, err, errlen);
	if (!ret)
		ret = build_config(&ds, local_cfg, &cfg, err, errlen);
	if (ret)
		goto out;
	in->vm = calloc(1, sizeof(*in->vm));
	if (!in->vm) {
		ret = -ENOMEM;
		goto out;
	}
	ret = vm_create(in->vm, &cfg, console_fd, err, errlen);
	if (!ret)
		ret = check_layout(in->vm, &ds, err, errlen);
	if (!ret && hook && hook->created)
		ret = hook->created(in->vm, hook->opaque, err, errlen);
	if (ret)
		goto out;
	in->nchans = ds.d.nconnections;
	in->shard_pages = ds.d.shard_pages;
	in->chans = calloc(in->nchans, sizeof(*in->chans));
	in->written = calloc(in->vm->mem.nslots, sizeof(*in->written));
	in->nwritten = in->written ? in->vm->mem.nslots : 0;
	st.vcpu = calloc(in->vm->nvcpus, sizeof(*st.vcpu));
	st.vcpu_len = calloc(in->vm->nvcpus, sizeof(*st.vcpu_len));
	ret = in->chans && in->written && st.vcpu && st.vcpu_len ? 0 : -ENOMEM;
	for (uint32_t i = 0; !ret && i < in->vm->mem.nslots; i++) {
		in->written[i] = calloc(bitmap_words(in->vm->mem.slots[i].npages), 8);
		if (!in->written[i])
			ret = -ENOMEM;
	}
	for (unsigned i = 0; !ret && i < in->nchans; i++)
		ret = recv_chan_init(&in->chans[i], in, i);
	if (!ret) {
		ret = recv_chan_init(&in->urgent, in, in->nchans);
		in->urgent.urgent = true;
	}
	in->session = hello.session_id;
	if (!ret)
		ret = accept_data(in, lfd, hello.session_id, err, errlen);
	for (unsigned i = 0; !ret && i < in->nchans; i++) {
		ret = -pthread_create(&in->chans[i].thread, NULL, ram_recv_thread, &in->chans[i]);
		in->chans[i].started = !ret;
	}
	/* Test hook: die like a target killed in the middle of precopy. */
	if (!ret && in->hooks.fault == TEST_FAULT_KILL_DURING_PRECOPY)
		test_hook_watch_start(&in->kill_watch, &in->chans[0].records, 8, kill_self, NULL);
	if (!ret)
		ret = read_main(in, &st, err, errlen);
	in->end_ns = now_ns();
	if (ret)
		__atomic_store_n(&in->abort, true, __ATOMIC_RELAXED);
	if (!in->postcopy || ret) {
		char rerr[256] = "";
		int r = join_receivers(in, rerr, sizeof(rerr));

		/* A receiver's error explains a main-connection failure better. */
		if (r && (!ret || ret == -EPIPE || ret == -ECONNRESET || ret == -ENODATA)) {
			ret = r;
			snprintf(err, errlen, "%s", rerr);
		}
	}
	if (ret)
		goto out;
	/* Postcopy: receivers stay for the push; all they had must be in (last SYNC). */
	for (unsigned i = 0; i < in->nchans; i++) {
		uint64_t got = __atomic_load_n(&in->chans[i].records, __ATOMIC_ACQUIRE);

		if ((!in->postcopy && !in->chans[i].ended) || got != st.counts[i]) {
			snprintf(err, errlen, "data connection %u delivered %llu PAGES records, the "
				 "source sent %llu", i, (unsigned long long)got,
				 (unsigned long long)st.counts[i]);
			ret = -EPROTO;
			goto out;
		}
	}
	if (st.end.memory_digest) {
		uint64_t d = memory_digest(&in->vm->mem);

		if (!test_hooks_built()) {
			snprintf(err, errlen, "the source sent a memory digest (a test hook) and this vmm "
				 "was built without test hooks");
			ret = -EPROTO;
			goto out;
		}

		if (d != st.end.memory_digest) {
			snprintf(err, errlen, "memory digest 0x%016llx differs from the source's 0x%016llx",
				 (unsigned long long)d, (unsigned long long)st.end.memory_digest);
			ret = -EIO;
			goto out;
		}
		in->digest = d;
	}
	t0 = now_ns();
	ret = load_state(in, &st, err, errlen);
	/* Postcopy: the dropper worked through the bitmaps meanwhile. */
	if (!ret && in->postcopy)
		ret = postcopy_target_ready(in, err, errlen);
	in->restore_us = (now_ns() - t0) / 1000;
out:
	free_states(&st, in->vm ? in->vm->nvcpus : 0);
	free(ds.slots);
	free(ds.config);
	return ret;
}

/* Best effort: tell the source why we give up, so it resumes at once. */
static void tell_source(struct incoming *in, const char *err)
{
	/* A copy without the sticky error (TLS state is shared through the pointer). */
	struct mig_chan c = in->main;

	if (in->main.fd < 0)
		return;
	c.error = 0;
	chan_set_timeout(&c, 1000);
	pthread_mutex_lock(&in->main_wlock);
	chan_send_record(&c, MIG_REC_ERROR, err, (uint32_t)strnlen(err, MIG_ERROR_MAX), NULL, 0);
	pthread_mutex_unlock(&in->main_wlock);
}

int migration_incoming(const char *listen_addr, const struct vm_config *local_cfg, int console_fd,
		       const struct test_hooks *hooks, const struct incoming_hook *hook,
		       struct incoming **in_out, struct vm **vm_out, char *err, size_t errlen)
{
	struct incoming *in = calloc(1, sizeof(*in));
	int lfd = -1, ret;

	*in_out = NULL;
	*vm_out = NULL;
	err[0] = '\0';
	if (!in)
		return -ENOMEM;
	if (hooks)
		in->hooks = *hooks;
	in->main.fd = -1;
	in->lfd = -1;
	in->uffd = -1;
	in->stop_fd = -1;
	in->urgent.chan.fd = -1;
	pthread_mutex_init(&in->main_wlock, NULL);
	pthread_mutex_init(&in->urgent_wlock, NULL);
	pthread_mutex_init(&in->pc_lock, NULL);
	pthread_mutex_init(&in->resume_lock, NULL);
	pthread_mutex_init(&in->drop_lock, NULL);
	pthread_cond_init(&in->drop_cond, NULL);
	/* Key files are checked before anyone may connect. */
	{
		struct tls_files files = {local_cfg->tls_cert, local_cfg->tls_key, local_cfg->tls_ca};

		ret = tls_ctx_new(&in->tls, true, &files, err, errlen);
	}
	if (!ret)
		ret = chan_listen(listen_addr, &lfd, err, errlen);
	if (!ret)
		ret = chan_accept(lfd, &in->main, 0, err, errlen);
	if (!ret)
		ret = incoming_secure(in, &in->main, err, errlen);
	if (!ret) {
		keepalive(in->main.fd);
		ret = receive(in, lfd, local_cfg, console_fd, hook, err, errlen);
	}
	if (ret) {
		if (!err[0])
			snprintf(err, errlen, "%s", chan_strerror(ret));
		/* Before any connection resets: the source reads why from main first. */
		tell_source(in, err);
		if (lfd >= 0)
			close(lfd);
		{
			/* Engine threads first: they may still touch the VM's memory. */
			struct vm *vm = in->vm;

			incoming_free(in);
			if (vm) {
				vm_destroy(vm);
				free(vm);
			}
		}
		return ret;
	}
	/* Postcopy keeps listening: a broken connection is resumed through it. */
	if (in->postcopy)
		in->lfd = lfd;
	else
		close(lfd);
	/*
	 * The data connections are done, but their buffers are freed only after
	 * the ACK (migration_incoming_done): unmapping touched memory means TLB
	 * shootdowns, which are slow in a nested VM and would add to downtime.
	 */
	*in_out = in;
	*vm_out = in->vm;
	return 0;
}

int migration_incoming_ack(struct incoming *in, char *err, size_t errlen)
{
	struct mig_ack ack;
	int ret;

	/* Test hook: die like a target killed in the middle of the switchover. */
	if (in->hooks.fault == TEST_FAULT_KILL_BEFORE_ACK)
		raise(SIGKILL);
	/* From END received to ACK sent: the target's share of the downtime. */
	memset(&ack, 0, sizeof(ack));
	host_boot_id(ack.boot_id);
	ack.resume_mono_ns = now_ns();
	ack.restore_us = (ack.resume_mono_ns - in->end_ns) / 1000;
	chan_set_timeout(&in->main, 5000);
	pthread_mutex_lock(&in->main_wlock);
	ret = chan_send_record(&in->main, MIG_REC_ACK, &ack, sizeof(ack), NULL, 0);
	pthread_mutex_unlock(&in->main_wlock);
	if (ret)
		snprintf(err, errlen, "sending ACK to the source: %s", chan_strerror(ret));
	else if (in->postcopy)
		postcopy_target_started(in);
	return ret;
}

bool migration_incoming_finished(struct incoming *in)
{
	char c;
	ssize_t n;

	if (!in)
		return true;
	if (in->postcopy)
		return __atomic_load_n(&in->finished, __ATOMIC_ACQUIRE);
	/* Precopy: the source exits right after our ACK; its connection then reads EOF. */
	n = recv(in->main.fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

void migration_incoming_progress(struct incoming *in, struct migration_progress *out)
{
	if (in && in->postcopy)
		postcopy_target_progress(in, out);
}

uint64_t migration_incoming_digest(const struct incoming *in)
{
	return in ? in->digest : 0;
}

void migration_incoming_free(struct incoming *in)
{
	incoming_free(in);
}
