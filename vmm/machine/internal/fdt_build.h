/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdt_build.h - the device tree handed to the guest in %rdi (libfdt).
 * Its layout is specified in include/vmm_abi.h.
 */
#ifndef VMM_FDT_BUILD_H
#define VMM_FDT_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "devices.h"
#include "guest_mem.h"

struct fdt_params {
	const struct vm_config *cfg;
	const struct guest_mem *mem;
	uint32_t tsc_khz;
	uint64_t free_start;
	const char *cmdline;		  /* bootargs: the config's and the devices' fragments */
	const struct vm_devices *devices; /* virtio_mmio@ nodes; NULL = none */
};

/* Upper bound of the blob's size for these parameters. */
size_t fdt_build_size(const struct fdt_params *p);

/* Builds the blob into buf; -ENOSPC if it does not fit, -EINVAL on libfdt errors. */
int fdt_build(const struct fdt_params *p, void *buf, size_t size);

#endif /* VMM_FDT_BUILD_H */
