/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_serial.c - COM1's 16550A model without KVM: registers, IIR
 * priorities, the THRE interrupt as Linux's 8250 driver drives it, the RX
 * FIFO and its host queue, trigger levels, overrun, loopback, the IRQ
 * line's level changes, the SERIAL state round trip and its refusals; and
 * the console's Ctrl-A escapes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "console_input.h"
#include "serial.h"
#include "serial_regs.h"

#define BASE 0x3f8

struct fixture {
	struct serial s;
	int pipe[2]; /* console output */
	int irq_calls;
	bool level;
};

static void on_irq(void *opaque, bool level)
{
	struct fixture *f = opaque;

	f->irq_calls++;
	f->level = level;
}

static int setup(void **state)
{
	static struct fixture f;

	memset(&f, 0, sizeof(f));
	if (pipe(f.pipe))
		return -1;
	serial_init(&f.s, BASE, f.pipe[1]);
	f.s.set_irq = on_irq;
	f.s.irq_opaque = &f;
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	serial_destroy(&f->s);
	close(f->pipe[0]);
	close(f->pipe[1]);
	return 0;
}

static uint8_t in(struct fixture *f, unsigned reg)
{
	uint8_t v = 0;

	assert_true(serial_io(&f->s, (uint16_t)(BASE + reg), false, &v));
	return v;
}

static void out(struct fixture *f, unsigned reg, uint8_t v)
{
	assert_true(serial_io(&f->s, (uint16_t)(BASE + reg), true, &v));
}

static void rx(struct fixture *f, const char *s)
{
	assert_int_equal(serial_receive(&f->s, (const uint8_t *)s, strlen(s)), strlen(s));
}

static void test_reset_values_and_ports(void **state)
{
	struct fixture *f = *state;
	uint8_t v;

	assert_false(serial_io(&f->s, BASE - 1, false, &v));
	assert_false(serial_io(&f->s, BASE + 8, false, &v));
	assert_int_equal(in(f, REG_IIR_FCR), IIR_NO_INT); /* FIFO off: no 0xc0 */
	assert_int_equal(in(f, REG_LSR), LSR_THRE | LSR_TEMT);
	assert_int_equal(in(f, REG_MSR), MSR_DCD | MSR_DSR | MSR_CTS);
	assert_int_equal(in(f, REG_LCR), 0x03);
	assert_int_equal(f->irq_calls, 0);
}

static void test_dlab_scratch_ier(void **state)
{
	struct fixture *f = *state;

	out(f, REG_LCR, LCR_DLAB | 0x03);
	out(f, REG_RBR_THR, 0x0c); /* 9600 baud */
	out(f, REG_IER, 0x00);
	assert_int_equal(in(f, REG_RBR_THR), 0x0c);
	assert_int_equal(in(f, REG_IER), 0x00);
	out(f, REG_LCR, 0x03);
	assert_int_equal(in(f, REG_IER), 0x00); /* the divisor did not touch IER */
	out(f, REG_IER, 0xff);
	assert_int_equal(in(f, REG_IER), 0x0f); /* the autoconfig IER test */
	out(f, REG_IER, 0);
	out(f, REG_SCR, 0xa5);
	assert_int_equal(in(f, REG_SCR), 0xa5);
	/* 16550A: FIFO bits 0xc0 in IIR once enabled, no 64-byte bit. */
	out(f, REG_IIR_FCR, FCR_ENABLE);
	assert_int_equal(in(f, REG_IIR_FCR), IIR_FIFO_BITS | IIR_NO_INT);
}

static void test_output_line_buffered(void **state)
{
	struct fixture *f = *state;
	char buf[64] = "";
	ssize_t n;

	for (const char *p = "ab\n"; *p; p++)
		out(f, REG_RBR_THR, (uint8_t)*p);
	n = read(f->pipe[0], buf, sizeof(buf) - 1);
	assert_int_equal(n, 3); /* the first byte at once, then the line */
	assert_string_equal(buf, "ab\n");
	/* A prompt: no newline, shown when the driver stops transmitting. */
	out(f, REG_IER, IER_ETBEI);
	for (const char *p = "# "; *p; p++)
		out(f, REG_RBR_THR, (uint8_t)*p);
	out(f, REG_IER, 0);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(read(f->pipe[0], buf, sizeof(buf) - 1), 2);
	assert_string_equal(buf, "# ");
}

