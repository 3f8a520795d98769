/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serial_state.c - the SERIAL section of the VM state (docs/state-format.md):
 * a version, fixed-size little-endian fields, then the bytes the guest has
 * not read yet. Decoding checks every field against what the register
 * model can hold, so a restored UART is one the guest could have made.
 * The serial component's part of the VM's state (state_part.h) follows.
 */
#include "state_buf.h"
#include "state_part.h"
#include "serial.h"
#include "vm.h"
#include "vm_struct.h"
#include "vm_state.h"
#include "serial_regs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "le.h"

#define FLAG_THRI 0x01

size_t serial_state_encode(const struct serial_snapshot *in, uint8_t *buf)
{
	const struct serial_regs *r = &in->regs;
	size_t n = (size_t)in->fifo_len + in->queue_len;

	memset(buf, 0, SERIAL_STATE_FIXED);
	le_put16(buf, SERIAL_STATE_VERSION);
	buf[2] = r->ier;
	buf[3] = r->lcr;
	buf[4] = r->mcr;
	buf[5] = r->lsr;
	buf[6] = r->msr;
	buf[7] = r->scr;
	buf[8] = r->dll;
	buf[9] = r->dlm;
	buf[10] = r->fcr;
	buf[11] = r->rbr;
	buf[12] = r->thri ? FLAG_THRI : 0;
	buf[13] = (uint8_t)in->fifo_len;
	le_put16(buf + 14, in->queue_len);
	memcpy(buf + SERIAL_STATE_FIXED, in->rx, n);
	return SERIAL_STATE_FIXED + n;
}

/* A refusal of this blob: one line, prefixed with what it is (state_fail). */
#define bad(err, errlen, ...) state_fail(-EINVAL, err, errlen, "section SERIAL: " __VA_ARGS__)

/* MSR bits 4-7 as serial.c derives them from MCR. */
static uint8_t msr_status(uint8_t mcr)
{
	if (!(mcr & MCR_LOOP))
		return MSR_DCD | MSR_DSR | MSR_CTS;
	return (uint8_t)(((mcr & MCR_RTS) ? MSR_CTS : 0) | ((mcr & MCR_DTR) ? MSR_DSR : 0) |
			 ((mcr & MCR_OUT1) ? MSR_RI : 0) | ((mcr & MCR_OUT2) ? MSR_DCD : 0));
}

int serial_state_decode(const uint8_t *buf, size_t len, struct serial_snapshot *out, char *err,
			size_t errlen)
{
	struct serial_regs *r = &out->regs;
	unsigned version, cap;

	memset(out, 0, sizeof(*out));
	if (len < SERIAL_STATE_FIXED)
		return bad(err, errlen, "%zu bytes, at least %u expected", len, SERIAL_STATE_FIXED);
	version = le_get16(buf);
	if (version != SERIAL_STATE_VERSION)
		return bad(err, errlen, "version %u, this vmm reads version %u", version,
			   SERIAL_STATE_VERSION);
	r->ier = buf[2];
	r->lcr = buf[3];
	r->mcr = buf[4];
	r->lsr = buf[5];
	r->msr = buf[6];
	r->scr = buf[7];
	r->dll = buf[8];
	r->dlm = buf[9];
	r->fcr = buf[10];
	r->rbr = buf[11];
	r->thri = buf[12] & FLAG_THRI;
	out->fifo_len = buf[13];
	out->queue_len = le_get16(buf + 14);
	if (r->ier & 0xf0)
		return bad(err, errlen, "IER 0x%02x has reserved bits set", r->ier);
	if (r->mcr & 0xe0)
		return bad(err, errlen, "MCR 0x%02x has reserved bits set", r->mcr);
	if (r->lsr & ~LSR_ERRORS)
		return bad(err, errlen, "LSR 0x%02x: only the error bits are state", r->lsr);
	if ((r->msr & ~MSR_DELTAS) != msr_status(r->mcr))
		return bad(err, errlen, "MSR 0x%02x does not match MCR 0x%02x", r->msr, r->mcr);
	if ((r->fcr & ~(FCR_ENABLE | FCR_DMA | FCR_TRIGGER)) || (!(r->fcr & FCR_ENABLE) && r->fcr))
		return bad(err, errlen, "FCR 0x%02x is not a value the UART keeps", r->fcr);
	if (buf[12] & ~FLAG_THRI)
		return bad(err, errlen, "flags 0x%02x has unknown bits set", buf[12]);
	cap = (r->fcr & FCR_ENABLE) ? SERIAL_FIFO_SIZE : 1;
	if (out->fifo_len > cap)
		return bad(err, errlen, "%u bytes in an RX FIFO of %u", out->fifo_len, cap);
	if (out->queue_len > SERIAL_RX_QUEUE)
		return bad(err, errlen, "%u queued input bytes, at most %u", out->queue_len,
			   SERIAL_RX_QUEUE);
	if (len != SERIAL_STATE_FIXED + (size_t)out->fifo_len + out->queue_len)
		return bad(err, errlen, "%zu bytes, but %u + %u + %u announced", len,
			   SERIAL_STATE_FIXED, out->fifo_len, out->queue_len);
	memcpy(out->rx, buf + SERIAL_STATE_FIXED, (size_t)out->fifo_len + out->queue_len);
	return 0;
}

/* ---- The serial component's part (state_part.h): the VM blob's SERIAL ---- */

/* Version 1: 16 fixed bytes, then the guest's unread input. */
static const struct state_section_spec part_specs[] = {
    {VM_SEC_SERIAL, "SERIAL", SERIAL_STATE_FIXED, SERIAL_STATE_MAX, true, 1, STATE_COMP_SERIAL},
};

static int part_save(struct vm *vm, unsigned i, const struct state_form *f, struct state_buf *out,
		     char *err, size_t errlen)
{
	struct serial_snapshot s;
	uint8_t blob[SERIAL_STATE_MAX];

	(void)i;
	(void)f; /* version 1 is the only one */
	(void)err;
	(void)errlen;
	serial_save(&vm->serial, &s);
	state_buf_put_section(out, VM_SEC_SERIAL, blob, (uint32_t)serial_state_encode(&s, blob));
	return 0;
}

static int part_check(struct vm *vm, unsigned i, const struct state_part_in *in, char *err,
		      size_t errlen)
{
	struct serial_snapshot s;

	(void)vm;
	(void)i;
	return serial_state_decode(in->sec[0].payload, in->sec[0].len, &s, err, errlen);
}

static int part_load(struct vm *vm, unsigned i, const struct state_part_in *in, char *err,
		     size_t errlen)
{
	struct serial_snapshot s;
	int ret;

	(void)i;
	/*
	 * After the interrupt chips: restoring the UART re-asserts IRQ 4 when
	 * the saved state has an interrupt pending, and that level must
	 * reach the restored PIC and IOAPIC.
	 */
	ret = serial_state_decode(in->sec[0].payload, in->sec[0].len, &s, err, errlen);
	if (!ret)
		serial_restore(&vm->serial, &s);
	return ret;
}

const struct state_part serial_part = {
    .name = "serial",
    .comps = {STATE_COMP_SERIAL},
    .blob = STATE_PART_VM,
    .specs = part_specs,
    .nspecs = 1,
    .save = part_save,
    .check = part_check,
    .load = part_load,
};
