/* SPDX-License-Identifier: Apache-2.0 */
/*
 * console_input.c - stdin to COM1: raw mode, the Ctrl-A escapes, the
 * input thread and its backpressure. The contract is in console_input.h.
 */
#include "console_input.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "frontend_seccomp.h"

struct console_input {
	struct serial *serial;
	int fd;
	bool tty;
	bool seccomp;
	int stop_fd; /* eventfd: the input thread ends */
	int quit_fd; /* eventfd: Ctrl-A x */
	pthread_t thread;
	bool started;
};

/*
 * The terminal's mode before raw mode, process-wide because the terminal
 * is: what atexit, the fatal-signal handlers and the seccomp SIGSYS hook
 * put back. Kept in the kernel's own layout and restored with one raw
 * TCSETS ioctl: glibc's tcsetattr() also issues TCGETS, which a vCPU
 * thread's filter forbids, and a fatal signal can land in any thread
 * (every filter allows TCSETS on fd 0 for this).
 */
struct kernel_termios {
	unsigned c_iflag, c_oflag, c_cflag, c_lflag;
	unsigned char c_line;
	unsigned char c_cc[19];
};
_Static_assert(sizeof(struct kernel_termios) == 36, "the kernel's struct termios");
static struct kernel_termios saved_tty;
static volatile sig_atomic_t tty_raw_fd = -1;
static bool restore_hooks_installed;

static void restore_tty(void)
{
	int fd = tty_raw_fd;

	if (fd >= 0) {
		ioctl(fd, TCSETS, &saved_tty);
		tty_raw_fd = -1;
	}
}

/* Fatal signals; SIGSYS (a forbidden call) goes through seccomp_set_exit_hook(). */
/* (SIGUSR1 is the vCPU kick, handled elsewhere; SIGINT/SIGTERM are the run loop's.) */
static const int fatal_signals[] = {SIGHUP,  SIGQUIT,	SIGILL,	 SIGABRT, SIGBUS,   SIGFPE,
				    SIGSEGV, SIGTRAP,	SIGXCPU, SIGXFSZ, SIGUSR2,  SIGALRM,
				    SIGPROF, SIGVTALRM, SIGIO,	 SIGPWR,  SIGSTKFLT};

static void on_fatal_signal(int sig)
{
	int saved_errno = errno;

	restore_tty();
	errno = saved_errno;
	raise(sig); /* SA_RESETHAND: the default action now */
}

static void install_restore_hooks(void)
{
	struct sigaction sa;

	if (restore_hooks_installed)
		return;
	restore_hooks_installed = true;
	atexit(restore_tty);
	seccomp_set_exit_hook(restore_tty);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal_signal;
	sa.sa_flags = (int)SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction old;

		/* Only where nobody else (a sanitizer) handles it already. */
		if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
			sigaction(fatal_signals[i], &sa, NULL);
	}
}

static int make_raw(int fd, char *err, size_t errlen)
{
	struct termios raw;

	if (ioctl(fd, TCGETS, &saved_tty) < 0 || tcgetattr(fd, &raw) < 0) {
		snprintf(err, errlen, "console input: reading the terminal mode: %s",
			 strerror(errno));
		return -errno;
	}
	raw.c_iflag &=
	    ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
	raw.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
	raw.c_cflag = (raw.c_cflag & ~(tcflag_t)(CSIZE | PARENB)) | CS8;
	/* c_oflag kept: the guest's "\n" still starts a new line on our terminal. */
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	install_restore_hooks();
	if (tcsetattr(fd, TCSANOW, &raw) < 0) {
		snprintf(err, errlen, "console input: setting raw mode: %s", strerror(errno));
		return -errno;
	}
	tty_raw_fd = fd;
	return 0;
}

