/* SPDX-License-Identifier: Apache-2.0 */
/*
 * start.S - entry point of every vCPU.
 *
 * The host enters here in 64-bit long mode with interrupts off, %rdi = FDT
 * gpa, %rsi = vCPU index and %rsp = the top of this vCPU's private stack,
 * which is exactly the SysV calling convention for fw_main(fdt, index).
 */
	.section .text.start, "ax"
	.code64
	.globl _start
	.type _start, @function
_start:
	cli
	cld
	andq	$-16, %rsp	/* the ABI promises this; keep calls correct anyway */
	xorl	%ebp, %ebp	/* terminate frame-pointer chains */
	call	fw_main
1:	cli			/* fw_main never returns; park if it ever does */
	hlt
	jmp	1b
	.size _start, . - _start

	.section .note.GNU-stack, "", @progbits
