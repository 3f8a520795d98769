/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target's side of the handshake: listen, accept, TLS, hellos, the VM
 * description (checked before anything is allocated for it), the config
 * check, creating the VM; and accepting a resumed postcopy session. Calls
 * only the wire layer and the machine: every other file of the target may
 * call it.
 *
 * Nothing read before the VM description is trusted: the hello has a fixed
 * size, VM_DESC is at most MIG_VM_DESC_MAX bytes, and both must arrive
 * within HANDSHAKE_TIMEOUT_MS of the connection (a real source sends them
 * at once), so a silent or slow peer cannot hold the listener.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "codec.h"
#include "incoming.h"
#include "migration.h"
#include "tls.h"
#include "vm.h"

#define DATA_ACCEPT_TIMEOUT_MS 10000
#define HANDSHAKE_TIMEOUT_MS   10000  /* TLS handshake, hello, VM_DESC */
#define MAX_SLOTS	       32764u /* KVM's limit on our hosts; checked again at vm_create */

void incoming_init(struct incoming *in, const struct test_hooks *hooks)
{
	if (hooks)
		in->hooks = *hooks;
	in->main.fd = -1;
	in->lfd = -1;
	in->urgent.chan.fd = -1;
	pthread_mutex_init(&in->main_wlock, NULL);
	pthread_mutex_init(&in->urgent_wlock, NULL);
	pc_state_init(&in->pc);
}