/* The THRE sequence of serial8250_do_startup()'s THRE test and of a transmit. */
static void test_thre_interrupt(void **state)
{
	struct fixture *f = *state;

	out(f, REG_IER, IER_ETBEI); /* 0->1 with the THR empty */
	assert_true(f->level);
	assert_int_equal(in(f, REG_IIR_FCR), IIR_THRI); /* reported ... */
	assert_false(f->level);				/* ... and acknowledged */
	assert_int_equal(in(f, REG_IIR_FCR), IIR_NO_INT);
	out(f, REG_IER, 0);
	out(f, REG_IER, IER_ETBEI); /* re-asserted on a second 0->1 */
	assert_int_equal(in(f, REG_IIR_FCR), IIR_THRI);
	out(f, REG_IER, IER_ETBEI); /* 1->1: nothing new */
	assert_int_equal(in(f, REG_IIR_FCR), IIR_NO_INT);

	/* A THR write: the line drops, the transmit completes, it rises again. */
	f->irq_calls = 0;
	out(f, REG_RBR_THR, 'x');
	assert_int_equal(f->irq_calls, 1); /* was low: only the rise... */
	assert_true(f->level);
	out(f, REG_RBR_THR, 'y');
	assert_int_equal(f->irq_calls, 3); /* ... then fall and rise: an edge per byte */
	assert_true(f->level);
	out(f, REG_IER, 0);
	assert_false(f->level);
}

static void test_rx_fifo_and_trigger(void **state)
{
	struct fixture *f = *state;

	out(f, REG_IIR_FCR, FCR_ENABLE | 0x80); /* trigger 8 */
	out(f, REG_IER, IER_ERBFI);
	rx(f, "abc");
	assert_true(f->level);
	assert_int_equal(in(f, REG_LSR) & LSR_DR, LSR_DR);
	/* Below the trigger: reported as a character timeout. */
	assert_int_equal(in(f, REG_IIR_FCR), IIR_FIFO_BITS | IIR_CTI);
	rx(f, "defgh");
	assert_int_equal(in(f, REG_IIR_FCR), IIR_FIFO_BITS | IIR_RDA);
	for (const char *p = "abcdefgh"; *p; p++)
		assert_int_equal(in(f, REG_RBR_THR), *p);
	assert_int_equal(in(f, REG_LSR) & LSR_DR, 0);
	assert_false(f->level);
	assert_int_equal(in(f, REG_IIR_FCR), IIR_FIFO_BITS | IIR_NO_INT);
	assert_int_equal(in(f, REG_RBR_THR), 'h'); /* empty: the last byte again */
}

static void test_rx_queue_backpressure(void **state)
{
	struct fixture *f = *state;
	uint8_t big[SERIAL_RX_QUEUE + 100];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	out(f, REG_IIR_FCR, FCR_ENABLE);
	/* The FIFO's 16 move on at once; the queue takes the rest up to its size. */
	assert_int_equal(serial_receive(&f->s, big, sizeof(big)),
			 SERIAL_RX_QUEUE + SERIAL_FIFO_SIZE);
	assert_int_equal(serial_rx_room(&f->s), 0);
	assert_int_equal(in(f, REG_RBR_THR), 0);
	assert_int_equal(serial_rx_room(&f->s), 1);
	assert_true(serial_wait_room(&f->s));
	/* Everything arrives in order, nothing is lost. */
	for (size_t i = 1; i < SERIAL_RX_QUEUE + SERIAL_FIFO_SIZE; i++)
		assert_int_equal(in(f, REG_RBR_THR), (uint8_t)i);
	assert_int_equal(in(f, REG_LSR) & LSR_DR, 0);
	/* Held (VM paused): nothing is taken; closed: waits end. */
	serial_hold_input(&f->s, true);
	assert_int_equal(serial_receive(&f->s, big, 4), 0);
	serial_hold_input(&f->s, false);
	assert_int_equal(serial_receive(&f->s, big, 4), 4);
	serial_close_input(&f->s);
	assert_false(serial_wait_room(&f->s));
}

