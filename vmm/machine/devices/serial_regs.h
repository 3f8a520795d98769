/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serial_regs.h - 16550A register offsets and bits, internal to the
 * device and its unit test (not part of the device's API).
 */
#ifndef VMM_SERIAL_REGS_H
#define VMM_SERIAL_REGS_H

#include <stdint.h>

struct serial;

enum {
	REG_RBR_THR = 0, /* DLL with LCR.DLAB */
	REG_IER = 1,	 /* DLM with LCR.DLAB */
	REG_IIR_FCR = 2,
	REG_LCR = 3,
	REG_MCR = 4,
	REG_LSR = 5,
	REG_MSR = 6,
	REG_SCR = 7,
};

#define IER_ERBFI 0x01 /* received data available */
#define IER_ETBEI 0x02 /* THR empty */
#define IER_ELSI  0x04 /* receiver line status */
#define IER_EDSSI 0x08 /* modem status */

#define IIR_NO_INT    0x01
#define IIR_MSI	      0x00
#define IIR_THRI      0x02
#define IIR_RDA	      0x04
#define IIR_RLS	      0x06
#define IIR_CTI	      0x0c
#define IIR_FIFO_BITS 0xc0

#define FCR_ENABLE   0x01
#define FCR_RX_RESET 0x02
#define FCR_TX_RESET 0x04
#define FCR_DMA	     0x08
#define FCR_TRIGGER  0xc0

#define LCR_DLAB 0x80

#define MCR_DTR	 0x01
#define MCR_RTS	 0x02
#define MCR_OUT1 0x04
#define MCR_OUT2 0x08
#define MCR_LOOP 0x10

#define LSR_DR	   0x01
#define LSR_OE	   0x02
#define LSR_PE	   0x04
#define LSR_FE	   0x08
#define LSR_BI	   0x10
#define LSR_THRE   0x20
#define LSR_TEMT   0x40
#define LSR_ERRORS (LSR_OE | LSR_PE | LSR_FE | LSR_BI)

#define MSR_DCTS   0x01
#define MSR_DDSR   0x02
#define MSR_TERI   0x04
#define MSR_DDCD   0x08
#define MSR_DELTAS 0x0f
#define MSR_CTS	   0x10
#define MSR_DSR	   0x20
#define MSR_RI	   0x40
#define MSR_DCD	   0x80

/* The pending interrupt's IIR id (no side effect); s->lock held or no other thread. */
uint8_t serial_iir_id(const struct serial *s);

#endif /* VMM_SERIAL_REGS_H */
