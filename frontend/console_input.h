/* SPDX-License-Identifier: Apache-2.0 */
/*
 * console_input.h - the console's input: stdin to COM1, in its own thread.
 *
 * A terminal is put in raw mode (no echo, no line editing, no signals from
 * the keyboard: Ctrl-C goes to the guest; output processing stays on) and
 * restored on every way out: console_input_stop(), exit(), SIGSYS, and
 * every other signal whose default is to end the process (then re-raised),
 * but SIGKILL. An escape character, Ctrl-A, then:
 *   x        quit: the VM ends as on SIGTERM (exit status 143)
 *   d        detach: stop reading the terminal (restored); the VM runs on
 *   Ctrl-A   send one Ctrl-A to the guest
 *   h or ?   print the keys on stderr
 * Any other key after Ctrl-A is dropped. A pipe or file goes to the guest
 * verbatim, no escapes, until its end.
 *
 * A pipe or file: backpressure, no loss. The thread reads only as many
 * bytes as COM1's queue has room for and waits (serial_wait_room) while the
 * guest has not drained it, so a pipe's writer is blocked rather than bytes
 * dropped. A terminal is always read, so the escapes work while the VM is
 * paused or its guest reads nothing; keys for the guest wait in a buffer of
 * SERIAL_RX_QUEUE bytes while COM1 has no room, and keys beyond it are
 * dropped. Keys still waiting there when the VM migrates away are lost.
 *
 * Threads: start/stop and the quit fd on the main (event-loop) thread;
 * the input thread (seccomp kind "console") only reads the fd, calls
 * serial_receive/serial_wait_room, writes the quit eventfd and stderr.
 * The saved terminal mode is process-wide (the terminal is): one console
 * input per process at a time.
 */
#ifndef VMM_CONSOLE_INPUT_H
#define VMM_CONSOLE_INPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "frontend_config.h" /* enum console_input_mode */
#include "serial.h"

#define CONSOLE_ESCAPE 0x01 /* Ctrl-A */

struct console_input;

/*
 * The fd `mode` reads: STDIN_FILENO, or -1 for none (mode none; auto with
 * stdin closed, /dev/null, or a terminal whose foreground job we are not). -EBADF with a message
 * for stdin when stdin is closed.
 */
int console_input_pick_fd(enum console_input_mode mode, int *fd, char *err, size_t errlen);

/*
 * Starts reading fd into s (raw mode first if fd is a terminal). *out is
 * the handle; -errno with a message.
 */
int console_input_start(struct console_input **out, struct serial *s, int fd, bool seccomp,
			char *err, size_t errlen);

/* An eventfd, readable (counter > 0) each time the user typed Ctrl-A x. */
int console_input_quit_fd(const struct console_input *ci);

/* Ends the thread, restores the terminal, frees ci. NULL is a no-op. */
void console_input_stop(struct console_input *ci);

/*
 * The escape machine, a pure function for the unit test: consumes in[0..n)
 * into out (at most n bytes), updating *esc (true after a Ctrl-A); stops
 * early at a command and returns it ('x', 'd'), 'h' after a help request
 * (the rest not consumed), 0 when all of in was consumed. *used and
 * *out_len say how far it got.
 */
int console_escape(bool *esc, const unsigned char *in, size_t n, size_t *used, unsigned char *out,
		   size_t *out_len);

#endif /* VMM_CONSOLE_INPUT_H */
