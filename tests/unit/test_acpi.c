/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ACPI tables and the MP table a PVH guest gets: each blob is parsed
 * back the way an OS does (from the RSDP or the MP floating pointer, by
 * physical address), and every signature, length, checksum and entry is
 * checked, for several vCPU counts. No KVM.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acpi_build.h"
#include "mptable.h"
#include "platform_io.h"

#define ACPI_BASE 0xe0000ull
#define MP_BASE	  0x9fc00ull

static const unsigned vcpu_counts[] = {1, 2, 4, 64, 255};

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint8_t sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len--)
		s = (uint8_t)(s + *p++);
	return s;
}

struct blob {
	uint8_t *b;
	size_t len;
	uint64_t base;
};

/* The table at guest-physical gpa, checked: inside the blob, signature, length, checksum. */
static const uint8_t *table_at(const struct blob *bl, uint64_t gpa, const char *sig)
{
	const uint8_t *t;
	uint32_t len;

	assert_true(gpa >= bl->base && gpa + 36 <= bl->base + bl->len);
	assert_int_equal(gpa % 16, 0);
	t = bl->b + (gpa - bl->base);
	assert_memory_equal(t, sig, 4);
	len = get32(t + 4);
	assert_true(len >= 36 && gpa + len <= bl->base + bl->len);
	assert_int_equal(sum(t, len), 0);
	assert_memory_equal(t + 10, "VMM   ", 6);
	return t;
}

static void check_gas_io8(const uint8_t *g, uint16_t port)
{
	assert_int_equal(g[0], 1); /* system I/O */
	assert_int_equal(g[1], 8);
	assert_int_equal(g[2], 0);
	assert_int_equal(g[3], 1); /* byte access */
	assert_int_equal(get64(g + 4), port);
}

static void check_fadt(const struct blob *bl, const uint8_t *f)
{
	assert_int_equal(get32(f + 4), ACPI_FADT_SIZE);
	assert_int_equal(f[8], ACPI_FADT_REVISION);
	assert_int_equal(get32(f + 36), 0); /* no FACS: hardware reduced */
	assert_int_equal(get16(f + 46), 0); /* no SCI */
	for (unsigned off = 56; off < 88; off += 4)
		assert_int_equal(get32(f + off), 0); /* no fixed-hardware register blocks */
	assert_int_equal(get32(f + 112), (1u << 20) | (1u << 10)); /* HW_REDUCED, RESET_REG_SUP */
	assert_int_equal(get16(f + 109), (1u << 2) | (1u << 3) | (1u << 5));
	check_gas_io8(f + 116, 0xcf9);
	assert_int_equal(f[128], 0x06);
	assert_int_equal(get64(f + 140), get32(f + 40)); /* X_DSDT == DSDT */
	for (unsigned off = 148; off < 244; off += 12)
		assert_int_equal(get64(f + off + 4), 0); /* no X_ PM blocks */
	check_gas_io8(f + 244, PLATFORM_SLEEP_CONTROL_PORT);
	check_gas_io8(f + 256, PLATFORM_SLEEP_STATUS_PORT);
	(void)table_at(bl, get64(f + 140), "DSDT");
}

/* One-byte AML PkgLength (all the DSDT uses): returns it, checks the encoding. */
static unsigned pkglen(const uint8_t *p)
{
	assert_int_equal(p[0] & 0xc0, 0);
	return p[0];
}

