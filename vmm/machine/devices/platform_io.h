/* SPDX-License-Identifier: Apache-2.0 */
/*
 * platform_io.h - the legacy PC ports through which a guest ends the VM,
 * and the guest platform constants the ACPI tables and the MP table
 * describe (docs/architecture.md, "Guest platform").
 *
 * Ports (all byte wide; other widths float high like unclaimed ports):
 *   0x60  8042 data: reads 0 (no keyboard, never any output)
 *   0x64  8042 status/command: reads PLATFORM_I8042_STATUS (input and
 *         output buffers empty), command 0xFE (pulse the reset line)
 *         resets the machine; other commands are ignored
 *   0xCF9 reset control: a write with bit 2 (RST_CPU) set resets the
 *         machine, bit 1 (SYS_RST) choosing hard or soft as on the chipset
 *         (both end the VM the same way); reads 0
 *   0x600 ACPI sleep control (FADT SLEEP_CONTROL_REG): a write with
 *         SLP_EN (bit 5) and SLP_TYP (bits 2-4) = 5, the \_S5 value the
 *         DSDT gives, powers the machine off; other sleep types are ignored
 *   0x601 ACPI sleep status (FADT SLEEP_STATUS_REG): reads 0, writes dropped
 *
 * Stateless: nothing here survives a migration because nothing needs to.
 * Any vCPU thread calls platform_io() (no lock); a reset or power-off
 * ends the VM through vm_request_stop(), and the first request wins.
 */
#ifndef VMM_PLATFORM_IO_H
#define VMM_PLATFORM_IO_H

#include <stdbool.h>
#include <stdint.h>

struct vm;

#define PLATFORM_I8042_DATA_PORT   0x60u
#define PLATFORM_I8042_STATUS_PORT 0x64u
#define PLATFORM_I8042_CMD_RESET   0xfeu
/* Bit 2: system flag (self test passed); bit 4: keyboard not inhibited. */
#define PLATFORM_I8042_STATUS 0x14u

#define PLATFORM_RESET_PORT  0xcf9u
#define PLATFORM_RESET_SYS   0x02u /* SYS_RST: hard reset when RST_CPU goes to 1 */
#define PLATFORM_RESET_CPU   0x04u /* RST_CPU: the reset itself */
#define PLATFORM_RESET_VALUE 0x06u /* FADT RESET_VALUE */

#define PLATFORM_SLEEP_CONTROL_PORT 0x600u
#define PLATFORM_SLEEP_STATUS_PORT  0x601u
#define PLATFORM_SLP_EN		    0x20u
#define PLATFORM_SLP_TYP_SHIFT	    2
#define PLATFORM_SLP_TYP_MASK	    0x1cu
#define PLATFORM_SLP_TYP_S5	    5u

/* The in-kernel irqchip (KVM_CREATE_IRQCHIP) at its usual addresses. */
#define PLATFORM_LAPIC_ADDR	0xfee00000u
#define PLATFORM_IOAPIC_ADDR	0xfec00000u
#define PLATFORM_IOAPIC_PINS	24u
#define PLATFORM_LAPIC_VERSION	0x14u /* what KVM's LAPIC version register reads */
#define PLATFORM_IOAPIC_VERSION 0x11u /* what KVM's IOAPIC version register reads */

/* The IOAPIC's ID: the first after the vCPUs' APIC IDs 0..n-1. */
static inline uint8_t platform_ioapic_id(unsigned nvcpus)
{
	return (uint8_t)nvcpus;
}

/*
 * Handles one byte-wide access to `port`; returns false if the port is
 * not one of the above (the caller then treats it as unclaimed).
 */
bool platform_io(struct vm *vm, unsigned vcpu, uint16_t port, bool is_write, uint8_t *data);

#endif /* VMM_PLATFORM_IO_H */
