/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vcpu_throttle.c - slowing vCPUs down for a migration that does not
 * converge (vm.h, "vCPU throttling"): the level each vCPU runs at, set by
 * the engine; the vCPU thread's slices; what the engine reads back.
 *
 * A throttled vCPU alternates a running share of each VM_THROTTLE_SLICE_NS
 * slice, in KVM_RUN, with a sleeping share outside it. A guest that never
 * exits to the VMM (a tight write loop) must still leave KVM_RUN when its
 * running share ends: each vCPU thread has a POSIX timer that sends the
 * kick signal to that thread alone (SIGEV_THREAD_ID). That is vcpu.c's kick
 * protocol unchanged: the signal is blocked outside KVM_RUN, so a timer
 * that fires while the thread handles an exit stays pending and ends the
 * next KVM_RUN at once; nothing is lost and nothing new is unblocked.
 *
 * The sleep is a timed wait on vm->cond (CLOCK_MONOTONIC) under vm->lock:
 * vm_pause() and vm_request_stop() broadcast it, and so does every new
 * setting, so a sleeping vCPU never delays a pause (the switchover's
 * blackout starts with one), the VM's end, or the end of its throttle.
 * An unthrottled vCPU costs one atomic load per KVM_RUN.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "vcpu_signal.h"
#include "vcpu_throttle.h"
#include "vm_struct.h"

/* glibc before 2.35 names the member only by its union path. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static struct timespec ts_of(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
				 .tv_nsec = (long)(ns % 1000000000u)};
}

/* One-shot at `at` (CLOCK_MONOTONIC ns), or disarmed with 0. */
static void set_timer(struct vcpu_throttle *t, uint64_t at)
{
	struct itimerspec its = {.it_value = ts_of(at)};

	/* Fails only for a bad timer id or value, neither of which this passes. */
	(void)timer_settime(t->timer, TIMER_ABSTIME, &its, NULL);
	t->armed = at != 0;
}

void vcpu_throttle_thread_init(struct vcpu *v)
{
	struct vcpu_throttle *t = &v->throttle;
	struct sigevent sev;
	clockid_t cpu = CLOCK_THREAD_CPUTIME_ID;
	int state = 1;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIG_VCPU_KICK;
	sev.sigev_notify_thread_id = gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, &t->timer))
		state = -errno;
	if (pthread_getcpuclockid(pthread_self(), &cpu))
		cpu = (clockid_t)-1;
	/* Published once: the clock first, then the state that says it is there. */
	__atomic_store_n(&t->cpu_clock, cpu, __ATOMIC_RELAXED);
	__atomic_store_n(&t->timer_state, state, __ATOMIC_RELEASE);
}

void vcpu_throttle_thread_exit(struct vcpu *v)
{
	if (v->throttle.timer_state == 1)
		timer_delete(v->throttle.timer);
}

/*
 * Sleeps until `until`, or less if the VM pauses or stops or this vCPU's
 * level changes from pct; counts the time slept. Returns the time it woke.
 */
static uint64_t sleep_share(struct vcpu *v, unsigned pct, uint64_t from, uint64_t until)
{
	struct vm *vm = v->vm;
	struct timespec ts = ts_of(until);
	uint64_t now;

	pthread_mutex_lock(&vm->lock);
	while (!vm->pause_requested && !vm->stopping &&
	       __atomic_load_n(&v->throttle.pct, __ATOMIC_RELAXED) == pct &&
	       pthread_cond_timedwait(&vm->cond, &vm->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&vm->lock);
	now = now_ns();
	__atomic_fetch_add(&v->throttle.slept_ns, now - from, __ATOMIC_RELAXED);
	return now;
}

bool vcpu_throttle_slice(struct vcpu *v)
{
	struct vcpu_throttle *t = &v->throttle;
	unsigned pct = __atomic_load_n(&t->pct, __ATOMIC_ACQUIRE);
	bool slept = false;
	uint64_t now = 0;

	if (pct && t->timer_state == 1) { /* this thread's own store */
		now = now_ns();
		if (t->run_until && now < t->run_until)
			return false; /* within its running share: the timer ends it */
		if (t->run_until) {
			now = sleep_share(v, pct, now, now + VM_THROTTLE_SLICE_NS * pct / 100);
			slept = true;
			pct = __atomic_load_n(&t->pct, __ATOMIC_ACQUIRE);
		}
	}
	if (!pct || t->timer_state != 1) {
		if (t->armed)
			set_timer(t, 0);
		t->run_until = 0;
		return slept;
	}
	/* The first share after a new level is a running one: no sleep before the guest ran. */
	t->run_until = now + VM_THROTTLE_SLICE_NS * (100 - pct) / 100;
	set_timer(t, t->run_until);
	return slept;
}

int vm_throttle_set(struct vm *vm, const unsigned *pct, char *err, size_t errlen)
{
	bool kick[CONFIG_MAX_VCPUS] = {false};
	int ret = 0;

	pthread_mutex_lock(&vm->lock);
	for (unsigned i = 0; pct && i < vm->nvcpus && !ret; i++)
		if (pct[i] &&
		    __atomic_load_n(&vm->vcpus[i].throttle.timer_state, __ATOMIC_ACQUIRE) < 0) {
			ret = vm->vcpus[i].throttle.timer_state;
			snprintf(err, errlen, "vCPU %u cannot be throttled: its slice timer: %s", i,
				 strerror(-ret));
		}
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		struct vcpu_throttle *t = &vm->vcpus[i].throttle;
		unsigned p = ret || !pct		    ? 0
			     : pct[i] < VM_THROTTLE_MAX_PCT ? pct[i]
							    : VM_THROTTLE_MAX_PCT;

		/* From 0: the vCPU may be in a long KVM_RUN; it starts its slices now. */
		kick[i] = p && !__atomic_load_n(&t->pct, __ATOMIC_RELAXED);
		__atomic_store_n(&t->pct, p, __ATOMIC_RELEASE);
	}
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
	for (unsigned i = 0; i < vm->nvcpus; i++)
		if (kick[i])
			vcpu_kick(&vm->vcpus[i]);
	return ret;
}

void vm_vcpu_time(struct vm *vm, unsigned i, struct vcpu_time *out)
{
	struct vcpu_throttle *t = &vm->vcpus[i].throttle;
	int state = __atomic_load_n(&t->timer_state, __ATOMIC_ACQUIRE);
	clockid_t cpu = state ? __atomic_load_n(&t->cpu_clock, __ATOMIC_RELAXED) : (clockid_t)-1;
	struct timespec ts;

	out->pct = __atomic_load_n(&t->pct, __ATOMIC_RELAXED);
	out->slept_ns = __atomic_load_n(&t->slept_ns, __ATOMIC_RELAXED);
	out->cpu_ns = 0;
	/* A thread that ended: its clock is gone, EINVAL, and 0 it is. */
	if (cpu != (clockid_t)-1 && !clock_gettime(cpu, &ts))
		out->cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
