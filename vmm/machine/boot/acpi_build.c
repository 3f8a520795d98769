/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acpi_build.c - RSDP, XSDT, FADT, DSDT and MADT for PVH guests
 * (acpi_build.h). Field offsets are the ACPI 6.x specification's; every
 * multi-byte field is little-endian, written byte by byte so the host's
 * struct layout never matters.
 */
#include "acpi_build.h"

#include <errno.h>
#include <string.h>

#include "platform_io.h"
#include "fw_table.h"

#define ALIGN16(x) (((x) + 15u) & ~15u)

#define OEM_ID	     "VMM   "	/* 6 bytes */
#define OEM_TABLE_ID "VMMPLAT " /* 8 bytes */
#define CREATOR_ID   "VMM "	/* 4 bytes */

/* FADT Flags and IAPC_BOOT_ARCH bits. */
#define FADT_F_RESET_REG_SUP	  (1u << 10)
#define FADT_F_HW_REDUCED_ACPI	  (1u << 20)
#define IAPC_VGA_NOT_PRESENT	  (1u << 2)
#define IAPC_MSI_NOT_SUPPORTED	  (1u << 3)
#define IAPC_CMOS_RTC_NOT_PRESENT (1u << 5)

/* Generic Address Structure: address space 1 = system I/O. */
#define GAS_SYSTEM_IO	1u
#define GAS_ACCESS_BYTE 1u

/* MADT entry types and sizes. */
#define MADT_LAPIC	   0u
#define MADT_IOAPIC	   1u
#define MADT_ISO	   2u
#define MADT_LAPIC_NMI	   4u
#define MADT_LAPIC_LEN	   8u
#define MADT_IOAPIC_LEN	   12u
#define MADT_ISO_LEN	   10u
#define MADT_LAPIC_NMI_LEN 6u
#define MADT_FIXED	   44u /* header + Local APIC address + flags */
#define MADT_PCAT_COMPAT   1u

/*
 * The DSDT's AML, after its 36-byte header: hand-assembled (ACPI 6.x,
 * section 20 "ACPI Machine Language Specification"). PkgLength bytes
 * below 0x40 are one-byte lengths that count themselves and what follows
 * to the end of the package.
 */
/* clang-format off */
static const uint8_t dsdt_aml[] = {
	/* Name (\_S5, Package (4) {5, 0, 0, 0}): SLP_TYPa 5, SLP_TYPb 0 */
	0x08,                          /* NameOp */
	'\\', '_', 'S', '5', '_',      /* RootChar, NameSeg "_S5_" */
	0x12,                          /* PackageOp */
	0x07,                          /* PkgLength 7: itself to the last element */
	0x04,                          /* NumElements */
	0x0a, 0x05,                    /* BytePrefix 5 */
	0x00, 0x00, 0x00,              /* ZeroOp x3 */

	/* Scope (\_SB) { Device (COM1) { _HID, _UID, _CRS } } */
	0x10,                          /* ScopeOp */
	0x33,                          /* PkgLength 51 = 1 + 5 (name) + 45 (device) */
	'\\', '_', 'S', 'B', '_',      /* RootChar, NameSeg "_SB_" */
	0x5b, 0x82,                    /* ExtOpPrefix, DeviceOp */
	0x2b,                          /* PkgLength 43 = 1 + 4 + 10 + 6 + 22 */
	'C', 'O', 'M', '1',            /* NameSeg */
	/* Name (_HID, EisaId ("PNP0501")): a 16550 UART */
	0x08, '_', 'H', 'I', 'D',      /* NameOp, NameSeg */
	0x0c, 0x41, 0xd0, 0x05, 0x01,  /* DWordPrefix 0x0105d041: "PNP0501" compressed */
	/* Name (_UID, Zero) */
	0x08, '_', 'U', 'I', 'D', 0x00,
	/* Name (_CRS, ResourceTemplate () { IO (Decode16, 0x3F8, 0x3F8, 0, 8)
	 *                                   IRQNoFlags () {4} }) */
	0x08, '_', 'C', 'R', 'S',      /* NameOp, NameSeg */
	0x11,                          /* BufferOp */
	0x10,                          /* PkgLength 16 = 1 + 2 + 13 */
	0x0a, 0x0d,                    /* BufferSize: BytePrefix 13 */
	0x47, 0x01,                    /* I/O port descriptor, 16-bit decode */
	0xf8, 0x03, 0xf8, 0x03,        /* minimum and maximum base 0x3f8 */
	0x00, 0x08,                    /* alignment 0, length 8 */
	0x22, 0x10, 0x00,              /* IRQ descriptor without flags (edge, high): mask 1 << 4 */
	0x79, 0x00,                    /* end tag, checksum 0 (not checked) */
};
/* clang-format on */

