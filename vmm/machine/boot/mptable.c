/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mptable.c - the MP floating pointer and configuration table
 * (mptable.h), written byte by byte in the specification's little-endian
 * layout.
 */
#include "mptable.h"

#include <errno.h>
#include <string.h>

#include "platform_io.h"
#include "fw_table.h"

#define MP_SPEC_REV 4u /* MP specification 1.4 */

#define MP_PROCESSOR 0u
#define MP_BUS	     1u
#define MP_IOAPIC    2u
#define MP_INTSRC    3u
#define MP_LINTSRC   4u

#define CPU_ENABLED 1u
#define CPU_BSP	    2u
/* CPUID signature (family 6) and feature flags (FPU, APIC) the entries claim. */
#define CPU_SIGNATURE 0x600u
#define CPU_FEATURES  0x201u

#define MP_INT		0u
#define MP_NMI		1u
#define MP_EXTINT	3u
#define MP_APIC_ALL	0xffu
#define ISA_BUS		0u
#define PIC_CASCADE_IRQ 2u

static size_t config_size(unsigned nvcpus)
{
	/* bus + IOAPIC + ISA IRQs + LINT0 + LINT1 */
	return MPTABLE_HEADER_SIZE + nvcpus * MPTABLE_CPU_SIZE +
	       (2 + MPTABLE_ISA_IRQS + 2) * MPTABLE_ENTRY_SIZE;
}

size_t mptable_size(unsigned nvcpus)
{
	return MPTABLE_FLOATING_SIZE + config_size(nvcpus);
}

/* An I/O (type 3) or local (type 4) interrupt entry: same 8-byte layout. */
static uint8_t *irq_entry(uint8_t *e, uint8_t type, uint8_t irqtype, uint8_t srcirq, uint8_t dst,
			  uint8_t dstpin)
{
	e[0] = type;
	e[1] = irqtype;
	le_put16(e + 2, 0); /* polarity and trigger: the bus's (ISA: edge, high) */
	e[4] = ISA_BUS;
	e[5] = srcirq;
	e[6] = dst;
	e[7] = dstpin;
	return e + MPTABLE_ENTRY_SIZE;
}

int mptable_build(void *buf, size_t len, uint64_t base, unsigned nvcpus)
{
	uint8_t *f = buf, *c, *e;
	size_t clen = config_size(nvcpus);
	uint8_t ioapic = platform_ioapic_id(nvcpus);
	uint16_t count = 0;

	if (!buf || nvcpus == 0 || nvcpus > 255 || (base & 15) ||
	    base + mptable_size(nvcpus) > (1ull << 32))
		return -EINVAL;
	if (len < mptable_size(nvcpus))
		return -ENOSPC;
	memset(f, 0, mptable_size(nvcpus));
	c = f + MPTABLE_FLOATING_SIZE;

	memcpy(c, "PCMP", 4);
	le_put16(c + 4, (uint16_t)clen);
	c[6] = MP_SPEC_REV;
	memcpy(c + 8, "VMM     ", 8);	    /* OEM ID */
	memcpy(c + 16, "VMM-PLATFORM", 12); /* product ID */
	le_put32(c + 36, PLATFORM_LAPIC_ADDR);
	e = c + MPTABLE_HEADER_SIZE;
	for (unsigned i = 0; i < nvcpus; i++, count++) {
		e[0] = MP_PROCESSOR;
		e[1] = (uint8_t)i; /* APIC ID */
		e[2] = PLATFORM_LAPIC_VERSION;
		e[3] = CPU_ENABLED | (i == 0 ? CPU_BSP : 0);
		le_put32(e + 4, CPU_SIGNATURE);
		le_put32(e + 8, CPU_FEATURES);
		e += MPTABLE_CPU_SIZE;
	}
	e[0] = MP_BUS;
	e[1] = ISA_BUS;
	memcpy(e + 2, "ISA   ", 6);
	e += MPTABLE_ENTRY_SIZE;
	count++;
	e[0] = MP_IOAPIC;
	e[1] = ioapic;
	e[2] = PLATFORM_IOAPIC_VERSION;
	e[3] = 1; /* usable */
	le_put32(e + 4, PLATFORM_IOAPIC_ADDR);
	e += MPTABLE_ENTRY_SIZE;
	count++;
	for (uint8_t irq = 0; irq < 16; irq++) {
		if (irq == PIC_CASCADE_IRQ)
			continue;
		e = irq_entry(e, MP_INTSRC, MP_INT, irq, ioapic, irq);
		count++;
	}
	e = irq_entry(e, MP_LINTSRC, MP_EXTINT, 0, MP_APIC_ALL, 0);
	e = irq_entry(e, MP_LINTSRC, MP_NMI, 0, MP_APIC_ALL, 1);
	count += 2;
	le_put16(c + 34, count);
	c[7] = fw_checksum(c, clen);

	memcpy(f, "_MP_", 4);
	le_put32(f + 4, (uint32_t)(base + MPTABLE_FLOATING_SIZE));
	f[8] = 1; /* length in 16-byte paragraphs */
	f[9] = MP_SPEC_REV;
	/* feature1 0: the configuration table is present; feature2 0: virtual wire mode */
	f[10] = fw_checksum(f, MPTABLE_FLOATING_SIZE);
	return 0;
}
