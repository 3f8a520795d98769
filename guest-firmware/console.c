// SPDX-License-Identifier: Apache-2.0
/*
 * console.c - COM1 output and a tiny printf for the firmware.
 *
 * Lines from different vCPUs must not interleave, so each line is formatted
 * into a local buffer first and only the byte pushing happens under a
 * spinlock (xchg based: the emulator cannot run cmpxchg16b, and plain xchg
 * is all a test-and-set lock needs).
 */
#include "fw.h"

#define UART_THR      VMM_COM1_PORT
#define UART_LSR      (VMM_COM1_PORT + 5u)
#define UART_LSR_THRE 0x20u
/* Bounded poll: a VMM whose UART never reports THRE must not hang us. */
#define UART_POLL_MAX 100000u

static int console_lock;

static void lock_console(void)
{
	while (__atomic_exchange_n(&console_lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&console_lock, __ATOMIC_RELAXED))
			cpu_relax();
}

static void unlock_console(void)
{
	__atomic_store_n(&console_lock, 0, __ATOMIC_RELEASE);
}

static void uart_putc(char c)
{
	unsigned int n;

	for (n = 0; n < UART_POLL_MAX; n++)
		if (inb(UART_LSR) & UART_LSR_THRE)
			break;
	outb(UART_THR, (uint8_t)c);
}

struct out {
	char *buf;
	size_t size;
	size_t len; /* characters produced, even past size (snprintf rule) */
};

static void out_c(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void out_num(struct out *o, uint64_t v, unsigned int base, bool neg, unsigned int width,
		    char pad)
{
	char tmp[24];
	unsigned int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (neg && pad == '0')
		out_c(o, '-');
	while (width > n + (neg ? 1u : 0u)) {
		out_c(o, pad);
		width--;
	}
	if (neg && pad != '0')
		out_c(o, '-');
	while (n)
		out_c(o, tmp[--n]);
}

/* Supports %s %c %d %i %u %x %p %% with 'l'/'ll'/'z' and a zero-pad width. */
int fw_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = {buf, size, 0};

	for (; *fmt; fmt++) {
		unsigned int width = 0, lng = 0;
		char pad = ' ';

		if (*fmt != '%') {
			out_c(&o, *fmt);
			continue;
		}
		fmt++;
		if (*fmt == '0') {
			pad = '0';
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (unsigned int)(*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}
		switch (*fmt) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			size_t l;

			if (!s)
				s = "(null)";
			for (l = fw_strlen(s); width > l; width--)
				out_c(&o, ' ');
			while (*s)
				out_c(&o, *s++);
			break;
		}
		case 'c':
			out_c(&o, (char)va_arg(ap, int));
			break;
		case 'd':
		case 'i': {
			int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);

			out_num(&o, v < 0 ? -(uint64_t)v : (uint64_t)v, 10, v < 0, width, pad);
			break;
		}
		case 'u':
		case 'x': {
			uint64_t v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned int);

			out_num(&o, v, *fmt == 'x' ? 16 : 10, false, width, pad);
			break;
		}
		case 'p':
			out_c(&o, '0');
			out_c(&o, 'x');
			out_num(&o, (uintptr_t)va_arg(ap, void *), 16, false, width, pad);
			break;
		case '%':
			out_c(&o, '%');
			break;
		case '\0':
			fmt--; /* stray '%' at the end: stop at the NUL */
			break;
		default:
			out_c(&o, '%');
			out_c(&o, *fmt);
			break;
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int fw_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = fw_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

void fw_log(const char *fmt, ...)
{
	static const char prefix[] = FW_PREFIX;
	char line[512];
	size_t n = sizeof(prefix) - 1, i;
	va_list ap;

	for (i = 0; i < n; i++)
		line[i] = prefix[i];
	va_start(ap, fmt);
	fw_vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	n = fw_strlen(line);
	line[n++] = '\n';

	lock_console();
	for (i = 0; i < n; i++)
		uart_putc(line[i]);
	unlock_console();
}
