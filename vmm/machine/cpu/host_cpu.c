/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_cpu.c - what this host's KVM can give a guest's CPU, without a VM:
 * the named features (cpu_features.h) of KVM_GET_SUPPORTED_CPUID, the set
 * apply_cpu_features() (vm.c) checks a VM against, and the vendor. For
 * `vmm cpu-features --host`, which a fleet's operator intersects across
 * hosts into a [vm] cpu_features every host can give.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_features.h"
#include "cpuid.h"
#include "kvm.h"
#include "vm.h"

int vm_host_cpu(struct cpu_features *out, enum cpu_vendor *vendor, char *err, size_t errlen)
{
	struct kvm_cpuid2 *cpuid = NULL;
	int kvm_fd = -1, ret;

	ret = kvm_open(&kvm_fd, err, errlen);
	if (ret)
		return ret;
	ret = kvm_supported_cpuid(kvm_fd, &cpuid);
	close(kvm_fd);
	if (ret) {
		snprintf(err, errlen, "KVM_GET_SUPPORTED_CPUID: %s", strerror(-ret));
		return ret;
	}
	cpu_features_of(cpuid, out);
	*vendor = cpuid_host_vendor(cpuid);
	free(cpuid);
	return 0;
}
