/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_slots_inproc.c - the in-process half of bench_slots (see
 * bench_slots.h): VMs built from the VMM core (vmm_machine + vmm_dirty),
 * as bench_harvest and bench_dirtylog_enable do.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_slots.h"
#include "bench_util.h"
#include "config.h"
#include "dirtylog.h"
#include "guest_mem.h"
#include "harvest.h"
#include "vm.h"

#define CLEAR_CHUNK 512u

/*
 * A VM from "section.key=value" overrides, console to fd; NULL with the
 * reason in err. The callers turn seccomp off: its per-thread filters are
 * installed by the front end, which an in-process benchmark does not run.
 */
static struct vm *make_vm(const char **sets, int nsets, int console_fd, char *err, size_t errlen)
{
	struct vm_config cfg;
	struct vm *vm;

	config_defaults(&cfg);
	for (int i = 0; i < nsets; i++)
		if (config_set(&cfg, sets[i], err, errlen))
			return NULL;
	if (config_default_firmware(&cfg, err, errlen) || config_validate(&cfg, err, errlen))
		return NULL;
	vm = vm_new();
	if (!vm) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (vm_create(vm, &cfg, console_fd, err, errlen) || vm_boot_setup(vm, err, errlen)) {
		vm_free(vm);
		return NULL;
	}
	return vm;
}

static void free_vm(struct vm *vm, double *destroy_ms)
{
	double t0 = bench_now_ms();

	vm_destroy(vm);
	if (destroy_ms)
		*destroy_ms = bench_now_ms() - t0;
	vm_free(vm);
}

/* Boot: create, then run the idle guest to its first console line. */
int slots_boot(struct row *r, const char *s_mem, const char *s_slot)
{
	const char *sets[] = {s_mem, s_slot, "workload.kind=idle", "vm.vcpus=1",
			      "sandbox.seccomp=off"};
	char err[CONFIG_ERR_MAX], buf[256];
	int p[2];
	double t0, ms;
	struct vm *vm;
	int ret = -1;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	t0 = bench_now_ms();
	vm = make_vm(sets, 5, p[1], err, sizeof(err));
	if (!vm) {
		snprintf(r->skip, sizeof(r->skip), "%s", err);
		goto out;
	}
	row_set(r, M_CREATE, bench_now_ms() - t0);
	if (vm_start(vm, err, sizeof(err))) {
		snprintf(r->skip, sizeof(r->skip), "vm_start: %s", err);
		free_vm(vm, NULL);
		goto out;
	}
	for (;;) {
		struct pollfd pf[2] = {{p[0], POLLIN, 0}, {vm_end_fd(vm), POLLIN, 0}};
		ssize_t n;

		ms = bench_now_ms() - t0;
		if (ms > 60000 || poll(pf, 2, (int)(60000 - ms)) <= 0)
			break;
		if (!(pf[0].revents & POLLIN)) {
			struct vm_end end;

			vm_end_state(vm, &end);
			snprintf(r->skip, sizeof(r->skip), "the idle guest ended (reason %d): %s",
				 end.reason, end.message);
			break;
		}
		n = read(p[0], buf, sizeof(buf));
		if (n <= 0)
			break;
		if (memchr(buf, '\n', (size_t)n)) {
			row_set(r, M_LINE, bench_now_ms() - t0);
			ret = 0;
			break;
		}
	}
	if (ret && !r->skip[0])
		snprintf(r->skip, sizeof(r->skip), "the idle guest printed no line in 60 s");
	vm_request_stop(vm, VM_END_SIGNAL, 0, "benchmark done");
	vm_pause(vm);
	vm_join(vm);
	free_vm(vm, &r->v[M_DESTROY]);
	r->have[M_DESTROY] = true;
out:
	close(p[0]);
	close(p[1]);
	return ret;
}

/* Runs the guest to its exit (status 0), as bench_vm.h does; else why in r->skip. */
static int run_guest(struct row *r, struct vm *vm)
{
	char err[256];
	struct pollfd p = {vm_end_fd(vm), POLLIN, 0};
	struct vm_end end;

	if (vm_start(vm, err, sizeof(err))) {
		snprintf(r->skip, sizeof(r->skip), "dirty VM: vm_start: %s", err);
		return -1;
	}
	if (poll(&p, 1, 120000) <= 0)
		vm_request_stop(vm, VM_END_ERROR, 1, "benchmark timeout (120 s)");
	vm_pause(vm);
	vm_join(vm);
	vm_end_state(vm, &end);
	if (end.reason == VM_END_GUEST_EXIT && end.status == 0)
		return 0;
	snprintf(r->skip, sizeof(r->skip), "dirty guest ended badly (reason %d status %d): %s",
		 end.reason, end.status, end.message);
	return -1;
}