static void check_dsdt(const uint8_t *d)
{
	uint32_t len = get32(d + 4);
	const uint8_t *p = d + 36, *end = d + len, *dev, *crs, *res, *res_end;

	assert_int_equal(d[8], 2);
	/* Name (\_S5, Package (4) {5, 0, 0, 0}) */
	static const uint8_t s5[] = {0x08, '\\', '_', 'S', '5', '_', 0x12};
	assert_memory_equal(p, s5, sizeof(s5));
	p += sizeof(s5);
	assert_int_equal(pkglen(p), 7);
	assert_int_equal(p[1], 4);
	assert_int_equal(p[2], 0x0a);
	assert_int_equal(p[3], 5);
	assert_int_equal(p[4], 0);
	assert_int_equal(p[5], 0);
	assert_int_equal(p[6], 0);
	p += pkglen(p);
	/* Scope (\_SB): its package runs to the table's end */
	assert_int_equal(p[0], 0x10);
	assert_int_equal(p + 1 + pkglen(p + 1), end);
	assert_memory_equal(p + 2, "\\_SB_", 5);
	dev = p + 7;
	assert_int_equal(dev[0], 0x5b);
	assert_int_equal(dev[1], 0x82);
	assert_int_equal(dev + 2 + pkglen(dev + 2), end);
	assert_memory_equal(dev + 3, "COM1", 4);
	p = dev + 7;
	static const uint8_t hid[] = {0x08, '_', 'H', 'I', 'D', 0x0c, 0x41, 0xd0, 0x05, 0x01};
	assert_memory_equal(p, hid, sizeof(hid));
	p += sizeof(hid);
	static const uint8_t uid[] = {0x08, '_', 'U', 'I', 'D', 0x00};
	assert_memory_equal(p, uid, sizeof(uid));
	p += sizeof(uid);
	assert_memory_equal(p, "\x08_CRS\x11", 6);
	crs = p + 6;
	assert_int_equal(crs + pkglen(crs), end); /* the buffer ends the device */
	assert_int_equal(crs[1], 0x0a);
	res = crs + 3;
	res_end = res + crs[2];
	assert_int_equal(res_end, end);
	/* small resource descriptors: tag byte = type << 3 | length */
	bool io = false, irq = false, tag_end = false;
	while (res < res_end && !tag_end) {
		unsigned type = res[0] >> 3 & 0xf, n = res[0] & 7;

		assert_int_equal(res[0] & 0x80, 0);
		assert_true(res + 1 + n <= res_end);
		if (type == 0x8) { /* I/O port */
			assert_int_equal(n, 7);
			assert_int_equal(get16(res + 2), 0x3f8);
			assert_int_equal(get16(res + 4), 0x3f8);
			assert_int_equal(res[7], 8);
			io = true;
		} else if (type == 0x4) { /* IRQ */
			assert_int_equal(n, 2);
			assert_int_equal(get16(res + 1), 1u << 4);
			irq = true;
		} else {
			assert_int_equal(type, 0xf); /* end tag */
			tag_end = true;
		}
		res += 1 + n;
	}
	assert_true(io && irq && tag_end);
	assert_int_equal(res, res_end);
}

static void check_madt(const uint8_t *m, unsigned nvcpus)
{
	uint32_t len = get32(m + 4), off = 44;
	unsigned lapics = 0, ioapics = 0, isos = 0, nmis = 0;

	assert_int_equal(get32(m + 36), 0xfee00000u);
	assert_int_equal(get32(m + 40), 1); /* PCAT_COMPAT */
	while (off < len) {
		const uint8_t *e = m + off;

		assert_true(off + 2 <= len && e[1] >= 2 && off + e[1] <= len);
		switch (e[0]) {
		case 0:
			assert_int_equal(e[1], 8);
			assert_int_equal(e[2], lapics); /* UID */
			assert_int_equal(e[3], lapics); /* APIC ID = vCPU index */
			assert_int_equal(get32(e + 4), 1);
			lapics++;
			break;
		case 1:
			assert_int_equal(e[1], 12);
			assert_int_equal(e[2], platform_ioapic_id(nvcpus));
			assert_int_equal(get32(e + 4), 0xfec00000u);
			assert_int_equal(get32(e + 8), 0);
			ioapics++;
			break;
		case 2:
			assert_int_equal(e[1], 10);
			assert_int_equal(e[2], 0); /* ISA */
			assert_int_equal(e[3], 0); /* IRQ 0 */
			assert_int_equal(get32(e + 4), 0);
			assert_int_equal(get16(e + 8), 0);
			isos++;
			break;
		case 4:
			assert_int_equal(e[1], 6);
			assert_int_equal(e[2], 0xff);
			assert_int_equal(e[5], 1);
			nmis++;
			break;
		default:
			fail_msg("unexpected MADT entry type %u", e[0]);
		}
		off += e[1];
	}
	assert_int_equal(off, len);
	assert_int_equal(lapics, nvcpus);
	assert_int_equal(ioapics, 1);
	assert_int_equal(isos, 1);
	assert_int_equal(nmis, 1);
}

