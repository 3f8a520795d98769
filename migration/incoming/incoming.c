/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The target's side of the handshake once the gate (gate.c) took the
 * source's main connection: create the VM it describes, take its data
 * connections; and accepting a resumed postcopy session. Calls only the
 * wire layer, the machine and gate.c: every other file of the target may
 * call it.
 *
 * Nothing read before the VM description is trusted: the gate bounds it
 * (the record table in size, HANDSHAKE_TIMEOUT_MS per connection in time)
 * and refuses a bad peer on its own, so the target keeps waiting for the
 * real source.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "codec.h"
#include "hostport.h"
#include "incoming.h"
#include "migration.h"
#include "proof.h"
#include "tls.h"
#include "uffd.h"
#include "vm.h"
#include "test_faults.h"

#define DATA_ACCEPT_TIMEOUT_MS 10000
#define RESUME_SESSION_MS      10000 /* a resume's main to its last data connection */

void incoming_init(struct incoming *in, const struct test_hooks *hooks)
{
	if (hooks)
		in->hooks = *hooks;
	in->main.fd = -1;
	in->lfd = -1;
	in->post.urgent.chan.fd = -1;
	in->post.uffd_probe = -1;
	in->sw.commit_timeout_ms = 10000;
	in->open_lfd = -1;
	pthread_mutex_init(&in->status.status_lock, NULL);
	pthread_mutex_init(&in->main_wlock, NULL);
	pthread_mutex_init(&in->post.urgent_wlock, NULL);
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

/* The "host:port" of lfd's bound address (peer: of fd's peer); `fallback` if unreadable. */
static void sock_name(int fd, bool peer, const char *fallback, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN];
	const void *a = NULL;
	unsigned port = 0;
	int r = peer ? getpeername(fd, (struct sockaddr *)&ss, &sl)
		     : getsockname(fd, (struct sockaddr *)&ss, &sl);

	if (!r && peer && ss.ss_family == AF_UNIX) {
		chan_unix_peer_ok(fd, out, len);
		return;
	}
	if (!r) {
		if (ss.ss_family == AF_INET) {
			a = &((struct sockaddr_in *)&ss)->sin_addr;
			port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
			port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		}
	}
	if (a && inet_ntop(ss.ss_family, a, host, sizeof(host)))
		snprintf(out, len, ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port);
	else
		snprintf(out, len, "%s", fallback);
}

/* A gate thread refused a connection: counted for the status, then the caller's hook. */
static void note_refused(void *opaque, const char *peer, const char *why)
{
	struct incoming *in = opaque;

	pthread_mutex_lock(&in->status.status_lock);
	in->status.refused++;
	snprintf(in->status.last_refused, sizeof(in->status.last_refused), "%s: %s", peer, why);
	pthread_mutex_unlock(&in->status.status_lock);
	if (in->user_hook.refused)
		in->user_hook.refused(in->user_hook.opaque, peer, why);
}

/*
 * [vm] prealloc on a target: the RAM of the VM it is told to expect (its
 * own vm.memory, memslot_size and memory_backend) is mapped and made
 * resident before it listens, so that no source waits on it and the pages
 * that arrive land in touched memory; the gate refuses a VM of another
 * layout (gate_main.c).
 */
static int prealloc_ram(struct incoming *in, const struct vm_config *local, char *err,
			size_t errlen)
{
	int ret;

	if (!local->prealloc)
		return 0;
	if (!strcmp(local->memory_origin.file, "default")) {
		snprintf(err, errlen,
			 "vm.prealloc on a migration target needs vm.memory: the size of the VM "
			 "it is to receive");
		return -EINVAL;
	}
	/* Before the mapping: its slot table and dirty bitmaps grow with the size. */
	ret = guest_mem_room(local->memory, err, errlen);
	if (ret)
		return ret;
	ret = guest_mem_init(&in->ram, local->memory, local->memslot_size, local->backend);
	if (ret) {
		snprintf(err, errlen, "vm.prealloc: mapping %llu MiB of guest RAM: %s",
			 (unsigned long long)(local->memory >> 20), strerror(-ret));
		return ret;
	}
	ret = guest_mem_populate(&in->ram, err, errlen);
	if (ret)
		guest_mem_destroy(&in->ram);
	return ret;
}