/*
 * Scope (\_SB) { Device (VRnn) {...} ... }: one virtio-mmio transport per
 * device, as QEMU's microvm describes them, for a hardware-reduced Linux
 * (no legacy PIC): it maps an ISA IRQ only for a device ACPI describes
 * (see COM1 above), so the virtio_mmio.device= command line form cannot
 * name its interrupt. Linux's virtio_mmio driver matches _HID "LNRO0005".
 * Each device is 61 bytes:
 *   Device (VRnn) {
 *     Name (_HID, "LNRO0005")
 *     Name (_UID, n)
 *     Name (_CRS, ResourceTemplate () {
 *       Memory32Fixed (ReadWrite, base, size)
 *       Interrupt (ResourceConsumer, Edge, ActiveHigh, Exclusive) {irq}
 *     })
 *   }
 * Edge: the device signals with an irqfd edge; the driver reads
 * InterruptStatus.
 */
#define VIRTIO_AML_DEV 61u
#define VIRTIO_AML_MAX (8u + ACPI_MAX_VIRTIO * VIRTIO_AML_DEV)

/* A PkgLength of 1 or 2 bytes for `len` bytes that follow it (< 4096). */
static uint32_t pkglen(uint8_t *p, uint32_t len)
{
	if (len + 1 < 64) {
		p[0] = (uint8_t)(len + 1);
		return 1;
	}
	len += 2;
	p[0] = (uint8_t)(0x40 | (len & 0xf));
	p[1] = (uint8_t)(len >> 4);
	return 2;
}

static uint32_t virtio_device_aml(uint8_t *p, unsigned n, const struct acpi_virtio *v)
{
	static const uint8_t hid[] = {0x08, '_', 'H', 'I', 'D', 0x0d, 'L', 'N',
				      'R',  'O', '0', '0', '0', '5',  0x00};
	uint8_t *q = p;

	*q++ = 0x5b, *q++ = 0x82; /* ExtOpPrefix, DeviceOp */
	q += pkglen(q, VIRTIO_AML_DEV - 3);
	*q++ = 'V', *q++ = 'R', *q++ = (uint8_t)('0' + n / 10), *q++ = (uint8_t)('0' + n % 10);
	memcpy(q, hid, sizeof(hid));
	q += sizeof(hid);
	*q++ = 0x08, *q++ = '_', *q++ = 'U', *q++ = 'I', *q++ = 'D', *q++ = 0x0a, *q++ = (uint8_t)n;
	*q++ = 0x08, *q++ = '_', *q++ = 'C', *q++ = 'R', *q++ = 'S';
	*q++ = 0x11, *q++ = 0x1a, *q++ = 0x0a, *q++ = 23;   /* BufferOp, PkgLength, size 23 */
	*q++ = 0x86, *q++ = 0x09, *q++ = 0x00, *q++ = 0x01; /* Memory32Fixed, read-write */
	le_put32(q, (uint32_t)v->base), q += 4;
	le_put32(q, v->size), q += 4;
	*q++ = 0x89, *q++ = 0x06, *q++ = 0x00; /* Extended Interrupt, 6 bytes follow */
	*q++ = 0x03;			       /* consumer, edge, active high, exclusive */
	*q++ = 0x01;			       /* one interrupt */
	le_put32(q, v->irq), q += 4;
	*q++ = 0x79, *q++ = 0x00; /* end tag */
	return (uint32_t)(q - p);
}

/* The Scope (\_SB) block of the devices, or nothing when there are none. */
static uint32_t virtio_aml(uint8_t *p, const struct acpi_virtio *v, unsigned nv)
{
	uint8_t body[VIRTIO_AML_MAX];
	uint32_t len = 0, hdr = 0;

	if (!nv)
		return 0;
	body[len++] = '\\', body[len++] = '_', body[len++] = 'S', body[len++] = 'B',
	body[len++] = '_';
	for (unsigned i = 0; i < nv; i++)
		len += virtio_device_aml(body + len, i, &v[i]);
	p[hdr++] = 0x10; /* ScopeOp */
	hdr += pkglen(p + hdr, len);
	memcpy(p + hdr, body, len);
	return hdr + len;
}

