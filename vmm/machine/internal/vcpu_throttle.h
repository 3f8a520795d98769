/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vcpu_throttle.h - the vCPU thread's side of the throttle (vm.h has the
 * other side, vm_throttle_set()). Called by vcpu_thread() (vcpu.c) only,
 * on the vCPU's own thread.
 */
#ifndef VMM_VCPU_THROTTLE_H
#define VMM_VCPU_THROTTLE_H

#include <stdbool.h>

struct vcpu;

/*
 * Makes the thread's slice timer (SIG_VCPU_KICK to this thread), before the
 * thread installs its seccomp filter; a failure is kept in timer_state and
 * reported by vm_throttle_set(), the vCPU runs unthrottled.
 */
void vcpu_throttle_thread_init(struct vcpu *v);
/* Deletes the timer; the thread leaves its loop. */
void vcpu_throttle_thread_exit(struct vcpu *v);
/*
 * Before each KVM_RUN. Unthrottled: disarms the timer if armed, returns
 * false. Throttled: once the running share of the slice is used up, sleeps
 * for the rest of it (woken early by a pause, a stop or a new level) and
 * starts the next running share; arms the timer for that share's end.
 * True when it slept: the caller checks for a pause and a stop again.
 */
bool vcpu_throttle_slice(struct vcpu *v);

#endif /* VMM_VCPU_THROTTLE_H */