int console_input_pick_fd(enum console_input_mode mode, int *fd, char *err, size_t errlen)
{
	struct stat st, null_st;

	*fd = -1;
	if (mode == CONSOLE_INPUT_NONE)
		return 0;
	if (fstat(STDIN_FILENO, &st) < 0) {
		if (mode == CONSOLE_INPUT_AUTO)
			return 0;
		snprintf(err, errlen, "[console] input = stdin, but stdin is closed");
		return -EBADF;
	}
	if (mode == CONSOLE_INPUT_AUTO && S_ISCHR(st.st_mode) && stat("/dev/null", &null_st) == 0 &&
	    st.st_rdev == null_st.st_rdev)
		return 0;
	/*
	 * A terminal, but we are not its foreground job (`vmm run &` in an
	 * interactive shell, or under timeout(1)): raw mode would stop us with
	 * SIGTTOU and reading with SIGTTIN. auto: no input; stdin: an error.
	 */
	if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) != getpgrp()) {
		if (mode == CONSOLE_INPUT_AUTO)
			return 0;
		snprintf(err, errlen,
			 "[console] input = stdin, but stdin is a terminal whose foreground job "
			 "this vmm is not (run it in the foreground, or use input = none)");
		return -ENOTTY;
	}
	*fd = STDIN_FILENO;
	return 0;
}

int console_escape(bool *esc, const unsigned char *in, size_t n, size_t *used, unsigned char *out,
		   size_t *out_len)
{
	size_t o = 0, i;
	int cmd = 0;

	for (i = 0; i < n && !cmd; i++) {
		unsigned char c = in[i];

		if (!*esc) {
			if (c == CONSOLE_ESCAPE)
				*esc = true;
			else
				out[o++] = c;
			continue;
		}
		*esc = false;
		if (c == CONSOLE_ESCAPE)
			out[o++] = c;
		else if (c == 'x' || c == 'd')
			cmd = c;
		else if (c == 'h' || c == '?')
			cmd = 'h';
		/* anything else: dropped, with the Ctrl-A */
	}
	*used = i;
	*out_len = o;
	return cmd;
}

static void say(const char *s)
{
	if (write(STDERR_FILENO, s, strlen(s)) < 0) {
		/* stderr gone: nothing to tell */
	}
}

static const char help[] = "\nvmm console: Ctrl-A x  quit (the VM stops as on SIGTERM)\n"
			   "             Ctrl-A d  detach (stop reading this terminal)\n"
			   "             Ctrl-A Ctrl-A  send Ctrl-A\n"
			   "             Ctrl-A h  this help\n";

/* Offers all of buf to COM1, waiting for room; false once the input is closed. */
static bool offer(struct console_input *ci, const unsigned char *buf, size_t len)
{
	while (len) {
		size_t n = serial_receive(ci->serial, buf, len);

		buf += n;
		len -= n;
		if (len && !serial_wait_room(ci->serial))
			return false;
	}
	return true;
}

/*
 * A pipe or file: its bytes, verbatim, with backpressure. Read only what
 * COM1 has room for, so the writer is held rather than a byte dropped.
 */
static void pipe_loop(struct console_input *ci)
{
	unsigned char in[256];

	for (;;) {
		struct pollfd p[2] = {{.fd = ci->fd, .events = POLLIN},
				      {.fd = ci->stop_fd, .events = POLLIN}};
		size_t room;
		ssize_t n;

		if (!serial_wait_room(ci->serial))
			return;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (p[1].revents)
			return;
		room = serial_rx_room(ci->serial);
		if (!room)
			continue; /* held since: wait again */
		n = read(ci->fd, in, room < sizeof(in) ? room : sizeof(in));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0 || !offer(ci, in, (size_t)n))
			return; /* end of the pipe or file, or the input closed */
	}
}

/*
 * A terminal: the escapes must work whatever the guest does, paused or not
 * reading (a hung guest, a firmware without input), so the terminal is
 * always read. Keys for the guest wait in `pend` while COM1 has no room,
 * retried every PEND_RETRY_MS; keys typed beyond that (a guest that reads
 * nothing and a user typing on) are dropped, as a terminal line would.
 */