/* The common 36-byte header; the checksum (offset 9) is set by finish(). */
static void header(uint8_t *t, const char sig[4], uint32_t len, uint8_t rev)
{
	memcpy(t, sig, 4);
	le_put32(t + 4, len);
	t[8] = rev;
	memcpy(t + 10, OEM_ID, 6);
	memcpy(t + 16, OEM_TABLE_ID, 8);
	le_put32(t + 24, 1); /* OEM revision */
	memcpy(t + 28, CREATOR_ID, 4);
	le_put32(t + 32, 1); /* creator revision */
}

static void finish(uint8_t *t, uint32_t len)
{
	t[9] = 0;
	t[9] = fw_checksum(t, len);
}

/* A byte-wide system I/O Generic Address Structure (12 bytes). */
static void gas_io8(uint8_t *g, uint16_t port)
{
	g[0] = GAS_SYSTEM_IO;
	g[1] = 8; /* register bit width */
	g[2] = 0; /* bit offset */
	g[3] = GAS_ACCESS_BYTE;
	le_put64(g + 4, port);
}

static uint32_t madt_size(unsigned nvcpus)
{
	return MADT_FIXED + nvcpus * MADT_LAPIC_LEN + MADT_IOAPIC_LEN + MADT_ISO_LEN +
	       MADT_LAPIC_NMI_LEN;
}

static struct acpi_tables layout(unsigned nvcpus)
{
	struct acpi_tables t;

	t.rsdp = 0;
	t.xsdt = ALIGN16(ACPI_RSDP_SIZE);
	t.fadt = ALIGN16(t.xsdt + ACPI_HEADER_SIZE + 2 * 8);
	t.dsdt = ALIGN16(t.fadt + ACPI_FADT_SIZE);
	/* Room for the most virtio devices: the MADT's place does not depend on how many. */
	t.madt = ALIGN16(t.dsdt + ACPI_HEADER_SIZE + (uint32_t)sizeof(dsdt_aml) + VIRTIO_AML_MAX);
	t.size = t.madt + madt_size(nvcpus);
	return t;
}

size_t acpi_build_size(unsigned nvcpus)
{
	return layout(nvcpus).size;
}

static void build_rsdp(uint8_t *r, uint64_t xsdt)
{
	memcpy(r, "RSD PTR ", 8);
	memcpy(r + 9, OEM_ID, 6);
	r[15] = 2;	     /* revision: ACPI 2.0+ layout, XSDT */
	le_put32(r + 16, 0); /* RsdtAddress: none, the XSDT says it all */
	le_put32(r + 20, ACPI_RSDP_SIZE);
	le_put64(r + 24, xsdt);
	r[8] = fw_checksum(r, 20);		/* ACPI 1.0 part */
	r[32] = fw_checksum(r, ACPI_RSDP_SIZE); /* extended checksum, over all 36 */
}

static void build_fadt(uint8_t *f, uint64_t dsdt)
{
	header(f, "FACP", ACPI_FADT_SIZE, ACPI_FADT_REVISION);
	le_put32(f + 40, (uint32_t)dsdt); /* DSDT (32-bit) */
	/* 45 Preferred_PM_Profile 0: unspecified; SCI_INT, SMI_CMD, PM blocks: 0 */
	le_put16(f + 109,
		 IAPC_VGA_NOT_PRESENT | IAPC_MSI_NOT_SUPPORTED | IAPC_CMOS_RTC_NOT_PRESENT);
	le_put32(f + 112, FADT_F_HW_REDUCED_ACPI | FADT_F_RESET_REG_SUP);
	gas_io8(f + 116, PLATFORM_RESET_PORT); /* RESET_REG */
	f[128] = PLATFORM_RESET_VALUE;
	f[131] = 0;		 /* FADT minor version */
	le_put64(f + 140, dsdt); /* X_DSDT */
	gas_io8(f + 244, PLATFORM_SLEEP_CONTROL_PORT);
	gas_io8(f + 256, PLATFORM_SLEEP_STATUS_PORT);
	memcpy(f + 268, "VMM     ", 8); /* hypervisor vendor identity */
	finish(f, ACPI_FADT_SIZE);
}