static void test_acpi_tables(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vcpu_counts) / sizeof(vcpu_counts[0]); i++) {
		unsigned n = vcpu_counts[i];
		struct acpi_tables t;
		struct blob bl = {.len = acpi_build_size(n), .base = ACPI_BASE};
		const uint8_t *r, *x, *fadt = NULL, *madt = NULL;

		bl.b = malloc(bl.len);
		assert_non_null(bl.b);
		memset(bl.b, 0xa5, bl.len);
		assert_int_equal(acpi_build(bl.b, bl.len, bl.base, n, &t), 0);
		assert_int_equal(t.size, bl.len);
		assert_int_equal(t.rsdp, 0);
		/* the RSDP: ACPI 1.0 checksum over 20 bytes, extended over 36 */
		r = bl.b;
		assert_memory_equal(r, "RSD PTR ", 8);
		assert_int_equal(sum(r, 20), 0);
		assert_int_equal(r[15], 2);
		assert_int_equal(get32(r + 20), 36);
		assert_int_equal(sum(r, 36), 0);
		assert_int_equal(get32(r + 16), 0);
		x = table_at(&bl, get64(r + 24), "XSDT");
		assert_int_equal(get32(x + 4), 36 + 2 * 8);
		for (unsigned e = 0; e < 2; e++) {
			uint64_t gpa = get64(x + 36 + 8 * e);
			const uint8_t *tb = bl.b + (gpa - bl.base);

			if (!memcmp(tb, "FACP", 4))
				fadt = table_at(&bl, gpa, "FACP");
			else
				madt = table_at(&bl, gpa, "APIC");
		}
		assert_non_null(fadt);
		assert_non_null(madt);
		check_fadt(&bl, fadt);
		check_dsdt(bl.b + (get64(fadt + 140) - bl.base));
		check_madt(madt, n);
		assert_int_equal(madt + get32(madt + 4), bl.b + bl.len); /* MADT ends the blob */
		free(bl.b);
	}
}

/* A PkgLength of one or two bytes: the length and, in *n, its own bytes. */
static unsigned pkglen2(const uint8_t *p, unsigned *n)
{
	*n = 1 + (p[0] >> 6);
	assert_true(*n <= 2);
	return *n == 1 ? p[0] : (p[0] & 0xfu) | (unsigned)p[1] << 4;
}

/*
 * The virtio devices in the DSDT: a second Scope (\_SB) after COM1's, one
 * Device (VRnn) each with _HID "LNRO0005" (Linux's virtio_mmio ACPI id),
 * _UID n and a _CRS of its window and its edge, active-high GSI; the
 * DSDT's length and checksum cover them, and the MADT stays where the blob
 * without devices has it.
 */
static void test_acpi_virtio(void **state)
{
	static const struct acpi_virtio v[2] = {{0xd0000000u, 0x1000, 5}, {0xd0001000u, 0x1000, 6}};
	struct acpi_tables t0, t;
	size_t len = acpi_build_size(2);
	uint8_t *b = malloc(len), *d, *p, *end;
	unsigned n, l;

	(void)state;
	assert_non_null(b);
	assert_int_equal(acpi_build(b, len, ACPI_BASE, 2, &t0), 0);
	assert_int_equal(acpi_build_with(b, len, ACPI_BASE, 2, v, 2, &t), 0);
	assert_int_equal(t.madt, t0.madt);
	d = b + t.dsdt;
	end = d + get32(d + 4);
	assert_int_equal(sum(d, get32(d + 4)), 0);
	assert_true(end <= b + t.madt);
	/* skip \_S5 and COM1's scope */
	p = d + 36 + 7;
	p += pkglen(p);
	assert_int_equal(p[0], 0x10);
	p += 1 + pkglen(p + 1);
	/* the devices' scope runs to the table's end */
	assert_int_equal(p[0], 0x10);
	l = pkglen2(p + 1, &n);
	assert_ptr_equal(p + 1 + l, end);
	assert_memory_equal(p + 1 + n, "\\_SB_", 5);
	p += 1 + n + 5;
	for (unsigned i = 0; i < 2; i++) {
		char name[5] = {'V', 'R', '0', (char)('0' + i), 0};
		uint8_t *dev_end;

		assert_int_equal(p[0], 0x5b);
		assert_int_equal(p[1], 0x82);
		dev_end = p + 2 + pkglen2(p + 2, &n);
		assert_memory_equal(p + 2 + n, name, 4);
		p += 2 + n + 4;
		assert_memory_equal(p, "\x08_HID\x0dLNRO0005", 15);
		p += 15;
		assert_memory_equal(p, "\x08_UID\x0a", 6);
		assert_int_equal(p[6], i);
		p += 7;
		assert_memory_equal(p, "\x08_CRS\x11", 6);
		p += 6 + 1 + 2;		      /* PkgLength, BytePrefix size */
		assert_int_equal(p[0], 0x86); /* Memory32Fixed, read-write */
		assert_int_equal(p[3], 1);
		assert_int_equal(get32(p + 4), v[i].base);
		assert_int_equal(get32(p + 8), 0x1000);
		p += 12;
		assert_int_equal(p[0], 0x89); /* Extended Interrupt: consumer, edge, high */
		assert_int_equal(p[3], 0x03);
		assert_int_equal(p[4], 1);
		assert_int_equal(get32(p + 5), v[i].irq);
		p += 9;
		assert_int_equal(p[0], 0x79);
		p += 2;
		assert_ptr_equal(p, dev_end);
	}
	assert_ptr_equal(p, end);
	assert_int_equal(acpi_build_with(b, len, ACPI_BASE, 2, v, ACPI_MAX_VIRTIO + 1, NULL),
			 -EINVAL);
	free(b);
}