#define PEND_RETRY_MS 20

static void tty_loop(struct console_input *ci)
{
	unsigned char in[256], out[256], pend[SERIAL_RX_QUEUE];
	size_t plen = 0;
	bool esc = false;
	uint64_t one = 1;

	for (;;) {
		struct pollfd p[2] = {{.fd = ci->fd, .events = POLLIN},
				      {.fd = ci->stop_fd, .events = POLLIN}};
		size_t used = 0;
		ssize_t n;

		if (plen) {
			size_t k = serial_receive(ci->serial, pend, plen);

			memmove(pend, pend + k, plen - k);
			plen -= k;
		}
		if (poll(p, 2, plen ? PEND_RETRY_MS : -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (p[1].revents)
			return;
		if (!p[0].revents)
			continue;
		n = read(ci->fd, in, sizeof(in));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return; /* the terminal hung up */
		while (used < (size_t)n) {
			size_t u, olen, take;
			int cmd = console_escape(&esc, in + used, (size_t)n - used, &u, out, &olen);

			used += u;
			take = olen < sizeof(pend) - plen ? olen : sizeof(pend) - plen;
			memcpy(pend + plen, out, take);
			plen += take;
			if (cmd == 'h') {
				say(help);
			} else if (cmd == 'x') {
				/* main decides (a VM in postcopy refuses); we read on. */
				if (write(ci->quit_fd, &one, sizeof(one)) < 0) {
					/* an eventfd counter does not overflow here */
				}
			} else if (cmd == 'd') {
				say("\nvmm console: detached; the VM runs on\n");
				restore_tty();
				return;
			}
		}
	}
}

static void *input_thread(void *arg)
{
	struct console_input *ci = arg;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_CONSOLE, ci->seccomp);
	if (ci->tty)
		tty_loop(ci);
	else
		pipe_loop(ci);
	return NULL;
}

int console_input_start(struct console_input **out, struct serial *s, int fd, bool seccomp,
			char *err, size_t errlen)
{
	struct console_input *ci = calloc(1, sizeof(*ci));
	int ret;

	*out = NULL;
	if (!ci) {
		snprintf(err, errlen, "console input: out of memory");
		return -ENOMEM;
	}
	ci->serial = s;
	ci->fd = fd;
	ci->seccomp = seccomp;
	ci->tty = isatty(fd);
	ci->stop_fd = eventfd(0, EFD_CLOEXEC);
	ci->quit_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ci->stop_fd < 0 || ci->quit_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "console input: eventfd: %s", strerror(errno));
		goto fail;
	}
	if (ci->tty) {
		ret = make_raw(fd, err, errlen);
		if (ret)
			goto fail;
		say("vmm: console input from this terminal: Ctrl-A h for help, Ctrl-A x to quit\n");
	}
	ret = -pthread_create(&ci->thread, NULL, input_thread, ci);
	if (ret) {
		snprintf(err, errlen, "console input: starting its thread: %s", strerror(-ret));
		goto fail;
	}
	ci->started = true;
	*out = ci;
	return 0;
fail:
	ci->started = false;
	console_input_stop(ci);
	return ret;
}

int console_input_quit_fd(const struct console_input *ci)
{
	return ci->quit_fd;
}

void console_input_stop(struct console_input *ci)
{
	uint64_t one = 1;

	if (!ci)
		return;
	if (ci->started) {
		if (write(ci->stop_fd, &one, sizeof(one)) < 0) {
			/* cannot fail on a fresh eventfd */
		}
		serial_close_input(ci->serial); /* wakes a wait for room */
		pthread_join(ci->thread, NULL);
	}
	if (ci->tty)
		restore_tty();
	if (ci->stop_fd >= 0)
		close(ci->stop_fd);
	if (ci->quit_fd >= 0)
		close(ci->quit_fd);
	free(ci);
}