static void build_madt(uint8_t *m, unsigned nvcpus)
{
	uint32_t len = madt_size(nvcpus), off = MADT_FIXED;

	header(m, "APIC", len, 5);
	le_put32(m + 36, PLATFORM_LAPIC_ADDR);
	le_put32(m + 40, MADT_PCAT_COMPAT); /* KVM's irqchip has the two 8259s too */
	for (unsigned i = 0; i < nvcpus; i++, off += MADT_LAPIC_LEN) {
		m[off] = MADT_LAPIC;
		m[off + 1] = MADT_LAPIC_LEN;
		m[off + 2] = (uint8_t)i;  /* ACPI processor UID */
		m[off + 3] = (uint8_t)i;  /* APIC ID: vcpu.c sets CPUID's to the index */
		le_put32(m + off + 4, 1); /* enabled */
	}
	m[off] = MADT_IOAPIC;
	m[off + 1] = MADT_IOAPIC_LEN;
	m[off + 2] = platform_ioapic_id(nvcpus);
	le_put32(m + off + 4, PLATFORM_IOAPIC_ADDR);
	le_put32(m + off + 8, 0); /* GSI base */
	off += MADT_IOAPIC_LEN;
	/*
	 * ISA IRQ 0 -> GSI 0, conforming (edge, high): the in-kernel PIT raises
	 * GSI 0 and KVM's default routing sends it to IOAPIC pin 0. Without this
	 * entry an OS that assumes the PC's usual IRQ0 -> pin 2 would wait on the
	 * wrong pin; every other ISA IRQ is identity mapped, the ACPI default.
	 */
	m[off] = MADT_ISO;
	m[off + 1] = MADT_ISO_LEN;
	m[off + 2] = 0; /* bus: ISA */
	m[off + 3] = 0; /* source: IRQ 0 */
	le_put32(m + off + 4, 0);
	le_put16(m + off + 8, 0);
	off += MADT_ISO_LEN;
	m[off] = MADT_LAPIC_NMI;
	m[off + 1] = MADT_LAPIC_NMI_LEN;
	m[off + 2] = 0xff; /* all processors */
	le_put16(m + off + 3, 0);
	m[off + 5] = 1; /* LINT1 */
	finish(m, len);
}

int acpi_build(void *buf, size_t len, uint64_t base, unsigned nvcpus, struct acpi_tables *out)
{
	return acpi_build_with(buf, len, base, nvcpus, NULL, 0, out);
}

int acpi_build_with(void *buf, size_t len, uint64_t base, unsigned nvcpus,
		    const struct acpi_virtio *virtio, unsigned nvirtio, struct acpi_tables *out)
{
	struct acpi_tables t = layout(nvcpus);
	uint8_t *b = buf;
	uint8_t *x;
	uint32_t dsdt_len = ACPI_HEADER_SIZE + (uint32_t)sizeof(dsdt_aml);

	if (!buf || nvcpus == 0 || nvcpus > 255 || (base & 15) || base + t.size > (1ull << 32) ||
	    nvirtio > ACPI_MAX_VIRTIO || (nvirtio && !virtio))
		return -EINVAL;
	for (unsigned i = 0; i < nvirtio; i++)
		if (virtio[i].base + virtio[i].size > (1ull << 32) || virtio[i].size == 0)
			return -EINVAL;
	if (len < t.size)
		return -ENOSPC;
	memset(b, 0, t.size);

	x = b + t.xsdt;
	header(x, "XSDT", ACPI_HEADER_SIZE + 2 * 8, 1);
	le_put64(x + 36, base + t.fadt);
	le_put64(x + 44, base + t.madt);
	finish(x, ACPI_HEADER_SIZE + 2 * 8);

	build_fadt(b + t.fadt, base + t.dsdt);
	header(b + t.dsdt, "DSDT", dsdt_len, 2); /* revision 2: 64-bit AML integers */
	memcpy(b + t.dsdt + ACPI_HEADER_SIZE, dsdt_aml, sizeof(dsdt_aml));
	dsdt_len += virtio_aml(b + t.dsdt + dsdt_len, virtio, nvirtio);
	le_put32(b + t.dsdt + 4, dsdt_len);
	finish(b + t.dsdt, dsdt_len);
	build_madt(b + t.madt, nvcpus);
	build_rsdp(b + t.rsdp, base + t.xsdt);
	if (out)
		*out = t;
	return 0;
}
