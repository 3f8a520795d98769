/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acpi_build.h - the ACPI tables a PVH guest (a Linux vmlinux) finds
 * through hvm_start_info.rsdp_paddr, built by the VMM into guest RAM.
 * The native vmm firmware gets none: it has its device tree.
 *
 * One contiguous blob, each table 16-byte aligned, in this order:
 *   RSDP  revision 2 (ACPI 2.0+), XSDT address only (RsdtAddress 0)
 *   XSDT  -> FADT, MADT
 *   FADT  revision 6, HW_REDUCED_ACPI: no SCI, no PM1 blocks, no PM timer;
 *         SLEEP_CONTROL_REG / SLEEP_STATUS_REG as 8-bit I/O GAS at
 *         PLATFORM_SLEEP_CONTROL_PORT / _STATUS_PORT; RESET_REG = I/O port
 *         0xCF9, RESET_VALUE 0x06, RESET_REG_SUP; IAPC_BOOT_ARCH says no
 *         VGA, no MSI, no CMOS RTC (nothing emulates them)
 *   DSDT  \_S5 = Package {5, 0, 0, 0}, and \_SB.COM1 (PNP0501, I/O
 *         0x3F8-0x3FF, IRQ 4): a hardware-reduced Linux has no legacy
 *         PIC and maps ISA IRQs only for devices ACPI describes, so COM1
 *         gets its interrupt through this entry (needs CONFIG_PNP)
 *         and, with acpi_build_with(), \_SB.VRnn (LNRO0005: a virtio-mmio
 *         transport, its window and its edge-triggered GSI) per device
 *   MADT  one enabled Processor Local APIC per vCPU (ACPI UID = APIC ID =
 *         vCPU index), the IOAPIC (ID platform_ioapic_id(), 0xFEC00000,
 *         GSI base 0), an interrupt source override ISA IRQ 0 -> GSI 0
 *         (KVM's default GSI routing: GSI n is IOAPIC pin n, and the
 *         in-kernel PIT raises GSI 0), and a Local APIC NMI on LINT1 of
 *         every processor
 *
 * Pure functions over a caller's buffer: no KVM, no I/O, any thread.
 */
#ifndef VMM_ACPI_BUILD_H
#define VMM_ACPI_BUILD_H

#include <stddef.h>
#include <stdint.h>

/* Byte offsets of each table in the blob; size is the blob's length. */
struct acpi_tables {
	uint32_t rsdp, xsdt, fadt, dsdt, madt;
	uint32_t size;
};

#define ACPI_RSDP_SIZE	   36u
#define ACPI_HEADER_SIZE   36u
#define ACPI_FADT_SIZE	   276u /* revision 6 */
#define ACPI_FADT_REVISION 6u

/* One virtio-mmio device for the DSDT: its window (below 4 GiB) and GSI. */
struct acpi_virtio {
	uint64_t base;
	uint32_t size;
	uint32_t irq;
};
#define ACPI_MAX_VIRTIO 8u

/* The blob's length for `nvcpus` vCPUs (1..255) and up to ACPI_MAX_VIRTIO devices. */
size_t acpi_build_size(unsigned nvcpus);

/*
 * Writes the tables into buf (len >= acpi_build_size(nvcpus)) as they
 * will sit at guest-physical `base` (16-byte aligned, below 4 GiB: the
 * FADT's DSDT field is 32 bits). Checksums are final. -EINVAL for bad
 * arguments, -ENOSPC if len is short.
 */
int acpi_build(void *buf, size_t len, uint64_t base, unsigned nvcpus, struct acpi_tables *out);
/* The same with nvirtio (0..ACPI_MAX_VIRTIO) virtio-mmio devices in the DSDT. */
int acpi_build_with(void *buf, size_t len, uint64_t base, unsigned nvcpus,
		    const struct acpi_virtio *virtio, unsigned nvirtio, struct acpi_tables *out);

#endif /* VMM_ACPI_BUILD_H */