static void test_fifo_off_and_reset(void **state)
{
	struct fixture *f = *state;

	rx(f, "xyz"); /* FIFO off: one byte in RBR, two queued */
	assert_int_equal(in(f, REG_RBR_THR), 'x');
	/* Enabling the FIFO clears it: 'y', in the holding register, is gone as on
	 * hardware; 'z' comes in from the host queue. */
	out(f, REG_IIR_FCR, FCR_ENABLE);
	assert_int_equal(in(f, REG_RBR_THR), 'z');
	rx(f, "12");
	out(f, REG_IIR_FCR, FCR_ENABLE | FCR_RX_RESET);
	assert_int_equal(in(f, REG_LSR) & LSR_DR, 0);
}

static void test_loopback_and_overrun(void **state)
{
	struct fixture *f = *state;

	/* Linux's probe: loopback with OUT2|RTS reads DCD|CTS. */
	out(f, REG_MCR, MCR_LOOP | MCR_OUT2 | MCR_RTS);
	assert_int_equal(in(f, REG_MSR) & 0xf0, MSR_DCD | MSR_CTS);
	out(f, REG_MCR, MCR_LOOP | MCR_DTR | MCR_OUT1);
	assert_int_equal(in(f, REG_MSR), MSR_DSR | MSR_RI | MSR_DDCD | MSR_DCTS | MSR_DDSR);
	assert_int_equal(in(f, REG_MSR) & MSR_DELTAS, 0); /* cleared by the read */
	out(f, REG_MCR, MCR_LOOP);
	assert_int_equal(in(f, REG_MSR), MSR_TERI | MSR_DDSR);

	/* Host input waits while the receiver is looped back. */
	rx(f, "H");
	assert_int_equal(in(f, REG_LSR) & LSR_DR, 0);
	out(f, REG_IIR_FCR, FCR_ENABLE);
	out(f, REG_IER, IER_ELSI | IER_ERBFI);
	for (int i = 0; i < SERIAL_FIFO_SIZE + 1; i++)
		out(f, REG_RBR_THR, (uint8_t)('a' + i));
	/* The 17th byte overran: line status outranks received data. */
	assert_int_equal(in(f, REG_IIR_FCR) & 0x0f, IIR_RLS);
	assert_int_equal(in(f, REG_LSR), LSR_OE | LSR_DR | LSR_THRE | LSR_TEMT);
	assert_int_equal(in(f, REG_LSR) & LSR_OE, 0);
	assert_int_equal(in(f, REG_IIR_FCR) & 0x0f, IIR_RDA);
	for (int i = 0; i < SERIAL_FIFO_SIZE; i++)
		assert_int_equal(in(f, REG_RBR_THR), 'a' + i);
	/* Out of loopback: the host byte comes in; the cable's MSR is back. */
	out(f, REG_MCR, 0);
	assert_int_equal(in(f, REG_RBR_THR), 'H');
	assert_int_equal(in(f, REG_MSR) & 0xf0, MSR_DCD | MSR_DSR | MSR_CTS);
}

static void test_iir_priorities(void **state)
{
	struct fixture *f = *state;

	out(f, REG_IIR_FCR, FCR_ENABLE);
	out(f, REG_MCR, MCR_LOOP);
	(void)in(f, REG_MSR);
	for (int i = 0; i < SERIAL_FIFO_SIZE + 1; i++)
		out(f, REG_RBR_THR, 'q');    /* FIFO full + overrun */
	out(f, REG_MCR, MCR_LOOP | MCR_RTS); /* a modem status change */
	out(f, REG_IER, 0x0f);
	assert_int_equal(in(f, REG_IIR_FCR) & 0x0f, IIR_RLS);
	(void)in(f, REG_LSR);
	assert_int_equal(in(f, REG_IIR_FCR) & 0x0f, IIR_RDA);
	out(f, REG_IIR_FCR, FCR_ENABLE | FCR_RX_RESET);
	assert_int_equal(in(f, REG_IIR_FCR) & 0x0f, IIR_THRI); /* read acknowledges it */
	assert_int_equal(in(f, REG_IIR_FCR) & 0x0f, IIR_MSI);
	assert_true(f->level);
	(void)in(f, REG_MSR);
	assert_int_equal(in(f, REG_IIR_FCR) & 0x0f, IIR_NO_INT);
	assert_false(f->level);
}