static void test_mptable(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vcpu_counts) / sizeof(vcpu_counts[0]); i++) {
		unsigned n = vcpu_counts[i], cpus = 0, buses = 0, ioapics = 0, ints = 0, lints = 0;
		size_t len = mptable_size(n);
		uint8_t *b = malloc(len), *c, *e;
		uint16_t clen, count;
		uint8_t ioapic = platform_ioapic_id(n);

		assert_non_null(b);
		memset(b, 0xa5, len);
		assert_int_equal(mptable_build(b, len, MP_BASE, n), 0);
		/* floating pointer */
		assert_memory_equal(b, "_MP_", 4);
		assert_int_equal(sum(b, 16), 0);
		assert_int_equal(get32(b + 4), MP_BASE + 16);
		assert_int_equal(b[8], 1);
		assert_int_equal(b[9], 4);
		assert_int_equal(b[11], 0); /* feature1: a configuration table follows */
		c = b + 16;
		assert_memory_equal(c, "PCMP", 4);
		clen = get16(c + 4);
		assert_int_equal(16 + clen, len);
		assert_int_equal(c[6], 4);
		assert_int_equal(sum(c, clen), 0);
		assert_int_equal(get32(c + 36), 0xfee00000u);
		assert_int_equal(get16(c + 40), 0); /* no extended table */
		count = get16(c + 34);
		e = c + 44;
		for (unsigned k = 0; k < count; k++) {
			assert_true(e < c + clen);
			switch (e[0]) {
			case 0:
				assert_int_equal(e[1], cpus);
				assert_int_equal(e[2], 0x14);
				assert_int_equal(e[3], cpus == 0 ? 3 : 1);
				cpus++;
				e += 20;
				continue;
			case 1:
				assert_int_equal(cpus, n); /* processors come first */
				assert_memory_equal(e + 2, "ISA   ", 6);
				buses++;
				break;
			case 2:
				assert_int_equal(e[1], ioapic);
				assert_int_equal(e[3], 1);
				assert_int_equal(get32(e + 4), 0xfec00000u);
				ioapics++;
				break;
			case 3:
				assert_int_equal(e[1], 0); /* mp_INT */
				assert_int_equal(e[4], 0); /* ISA bus */
				assert_true(e[5] < 16 && e[5] != 2);
				assert_int_equal(e[6], ioapic);
				assert_int_equal(e[7], e[5]); /* identity: GSI n is pin n */
				ints++;
				break;
			case 4:
				assert_int_equal(e[6], 0xff);
				assert_int_equal(e[1], lints == 0 ? 3 : 1); /* ExtINT, NMI */
				assert_int_equal(e[7], lints);
				lints++;
				break;
			default:
				fail_msg("unexpected MP entry type %u", e[0]);
			}
			e += 8;
		}
		assert_ptr_equal(e, c + clen);
		assert_int_equal(cpus, n);
		assert_int_equal(buses, 1);
		assert_int_equal(ioapics, 1);
		assert_int_equal(ints, 15);
		assert_int_equal(lints, 2);
		free(b);
	}
}

static void test_bad_arguments(void **state)
{
	uint8_t buf[8192];

	(void)state;
	assert_int_equal(acpi_build(buf, acpi_build_size(2) - 1, ACPI_BASE, 2, NULL), -ENOSPC);
	assert_int_equal(acpi_build(buf, sizeof(buf), ACPI_BASE, 0, NULL), -EINVAL);
	assert_int_equal(acpi_build(buf, sizeof(buf), ACPI_BASE, 256, NULL), -EINVAL);
	assert_int_equal(acpi_build(buf, sizeof(buf), ACPI_BASE + 8, 2, NULL), -EINVAL);
	assert_int_equal(acpi_build(buf, sizeof(buf), 0xffffff00ull, 2, NULL), -EINVAL);
	assert_int_equal(mptable_build(buf, mptable_size(2) - 1, MP_BASE, 2), -ENOSPC);
	assert_int_equal(mptable_build(buf, sizeof(buf), MP_BASE, 0), -EINVAL);
	assert_int_equal(mptable_build(buf, sizeof(buf), MP_BASE + 4, 2), -EINVAL);
	/* the layout's budget below 1 MiB: 255 vCPUs fit between 0x9fc00 and 0xe0000 */
	assert_true(MP_BASE + mptable_size(255) <= ACPI_BASE);
	assert_true(acpi_build_size(255) <= 0x10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_acpi_tables),
	    cmocka_unit_test(test_acpi_virtio),
	    cmocka_unit_test(test_mptable),
	    cmocka_unit_test(test_bad_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