int incoming_open(struct incoming *in, const char *addr, const struct vm_config *local_cfg,
		  const struct migration_host *host, const struct incoming_hook *hook, int *lfd,
		  char *err, size_t errlen)
{
	/*
	 * Key files are checked before anyone may connect. A UNIX socket
	 * carries no TLS: its file's mode and the peer's uid guard it.
	 */
	struct tls_files files = {host->tls_cert ? host->tls_cert : "",
				  host->tls_key ? host->tls_key : "",
				  host->tls_ca ? host->tls_ca : ""};
	const char *upath = hostport_unix_path(addr);
	int ret = upath ? 0 : tls_ctx_new(&in->tls, true, &files, err, errlen);

	if (!ret)
		ret = prealloc_ram(in, local_cfg, err, errlen);
	if (!ret)
		ret = chan_listen(addr, lfd, err, errlen);
	if (!ret && upath) {
		struct stat st;

		in->unix_path = strdup(upath);
		if (in->unix_path && !lstat(upath, &st)) {
			in->unix_dev = st.st_dev;
			in->unix_ino = st.st_ino;
		}
	}
	if (!ret) {
		char name[sizeof(in->status.listen)];

		sock_name(*lfd, false, addr, name, sizeof(name));
		pthread_mutex_lock(&in->status.status_lock);
		snprintf(in->status.listen, sizeof(in->status.listen), "%s", name);
		pthread_mutex_unlock(&in->status.status_lock);
		if (hook && hook->listening)
			hook->listening(hook->opaque, name);
	}
	if (!ret) {
		if (hook)
			in->user_hook = *hook;
		in->gate_hook = in->user_hook;
		in->gate_hook.refused = note_refused;
		in->gate_hook.opaque = in;
		ret = gate_start(&in->gate, *lfd, in->tls, local_cfg, host->desc, &in->gate_hook,
				 err, errlen);
	}
	return ret;
}

/*
 * The layout this vmm built for the config must be the one the source
 * described: the machine's check, the one a restore makes of a snapshot's.
 */
static int check_layout(struct vm *vm, const struct gate_main *ds, char *err, size_t errlen)
{
	struct mem_slot_shape *slots = calloc(ds->v.d.nslots ? ds->v.d.nslots : 1, sizeof(*slots));
	char e[256];
	int ret;

	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < ds->v.d.nslots; i++) {
		struct mig_slot_desc s = mig_vm_desc_slot(&ds->v, i);

		slots[i] = (struct mem_slot_shape){.gpa = s.gpa, .size = s.size};
	}
	ret = guest_mem_layout_check(vm_mem(vm), slots, ds->v.d.nslots, "the source", e, sizeof(e));
	free(slots);
	if (ret)
		snprintf(err, errlen,
			 "VM_DESC: the memslot layout differs from what this vmm builds for "
			 "the same config: %s",
			 e);
	return ret;
}

/* The hooks' way of making this host one without userfaultfd. */
static unsigned uffd_block(const struct test_hooks *h)
{
	if (test_fault_on(h, TEST_FAULT_UFFD_SYSCALL_EPERM))
		return UFFD_BLOCK_SYSCALL;
	if (test_fault_on(h, TEST_FAULT_UFFD_UNAVAILABLE))
		return UFFD_BLOCK_SYSCALL | UFFD_BLOCK_DEVICE;
	return 0;
}

/*
 * CAPS, the answer to VM_DESC: whether postcopy can arm here. The probe's
 * fd is the one postcopy registers later, so what CAPS promises holds,
 * and no thread needs to open a device once its filter is on.
 */
static int send_caps(struct incoming *in, char *err, size_t errlen)
{
	uint8_t hdr[MIG_CAPS_LEN], body[MIG_CAPS_MAX - MIG_CAPS_LEN];
	uint32_t flags = 0, n, nf;
	int ret;

	if (uffd_open(&in->post.uffd_probe, uffd_block(&in->hooks), in->post.uffd_reason,
		      sizeof(in->post.uffd_reason)) == 0)
		flags |= MIG_CAPS_POSTCOPY;
	else
		in->post.uffd_probe = -1;
	n = mig_caps_encode(hdr, flags, flags ? NULL : in->post.uffd_reason);
	memcpy(body, in->post.uffd_reason, n);
	nf = incoming_caps_formats(in->peer_minor, body + n);
	if (nf)
		mig_caps_encode(hdr, flags | MIG_CAPS_FORMATS, flags ? NULL : in->post.uffd_reason);
	ret = incoming_send_main(in, MIG_REC_CAPS, hdr, sizeof(hdr), body, n + nf);
	if (ret)
		snprintf(err, errlen, "sending CAPS: %s", chan_strerror(ret));
	return ret;
}

