/* SPDX-License-Identifier: Apache-2.0 */
/*
 * throttle_apply.c - `--converge throttle` in the engine. After each
 * precopy decision that keeps going, what the vCPUs did over the pass is
 * read from the machine (vm_vcpu_time), the policy (throttle.c) gives the
 * level and the vCPUs it slows, the machine applies them
 * (vm_throttle_set), and a change is recorded for the progress record and
 * the event stream (progress.throttle_log). precopy() releases the
 * throttle when it returns, whatever ended it: the switchover pauses the
 * vCPUs, a failure or a cancel leaves them running here at full speed.
 *
 * Migration thread only; `lock` is taken to publish, never held across a
 * call into the machine.
 */
#include <string.h>

#include "clock.h"
#include "session.h"
#include "throttle.h"
#include "vm.h"

uint64_t throttle_slept_now(struct vm *vm)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < vm_nvcpus(vm); i++) {
		struct vcpu_time t;

		vm_vcpu_time(vm, i, &t);
		sum += t.slept_ns;
	}
	return sum;
}

/* Publishes the level now in effect; a change is one entry of the log. */
static void record(struct migration *m, unsigned level, unsigned vcpus, unsigned pass, bool changed)
{
	pthread_mutex_lock(&m->lock);
	m->progress.throttle_pct = level;
	m->progress.throttle_vcpus = vcpus;
	if (level > m->progress.throttle_peak_pct)
		m->progress.throttle_peak_pct = level;
	if (changed) {
		unsigned c = m->progress.throttle_changes++;

		m->progress.throttle_log[c % MIGRATION_THROTTLE_LOG] =
		    (struct migration_throttle_change){.pct = level,
						       .vcpus = vcpus,
						       .pass = pass,
						       .at_ms = ms_since(m->clock.t_start_ns)};
	}
	pthread_mutex_unlock(&m->lock);
}

/* The vCPUs over the time since the last sample, into v; then the sample is now. */
static void sample(struct migration *m, struct throttle_vcpu *v)
{
	struct vm *vm = m->vm;
	uint64_t now = now_ns(), dt = now - m->throttle.t_ns;

	for (unsigned i = 0; i < vm_nvcpus(vm); i++) {
		struct vcpu_time t;
		uint64_t slept;

		vm_vcpu_time(vm, i, &t);
		slept = t.slept_ns - m->throttle.slept[i];
		v[i].cpu_ns = t.cpu_ns > m->throttle.cpu[i] ? t.cpu_ns - m->throttle.cpu[i] : 0;
		v[i].run_ns = dt > slept ? dt - slept : 0;
		m->throttle.cpu[i] = t.cpu_ns;
		m->throttle.slept[i] = t.slept_ns;
	}
	m->throttle.t_ns = now;
}

void throttle_begin(struct migration *m)
{
	struct throttle_vcpu v[CONFIG_MAX_VCPUS];
	uint64_t slept0 = throttle_slept_now(m->vm);

	/* Not slept0 and slept_live: the progress reader's, under `lock`. */
	m->throttle.level = m->throttle.vcpus = 0;
	memset(m->throttle.cpu, 0, sizeof(m->throttle.cpu));
	memset(m->throttle.slept, 0, sizeof(m->throttle.slept));
	m->throttle.t_ns = now_ns();
	sample(m, v);
	m->throttle.sampled = true;
	pthread_mutex_lock(&m->lock);
	m->throttle.slept0 = slept0;
	m->throttle.slept_live = true;
	pthread_mutex_unlock(&m->lock);
}

int throttle_after_pass(struct migration *m, unsigned pass, uint64_t send_rate)
{
	struct throttle_vcpu v[CONFIG_MAX_VCPUS];
	unsigned pct[CONFIG_MAX_VCPUS], old[CONFIG_MAX_VCPUS], level, vcpus;
	struct throttle_input in = {.pct = m->throttle.level,
				    .max_pct = m->params.throttle_max_pct,
				    .send_rate = send_rate};
	char err[160];
	bool changed = false;
	int ret;

	if (!m->throttle.sampled)
		throttle_begin(m);
	pthread_mutex_lock(&m->lock);
	in.dirty_rate = m->progress.dirty_rate_pages_per_s;
	in.dirty_known = m->progress.dirty_rate_known;
	pthread_mutex_unlock(&m->lock);
	for (unsigned i = 0; i < vm_nvcpus(m->vm); i++) {
		struct vcpu_time t;

		vm_vcpu_time(m->vm, i, &t);
		old[i] = t.pct;
	}
	sample(m, v);
	level = throttle_level(&in);
	vcpus = throttle_split(level, v, vm_nvcpus(m->vm), pct);
	for (unsigned i = 0; i < vm_nvcpus(m->vm); i++)
		changed |= pct[i] != old[i];
	if (!changed)
		return 0;
	ret = vm_throttle_set(m->vm, pct, err, sizeof(err));
	if (ret) {
		migration_fail(m, ret, "--converge throttle: %s", err);
		return ret;
	}
	m->throttle.level = level;
	m->throttle.vcpus = vcpus;
	record(m, level, vcpus, pass, true);
	return 0;
}

void throttle_end(struct migration *m, unsigned pass)
{
	uint64_t slept;
	char err[8];

	if (!m->throttle.sampled)
		return;
	/* All zeros cannot fail: no timer is needed to run at full speed. */
	(void)vm_throttle_set(m->vm, NULL, err, sizeof(err));
	slept = throttle_slept_now(m->vm);
	pthread_mutex_lock(&m->lock);
	m->progress.throttle_slept_ms = (slept - m->throttle.slept0) / 1000000u;
	m->throttle.slept_live = false;
	pthread_mutex_unlock(&m->lock);
	if (m->throttle.level || m->throttle.vcpus)
		record(m, 0, 0, pass, true);
	m->throttle.level = m->throttle.vcpus = 0;
	m->throttle.sampled = false;
}
