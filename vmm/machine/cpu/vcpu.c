/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vCPU threads. Each thread loops on KVM_RUN and parks in the VM's pause
 * barrier when asked. Kicks use SIG_VCPU_KICK, which vCPU threads keep
 * blocked except inside KVM_RUN (KVM_SET_SIGNAL_MASK): a kick sent while
 * the thread is in userspace stays pending and makes the next KVM_RUN
 * return -EINTR at once, so no kick is ever lost between the check of the
 * pause flag and the entry into the guest. The throttle's slice timer
 * (vcpu_throttle.c) sends the same signal to its own vCPU's thread, under
 * the same rule.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>

#include "clock.h"
#include "cpuid.h"
#include "platform_io.h"
#include "machine_seccomp.h"
#include "test_hooks.h"
#include "vcpu_signal.h"
#include "vcpu_throttle.h"
#include "vm_struct.h"
#include "vmm_abi.h"

/*
 * The machine's one test fault (VMM_TEST_FAULT, test_hooks.h): vCPU 0
 * calls socket() as it starts, which its seccomp list forbids. The
 * engine's faults are its own (migration/api/test_faults.h).
 */
#define FAULT_FORBIDDEN_SYSCALL_VCPU "forbidden-syscall-vcpu"

int vcpu_create(struct vm *vm, struct vcpu *vcpu, unsigned index)
{
	union {
		struct kvm_signal_mask hdr;
		uint8_t bytes[sizeof(struct kvm_signal_mask) + 8];
	} mask;
	sigset_t set;

	memset(vcpu, 0, sizeof(*vcpu));
	vcpu->vm = vm;
	vcpu->index = index;
	vcpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, index);
	if (vcpu->fd < 0)
		return -errno;
	vcpu->run =
	    mmap(NULL, (size_t)vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED) {
		vcpu->run = NULL;
		return -errno;
	}
	/* The table this vCPU sees is cpuid.c's decision, not the host's. */
	uint32_t cap = vm->cpuid->nent + CPUID_EXTRA_ENTRIES;
	struct kvm_cpuid2 *cpuid = calloc(1, sizeof(*cpuid) + cap * sizeof(cpuid->entries[0]));
	struct cpuid_params cp = {.vcpu_index = index,
				  .vendor = vm->cfg.cpu_vendor,
				  .tsc_khz = vm->tsc_khz,
				  .tsc_deadline = vm_check_cap(vm, KVM_CAP_TSC_DEADLINE_TIMER) > 0};
	int ret = cpuid ? cpuid_build(vm->cpuid, &cp, cpuid, cap) : -ENOMEM;

	if (!ret && ioctl(vcpu->fd, KVM_SET_CPUID2, cpuid) < 0)
		ret = -errno;
	free(cpuid);
	if (ret)
		return ret;

	/* Inside KVM_RUN every signal but the kick keeps its usual mask. */
	pthread_sigmask(SIG_SETMASK, NULL, &set);
	sigdelset(&set, SIG_VCPU_KICK);
	mask.hdr.len = 8; /* the kernel's sigset size */
	memcpy(mask.bytes + sizeof(mask.hdr), &set, 8);
	if (ioctl(vcpu->fd, KVM_SET_SIGNAL_MASK, &mask.hdr) < 0)
		return -errno;
	return 0;
}

int vcpu_get_rip(struct vcpu *vcpu, uint64_t *rip)
{
	struct kvm_regs regs;

	if (ioctl(vcpu->fd, KVM_GET_REGS, &regs) < 0)
		return -errno;
	*rip = regs.rip;
	return 0;
}

/* Consumes a pending kick so the next KVM_RUN does not return at once. */
static void eat_kick(void)
{
	sigset_t set;
	struct timespec zero = {0, 0};

	sigemptyset(&set);
	sigaddset(&set, SIG_VCPU_KICK);
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
}

/*
 * KVM finishes a port or MMIO instruction (RIP past it, an IN's value in
 * its register) only when KVM_RUN is entered again (KVM API, 5. kvm_run,
 * KVM_EXIT_IO/KVM_EXIT_MMIO: "userspace should ensure that the operation
 * is completed before performing a live migration"). A vCPU parked right
 * after one would have its state saved mid-instruction, and the restored
 * or migrated guest would execute it again (a console byte twice). One
 * KVM_RUN with immediate_exit completes it without entering the guest.
 */
