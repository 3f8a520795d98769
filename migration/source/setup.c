/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SETUP: connect main, describe the VM (VM_DESC; a local handover then
 * passes guest RAM's memfd, RAM_FD, and stops after CAPS), read the target's
 * capabilities (CAPS: postcopy refused here if it cannot), connect the data and
 * urgent connections, enable dirty logging with the pending bitmaps of the
 * first pass, and start the sender team (the harvest pool starts with the
 * dirty log). Nothing is write-protected up front.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "codec.h"
#include "host_swap.h"
#include "phases.h"
#include "ram_send.h"
#include "vm.h"
#include "test_faults.h"

/*
 * VM_DESC: the layout, the memslots, and the VM's config as INI, in one
 * buffer; its length is bounded through the record table (1 MiB).
 */
static int send_vm_desc(struct migration *m, char *err, size_t errlen)
{
	struct vm *vm = m->vm;
	const struct guest_mem *ram = vm_mem(vm);
	struct mig_vm_desc d = {
	    .memory = ram->size,
	    .page_size = GUEST_PAGE_SIZE,
	    .nslots = ram->nslots,
	    .nvcpus = vm_nvcpus(vm),
	    .connections = m->connections,
	    .shard_pages = m->params.clear_chunk_pages,
	};
	size_t head = MIG_VM_DESC_LEN + (size_t)d.nslots * MIG_SLOT_DESC_LEN;
	size_t cap = head + 16384;
	uint8_t *buf = malloc(cap);
	int len, ret;

	if (!buf) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	/* A key per decision; only their public halves leave (proof.h). */
	ret = mig_keys_new(&m->keys, MIG_DECIDE_COMMIT, MIG_SOURCE_DECISIONS, err, errlen);
	if (ret) {
		free(buf);
		return ret;
	}
	memcpy(d.keys, m->keys.pub, sizeof(d.keys));
	for (uint32_t i = 0; i < d.nslots; i++) {
		struct mig_slot_desc sd = {.gpa = ram->slots[i].gpa, .size = ram->slots[i].size};

		mig_slot_desc_encode(buf + MIG_VM_DESC_LEN + i * MIG_SLOT_DESC_LEN, &sd);
	}
	/*
	 * vm_config() carries the effective [vm] tsc_khz, cpu_vendor and cpu_features
	 * (vm_create stored them): the target sets exactly what the guest saw here, or
	 * refuses the VM. A test makes it ask for what no target can run.
	 */
	struct vm_config desc = *vm_config(vm);

	if (test_fault_on(&m->hooks, TEST_FAULT_DESC_TSC_1KHZ))
		desc.tsc_khz = 1;
	/* The front end's [console] output and [api] socket too: the bytes VM_DESC always had. */
	len = config_format_with(&desc, &m->desc_host, (char *)buf + head, cap - head);
	if (len < 0) {
		free(buf);
		snprintf(err, errlen, "%s", strerror(-len));
		return len;
	}
	d.config_len = (uint32_t)len;
	mig_vm_desc_encode(buf, &d);
	ret = send_rec(&m->main, MIG_REC_VM_DESC, buf, (uint32_t)mig_vm_desc_len(&d), NULL, 0, err,
		       errlen);
	free(buf);
	return ret;
}

/*
 * The local handover: guest RAM's memfd on main, right after VM_DESC, so
 * the target maps it before it builds the VM (SCM_RIGHTS on the record's
 * first byte). The descriptor is shared, not the memory copied: from the
 * target's COMMIT on, the two processes map the same pages, and only the
 * commit decides which of them runs the vCPUs.
 */
static int send_ram_fd(struct migration *m, char *err, size_t errlen)
{
	const struct guest_mem *ram = vm_mem(m->vm);
	struct mig_ram_fd r = {.size = ram->size, .nfds = 1};
	uint8_t b[MIG_RAM_FD_LEN];
	int ret;

	mig_ram_fd_encode(b, &r);
	ret = chan_send_record_fds(&m->main, MIG_REC_RAM_FD, b, sizeof(b), &ram->memfd, 1);
	if (ret)
		snprintf(err, errlen, "%s", chan_strerror(ret));
	return ret;
}

/*
 * KVM_DIRTY_LOG_INITIALLY_SET (KVM API doc, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2)
 * spares a guest whose memory is mostly in use the up-front write
 * protection of all of it. For a sparse guest it is the wrong trade: every
 * never-touched page starts "dirty" in KVM and must be cleared once
 * (~10 ns a page here: 160 ms for 64 GiB), while write-protecting the few
 * mapped pages costs next to nothing. So a guest with less than half of its
 * RAM resident gets plain manual protect and a first pass over exactly its
 * resident pages.
 */
static int setup_dirty_log(struct migration *m)
{
	struct vm *vm = m->vm;
	const struct guest_mem *ram = vm_mem(vm);
	uint64_t total = ram->size / GUEST_PAGE_SIZE, resident = total;
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
			       bitmap_words(ram->slots[i].npages) * 8);
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

_Static_assert(sizeof(((struct migration_progress *)0)->target_postcopy_reason) ==
		   MIG_CAPS_REASON_MAX + 1,
	       "the progress record holds a CAPS reason");

/*
 * How long the target may take to build the VM before it answers: it makes
 * one KVM_SET_USER_MEMORY_REGION per memslot (20-50 us each on the hosts
 * this was measured on, 1-2 ms when they were loaded) and KVM's per-GiB
 * mappings, so a 1 TiB guest in 1024 slots took 2.3 s quiet and more than
 * the default 10 s loaded. The guest keeps running during the wait, so it
 * costs nothing but the time to notice a dead target: timeout_ms plus
 * CAPS_WAIT_PER_SLOT_MS per memslot and CAPS_WAIT_PER_GIB_MS per GiB.
 */
#define CAPS_WAIT_PER_SLOT_MS 20u
#define CAPS_WAIT_PER_GIB_MS  10u

static uint64_t caps_wait_ms(uint64_t timeout_ms, uint32_t nslots, uint64_t ram_bytes)
{
	return timeout_ms + (uint64_t)nslots * CAPS_WAIT_PER_SLOT_MS +
	       (ram_bytes >> 30) * CAPS_WAIT_PER_GIB_MS;
}

/*
 * CAPS, the target's answer to VM_DESC (or its ERROR: the VM could not be
 * created). A postcopy the target cannot arm is refused here, while the
 * guest runs and nothing was sent: the VM stays on the source.
 */
static int read_caps(struct migration *m)
{
	static const char what[] = "waiting for the target's capabilities";
	struct mig_caps_view v;
	uint8_t buf[REPLY_MAX];
	char err[256];
	uint32_t len;
	int ret;

	chan_set_timeout(&m->main, caps_wait_ms(m->params.timeout_ms, vm_mem(m->vm)->nslots,
						vm_mem(m->vm)->size));
	ret = wait_reply(m, MIG_REC_CAPS, buf, &len, what);
	chan_set_timeout(&m->main, m->params.timeout_ms);
	if (ret)
		return ret;
	ret = mig_caps_decode(buf, len, &v, err, sizeof(err));
	if (ret) {
		migration_fail(m, ret, "%s: %s", what, err);
		return ret;
	}
	ret = source_choose_form(m, &v);
	if (ret)
		return ret;
	m->target_postcopy = v.flags & MIG_CAPS_POSTCOPY;
	pthread_mutex_lock(&m->lock);
	m->progress.target_postcopy = m->target_postcopy;
	snprintf(m->progress.target_postcopy_reason, sizeof(m->progress.target_postcopy_reason),
		 "%s", v.reason);
	pthread_mutex_unlock(&m->lock);
	if (!m->target_postcopy && m->params.mode == MIGRATION_MODE_POSTCOPY) {
		migration_fail(m, -EOPNOTSUPP, "target cannot do postcopy: %s", v.reason);
		return -EOPNOTSUPP;
	}
	return 0;
}

int source_setup(struct migration *m, uint64_t t_start)
{
	char err[256];
	int ret;

	m->first_pass_pending = true;
	ret = connect_main(m, MIG_ROLE_MAIN);
	if (ret)
		return ret;
	/* The target builds the VM from VM_DESC before it accepts the data connections. */
	ret = send_vm_desc(m, err, sizeof(err));
	if (ret) {
		migration_fail(m, ret, "sending the VM description: %s",
			       main_send_error(m, ret, err));
		return ret;
	}
	if (m->params.local) {
		ret = send_ram_fd(m, err, sizeof(err));
		if (ret) {
			migration_fail(m, ret, "handing guest RAM over: %s",
				       main_send_error(m, ret, err));
			return ret;
		}
	}
	ret = read_caps(m);
	if (ret)
		return ret;
	if (m->params.local) {
		/* No page is sent, so no data connection, no dirty log, no senders. */
		pthread_mutex_lock(&m->lock);
		m->progress.setup_ms = ms_since(t_start);
		pthread_mutex_unlock(&m->lock);
		test_hook_step(&m->hooks, TEST_STEP_SOURCE_SETUP);
		return 0;
	}
	ret = connect_data(m, MIG_ROLE_MAIN);
	if (ret)
		return ret;
	ret = setup_dirty_log(m);
	if (ret) {
		migration_fail(m, ret, "enabling dirty logging: %s", strerror(-ret));
		return ret;
	}
	ret = team_init(&m->send_team, m->connections, ram_send_pass, m, SECCOMP_THREAD_SEND,
			vm_config(m->vm)->seccomp);
	if (ret) {
		migration_fail(m, ret, "starting engine threads: %s", strerror(-ret));
		return ret;
	}
	pthread_mutex_lock(&m->lock);
	m->progress.manual_protect = m->dl.manual_protect;
	m->progress.initially_set = m->dl.initially_set;
	m->progress.sparse_guest = m->sparse;
	m->progress.harvest_threads = m->harvest.nthreads;
	m->progress.setup_ms = ms_since(t_start);
	pthread_mutex_unlock(&m->lock);
	test_hook_step(&m->hooks, TEST_STEP_SOURCE_SETUP);
	return 0;
}
