/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_end.c - ending a VM: the first vm_request_stop() wins, and every vCPU
 * is kicked out of KVM_RUN (the kick protocol is vcpu.c's: the signal is
 * blocked except inside KVM_RUN). Its own file so that the vCPU loop and
 * the platform devices, which end VMs, call down to it and not back into
 * vm.c, which creates their threads. vm_stopping() is here with the one
 * store to vm->stopping it pairs with.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "vcpu_signal.h"
#include "vm_struct.h"

void vcpu_kick(struct vcpu *vcpu)
{
	if (vcpu->thread_started)
		pthread_kill(vcpu->thread, SIG_VCPU_KICK);
}

bool vm_stopping(const struct vm *vm)
{
	return __atomic_load_n(&vm->stopping, __ATOMIC_ACQUIRE);
}

void vm_request_stop(struct vm *vm, enum vm_end_reason reason, int status, const char *fmt, ...)
{
	uint64_t one = 1;
	va_list ap;

	pthread_mutex_lock(&vm->lock);
	if (vm->end_reason != VM_END_NONE) {
		pthread_mutex_unlock(&vm->lock);
		return;
	}
	vm->end_reason = reason;
	vm->end_status = status;
	va_start(ap, fmt);
	vsnprintf(vm->end_message, sizeof(vm->end_message), fmt, ap);
	va_end(ap);
	/* Release: vm_stopping()'s readers see the end above once they see true. */
	__atomic_store_n(&vm->stopping, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
	for (unsigned i = 0; i < vm->nvcpus; i++)
		vcpu_kick(&vm->vcpus[i]);
	if (write(vm->end_fd, &one, sizeof(one)) < 0) {
		/* eventfd counter cannot overflow here; nothing else to do */
	}
}
