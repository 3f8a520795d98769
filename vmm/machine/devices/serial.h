/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serial.h - COM1 as a 16550A UART: the console's output and input.
 *
 * The registers, transmit, the RX FIFO and its host queue, and the
 * interrupt line behave as docs/architecture.md, "COM1, the 16550A UART",
 * describes. Not there: besides a line at a time, transmit flushes what is
 * pending when IER.ETBEI goes 1->0 (an interrupt-driven driver saying it
 * has nothing more to send: a shell's prompt shows); FIFO resets (FCR)
 * discard the FIFO's bytes as the hardware does, but keep the host queue.
 *
 * Locking. One mutex, s->lock, a leaf lock: taken by vCPU threads
 * (serial_io), the console input thread (serial_receive, serial_wait_room)
 * and the main/migration threads (save, restore, hold). set_irq and
 * on_first_byte are called with s->lock held: they must not take any lock
 * that is held while calling into serial (set_irq only issues
 * KVM_IRQ_LINE, which takes no vmm lock; calling it under the lock keeps
 * the order of level changes that of the register changes). vm.c calls
 * serial_hold_input() without holding vm->lock.
 */
#ifndef VMM_SERIAL_H
#define VMM_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERIAL_NR_PORTS	 8
#define SERIAL_IRQ	 4 /* COM1's ISA IRQ */
#define SERIAL_FIFO_SIZE 16
#define SERIAL_RX_QUEUE	 1024 /* host-side bytes beyond the FIFO */

/* Guest-visible registers; what the VM state carries (serial_state.c). */
struct serial_regs {
	uint8_t ier, lcr, mcr, lsr, msr, scr, dll, dlm, fcr;
	uint8_t rbr; /* the last byte read, what RBR returns when empty */
	bool thri;   /* THR-empty interrupt pending */
};

/* Everything a migration moves: registers and the bytes not yet read. */
struct serial_snapshot {
	struct serial_regs regs;
	uint16_t fifo_len;				/* in the RX FIFO, 0..SERIAL_FIFO_SIZE */
	uint16_t queue_len;				/* in the host queue, 0..SERIAL_RX_QUEUE */
	uint8_t rx[SERIAL_FIFO_SIZE + SERIAL_RX_QUEUE]; /* FIFO bytes, then queue bytes */
};

struct serial {
	uint16_t base;
	int out_fd;
	pthread_mutex_t lock;
	pthread_cond_t room; /* signalled when the queue has room, or on close/hold */
	struct serial_regs r;
	uint8_t fifo[SERIAL_FIFO_SIZE];
	unsigned fifo_head, fifo_len;
	uint8_t queue[SERIAL_RX_QUEUE];
	unsigned queue_head, queue_len;
	bool irq_level;	 /* what set_irq was last told */
	bool input_held; /* VM paused: the queue takes nothing (its state is being saved) */
	bool input_closed;
	char line[256];
	unsigned line_len;
	bool wrote_any;
	/* vm_on_console_first_byte() sets them; NULL = none. Called with s->lock held. */
	void (*on_first_byte)(void *opaque);
	void *opaque;
	void (*set_irq)(void *irq_opaque, bool level);
	void *irq_opaque;
};

void serial_init(struct serial *s, uint16_t base, int out_fd);
void serial_destroy(struct serial *s);
/* Handles a 1-byte access to base..base+7; returns false if the port is not ours. */
bool serial_io(struct serial *s, uint16_t port, bool is_write, uint8_t *data);
/* Writes out a partial line (at exit, before migration). */
void serial_flush(struct serial *s);

/*
 * Console input (any thread but a vCPU's). serial_receive() copies as
 * many of buf's bytes as fit into the host queue and returns how many (0
 * while the input is held or closed); the RX interrupt follows.
 * serial_wait_room() blocks until the queue has room and the input is not
 * held (true) or until serial_close_input() (false). No byte is dropped:
 * a caller that waits and offers the rest delivers all of them.
 */
size_t serial_receive(struct serial *s, const uint8_t *buf, size_t len);
size_t serial_rx_room(struct serial *s);
bool serial_wait_room(struct serial *s);
void serial_close_input(struct serial *s);
/* vm_pause()/vm_resume(): while held, the queue and FIFO stay as saved. */
void serial_hold_input(struct serial *s, bool hold);

/* Takes a snapshot (and flushes output); a migration saves it. */
void serial_save(struct serial *s, struct serial_snapshot *out);
/*
 * Replaces the state with a snapshot checked by serial_state_decode() and
 * re-asserts the IRQ line from it (call before the vCPUs run).
 */
void serial_restore(struct serial *s, const struct serial_snapshot *in);

/*
 * The SERIAL section's bytes (docs/state-format.md): version 1, fixed
 * little-endian fields, then the unread bytes. encode returns the length
 * (<= SERIAL_STATE_MAX); decode checks everything and fails with -EINVAL
 * and one line in err.
 */
#define SERIAL_STATE_VERSION 1
#define SERIAL_STATE_FIXED   16
#define SERIAL_STATE_MAX     (SERIAL_STATE_FIXED + SERIAL_FIFO_SIZE + SERIAL_RX_QUEUE)
size_t serial_state_encode(const struct serial_snapshot *in, uint8_t *buf);
int serial_state_decode(const uint8_t *buf, size_t len, struct serial_snapshot *out, char *err,
			size_t errlen);

#endif /* VMM_SERIAL_H */
