/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_access.c - what the layers above may know of a VM and set on it
 * (vm.h): struct vm's fields stay the machine's (internal/vm_struct.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vm_struct.h"

struct vm *vm_new(void)
{
	return calloc(1, sizeof(struct vm));
}

void vm_free(struct vm *vm)
{
	free(vm);
}

struct guest_mem *vm_mem(struct vm *vm)
{
	return &vm->mem;
}

const struct vm_config *vm_config(const struct vm *vm)
{
	return &vm->cfg;
}

unsigned vm_nvcpus(const struct vm *vm)
{
	return vm->nvcpus;
}

uint32_t vm_tsc_khz(const struct vm *vm)
{
	return vm->tsc_khz;
}

const struct cpu_features *vm_host_features(const struct vm *vm)
{
	return &vm->host_cpu;
}

void vm_end_state(struct vm *vm, struct vm_end *out)
{
	pthread_mutex_lock(&vm->lock);
	out->reason = vm->end_reason;
	out->status = vm->end_status;
	memcpy(out->message, vm->end_message, sizeof(out->message));
	pthread_mutex_unlock(&vm->lock);
	out->message[sizeof(out->message) - 1] = '\0';
}

int vm_end_fd(const struct vm *vm)
{
	return vm->end_fd;
}

uint64_t vm_first_run_ns(const struct vm *vm)
{
	return vm->first_run_ns;
}

void vm_set_test_hooks(struct vm *vm, const struct test_hooks *hooks)
{
	vm->hooks = hooks;
}

struct serial *vm_console(struct vm *vm)
{
	return &vm->serial;
}

bool vm_device_stats(struct vm *vm, unsigned i, struct virtio_dev_stats *out)
{
	if (i >= vm->devices.n)
		return false;
	virtio_dev_stats(vm->devices.dev[i], out);
	return true;
}