/* The main connection idles through precopy: notice a vanished source anyway. */
static void keepalive(int fd)
{
	int on = 1, idle = 5, intvl = 1, cnt = 5;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

int incoming_secure(struct incoming *in, struct mig_chan *c, char *err, size_t errlen)
{
	uint64_t keep = c->timeout_ms;
	int ret;

	if (!in->tls)
		return 0;
	chan_set_timeout(c, HANDSHAKE_TIMEOUT_MS);
	ret = chan_start_tls(c, in->tls, NULL, err, errlen);
	chan_set_timeout(c, keep);
	return ret;
}

int incoming_open(struct incoming *in, const char *addr, const struct vm_config *local_cfg,
		  int *lfd, char *err, size_t errlen)
{
	/* Key files are checked before anyone may connect. */
	struct tls_files files = {local_cfg->tls_cert, local_cfg->tls_key, local_cfg->tls_ca};
	int ret = tls_ctx_new(&in->tls, true, &files, err, errlen);

	if (!ret)
		ret = chan_listen(addr, lfd, err, errlen);
	if (!ret)
		ret = chan_accept(*lfd, &in->main, 0, err, errlen);
	if (!ret)
		ret = incoming_secure(in, &in->main, err, errlen);
	if (!ret)
		keepalive(in->main.fd);
	return ret;
}

struct desc {
	uint8_t *buf; /* the VM_DESC payload */
	struct mig_vm_desc_view v;
	char *config; /* NUL terminated copy */
};

static int read_desc(struct incoming *in, struct desc *ds, char *err, size_t errlen)
{
	const struct mig_desc_limits lim = {.max_slots = MAX_SLOTS,
					    .max_vcpus = CONFIG_MAX_VCPUS,
					    .max_connections = MIGRATION_MAX_CONNECTIONS};
	struct mig_rec_hdr h;
	int ret = chan_recv_rec(&in->main, 0, &h, err, errlen);

	if (ret) {
		/* The table's refusal names the record; an I/O error gets its name here. */
		if (ret != -EPROTO || !err[0])
			snprintf(err, errlen, "VM_DESC: %s", chan_strerror(ret));
		return ret;
	}
	if (h.type != MIG_REC_VM_DESC) {
		snprintf(err, errlen, "expected VM_DESC first, got %s (%u bytes)",
			 mig_rec_name(h.type), h.len);
		return -EPROTO;
	}
	/* At most MIG_VM_DESC_MAX: the table bounded it. */
	ds->buf = malloc(h.len);
	if (!ds->buf)
		return -ENOMEM;
	ret = chan_read(&in->main, ds->buf, h.len);
	if (ret) {
		snprintf(err, errlen, "VM_DESC: %s", chan_strerror(ret));
		return ret;
	}
	ret = mig_vm_desc_decode(ds->buf, h.len, &lim, &ds->v, err, errlen);
	if (ret)
		return ret;
	ds->config = malloc(ds->v.d.config_len + 1);
	if (!ds->config)
		return -ENOMEM;
	memcpy(ds->config, ds->v.config, ds->v.d.config_len);
	ds->config[ds->v.d.config_len] = '\0';
	return 0;
}

/* The config from the stream, with this host's [console], [api] and TLS files. */
static int build_config(const struct desc *ds, const struct vm_config *local, struct vm_config *cfg,
			char *err, size_t errlen)
{
	char e[CONFIG_ERR_MAX];

	config_defaults(cfg);
	if (config_load_string(cfg, ds->config, "migration stream", e, sizeof(e))) {
		snprintf(err, errlen, "VM_DESC: %s", e);
		return -EPROTO;
	}
	if (cfg->memory != ds->v.d.memory || cfg->vcpus != ds->v.d.nvcpus) {
		snprintf(err, errlen,
			 "VM_DESC: config (%llu bytes, %u vCPUs) disagrees with the "
			 "description (%llu bytes, %u vCPUs)",
			 (unsigned long long)cfg->memory, cfg->vcpus,
			 (unsigned long long)ds->v.d.memory, ds->v.d.nvcpus);
		return -EPROTO;
	}
	memcpy(cfg->console_output, local->console_output, sizeof(cfg->console_output));
	memcpy(cfg->api_socket, local->api_socket, sizeof(cfg->api_socket));
	memcpy(cfg->tls_cert, local->tls_cert, sizeof(cfg->tls_cert));
	memcpy(cfg->tls_key, local->tls_key, sizeof(cfg->tls_key));
	memcpy(cfg->tls_ca, local->tls_ca, sizeof(cfg->tls_ca));
	return 0;
}

/* The layout this vmm built for the config must be the one the source described. */
static int check_layout(const struct vm *vm, const struct desc *ds, char *err, size_t errlen)
{
	if (vm->mem.nslots != ds->v.d.nslots)
		goto bad;
	for (uint32_t i = 0; i < ds->v.d.nslots; i++) {
		struct mig_slot_desc s = mig_vm_desc_slot(&ds->v, i);

		if (vm->mem.slots[i].gpa != s.gpa || vm->mem.slots[i].size != s.size)
			goto bad;
	}
	return 0;
bad:
	snprintf(err, errlen,
		 "VM_DESC: the memslot layout differs from what this vmm builds for "
		 "the same config");
	return -EPROTO;
}

int incoming_create_vm(struct incoming *in, const struct vm_config *local_cfg, int console_fd,
		       const struct incoming_hook *hook, char *err, size_t errlen)
{
	struct mig_hello hello;
	struct desc ds = {0};
	struct vm_config cfg;
	uint64_t keep = in->main.timeout_ms;
	int ret;

	chan_set_timeout(&in->main, HANDSHAKE_TIMEOUT_MS);
	ret = chan_recv_hello(&in->main, &hello, err, errlen);
	if (!ret && hello.role != MIG_ROLE_MAIN) {
		snprintf(err, errlen, "the first connection must be the main one (role %u)",
			 hello.role);
		ret = -EPROTO;
	}
	if (!ret)
		ret = read_desc(in, &ds, err, errlen);
	/* The main connection then idles through precopy. */
	chan_set_timeout(&in->main, keep);
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
	in->nchans = ds.v.d.nconnections;
	in->shard_pages = ds.v.d.shard_pages;
	in->session = hello.session_id;
out:
	free(ds.buf);
	free(ds.config);
	return ret;
}

/* Accepts one connection and reads its hello (both bounded in time). */
static int accept_hello(struct incoming *in, int lfd, uint64_t accept_ms, struct mig_chan *c,
			struct mig_hello *h, char *err, size_t errlen)
{
	int ret = chan_accept(lfd, c, accept_ms, err, errlen);

	if (ret)
		return ret;
	chan_set_timeout(c, HANDSHAKE_TIMEOUT_MS);
	ret = incoming_secure(in, c, err, errlen);
	if (!ret)
		ret = chan_recv_hello(c, h, err, errlen);
	chan_set_timeout(c, 0);
	return ret;
}

int incoming_accept_data(struct incoming *in, int lfd, char *err, size_t errlen)
{
	bool urgent = false;

	for (unsigned n = 0; n < in->nchans + 1; n++) {
		struct mig_chan c;
		struct mig_hello h;
		int ret = accept_hello(in, lfd, DATA_ACCEPT_TIMEOUT_MS, &c, &h, err, errlen);

		if (!ret && h.session_id == in->session && h.role == MIG_ROLE_URGENT && !urgent) {
			in->urgent.chan = c;
			snprintf(in->urgent.chan.name, sizeof(c.name), "urgent");
			urgent = true;
			continue;
		}
		if (!ret && (h.role != MIG_ROLE_DATA || h.session_id != in->session ||
			     h.index >= in->nchans || in->chans[h.index].chan.fd >= 0)) {
			snprintf(err, errlen,
				 "unexpected connection (role %u, index %u, %s session)", h.role,
				 h.index, h.session_id == in->session ? "same" : "other");
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

int incoming_accept_resume(struct incoming *in)
{
	unsigned ndata = 0;
	bool urgent = false;
	char err[256];

	for (;;) {
		struct mig_chan c;
		struct mig_hello h;
		int ret = accept_hello(in, in->lfd, 0, &c, &h, err, sizeof(err));

		if (ret && c.fd < 0)
			return ret; /* the listening socket failed */
		if (ret || h.session_id != in->session) {
			chan_close(&c);
			continue; /* not ours: keep waiting for the real source */
		}
		if (h.role == MIG_ROLE_MAIN_RESUME && in->main.fd < 0) {
			pthread_mutex_lock(&in->main_wlock);
			in->main = c;
			pthread_mutex_unlock(&in->main_wlock);
		} else if (h.role == MIG_ROLE_DATA && in->main.fd >= 0 && h.index < in->nchans &&
			   in->chans[h.index].chan.fd < 0) {
			in->chans[h.index].chan = c;
			ndata++;
		} else if (h.role == MIG_ROLE_URGENT && in->main.fd >= 0 && !urgent) {
			pthread_mutex_lock(&in->urgent_wlock);
			in->urgent.chan = c;
			pthread_mutex_unlock(&in->urgent_wlock);
			urgent = true;
		} else {
			chan_close(&c);
			continue;
		}
		if (ndata == in->nchans && urgent)
			return 0;
	}
}

int incoming_send_main(struct incoming *in, uint32_t type, const void *a, uint32_t alen,
		       const void *b, uint32_t blen)
{
	int ret;

	pthread_mutex_lock(&in->main_wlock);
	ret = chan_send_record(&in->main, type, a, alen, b, blen);
	pthread_mutex_unlock(&in->main_wlock);
	return ret;
}