static void complete_pending_io(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;

	if (run->exit_reason != KVM_EXIT_IO && run->exit_reason != KVM_EXIT_MMIO)
		return;
	run->immediate_exit = 1;
	if (ioctl(vcpu->fd, KVM_RUN, 0) < 0 && errno == EINTR)
		eat_kick();
	run->immediate_exit = 0;
	run->exit_reason = KVM_EXIT_INTR; /* done: not again before the next exit */
}

static void park_if_paused(struct vcpu *vcpu)
{
	struct vm *vm = vcpu->vm;

	pthread_mutex_lock(&vm->lock);
	if (vm->pause_requested && !vm->stopping &&
	    (vcpu->run->exit_reason == KVM_EXIT_IO || vcpu->run->exit_reason == KVM_EXIT_MMIO)) {
		/* Not under the lock: KVM_RUN may wait on the guest's memory (postcopy). */
		pthread_mutex_unlock(&vm->lock);
		complete_pending_io(vcpu);
		pthread_mutex_lock(&vm->lock);
	}
	if (vm->pause_requested && !vm->stopping) {
		vm->paused++;
		pthread_cond_broadcast(&vm->cond);
		while (vm->pause_requested && !vm->stopping)
			pthread_cond_wait(&vm->cond, &vm->lock);
		vm->paused--;
	}
	pthread_mutex_unlock(&vm->lock);
}

/*
 * Whether the host page under p is in memory. A page that is not may be
 * one a postcopy target still waits for: touching it would block this
 * vCPU on userfaultfd (for ever, if the source is gone) before it could
 * report why it stopped.
 */
static bool page_resident(const void *p)
{
	uintptr_t page = (uintptr_t)p & ~(uintptr_t)(GUEST_PAGE_SIZE - 1);
	unsigned char vec = 0;

	return mincore((void *)page, GUEST_PAGE_SIZE, &vec) == 0 && (vec & 1);
}

/*
 * Up to 15 bytes of the guest's code at rip, as hex ("0f ae 6f 40 ..."), or
 * "" when rip does not translate to RAM: which instruction stopped the
 * guest, for a report that needs no debugger.
 */
static void code_bytes(struct vcpu *vcpu, uint64_t rip, char *buf, size_t len)
{
	struct kvm_translation t = {.linear_address = rip};
	const uint8_t *p;
	uint64_t n = 15, left;
	size_t w = 0;

	buf[0] = '\0';
	if (ioctl(vcpu->fd, KVM_TRANSLATE, &t) < 0 || !t.valid)
		return;
	left = GUEST_PAGE_SIZE - (t.physical_address & (GUEST_PAGE_SIZE - 1));
	if (n > left)
		n = left; /* the next page may map elsewhere */
	p = guest_mem_ptr(&vcpu->vm->mem, t.physical_address, n);
	if (!p || !page_resident(p))
		return;
	w = (size_t)snprintf(buf, len, ", code");
	for (uint64_t i = 0; i < n && w + 4 < len; i++)
		w += (size_t)snprintf(buf + w, len - w, " %02x", p[i]);
}

static void stop_with_rip(struct vcpu *vcpu, const char *what)
{
	uint64_t rip = 0;
	char code[64];

	vcpu_get_rip(vcpu, &rip);
	code_bytes(vcpu, rip, code, sizeof(code));
	vm_request_stop(vcpu->vm, VM_END_ERROR, 1, "vCPU %u: %s at rip 0x%llx%s", vcpu->index, what,
			(unsigned long long)rip, code);
}

/*
 * A triple fault. KVM on AMD re-initialises a vCPU that shuts down before
 * it reports the exit (the VMCB is undefined after a SHUTDOWN intercept),
 * so its registers read as after a reset: say so rather than print the
 * reset vector as where it faulted.
 */
static void stop_shutdown(struct vcpu *vcpu)
{
	uint64_t rip = 0;

	if (vcpu_get_rip(vcpu, &rip) || rip != 0xfff0) {
		stop_with_rip(vcpu, "triple fault (KVM_EXIT_SHUTDOWN)");
		return;
	}
	vm_request_stop(vcpu->vm, VM_END_ERROR, 1,
			"vCPU %u: triple fault (KVM_EXIT_SHUTDOWN); its registers read as after "
			"a reset (KVM on AMD re-initialises a vCPU that shuts down), so where it "
			"faulted is lost",
			vcpu->index);
}

