/* SPDX-License-Identifier: Apache-2.0 */
#include "serial.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

enum { REG_RBR_THR = 0, REG_IER = 1, REG_IIR_FCR = 2, REG_LCR = 3, REG_MCR = 4, REG_LSR = 5,
       REG_MSR = 6, REG_SCR = 7 };

#define LCR_DLAB 0x80
#define LSR_THRE 0x20
#define LSR_TEMT 0x40
#define IIR_NO_INT 0x01

void serial_init(struct serial *s, uint16_t base, int out_fd)
{
	memset(s, 0, sizeof(*s));
	s->base = base;
	s->out_fd = out_fd;
	pthread_mutex_init(&s->lock, NULL);
	s->regs.iir = IIR_NO_INT;
	s->regs.lsr = LSR_THRE | LSR_TEMT;
	s->regs.lcr = 0x03; /* 8N1 */
	s->regs.dll = 0x01; /* 115200 baud */
}

void serial_destroy(struct serial *s)
{
	serial_flush(s);
	pthread_mutex_destroy(&s->lock);
}

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

static void transmit_locked(struct serial *s, uint8_t c)
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

bool serial_io(struct serial *s, uint16_t port, bool is_write, uint8_t *data)
{
	struct serial_state *r = &s->regs;
	bool dlab;

	if (port < s->base || port >= s->base + SERIAL_NR_PORTS)
		return false;
	pthread_mutex_lock(&s->lock);
	dlab = r->lcr & LCR_DLAB;
	switch (port - s->base) {
	case REG_RBR_THR:
		if (dlab) {
			if (is_write)
				r->dll = *data;
			else
				*data = r->dll;
		} else if (is_write) {
			transmit_locked(s, *data);
		} else {
			*data = 0;
		}
		break;
	case REG_IER:
		if (dlab) {
			if (is_write)
				r->dlm = *data;
			else
				*data = r->dlm;
		} else if (is_write) {
			r->ier = *data & 0x0f;
		} else {
			*data = r->ier;
		}
		break;
	case REG_IIR_FCR:
		if (is_write)
			r->fcr = *data;
		else
			*data = r->iir | ((r->fcr & 1) ? 0xc0 : 0);
		break;
	case REG_LCR:
		if (is_write)
			r->lcr = *data;
		else
			*data = r->lcr;
		break;
	case REG_MCR:
		if (is_write)
			r->mcr = *data & 0x1f;
		else
			*data = r->mcr;
		break;
	case REG_LSR:
		if (!is_write)
			*data = r->lsr;
		break;
	case REG_MSR:
		if (!is_write)
			*data = r->msr;
		break;
	case REG_SCR:
		if (is_write)
			r->scr = *data;
		else
			*data = r->scr;
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return true;
}

void serial_save(struct serial *s, struct serial_state *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->regs;
	flush_locked(s);
	pthread_mutex_unlock(&s->lock);
}

void serial_load(struct serial *s, const struct serial_state *in)
{
	pthread_mutex_lock(&s->lock);
	s->regs = *in;
	/* The transmitter is always ready here, whatever the source saw. */
	s->regs.lsr |= LSR_THRE | LSR_TEMT;
	pthread_mutex_unlock(&s->lock);
}
