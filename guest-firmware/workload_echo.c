// SPDX-License-Identifier: Apache-2.0
/*
 * workload_echo.c - the console input test: vCPU 0 polls COM1's LSR.DR,
 * collects what arrives into lines (ended by CR or LF; empty lines are
 * skipped) and prints each back as "echo: <line>"; the line "quit" ends
 * the VM with status 0. Polled, not interrupt driven: it tests the data
 * path (FIFO, host queue, backpressure), not the interrupt line.
 */
#include "fw.h"

#define UART_RBR      VMM_COM1_PORT
#define UART_LSR      (VMM_COM1_PORT + 5u)
#define UART_LSR_DR   0x01u
#define ECHO_LINE_MAX 200u

static char uart_getc(void)
{
	while (!(inb(UART_LSR) & UART_LSR_DR))
		cpu_relax();
	return (char)inb(UART_RBR);
}

void workload_echo(uint32_t index)
{
	char line[ECHO_LINE_MAX + 1];
	size_t len = 0;
	uint64_t lines = 0;

	if (index)
		halt_forever();
	fw_log("echo: ready");
	fw_release_secondaries();
	for (;;) {
		char c = uart_getc();

		if (c != '\r' && c != '\n') {
			/* A longer line is cut into pieces, none lost. */
			if (len == ECHO_LINE_MAX) {
				line[len] = '\0';
				fw_log("echo: %s", line);
				len = 0;
			}
			line[len++] = c;
			continue;
		}
		if (!len)
			continue;
		line[len] = '\0';
		len = 0;
		lines++;
		fw_log("echo: %s", line);
		if (!fw_strcmp(line, "quit")) {
			fw_log("echo: bye after %lu lines", lines);
			fw_exit(VMM_GUEST_EXIT_OK);
		}
	}
}