static void test_irq_level_changes_only(void **state)
{
	struct fixture *f = *state;

	out(f, REG_IIR_FCR, FCR_ENABLE);
	out(f, REG_IER, IER_ERBFI);
	assert_int_equal(f->irq_calls, 0);
	rx(f, "a");
	rx(f, "b");
	assert_int_equal(f->irq_calls, 1); /* raised once */
	(void)in(f, REG_LSR);
	(void)in(f, REG_RBR_THR);
	assert_int_equal(f->irq_calls, 1); /* still data: still high */
	(void)in(f, REG_RBR_THR);
	assert_int_equal(f->irq_calls, 2);
	assert_false(f->level);
}

static void test_state_round_trip(void **state)
{
	struct fixture *f = *state;
	struct serial_snapshot a, b;
	uint8_t blob[SERIAL_STATE_MAX];
	char err[160];
	size_t len;
	struct fixture g = {0};

	out(f, REG_IIR_FCR, FCR_ENABLE | 0x40);
	out(f, REG_SCR, 0x77);
	out(f, REG_MCR, MCR_DTR | MCR_RTS | MCR_OUT2);
	out(f, REG_IER, IER_ERBFI | IER_ETBEI);
	rx(f, "typed but not read, more than sixteen bytes");
	serial_save(&f->s, &a);
	len = serial_state_encode(&a, blob);
	assert_int_equal(len, SERIAL_STATE_FIXED + 43);
	assert_int_equal(blob[0], 1);
	assert_int_equal(blob[7], 0x77);
	assert_int_equal(blob[13], 16);
	assert_int_equal(blob[14], 27);
	assert_int_equal(serial_state_decode(blob, len, &b, err, sizeof(err)), 0);

	/* Into a fresh UART: the line comes up, the bytes read in order. */
	serial_init(&g.s, BASE, f->pipe[1]);
	g.s.set_irq = on_irq;
	g.s.irq_opaque = &g;
	serial_restore(&g.s, &b);
	assert_int_equal(g.irq_calls, 1);
	assert_true(g.level);
	assert_int_equal(in(&g, REG_SCR), 0x77);
	assert_int_equal(in(&g, REG_IIR_FCR), IIR_FIFO_BITS | IIR_RDA);
	for (const char *p = "typed but not read, more than sixteen bytes"; *p; p++)
		assert_int_equal(in(&g, REG_RBR_THR), *p);
	assert_int_equal(in(&g, REG_IIR_FCR), IIR_FIFO_BITS | IIR_THRI);
	assert_false(g.level);
	serial_destroy(&g.s);
}

static void expect_refused(uint8_t *blob, size_t len, const char *what)
{
	struct serial_snapshot s;
	char err[160] = "";

	assert_int_equal(serial_state_decode(blob, len, &s, err, sizeof(err)), -22);
	if (!strstr(err, what))
		fail_msg("expected '%s' in '%s'", what, err);
	assert_non_null(strstr(err, "section SERIAL"));
}

static void test_state_malformed(void **state)
{
	struct fixture *f = *state;
	struct serial_snapshot a;
	uint8_t good[SERIAL_STATE_MAX], b[SERIAL_STATE_MAX];
	size_t len;

	out(f, REG_IIR_FCR, FCR_ENABLE);
	rx(f, "ab");
	serial_save(&f->s, &a);
	len = serial_state_encode(&a, good);
#define MUT(off, val, what)                                                                        \
	do {                                                                                       \
		memcpy(b, good, len);                                                              \
		b[off] = (val);                                                                    \
		expect_refused(b, len, what);                                                      \
	} while (0)
	expect_refused(good, 10, "at least 16"); /* the old layout */
	MUT(0, 2, "version 2");
	MUT(2, 0x10, "IER");
	MUT(4, 0x20, "MCR");
	MUT(5, LSR_DR, "LSR");
	MUT(6, 0x00, "MSR");
	MUT(10, 0x02, "FCR");
	MUT(12, 0x02, "flags");
	MUT(13, 17, "RX FIFO");
	MUT(15, 0x10, "queued");
	MUT(13, 3, "announced");
	memcpy(b, good, len);
	b[10] = 0; /* FIFO off holds one byte, not two */
	expect_refused(b, len, "RX FIFO of 1");
	expect_refused(good, len + 1, "announced");
}

