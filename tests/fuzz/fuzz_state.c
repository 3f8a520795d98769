/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_state.c - the vCPU and VM state blobs (docs/state-format.md) as a
 * target loads them from VCPU_STATE and VM_STATE records.
 *
 * The first input byte picks the loader: even, vcpu_state_load() into
 * vCPU 0; odd, vm_state_load() into a VM of 1 vCPU. The rest is the blob.
 * Both run state_parse() (state_buf.c) and their own section checks on a
 * VM without KVM (fds -1): every check runs before the first ioctl, which
 * then fails with EBADF, so nothing but the parsers is exercised.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vcpu_state.h"
#include "vm_struct.h" /* white-box: builds a VM and a vCPU by hand */
#include "vm_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vm vm;
	static struct vcpu vcpu;
	char err[256];
	uint8_t *blob;
	int ret;

	if (size < 1)
		return 0;
	/* A heap copy of exactly the blob: ASan sees any read past its end. */
	blob = malloc(size - 1 ? size - 1 : 1);
	if (!blob)
		abort();
	memcpy(blob, data + 1, size - 1);
	err[0] = '\0';
	if (data[0] % 2 == 0) {
		memset(&vcpu, 0, sizeof(vcpu));
		vcpu.fd = -1;
		vcpu.index = 0;
		ret = vcpu_state_load(&vcpu, blob, size - 1, err, sizeof(err));
	} else {
		memset(&vm, 0, sizeof(vm));
		vm.kvm_fd = vm.vm_fd = -1;
		vm.nvcpus = 1;
		ret = vm_state_load(&vm, blob, size - 1, err, sizeof(err));
	}
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "fuzz_state: %s\n", err);
	/* Without KVM nothing may load: a 0 would mean an ioctl was skipped. */
	if (ret == 0 || !err[0])
		abort();
	free(blob);
	return 0;
}
