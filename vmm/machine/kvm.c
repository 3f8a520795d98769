/* SPDX-License-Identifier: Apache-2.0 */
#include "kvm.h"
#include "vm_struct.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct kvm_required_cap {
	long cap;
	const char *name;
	const char *why;
};

static const struct kvm_required_cap required_caps[] = {
    {KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY", "guest RAM in host memory"},
    {KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP", "the in-kernel interrupt controllers"},
    {KVM_CAP_PIT2, "KVM_CAP_PIT2", "the in-kernel PIT"},
    {KVM_CAP_SET_TSS_ADDR, "KVM_CAP_SET_TSS_ADDR", "VMX real-mode support"},
    {KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID", "setting the guest CPUID"},
    {KVM_CAP_MP_STATE, "KVM_CAP_MP_STATE", "starting and migrating vCPUs"},
    {KVM_CAP_VCPU_EVENTS, "KVM_CAP_VCPU_EVENTS", "migrating pending events"},
    {KVM_CAP_DEBUGREGS, "KVM_CAP_DEBUGREGS", "migrating debug registers"},
    {KVM_CAP_XSAVE, "KVM_CAP_XSAVE", "migrating FPU/XSAVE state"},
    {KVM_CAP_XCRS, "KVM_CAP_XCRS", "migrating XCR0"},
    {KVM_CAP_ADJUST_CLOCK, "KVM_CAP_ADJUST_CLOCK", "migrating the guest clock"},
    {KVM_CAP_GET_TSC_KHZ, "KVM_CAP_GET_TSC_KHZ", "telling the guest its TSC frequency"},
    {KVM_CAP_NR_MEMSLOTS, "KVM_CAP_NR_MEMSLOTS", "sharding RAM into memslots"},
};

int kvm_open(int *kvm_fd, char *err, size_t errlen)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int ver;

	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot open /dev/kvm: %s", strerror(e));
		return -e;
	}
	ver = ioctl(fd, KVM_GET_API_VERSION, 0);
	if (ver != KVM_API_VERSION) {
		snprintf(err, errlen, "/dev/kvm has API version %d, vmm needs %d", ver,
			 KVM_API_VERSION);
		close(fd);
		return -ENOTSUP;
	}
	*kvm_fd = fd;
	return 0;
}

int kvm_cap(int kvm_fd, int vm_fd, long cap)
{
	int r = vm_fd >= 0 ? ioctl(vm_fd, KVM_CHECK_EXTENSION, cap) : -1;

	if (r < 0)
		r = ioctl(kvm_fd, KVM_CHECK_EXTENSION, cap);
	return r < 0 ? 0 : r;
}

int kvm_check_caps(int kvm_fd, int vm_fd, uint32_t nslots, char *err, size_t errlen)
{
	int max_slots;

	for (size_t i = 0; i < sizeof(required_caps) / sizeof(required_caps[0]); i++) {
		const struct kvm_required_cap *c = &required_caps[i];

		if (kvm_cap(kvm_fd, vm_fd, c->cap) <= 0) {
			snprintf(err, errlen, "KVM lacks %s, needed for %s", c->name, c->why);
			return -ENOTSUP;
		}
	}
	max_slots = kvm_cap(kvm_fd, vm_fd, KVM_CAP_NR_MEMSLOTS);
	if ((uint32_t)max_slots < nslots) {
		snprintf(err, errlen,
			 "guest RAM needs %u memslots but KVM allows %d: raise [vm] memslot_size",
			 nslots, max_slots);
		return -E2BIG;
	}
	return 0;
}

int kvm_supported_cpuid(int kvm_fd, struct kvm_cpuid2 **out)
{
	for (unsigned nent = 64; nent <= 4096; nent *= 2) {
		struct kvm_cpuid2 *c =
		    calloc(1, sizeof(*c) + nent * sizeof(struct kvm_cpuid_entry2));

		if (!c)
			return -ENOMEM;
		c->nent = nent;
		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			*out = c;
			return 0;
		}
		free(c);
		if (errno != E2BIG)
			return -errno;
	}
	return -E2BIG;
}

int vm_check_cap(const struct vm *vm, long cap)
{
	return kvm_cap(vm->kvm_fd, vm->vm_fd, cap);
}