/* Several threads at once: a reader drains while a writer offers with backpressure. */
struct drain {
	struct fixture *f;
	size_t got;
	bool ok;
};

static void *drainer(void *arg)
{
	struct drain *d = arg;

	d->ok = true;
	while (d->got < 20000) {
		if (in(d->f, REG_LSR) & LSR_DR) {
			if (in(d->f, REG_RBR_THR) != (uint8_t)(d->got * 7))
				d->ok = false;
			d->got++;
		}
	}
	return NULL;
}

static void test_concurrent_backpressure(void **state)
{
	struct fixture *f = *state;
	struct drain d = {.f = f};
	uint8_t buf[20000];
	size_t off = 0;
	pthread_t t;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	out(f, REG_IIR_FCR, FCR_ENABLE);
	assert_int_equal(pthread_create(&t, NULL, drainer, &d), 0);
	while (off < sizeof(buf)) {
		off += serial_receive(&f->s, buf + off, sizeof(buf) - off);
		if (off < sizeof(buf))
			assert_true(serial_wait_room(&f->s));
	}
	pthread_join(t, NULL);
	assert_true(d.ok);
	assert_int_equal(d.got, sizeof(buf));
}

static void test_escapes(void **state)
{
	const unsigned char in1[] = {'a', 0x01, 0x01, 'b', 0x01, 'z', 'c', 0x01};
	const unsigned char in2[] = {'d', 0x01, 'x', 'e'};
	unsigned char o[16];
	size_t used, olen;
	bool esc = false;

	(void)state;
	assert_int_equal(console_escape(&esc, in1, sizeof(in1), &used, o, &olen), 0);
	assert_int_equal(used, sizeof(in1));
	assert_int_equal(olen, 4);
	assert_memory_equal(o, "a\001bc", 4); /* Ctrl-A Ctrl-A sends one; Ctrl-A z is dropped */
	assert_true(esc);		      /* a Ctrl-A at the end of a read carries over */
	assert_int_equal(console_escape(&esc, (const unsigned char *)"h", 1, &used, o, &olen), 'h');
	esc = false;
	assert_int_equal(console_escape(&esc, in2, sizeof(in2), &used, o, &olen), 'x');
	assert_int_equal(used, 3); /* 'e' is left for after the command */
	assert_int_equal(olen, 1);
	assert_int_equal(console_escape(&esc, (const unsigned char *)"\001d", 2, &used, o, &olen),
			 'd');
}

static void test_config_input_key(void **state)
{
	struct vm_config cfg;
	struct frontend_config fe;
	char err[CONFIG_ERR_MAX];

	(void)state;
	config_defaults(&cfg);
	frontend_config_defaults(&fe);
	assert_int_equal(fe.console_input, CONSOLE_INPUT_AUTO);
	assert_int_equal(frontend_config_set(&cfg, &fe, "console.input=none", err, sizeof(err)), 0);
	assert_int_equal(fe.console_input, CONSOLE_INPUT_NONE);
	assert_int_equal(frontend_config_set(&cfg, &fe, "console.input=stdin", err, sizeof(err)),
			 0);
	assert_int_equal(fe.console_input, CONSOLE_INPUT_STDIN);
	assert_int_not_equal(frontend_config_set(&cfg, &fe, "console.input=tty", err, sizeof(err)),
			     0);
	assert_non_null(strstr(err, "expected auto, stdin or none"));
	assert_int_equal(frontend_config_set(&cfg, &fe, "workload.kind=echo", err, sizeof(err)), 0);
	assert_int_equal(cfg.workload, WORKLOAD_ECHO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_reset_values_and_ports, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dlab_scratch_ier, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_line_buffered, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_thre_interrupt, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rx_fifo_and_trigger, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rx_queue_backpressure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fifo_off_and_reset, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_loopback_and_overrun, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_iir_priorities, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_irq_level_changes_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_state_malformed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_concurrent_backpressure, setup, teardown),
	    cmocka_unit_test(test_escapes),
	    cmocka_unit_test(test_config_input_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
