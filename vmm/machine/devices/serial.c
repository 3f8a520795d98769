/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serial.c - the 16550A register model, the RX FIFO and its host queue,
 * the interrupt line. The contract and the lock order are in serial.h.
 */
#include "serial.h"
#include "serial_regs.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void serial_init(struct serial *s, uint16_t base, int out_fd)
{
	memset(s, 0, sizeof(*s));
	s->base = base;
	s->out_fd = out_fd;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->room, NULL);
	s->r.lcr = 0x03; /* 8N1 */
	s->r.dll = 0x01; /* 115200 baud */
	s->r.msr = MSR_DCD | MSR_DSR | MSR_CTS;
}

void serial_destroy(struct serial *s)
{
	serial_flush(s);
	pthread_cond_destroy(&s->room);
	pthread_mutex_destroy(&s->lock);
}

/* ---- output ---- */

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* console gone: the guest must not stop for it */
		buf += n;
		len -= (size_t)n;
	}
}

static void flush_locked(struct serial *s)
{
	if (s->line_len) {
		write_all(s->out_fd, s->line, s->line_len);
		s->line_len = 0;
	}
}

void serial_flush(struct serial *s)
{
	pthread_mutex_lock(&s->lock);
	flush_locked(s);
	pthread_mutex_unlock(&s->lock);
}

static void console_out_locked(struct serial *s, uint8_t c)
{
	bool first = !s->wrote_any;

	s->line[s->line_len++] = (char)c;
	s->wrote_any = true;
	/* A line at a time keeps syscalls down; the first byte goes at once. */
	if (c == '\n' || first || s->line_len == sizeof(s->line))
		flush_locked(s);
	if (first && s->on_first_byte)
		s->on_first_byte(s->opaque);
}

/* ---- interrupts ---- */

static unsigned fifo_cap(const struct serial *s)
{
	return (s->r.fcr & FCR_ENABLE) ? SERIAL_FIFO_SIZE : 1;
}

static unsigned trigger_level(const struct serial *s)
{
	static const unsigned level[4] = {1, 4, 8, 14};

	return (s->r.fcr & FCR_ENABLE) ? level[s->r.fcr >> 6] : 1;
}

/* The IIR interrupt id (bits 0-3) of the highest-priority pending cause. */
uint8_t serial_iir_id(const struct serial *s)
{
	const struct serial_regs *r = &s->r;

	if ((r->ier & IER_ELSI) && (r->lsr & LSR_ERRORS))
		return IIR_RLS;
	if ((r->ier & IER_ERBFI) && s->fifo_len)
		return s->fifo_len < trigger_level(s) ? IIR_CTI : IIR_RDA;
	if ((r->ier & IER_ETBEI) && r->thri)
		return IIR_THRI;
	if ((r->ier & IER_EDSSI) && (r->msr & MSR_DELTAS))
		return IIR_MSI;
	return IIR_NO_INT;
}

static void update_irq_locked(struct serial *s)
{
	bool level = serial_iir_id(s) != IIR_NO_INT;

	if (level == s->irq_level)
		return;
	s->irq_level = level;
	if (s->set_irq)
		s->set_irq(s->irq_opaque, level);
}

/* ---- receive ---- */

static void fifo_push(struct serial *s, uint8_t c)
{
	s->fifo[(s->fifo_head + s->fifo_len) % SERIAL_FIFO_SIZE] = c;
	s->fifo_len++;
}

static void fifo_clear(struct serial *s)
{
	s->fifo_head = s->fifo_len = 0;
}

/* Moves host bytes into the FIFO while it has room (not in loopback: the receiver is cut off). */
static void feed_locked(struct serial *s)
{
	bool moved = false;

	if (s->r.mcr & MCR_LOOP)
		return;
	while (s->queue_len && s->fifo_len < fifo_cap(s)) {
		fifo_push(s, s->queue[s->queue_head]);
		s->queue_head = (s->queue_head + 1) % SERIAL_RX_QUEUE;
		s->queue_len--;
		moved = true;
	}
	if (moved)
		pthread_cond_broadcast(&s->room);
}

static uint8_t read_rbr_locked(struct serial *s)
{
	if (s->fifo_len) {
		s->r.rbr = s->fifo[s->fifo_head];
		s->fifo_head = (s->fifo_head + 1) % SERIAL_FIFO_SIZE;
		s->fifo_len--;
		feed_locked(s);
	}
	return s->r.rbr;
}

