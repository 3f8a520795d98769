/* SPDX-License-Identifier: Apache-2.0 */
/*
 * x86_boot.h - what the VMM writes into guest RAM and vCPU registers so the
 * guest starts directly in 64-bit long mode (vmm firmware) or in 32-bit flat
 * protected mode (PVH images).
 *
 * Fixed low memory (below the firmware at 1 MiB):
 *   0x1000 GDT, 0x2000 hvm_start_info, 0x3000 PVH memory map,
 *   0x4000 PVH command line (2 KiB), 0x9000 PML4, 0xa000.. PDPTs.
 * After the loaded image (page aligned): page directories (one per GiB),
 * the device tree, then one stack per vCPU; free_start follows, aligned to
 * 2 MiB.
 */
#ifndef VMM_X86_BOOT_H
#define VMM_X86_BOOT_H

#include "vm_struct.h"

/* Computes vm->layout from the loaded image and the config. */
int x86_boot_layout(struct vm *vm, uint64_t fdt_size, char *err, size_t errlen);

/* Writes GDT and identity-mapping page tables (2 MiB pages over all RAM). */
int x86_boot_write_tables(struct vm *vm);

/* Writes hvm_start_info, memory map and command line for a PVH image. */
int x86_boot_write_pvh(struct vm *vm);

/* Initial registers of vCPU `index` for vm->image.proto. */
int x86_boot_setup_vcpu(struct vm *vm, struct vcpu *vcpu);

#endif /* VMM_X86_BOOT_H */
