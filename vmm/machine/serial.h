/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serial.h - the COM1 16550 UART subset that carries the console.
 *
 * Output only: THR writes go to the console fd, a line at a time; LSR
 * always reports the transmitter empty; the other registers keep what the
 * guest writes so that a driver probing them sees a UART. Reads of RBR
 * return 0 (no input yet). Thread safe: vCPU threads call serial_io()
 * concurrently.
 */
#ifndef VMM_SERIAL_H
#define VMM_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SERIAL_NR_PORTS 8

/* Guest-visible register state: what serial_save()/serial_load() move. */
struct serial_state {
	uint8_t ier, iir, lcr, mcr, lsr, msr, scr, dll, dlm, fcr;
};

struct serial {
	uint16_t base;
	int out_fd;
	pthread_mutex_t lock;
	struct serial_state regs;
	char line[256];
	unsigned line_len;
	bool wrote_any;
	void (*on_first_byte)(void *opaque);
	void *opaque;
};

void serial_init(struct serial *s, uint16_t base, int out_fd);
void serial_destroy(struct serial *s);
/* Handles an access to base..base+7; returns false if the port is not ours. */
bool serial_io(struct serial *s, uint16_t port, bool is_write, uint8_t *data);
/* Writes out a partial line (at exit, before migration). */
void serial_flush(struct serial *s);
void serial_save(struct serial *s, struct serial_state *out);
void serial_load(struct serial *s, const struct serial_state *in);

#endif /* VMM_SERIAL_H */