static void zero_pending(struct harvest *h)
{
	for (uint32_t i = 0; i < h->nslots; i++)
		memset(h->slots[i].pending, 0, bitmap_words(vm_mem(h->vm)->slots[i].npages) * 8);
}

/* Median harvest_run() wall time of reps rounds, pending zeroed before each. */
static int time_harvest(struct harvest *h, int reps, double *ms, uint64_t *pending)
{
	double v[100];
	struct harvest_stats st;

	for (int i = 0; i < reps; i++) {
		zero_pending(h);
		if (harvest_run(h, false, &st))
			return -1;
		v[i] = st.wall_ns / 1e6;
		*pending = st.pending;
	}
	*ms = bench_median(v, reps);
	return 0;
}

/* One CLEAR round as the engine's senders do it: chunks with bits set only. */
static double clear_round(struct harvest *h, uint64_t *nioctl)
{
	static uint64_t mask[CLEAR_CHUNK / 64];
	double t0 = bench_now_ms();

	*nioctl = 0;
	for (uint32_t i = 0; i < h->nslots; i++) {
		const struct memslot *s = &vm_mem(h->vm)->slots[i];
		uint64_t *pend = h->slots[i].pending;

		for (uint64_t first = 0; first < s->npages; first += CLEAR_CHUNK) {
			uint64_t n =
			    s->npages - first < CLEAR_CHUNK ? s->npages - first : CLEAR_CHUNK;
			uint64_t any = 0;

			for (uint64_t w = 0; w < (n + 63) / 64; w++)
				any |= (mask[w] = pend[first / 64 + w]);
			if (!any)
				continue;
			if (dirtylog_clear(h->dl, s, first, n, mask))
				return -1;
			(*nioctl)++;
		}
	}
	return bench_now_ms() - t0;
}

/* Dirty logging: enable, empty harvest + CLEAR, 64 MiB written, harvest + CLEAR. */
int slots_dirty(struct row *r, const char *s_mem, const char *s_slot, int reps)
{
	const char *sets[] = {s_mem,
			      s_slot,
			      "workload.kind=dirty",
			      "vm.vcpus=1",
			      "workload.working_set=64M",
			      "workload.passes=1",
			      "workload.heartbeat_ms=0",
			      "sandbox.seccomp=off"};
	char err[CONFIG_ERR_MAX];
	struct harvest_stats st;
	struct dirtylog dl;
	struct harvest h;
	uint64_t pending, nio;
	long avail0 = mem_available_kib(), avail1;
	int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC), ret = -1;
	struct vm *vm = make_vm(sets, 8, null_fd, err, sizeof(err));
	double t0, ms;

	if (!vm) {
		snprintf(r->skip, sizeof(r->skip), "dirty VM: %s", err);
		close(null_fd);
		return -1;
	}
	t0 = bench_now_ms();
	if (dirtylog_enable(&dl, vm, false)) {
		snprintf(r->skip, sizeof(r->skip), "dirtylog_enable failed");
		goto out_vm;
	}
	row_set(r, M_ENABLE, bench_now_ms() - t0);
	if (harvest_init(&h, vm, &dl, 2)) {
		snprintf(r->skip, sizeof(r->skip), "harvest_init failed");
		goto out_dl;
	}
	/* the firmware load marked pages in the VMM's own bitmap: drain them */
	if (harvest_run(&h, false, &st) || time_harvest(&h, reps, &ms, &pending))
		goto out_h;
	row_set(r, M_HARV0, ms);
	if ((ms = clear_round(&h, &nio)) < 0)
		goto out_h;
	row_set(r, M_CLR0, ms);
	if (run_guest(r, vm))
		goto out_h;
	if (time_harvest(&h, reps, &ms, &pending))
		goto out_h;
	row_set(r, M_HARV64, ms);
	r->dirty_pages = pending;
	if ((ms = clear_round(&h, &r->clr64_ioctls)) < 0)
		goto out_h;
	row_set(r, M_CLR64, ms);
	avail1 = mem_available_kib();
	r->kmem_mib = avail0 > avail1 ? (uint64_t)(avail0 - avail1) / 1024 : 0;
	ret = 0;
out_h:
	if (ret && !r->skip[0])
		snprintf(r->skip, sizeof(r->skip), "harvest/clear/guest run failed");
	harvest_destroy(&h);
out_dl:
	t0 = bench_now_ms();
	if (!dirtylog_disable(&dl) && !ret)
		row_set(r, M_DISABLE, bench_now_ms() - t0);
out_vm:
	free_vm(vm, NULL);
	close(null_fd);
	return ret;
}