static void loopback_rx_locked(struct serial *s, uint8_t c)
{
	if (s->fifo_len >= fifo_cap(s))
		s->r.lsr |= LSR_OE; /* the byte in the shift register is lost */
	else
		fifo_push(s, c);
}

size_t serial_receive(struct serial *s, const uint8_t *buf, size_t len)
{
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	if (!s->input_held && !s->input_closed) {
		/* Through the queue, so that order is kept; the FIFO takes its share first. */
		while (n < len && s->queue_len < SERIAL_RX_QUEUE) {
			s->queue[(s->queue_head + s->queue_len) % SERIAL_RX_QUEUE] = buf[n++];
			s->queue_len++;
			if (s->queue_len == SERIAL_RX_QUEUE)
				feed_locked(s);
		}
		feed_locked(s);
		update_irq_locked(s);
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

size_t serial_rx_room(struct serial *s)
{
	size_t room;

	pthread_mutex_lock(&s->lock);
	room = s->input_held || s->input_closed ? 0 : SERIAL_RX_QUEUE - s->queue_len;
	pthread_mutex_unlock(&s->lock);
	return room;
}

bool serial_wait_room(struct serial *s)
{
	bool ok;

	pthread_mutex_lock(&s->lock);
	while (!s->input_closed && (s->input_held || s->queue_len == SERIAL_RX_QUEUE))
		pthread_cond_wait(&s->room, &s->lock);
	ok = !s->input_closed;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

void serial_close_input(struct serial *s)
{
	pthread_mutex_lock(&s->lock);
	s->input_closed = true;
	pthread_cond_broadcast(&s->room);
	pthread_mutex_unlock(&s->lock);
}

void serial_hold_input(struct serial *s, bool hold)
{
	pthread_mutex_lock(&s->lock);
	s->input_held = hold;
	pthread_cond_broadcast(&s->room);
	pthread_mutex_unlock(&s->lock);
}

/* ---- registers ---- */

/* MSR bits 4-7 from MCR in loopback, the fixed cable otherwise; deltas from the change. */
static void update_msr_locked(struct serial *s)
{
	uint8_t old = s->r.msr, st;

	if (s->r.mcr & MCR_LOOP)
		st = (uint8_t)(((s->r.mcr & MCR_RTS) ? MSR_CTS : 0) |
			       ((s->r.mcr & MCR_DTR) ? MSR_DSR : 0) |
			       ((s->r.mcr & MCR_OUT1) ? MSR_RI : 0) |
			       ((s->r.mcr & MCR_OUT2) ? MSR_DCD : 0));
	else
		st = MSR_DCD | MSR_DSR | MSR_CTS;
	s->r.msr = (uint8_t)(st | (old & MSR_DELTAS));
	if ((old ^ st) & MSR_CTS)
		s->r.msr |= MSR_DCTS;
	if ((old ^ st) & MSR_DSR)
		s->r.msr |= MSR_DDSR;
	if ((old & MSR_RI) && !(st & MSR_RI))
		s->r.msr |= MSR_TERI; /* trailing edge only */
	if ((old ^ st) & MSR_DCD)
		s->r.msr |= MSR_DDCD;
}

static void write_thr_locked(struct serial *s, uint8_t c)
{
	/* The THR is full for a moment: the line drops, then rises once it is sent. */
	s->r.thri = false;
	update_irq_locked(s);
	if (s->r.mcr & MCR_LOOP)
		loopback_rx_locked(s, c);
	else
		console_out_locked(s, c);
	s->r.thri = true;
}

static void write_fcr_locked(struct serial *s, uint8_t v)
{
	/* Switching the FIFOs on or off clears them, as does RX reset. */
	if (((v ^ s->r.fcr) & FCR_ENABLE) || (v & FCR_RX_RESET))
		fifo_clear(s);
	if (v & FCR_TX_RESET)
		s->r.thri = true; /* the (empty) transmitter is reset: THR empty again */
	s->r.fcr = (v & FCR_ENABLE) ? (uint8_t)(v & (FCR_ENABLE | FCR_DMA | FCR_TRIGGER)) : 0;
	feed_locked(s);
}

static void write_reg_locked(struct serial *s, unsigned reg, uint8_t v)
{
	struct serial_regs *r = &s->r;
	bool dlab = r->lcr & LCR_DLAB;

	switch (reg) {
	case REG_RBR_THR:
		if (dlab)
			r->dll = v;
		else
			write_thr_locked(s, v);
		break;
	case REG_IER:
		if (dlab) {
			r->dlm = v;
		} else {
			/* ETBEI 0->1 with the THR empty (always): THRE is pending. */
			if ((v & IER_ETBEI) && !(r->ier & IER_ETBEI))
				r->thri = true;
			/*
			 * 1->0: an interrupt-driven driver has nothing more to
			 * send (Linux's __stop_tx): a prompt without a newline
			 * must reach the console now.
			 */
			if (!(v & IER_ETBEI) && (r->ier & IER_ETBEI))
				flush_locked(s);
			r->ier = v & 0x0f;
		}
		break;
	case REG_IIR_FCR:
		write_fcr_locked(s, v);
		break;
	case REG_LCR:
		r->lcr = v;
		break;
	case REG_MCR: {
		bool was_loop = r->mcr & MCR_LOOP;

		r->mcr = v & 0x1f;
		if (was_loop && !(r->mcr & MCR_LOOP))
			feed_locked(s); /* the receiver is connected again */
		update_msr_locked(s);
		break;
	}
	case REG_LSR:
	case REG_MSR:
		break; /* read-only (factory test writes ignored) */
	case REG_SCR:
		r->scr = v;
		break;
	}
}

static uint8_t read_reg_locked(struct serial *s, unsigned reg)
{
	struct serial_regs *r = &s->r;
	bool dlab = r->lcr & LCR_DLAB;
	uint8_t v = 0, id;

	switch (reg) {
	case REG_RBR_THR:
		v = dlab ? r->dll : read_rbr_locked(s);
		break;
	case REG_IER:
		v = dlab ? r->dlm : r->ier;
		break;
	case REG_IIR_FCR:
		id = serial_iir_id(s);
		if (id == IIR_THRI)
			r->thri = false; /* reading IIR while it names THRE acknowledges it */
		v = (uint8_t)(id | ((r->fcr & FCR_ENABLE) ? IIR_FIFO_BITS : 0));
		break;
	case REG_LCR:
		v = r->lcr;
		break;
	case REG_MCR:
		v = r->mcr;
		break;
	case REG_LSR:
		v = (uint8_t)(r->lsr | LSR_THRE | LSR_TEMT | (s->fifo_len ? LSR_DR : 0));
		r->lsr &= (uint8_t)~LSR_ERRORS; /* errors clear on read */
		break;
	case REG_MSR:
		v = r->msr;
		r->msr &= (uint8_t)~MSR_DELTAS;
		break;
	case REG_SCR:
		v = r->scr;
		break;
	}
	return v;
}

bool serial_io(struct serial *s, uint16_t port, bool is_write, uint8_t *data)
{
	if (port < s->base || port >= s->base + SERIAL_NR_PORTS)
		return false;
	pthread_mutex_lock(&s->lock);
	if (is_write)
		write_reg_locked(s, port - s->base, *data);
	else
		*data = read_reg_locked(s, port - s->base);
	update_irq_locked(s);
	pthread_mutex_unlock(&s->lock);
	return true;
}

/* ---- snapshots ---- */

void serial_save(struct serial *s, struct serial_snapshot *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->lock);
	out->regs = s->r;
	out->fifo_len = (uint16_t)s->fifo_len;
	out->queue_len = (uint16_t)s->queue_len;
	for (unsigned i = 0; i < s->fifo_len; i++)
		out->rx[i] = s->fifo[(s->fifo_head + i) % SERIAL_FIFO_SIZE];
	for (unsigned i = 0; i < s->queue_len; i++)
		out->rx[s->fifo_len + i] = s->queue[(s->queue_head + i) % SERIAL_RX_QUEUE];
	flush_locked(s);
	pthread_mutex_unlock(&s->lock);
}

void serial_restore(struct serial *s, const struct serial_snapshot *in)
{
	pthread_mutex_lock(&s->lock);
	s->r = in->regs;
	s->fifo_head = s->queue_head = 0;
	s->fifo_len = in->fifo_len;
	s->queue_len = in->queue_len;
	memcpy(s->fifo, in->rx, in->fifo_len);
	memcpy(s->queue, in->rx + in->fifo_len, in->queue_len);
	feed_locked(s);
	/* A fresh VM's line is low; raise it if the restored state has a cause pending. */
	update_irq_locked(s);
	pthread_cond_broadcast(&s->room);
	pthread_mutex_unlock(&s->lock);
}