int incoming_create_vm(struct incoming *in, const struct vm_config *local_cfg, int console_fd,
		       const struct incoming_hook *hook, char *err, size_t errlen)
{
	struct gate_main *m;
	int ret;

	char peer[sizeof(in->status.peer)];
	bool cancelled;

	(void)local_cfg; /* the gate merged it into m->cfg */
	ret = gate_wait_main(in->gate, &m);
	if (ret) {
		snprintf(err, errlen, "stopped while waiting for the source");
		return ret;
	}
	sock_name(m->chan.fd, true, "?", peer, sizeof(peer));
	/* The main connection then idles through precopy. */
	pthread_mutex_lock(&in->status.status_lock);
	in->main = m->chan;
	m->chan.fd = -1;
	m->chan.tls = NULL;
	snprintf(in->main.name, sizeof(in->main.name), "main");
	snprintf(in->status.peer, sizeof(in->status.peer), "%s", peer);
	snprintf(in->status.name, sizeof(in->status.name), "%s", m->cfg.name);
	in->status.main_open = true;
	cancelled = in->status.cancelled;
	if (!cancelled)
		in->status.phase = INCOMING_RECEIVING;
	pthread_mutex_unlock(&in->status.status_lock);
	if (cancelled) {
		ret = -ECANCELED;
		goto out;
	}
	chan_set_timeout(&in->main, 0);
	keepalive(in->main.fd);
	in->vm = vm_new();
	if (!in->vm) {
		ret = -ENOMEM;
		goto out;
	}
	if (m->ram_fd >= 0) {
		/* A local handover: the guest's own memory, in place of any of ours. */
		if (in->ram.base)
			guest_mem_destroy(&in->ram);
		ret = guest_mem_init_fd(&in->ram, m->ram_fd, m->cfg.memory, m->cfg.memslot_size,
					err, errlen);
		m->ram_fd = -1;
		if (ret)
			goto out;
	}
	ret =
	    vm_create_on(in->vm, &m->cfg, in->ram.base ? &in->ram : NULL, console_fd, err, errlen);
	if (!ret)
		ret = check_layout(in->vm, m, err, errlen);
	if (!ret && hook && hook->created)
		ret = hook->created(in->vm, hook->opaque, err, errlen);
	if (ret)
		goto out;
	in->connections = m->v.d.connections;
	in->shard_pages = m->v.d.shard_pages;
	in->session = m->hello.session_id;
	in->peer_minor = m->hello.version_minor;
	memcpy(in->keys, m->v.d.keys, sizeof(in->keys));
	ret = send_caps(in, err, errlen);
out:
	gate_main_free(m);
	return ret;
}

bool incoming_proof_ok(const struct incoming *in, const struct mig_chan *c, unsigned d,
		       uint32_t attempt, const void *proof, uint32_t len)
{
	uint8_t bind[MIG_BIND_LEN];

	if (d >= MIG_SOURCE_DECISIONS)
		return false;
	chan_binding(c, bind);
	return mig_proof_verify(in->keys[d], d, in->session, attempt, bind, proof, len);
}

int incoming_accept_data(struct incoming *in, char *err, size_t errlen)
{
	struct mig_chan data[MIG_CONNECTIONS_MAX];
	/* A source that closes main instead (it gave up) ends the wait at once. */
	int ret = gate_wait_data(in->gate, in->connections, DATA_ACCEPT_TIMEOUT_MS, in->main.fd,
				 data, &in->post.urgent.chan, err, errlen);

	/* Whatever came is ours to close (incoming_free), also on a timeout. */
	for (unsigned i = 0; i < in->connections; i++) {
		in->chans[i].chan = data[i];
		chan_set_timeout(&in->chans[i].chan, 0);
		snprintf(in->chans[i].chan.name, sizeof(in->chans[i].chan.name), "data %u", i);
	}
	chan_set_timeout(&in->post.urgent.chan, 0);
	snprintf(in->post.urgent.chan.name, sizeof(in->post.urgent.chan.name), "urgent");
	return ret;
}

/* A half-formed resume session: the source gave up on it. The control thread. */
static void drop_half_session(struct incoming *in, unsigned *ndata, bool *urgent)
{
	pthread_mutex_lock(&in->main_wlock);
	chan_close(&in->main);
	pthread_mutex_unlock(&in->main_wlock);
	for (unsigned i = 0; i < in->connections; i++)
		chan_close(&in->chans[i].chan);
	pthread_mutex_lock(&in->post.urgent_wlock);
	chan_close(&in->post.urgent.chan);
	pthread_mutex_unlock(&in->post.urgent_wlock);
	*ndata = 0;
	*urgent = false;
}

