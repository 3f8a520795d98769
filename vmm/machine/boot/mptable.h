/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mptable.h - the Intel MultiProcessor Specification 1.4 tables, for PVH
 * guests that do not use ACPI (Linux booted with acpi=off): the MP
 * floating pointer and the configuration table right after it.
 *
 * The VMM puts them at 0x9FC00, the last KiB of base memory, the second
 * place Linux's smp_scan_config() looks (the first, 0-0x3FF, is the real
 * mode interrupt vector table), so no scan of the BIOS area is needed.
 *
 * Configuration table entries, in the order the specification asks:
 *   one processor per vCPU (APIC ID = vCPU index, enabled; vCPU 0 the BSP),
 *   bus 0 "ISA", the IOAPIC (ID platform_ioapic_id(), 0xFEC00000),
 *   I/O interrupts ISA IRQ n -> IOAPIC pin n for n = 0..15 except 2 (the
 *   8259 cascade; KVM's default GSI routing is the identity and its PIT
 *   raises GSI 0), and the local interrupts LINT0 = ExtINT, LINT1 = NMI
 *   of every local APIC.
 *
 * Pure functions over a caller's buffer: no KVM, no I/O, any thread.
 */
#ifndef VMM_MPTABLE_H
#define VMM_MPTABLE_H

#include <stddef.h>
#include <stdint.h>

#define MPTABLE_FLOATING_SIZE 16u
#define MPTABLE_HEADER_SIZE   44u
#define MPTABLE_CPU_SIZE      20u
#define MPTABLE_ENTRY_SIZE    8u  /* bus, IOAPIC, I/O and local interrupt entries */
#define MPTABLE_ISA_IRQS      15u /* 0..15 without 2 */

/* Bytes of floating pointer + configuration table for `nvcpus` (1..255). */
size_t mptable_size(unsigned nvcpus);

/*
 * Writes both at guest-physical `base` (16-byte aligned, below 4 GiB):
 * the floating pointer first, the configuration table at base + 16.
 * -EINVAL for bad arguments, -ENOSPC if len < mptable_size(nvcpus).
 */
int mptable_build(void *buf, size_t len, uint64_t base, unsigned nvcpus);

#endif /* VMM_MPTABLE_H */
