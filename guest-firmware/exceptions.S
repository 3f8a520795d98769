/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exceptions.S - the 32 CPU exception vectors' entry stubs.
 *
 * Without an IDT any exception is a triple fault: the host sees only
 * KVM_EXIT_SHUTDOWN, and on AMD KVM resets the vCPU before it reports it,
 * so even its registers are lost. Each stub gives the frame one shape
 * (a zero where the CPU pushes no error code, then the vector) and jumps
 * to the common entry, which calls fw_exception(frame) (exceptions.c):
 * it prints what happened and stops the VM. Nothing returns.
 */
	.section .text, "ax"
	.code64

.macro STUB vec, has_error
	.globl fw_exc_stub_\vec
fw_exc_stub_\vec:
	.if \has_error == 0
	pushq	$0
	.endif
	pushq	$\vec
	jmp	fw_exc_common
.endm

	STUB 0, 0
	STUB 1, 0
	STUB 2, 0
	STUB 3, 0
	STUB 4, 0
	STUB 5, 0
	STUB 6, 0
	STUB 7, 0
	STUB 8, 1
	STUB 9, 0
	STUB 10, 1
	STUB 11, 1
	STUB 12, 1
	STUB 13, 1
	STUB 14, 1
	STUB 15, 0
	STUB 16, 0
	STUB 17, 1
	STUB 18, 0
	STUB 19, 0
	STUB 20, 0
	STUB 21, 1
	STUB 22, 0
	STUB 23, 0
	STUB 24, 0
	STUB 25, 0
	STUB 26, 0
	STUB 27, 0
	STUB 28, 0
	STUB 29, 1
	STUB 30, 1
	STUB 31, 0

fw_exc_common:
	cli
	cld
	movq	%rsp, %rdi	/* the frame: vector, error, rip, cs, rflags, rsp, ss */
	andq	$-16, %rsp
	call	fw_exception
1:	hlt
	jmp	1b

	/* The stubs' addresses, for the IDT built in C. */
	.section .rodata
	.balign 8
	.globl fw_exc_stubs
fw_exc_stubs:
	.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.quad	fw_exc_stub_\v
	.endr

	.section .note.GNU-stack, "", @progbits