int incoming_accept_resume(struct incoming *in)
{
	unsigned ndata = 0;
	bool urgent = false;
	uint64_t deadline = 0, main_accepted = 0;
	uint32_t attempt = 0; /* the main's (hello index): gate_take gives only its own */

	for (;;) {
		struct gate_taken t;
		uint64_t wait_ms = 0, now = now_ns();
		uint32_t roles;
		int ret;

		if (in->main.fd >= 0) {
			if (now >= deadline) {
				drop_half_session(in, &ndata, &urgent);
				continue;
			}
			wait_ms = (deadline - now) / 1000000u + 1;
		}
		/*
		 * The gate checked the session, and a main-resume's RESUME proof
		 * (settle_records.c, on the gate's worker). Main first: its data connections may be
		 * queued before it (its proof takes a round trip longer); then only its attempt's
		 * (gate_take).
		 */
		roles = MIG_CH(MIG_ROLE_MAIN_RESUME);
		if (in->main.fd >= 0)
			roles |= MIG_CH(MIG_ROLE_DATA) | MIG_CH(MIG_ROLE_URGENT);
		ret = gate_take(in->gate, wait_ms, roles, main_accepted, attempt, &t);
		if (ret == -ETIMEDOUT)
			continue; /* the half session's deadline */
		if (ret)
			return ret; /* the gate stopped */
		if (t.h.role == MIG_ROLE_MAIN_RESUME) {
			/* A new attempt: what the last one left is of no use. */
			if (in->main.fd >= 0)
				drop_half_session(in, &ndata, &urgent);
			pthread_mutex_lock(&in->main_wlock);
			in->main = t.c;
			pthread_mutex_unlock(&in->main_wlock);
			main_accepted = t.accepted_ns;
			attempt = MIG_HELLO_ATTEMPT(t.h.index);
			deadline = now_ns() + RESUME_SESSION_MS * 1000000ull;
		} else if (t.h.role == MIG_ROLE_DATA && in->main.fd >= 0 &&
			   MIG_HELLO_INDEX(t.h.index) < in->connections &&
			   in->chans[MIG_HELLO_INDEX(t.h.index)].chan.fd < 0) {
			in->chans[MIG_HELLO_INDEX(t.h.index)].chan = t.c;
			ndata++;
		} else if (t.h.role == MIG_ROLE_URGENT && in->main.fd >= 0 && !urgent) {
			pthread_mutex_lock(&in->post.urgent_wlock);
			in->post.urgent.chan = t.c;
			pthread_mutex_unlock(&in->post.urgent_wlock);
			urgent = true;
		} else {
			chan_close(&t.c);
			continue;
		}
		if (in->main.fd >= 0 && ndata == in->connections && urgent)
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

void incoming_boost(struct incoming *in, bool receivers)
{
	struct sched_prev ignored;

	if (!in->sw.polling) {
		/* Polls in the blackout whether or not the boost takes (no CAP_SYS_NICE). */
		in->sw.polling = true;
		in->sw.poll_thread = pthread_self();
		in->sw.spin_ns = spin_bound_ns(INCOMING_BLACKOUT_POLL_US);
		in->sw.waits = (struct spin_stats){0};
	}
	if (in->sw.boost.boosted)
		return;
	in->sw.boost_thread = pthread_self();
	sched_boost(in->sw.boost_thread, &in->sw.boost);
	/*
	 * Precopy's data receivers apply the last pages and end at
	 * CHANNEL_END: boosted until they exit (nothing to restore). A
	 * postcopy's go on receiving the push: not them.
	 */
	for (unsigned i = 0; receivers && in->chans && i < in->connections; i++)
		if (__atomic_load_n(&in->chans[i].started, __ATOMIC_ACQUIRE))
			sched_boost(in->chans[i].thread, &ignored);
}

void incoming_blackout_wait(struct incoming *in)
{
	if (!in->sw.polling || !pthread_equal(in->sw.poll_thread, pthread_self()))
		return;
	spin_readable(&in->main, in->sw.spin_ns, &in->sw.waits);
	pthread_mutex_lock(&in->status.status_lock);
	in->status.waits = in->sw.waits;
	pthread_mutex_unlock(&in->status.status_lock);
}

void incoming_unboost(struct incoming *in)
{
	if (in->sw.polling && pthread_equal(in->sw.poll_thread, pthread_self()))
		in->sw.polling = false;
	if (in->sw.boost.boosted && pthread_equal(in->sw.boost_thread, pthread_self()))
		sched_unboost(in->sw.boost_thread, &in->sw.boost);
}
