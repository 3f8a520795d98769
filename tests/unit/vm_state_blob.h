/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_state_blob.h - the sections of a VM state blob as vm_state_save()
 * writes them, for the tests that build one by hand: the fuzz corpus's
 * seed (tests/fuzz/fuzz_seeds.c) and the state forms' loads
 * (test_state_versions.c). Each writes its own header (the framing and
 * the versions are what each is about); the body is the same machine:
 * three interrupt chips, a PIT, a clock and a UART at reset.
 */
#ifndef VMM_TESTS_VM_STATE_BLOB_H
#define VMM_TESTS_VM_STATE_BLOB_H

#include <linux/kvm.h>
#include <stdint.h>
#include <string.h>

#include "serial.h"
#include "state_buf.h"
#include "vm_state.h"

#define VM_BLOB_NSECTIONS 6

/* The blob's section types, in order (its header's VERSIONS entries follow them). */
static inline const uint32_t *vm_blob_types(void)
{
	static const uint32_t types[VM_BLOB_NSECTIONS] = {VM_SEC_PIC_MASTER, VM_SEC_PIC_SLAVE,
							  VM_SEC_IOAPIC,     VM_SEC_PIT2,
							  VM_SEC_CLOCK,	     VM_SEC_SERIAL};

	return types;
}

/*
 * After the header: every section and the end. `typed`: bytes typed into
 * the UART and not read yet (in its receive FIFO, at most SERIAL_FIFO_SIZE),
 * "" for none.
 */
static inline void vm_blob_sections(struct state_buf *b, const char *typed)
{
	uint8_t zero[1024] = {0};
	struct kvm_irqchip chip;
	struct serial_snapshot ss;
	uint8_t sb[SERIAL_STATE_MAX];
	size_t n = strlen(typed);

	for (uint32_t i = 0; i < 3; i++) {
		memset(&chip, 0, sizeof(chip));
		chip.chip_id = i;
		state_buf_put_section(b, VM_SEC_PIC_MASTER + i, &chip, sizeof(chip));
	}
	state_buf_put_section(b, VM_SEC_PIT2, zero, sizeof(struct kvm_pit_state2));
	state_buf_put_section(b, VM_SEC_CLOCK, zero, 48);
	/* A UART at reset (serial_state_encode). */
	memset(&ss, 0, sizeof(ss));
	ss.regs.lcr = 0x03;
	ss.regs.dll = 0x01;
	ss.regs.msr = 0xb0;
	ss.regs.fcr = 0x01;
	if (n > SERIAL_FIFO_SIZE)
		n = SERIAL_FIFO_SIZE;
	ss.fifo_len = (uint16_t)n;
	memcpy(ss.rx, typed, n);
	state_buf_put_section(b, VM_SEC_SERIAL, sb, serial_state_encode(&ss, sb));
	state_buf_put_section(b, STATE_SEC_END, NULL, 0);
}

#endif /* VMM_TESTS_VM_STATE_BLOB_H */
