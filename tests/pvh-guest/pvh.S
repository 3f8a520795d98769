/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pvh.S - a minimal guest booted through the Xen PVH protocol, like a Linux
 * vmlinux: the XEN_ELFNOTE_PHYS32_ENTRY note names the 32-bit entry point,
 * entered in flat protected mode with paging off and %ebx = the gpa of
 * struct hvm_start_info. It checks the start_info magic, prints the command
 * line and the RAM in the memory map to COM1, and exits through the vmm
 * exit port. Pure 32-bit assembly so it builds with the stock toolchain
 * (no gcc-multilib / i386 libc needed).
 */
#define COM1		0x3f8
#define COM1_LSR	(COM1 + 5)
#define LSR_THRE	0x20
#define EXIT_PORT	0x501		/* VMM_EXIT_PORT */
#define EXIT_BAD_MAGIC	9

#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define HVM_START_MAGIC	0x336ec578

/* struct hvm_start_info offsets */
#define SI_MAGIC	0
#define SI_VERSION	4
#define SI_CMDLINE	24		/* u64 cmdline_paddr */
#define SI_MEMMAP	40		/* u64 memmap_paddr (version >= 1) */
#define SI_MEMMAP_N	48		/* u32 memmap_entries */
/* struct hvm_memmap_table_entry: u64 addr, u64 size, u32 type, u32 reserved */
#define MM_SIZE		8
#define MM_TYPE		16
#define MM_ENTRY_SIZE	24
#define MM_TYPE_RAM	1

#define CMDLINE_MAX	4096		/* do not run off into memory forever */

	.section .note.Xen, "a", @note
	.balign 4
	.long	4			/* namesz: "Xen" + NUL */
	.long	4			/* descsz */
	.long	XEN_ELFNOTE_PHYS32_ENTRY
	.asciz	"Xen"
	.balign 4
	.long	pvh_start		/* desc: 32-bit physical entry address */
	.balign 4

	.text
	.code32
	.globl	pvh_start
	.type	pvh_start, @function
pvh_start:
	cli
	cld
	movl	$stack_top, %esp
	movl	%ebx, %ebp		/* keep start_info across calls */

	cmpl	$HVM_START_MAGIC, SI_MAGIC(%ebp)
	je	1f
	movl	$msg_bad_magic, %esi
	call	puts
	movl	$EXIT_BAD_MAGIC, %eax
	jmp	exit

	/* "pvh-guest: cmdline=<...>" */
1:	movl	$msg_cmdline, %esi
	call	puts
	movl	SI_CMDLINE(%ebp), %esi
	cmpl	$0, SI_CMDLINE+4(%ebp)	/* above 4 GiB: unreachable w/o paging */
	jne	3f
	testl	%esi, %esi
	jz	3f
	movl	$CMDLINE_MAX, %ecx
2:	movb	(%esi), %al
	testb	%al, %al
	jz	3f
	call	putc
	incl	%esi
	decl	%ecx
	jnz	2b
3:	movb	$'\n', %al
	call	putc

	/* Sum type-1 entries into %edi:%ebx (64 bit); count in %edx. */
	xorl	%ebx, %ebx
	xorl	%edi, %edi
	xorl	%edx, %edx
	cmpl	$1, SI_VERSION(%ebp)	/* memmap fields exist from version 1 */
	jb	5f
	cmpl	$0, SI_MEMMAP+4(%ebp)
	jne	5f
	movl	SI_MEMMAP(%ebp), %esi
	movl	SI_MEMMAP_N(%ebp), %edx
	movl	%edx, %ecx
	testl	%ecx, %ecx
	jz	5f
4:	cmpl	$MM_TYPE_RAM, MM_TYPE(%esi)
	jne	6f
	addl	MM_SIZE(%esi), %ebx
	adcl	MM_SIZE+4(%esi), %edi
6:	addl	$MM_ENTRY_SIZE, %esi
	decl	%ecx
	jnz	4b

	/* "pvh-guest: memmap <n> entries, <MiB> MiB RAM" */
5:	pushl	%edx
	movl	$msg_memmap, %esi
	call	puts
	popl	%eax
	xorl	%edx, %edx
	call	putu64
	movl	$msg_entries, %esi
	call	puts
	shrdl	$20, %edi, %ebx		/* bytes -> MiB */
	shrl	$20, %edi
	movl	%ebx, %eax
	movl	%edi, %edx
	call	putu64
	movl	$msg_mib, %esi
	call	puts
	xorl	%eax, %eax		/* exit status 0 */

exit:
	movw	$EXIT_PORT, %dx
	outl	%eax, %dx		/* the VMM stops the VM here */
7:	cli
	hlt
	jmp	7b
	.size	pvh_start, . - pvh_start

/* putc: write %al to COM1 once the transmitter is empty. Keeps all regs. */
putc:
	pushl	%edx
	pushl	%eax
	movw	$COM1_LSR, %dx
1:	inb	%dx, %al
	testb	$LSR_THRE, %al
	jz	1b
	popl	%eax
	movw	$COM1, %dx
	outb	%al, %dx
	popl	%edx
	ret

/* puts: write the NUL-terminated string at %esi. Clobbers %esi, %eax. */
puts:
1:	movb	(%esi), %al
	testb	%al, %al
	jz	2f
	call	putc
	incl	%esi
	jmp	1b
2:	ret

/*
 * putu64: write %edx:%eax in decimal. Divides the 64-bit value by 10 as
 * two 32-bit divisions (high half first, its remainder feeds the low one).
 * Clobbers %eax, %ecx, %edx, %esi.
 */
putu64:
	pushl	%ebx
	pushl	%edi
	movl	$digits_end, %edi
	movl	$10, %ecx
1:	movl	%eax, %esi		/* low half */
	movl	%edx, %eax
	xorl	%edx, %edx
	divl	%ecx			/* high / 10 */
	movl	%eax, %ebx		/* new high half */
	movl	%esi, %eax
	divl	%ecx			/* (rem:low) / 10 */
	addb	$'0', %dl
	decl	%edi
	movb	%dl, (%edi)
	movl	%ebx, %edx
	movl	%eax, %esi
	orl	%edx, %esi
	jnz	1b
	movl	%edi, %esi
	call	puts
	popl	%edi
	popl	%ebx
	ret

	.section .rodata
msg_bad_magic:	.asciz	"pvh-guest: bad start_info magic\n"
msg_cmdline:	.asciz	"pvh-guest: cmdline="
msg_memmap:	.asciz	"pvh-guest: memmap "
msg_entries:	.asciz	" entries, "
msg_mib:	.asciz	" MiB RAM\n"

	.data
digits:		.fill	20, 1, 0	/* 2^64 has 20 decimal digits */
digits_end:	.byte	0

	.bss
	.balign 16
stack:		.skip	4096
stack_top:

	.section .note.GNU-stack, "", @progbits
