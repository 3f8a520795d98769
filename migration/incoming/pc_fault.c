/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fault thread of the target's postcopy: reads userfaultfd events from
 * the switchover until completion (or a stop). A fault on a missing page
 * sends one PAGE_REQ on the urgent connection; a fault on any other absent
 * page is memory neither side ever wrote: a zero page is placed at once.
 * VMM accesses to guest RAM fault and are served the same way. While
 * paused no request is sent: the control thread re-sends every outstanding
 * one after the resume (pc_fault_rerequest).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bitmap.h"
#include "codec.h"
#include "guest_mem.h"
#include "incoming.h"
#include "postcopy.h"
#include "uffd.h"
#include "vm.h"

#define FAULT_BATCH 64

struct pc_fault {
	pthread_t thread;
	bool started; /* main thread at arm; postcopy_incoming_stop joins */
	int stop_fd;  /* eventfd: ends the thread */
};

int pc_fault_request(struct incoming *in, uint32_t slot, uint64_t page)
{
	uint8_t b[MIG_PAGE_REQ_LEN];
	int ret;

	mig_page_req_encode(b, &(struct mig_page_req){.slot = slot, .page = (uint32_t)page});
	pthread_mutex_lock(&in->post.urgent_wlock);
	ret = chan_send_record(&in->post.urgent.chan, MIG_REC_PAGE_REQ, b, sizeof(b), NULL, 0);
	pthread_mutex_unlock(&in->post.urgent_wlock);
	return ret;
}

/* One fault at hva. */
static void serve(struct incoming *in, uint64_t hva)
{
	struct pc_state *ps = &in->pc;
	uint64_t page;
	const struct memslot *s = guest_mem_slot_of_hva(vm_mem(in->vm), hva, &page);

	if (!s)
		return;
	__atomic_fetch_add(&ps->faults, 1, __ATOMIC_RELAXED);
	/*
	 * Decide on the fixed stale set, not on `missing`: a stale page whose
	 * bit was just cleared is being placed right now, and a zero page put
	 * there first would hide its data.
	 */
	if (!bitmap_test_atomic(ps->stale[s->id], page)) {
		/* Never written on either side: zero. */
		uffd_zeropage(ps->uffd, s->hva + page * GUEST_PAGE_SIZE, GUEST_PAGE_SIZE);
		return;
	}
	if (!bitmap_test_atomic(ps->missing[s->id], page)) {
		/* Placed (or being placed): its UFFDIO_COPY wakes the waiter. */
		uffd_wake(ps->uffd, s->hva + page * GUEST_PAGE_SIZE, GUEST_PAGE_SIZE);
		return;
	}
	if (!bitmap_claim_atomic(ps->requested[s->id], page))
		return; /* already asked for; another vCPU waits on it too */
	pc_note_request(ps, s->id, page);
	__atomic_fetch_add(&ps->nrequested, 1, __ATOMIC_RELAXED);
	/* While paused the request is re-sent on resume. */
	if (!pc_paused(ps) && pc_fault_request(in, s->id, page))
		pc_mark_lost(ps, "sending a page request failed");
}

static void *fault_main(void *arg)
{
	struct incoming *in = arg;
	uint64_t addrs[FAULT_BATCH];

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_FAULT, vm_config(in->vm)->seccomp);
	for (;;) {
		struct pollfd p[2] = {{in->pc.uffd, POLLIN, 0},
				      {in->post.fault->stop_fd, POLLIN, 0}};
		int n;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			return NULL;
		n = uffd_read_faults(in->pc.uffd, addrs, FAULT_BATCH);
		for (int i = 0; i < n; i++)
			serve(in, addrs[i]);
	}
}

int pc_fault_start(struct incoming *in)
{
	struct pc_fault *f = calloc(1, sizeof(*f));
	int ret;

	if (!f)
		return -ENOMEM;
	in->post.fault = f;
	f->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (f->stop_fd < 0)
		return -errno;
	ret = -pthread_create(&f->thread, NULL, fault_main, in);
	f->started = !ret;
	return ret;
}

void pc_fault_quit(struct incoming *in)
{
	uint64_t one = 1;

	if (in->post.fault && in->post.fault->stop_fd >= 0 &&
	    write(in->post.fault->stop_fd, &one, sizeof(one)) < 0) {
		/* the thread also ends when the fd closes */
	}
}

void pc_fault_join(struct incoming *in)
{
	if (!in->post.fault || !in->post.fault->started)
		return;
	pthread_join(in->post.fault->thread, NULL);
	in->post.fault->started = false;
}

void pc_fault_rerequest(struct incoming *in)
{
	struct pc_state *ps = &in->pc;

	/* Requests lost with the old connection: ask again for what vCPUs wait on. */
	for (uint32_t i = 0; i < vm_mem(in->vm)->nslots; i++)
		for (uint64_t w = 0; w < pc_slot_words(ps, i); w++) {
			uint64_t bits = __atomic_load_n(&ps->requested[i][w], __ATOMIC_ACQUIRE) &
					__atomic_load_n(&ps->missing[i][w], __ATOMIC_ACQUIRE);

			while (bits) {
				uint64_t p = w * 64 + (uint64_t)__builtin_ctzll(bits);

				bits &= bits - 1;
				pc_fault_request(in, i, p);
			}
		}
}

void pc_fault_free(struct incoming *in)
{
	if (!in->post.fault)
		return;
	if (in->post.fault->stop_fd >= 0)
		close(in->post.fault->stop_fd);
	free(in->post.fault);
	in->post.fault = NULL;
}
