/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a handshake worker of the gate reads from a main connection after
 * its hello: the VM_DESC record, bounded by the record table and by the
 * limits below, and the config it carries, merged with this host's
 * local settings. Pure reading and checking: no gate state is touched,
 * so the gate's locking does not apply here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "config.h"
#include "guest_mem.h"
#include "incoming.h"
#include "migration.h"

#define MAX_SLOTS 32764u /* KVM's limit on our hosts; checked again at vm_create */

void gate_main_free(struct gate_main *m)
{
	if (!m)
		return;
	chan_close(&m->chan);
	if (m->ram_fd >= 0)
		close(m->ram_fd);
	free(m->buf);
	free(m);
}

/*
 * The config from the stream, with this host's prealloc, [migration]
 * allow-lists and [sandbox] settings and its bindings of the devices. The
 * front end's sections a description carries ([console] output, [api]
 * socket) are checked by desc_host's table and dropped: this host's own
 * (and its TLS files) never pass through struct vm_config.
 */
static int build_config(struct gate_main *m, const struct vm_config *local,
			const struct config_layer *desc_host, char *err, size_t errlen)
{
	struct vm_config *cfg = &m->cfg;
	char e[CONFIG_ERR_MAX];
	int ret;

	config_defaults(cfg);
	/* Its exact bytes: a NUL among them is refused, not taken for the end. */
	ret = config_load_text_with(cfg, desc_host, m->v.config, m->v.d.config_len,
				    "migration stream", e, sizeof(e));
	if (ret) {
		snprintf(err, errlen, "VM_DESC: %.240s", e);
		return -EPROTO;
	}
	if (cfg->memory != m->v.d.memory || cfg->vcpus != m->v.d.nvcpus) {
		snprintf(err, errlen,
			 "VM_DESC: config (%llu bytes, %u vCPUs) disagrees with the "
			 "description (%llu bytes, %u vCPUs)",
			 (unsigned long long)cfg->memory, cfg->vcpus,
			 (unsigned long long)m->v.d.memory, m->v.d.nvcpus);
		return -EPROTO;
	}
	if (local->prealloc &&
	    (cfg->memory != local->memory || cfg->memslot_size != local->memslot_size ||
	     cfg->backend != local->backend)) {
		snprintf(err, errlen,
			 "VM_DESC: the VM has %llu MiB of RAM in %llu MiB memslots (%s); this "
			 "target preallocated %llu MiB in %llu MiB memslots (%s)",
			 (unsigned long long)(cfg->memory >> 20),
			 (unsigned long long)(cfg->memslot_size >> 20),
			 mem_backend_name(cfg->backend), (unsigned long long)(local->memory >> 20),
			 (unsigned long long)(local->memslot_size >> 20),
			 mem_backend_name(local->backend));
		return -EPROTO;
	}
	cfg->prealloc = local->prealloc;
	cfg->seccomp = local->seccomp;
	memcpy(cfg->allow_disk_dirs, local->allow_disk_dirs, sizeof(cfg->allow_disk_dirs));
	memcpy(cfg->allow_taps, local->allow_taps, sizeof(cfg->allow_taps));
	/*
	 * Whether the VM has a disk or a NIC is the guest's and travels; what
	 * backs them is this host's: its --set disk.path / net.tap, or its
	 * allow-lists, never the stream's word alone (a path there names a
	 * file on the source's host, which here may be anything). Refused
	 * here, before the VM exists and before any page: the source runs on.
	 */
	return config_bind_devices(cfg, local, err, errlen);
}

/*
 * A local handover: RAM_FD with guest RAM's memfd. Only over a UNIX
 * socket, where the gate checked that the peer is this uid (or root). The
 * descriptor is checked here, as guest_mem_init_fd() will check it again
 * when it maps it: one that is no sealed memfd of the VM's size (say
 * /dev/zero) is refused like any bad VM_DESC, and the target waits on.
 */
static int read_ram_fd(struct mig_chan *c, struct gate_main *m, char *err, size_t errlen)
{
	uint8_t b[MIG_RAM_FD_LEN];
	struct mig_ram_fd r;
	unsigned nfds;
	int fd, ret;

	if (!chan_is_unix(c->fd)) {
		snprintf(err, errlen,
			 "VM_DESC: a local handover (no data connection) needs a vmm listening on "
			 "unix:PATH; this one listens on TCP");
		return -EPROTO;
	}
	ret = chan_recv_rec_fds(c, MIG_REC_RAM_FD, b, sizeof(b), &fd, 1, &nfds, err, errlen);
	if (ret)
		return ret;
	if (nfds != 1) { /* none: more would have been refused */
		snprintf(err, errlen, "RAM_FD came without guest RAM's descriptor");
		return -EPROTO;
	}
	m->ram_fd = fd;
	ret = mig_ram_fd_decode(b, sizeof(b), &r, err, errlen);
	if (!ret && r.size != m->v.d.memory) {
		snprintf(err, errlen, "RAM_FD: %llu bytes, VM_DESC says %llu",
			 (unsigned long long)r.size, (unsigned long long)m->v.d.memory);
		ret = -EPROTO;
	}
	if (!ret) {
		char why[200];

		ret = guest_mem_check_fd(fd, m->cfg.memory, m->cfg.memslot_size, why, sizeof(why));
		if (ret)
			snprintf(err, errlen, "RAM_FD: %s", why);
	}
	return ret;
}

int gate_read_main(struct mig_chan *c, const struct vm_config *local,
		   const struct config_layer *desc_host, struct gate_main **out, char *err,
		   size_t errlen)
{
	const struct mig_desc_limits lim = {.max_slots = MAX_SLOTS,
					    .max_vcpus = CONFIG_MAX_VCPUS,
					    .max_connections = MIGRATION_MAX_CONNECTIONS};
	struct gate_main *m = calloc(1, sizeof(*m));
	struct mig_rec_hdr h;
	int ret;

	if (!m)
		return -ENOMEM;
	m->chan.fd = -1;
	m->ram_fd = -1;
	*out = m; /* the caller's to free, also on an error */
	ret = chan_recv_rec(c, 0, &h, err, errlen);
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
	m->buf = malloc(h.len ? h.len : 1);
	if (!m->buf)
		return -ENOMEM;
	ret = chan_read(c, m->buf, h.len);
	if (ret) {
		snprintf(err, errlen, "VM_DESC: %s", chan_strerror(ret));
		return ret;
	}
	chan_note_record(c); /* whole: from now on the gate does not count it stalled */
	ret = mig_vm_desc_decode(m->buf, h.len, &lim, &m->v, err, errlen);
	if (!ret)
		ret = build_config(m, local, desc_host, err, errlen);
	if (!ret && m->v.d.connections == 0)
		ret = read_ram_fd(c, m, err, errlen);
	return ret;
}