static void handle_io(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	struct vm *vm = vcpu->vm;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool is_write = run->io.direction == KVM_EXIT_IO_OUT;

	for (uint32_t i = 0; i < run->io.count; i++, data += run->io.size) {
		if (run->io.port == VMM_EXIT_PORT && is_write) {
			uint32_t status = 0;

			memcpy(&status, data, run->io.size < 4 ? run->io.size : 4);
			vm_request_stop(vm, VM_END_GUEST_EXIT, (int)(status & 0xff),
					"guest exited with status %u", status);
			return;
		}
		if (run->io.size == 1 && serial_io(&vm->serial, run->io.port, is_write, data))
			continue;
		if (run->io.size == 1 &&
		    platform_io(vm, vcpu->index, run->io.port, is_write, data)) {
			if (vm_stopping(vm))
				return; /* reset or power-off: nothing after it runs */
			continue;
		}
		/* Nothing else is there: reads float high, writes are dropped. */
		if (!is_write)
			memset(data, 0xff, run->io.size);
	}
}

/* Returns false when the vCPU must stop. */
static bool handle_exit(struct vcpu *vcpu)
{
	struct kvm_run *run = vcpu->run;
	char what[160];

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		handle_io(vcpu);
		return true;
	case KVM_EXIT_HLT:
		stop_with_rip(vcpu, "halted with interrupts off and no in-kernel irqchip");
		return false;
	case KVM_EXIT_SHUTDOWN:
		stop_shutdown(vcpu);
		return false;
	case KVM_EXIT_INTERNAL_ERROR:
		snprintf(what, sizeof(what), "KVM internal error, suberror %u%s",
			 run->internal.suberror,
			 run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION
			     ? " (instruction emulation failed: SSE/x87 or another "
			       "instruction this host cannot emulate)"
			     : "");
		stop_with_rip(vcpu, what);
		return false;
	case KVM_EXIT_FAIL_ENTRY:
		snprintf(what, sizeof(what), "VM entry failed, hardware reason 0x%llx",
			 (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		stop_with_rip(vcpu, what);
		return false;
	case KVM_EXIT_MMIO:
		/* A virtio device's register (QueueNotify usually goes by ioeventfd). */
		if (run->mmio.len <= sizeof(run->mmio.data) &&
		    devices_mmio(&vcpu->vm->devices, run->mmio.phys_addr, run->mmio.is_write,
				 run->mmio.data, run->mmio.len))
			return true;
		snprintf(what, sizeof(what), "%s of %u bytes at gpa 0x%llx, which is not RAM",
			 run->mmio.is_write ? "write" : "read", run->mmio.len,
			 (unsigned long long)run->mmio.phys_addr);
		stop_with_rip(vcpu, what);
		return false;
	default:
		snprintf(what, sizeof(what), "unexpected exit reason %u", run->exit_reason);
		stop_with_rip(vcpu, what);
		return false;
	}
}

void *vcpu_thread(void *arg)
{
	struct vcpu *vcpu = arg;
	struct vm *vm = vcpu->vm;
	char err[160];

	/* Its throttle's slice timer: made before the filter, as it is this thread's own. */
	vcpu_throttle_thread_init(vcpu);
	/* Everything this thread opens was opened by main: from here on, KVM_RUN. */
	if (seccomp_thread_enter(SECCOMP_THREAD_VCPU, vm->cfg.seccomp, err, sizeof(err)))
		vm_request_stop(vm, VM_END_ERROR, 1, "vCPU %u: %s", vcpu->index, err);
	else if (vcpu->index == 0 && vm->hooks)
		test_hook_forbidden_syscall(vm->hooks, FAULT_FORBIDDEN_SYSCALL_VCPU,
					    TEST_HOOK_CALL_SOCKET);
	for (;;) {
		park_if_paused(vcpu);
		if (vm_stopping(vm))
			break;
		/* A throttled vCPU that slept looks for a pause or a stop again first. */
		if (vcpu_throttle_slice(vcpu))
			continue;
		if (vcpu->index == 0 && !vm->first_run_ns)
			vm->first_run_ns = now_ns();
		if (ioctl(vcpu->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				eat_kick();
				continue;
			}
			vm_request_stop(vm, VM_END_ERROR, 1, "vCPU %u: KVM_RUN failed: %s",
					vcpu->index, strerror(errno));
			break;
		}
		if (!handle_exit(vcpu))
			break;
	}
	vcpu_throttle_thread_exit(vcpu);
	pthread_mutex_lock(&vm->lock);
	vm->running--;
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
	return NULL;
}
