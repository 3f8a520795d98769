/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pvh_start.S - the Xen PVH entry, so that other VMMs (QEMU microvm:
 * `-kernel vmm-firmware.elf`) can boot this firmware too. vmm itself
 * ignores it: it boots the image through its own note (note.S, _start).
 *
 * PVH enters here in 32-bit flat protected mode, paging off, interrupts
 * off, %ebx = gpa of struct hvm_start_info. This code builds what vmm
 * would have given: long mode with the first 4 GiB identity mapped (2 MiB
 * pages, tables in .bss) and a stack, then calls fw_pvh_main(start_info)
 * (pvh.c) on the boot vCPU only; other vCPUs are never started.
 */
#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define CR0_PE		0x00000001
#define CR0_PG		0x80000000
#define CR4_PAE		0x00000020
#define MSR_EFER	0xc0000080
#define EFER_LME	0x00000100
#define PTE_P_RW	0x003
#define PDE_2M		0x083		/* present, writable, page size */
#define PVH_STACK_SIZE	65536		/* VMM_VCPU_STACK_SIZE */

	.section .note.Xen, "a", @note
	.balign 4
	.long	4			/* namesz: "Xen" + NUL */
	.long	8			/* descsz: QEMU reads 8 bytes from an ELF64 */
	.long	XEN_ELFNOTE_PHYS32_ENTRY
	.asciz	"Xen"
	.balign 4
	.quad	pvh_start		/* desc: 32-bit physical entry address */
	.balign 4

	.text
	.code32
	.globl	pvh_start
	.type	pvh_start, @function
pvh_start:
	cli
	cld
	movl	$pvh_stack_top, %esp

	/* Zero the PML4 and the PDPT (.bss, but trust no loader). */
	movl	$pvh_pml4, %edi
	xorl	%eax, %eax
	movl	$(2 * 4096 / 4), %ecx
	rep stosl
	/* PML4[0] -> PDPT; PDPT[0..3] -> the four page directories. */
	movl	$pvh_pdpt, %eax
	orl	$PTE_P_RW, %eax
	movl	%eax, pvh_pml4
	movl	$pvh_pd, %eax
	orl	$PTE_P_RW, %eax
	movl	$pvh_pdpt, %edi
	movl	$4, %ecx
1:	movl	%eax, (%edi)
	movl	$0, 4(%edi)
	addl	$4096, %eax
	addl	$8, %edi
	decl	%ecx
	jnz	1b
	/* 2048 2 MiB pages: gpa 0 .. 4 GiB, identity. */
	movl	$pvh_pd, %edi
	movl	$PDE_2M, %eax
	xorl	%edx, %edx
	movl	$2048, %ecx
2:	movl	%eax, (%edi)
	movl	%edx, 4(%edi)
	addl	$0x200000, %eax
	addl	$8, %edi
	decl	%ecx
	jnz	2b

	/* PAE, CR3, EFER.LME, then paging: compatibility mode. */
	movl	%cr4, %eax
	orl	$CR4_PAE, %eax
	movl	%eax, %cr4
	movl	$pvh_pml4, %eax
	movl	%eax, %cr3
	movl	$MSR_EFER, %ecx
	rdmsr
	orl	$EFER_LME, %eax
	wrmsr
	movl	%cr0, %eax
	orl	$(CR0_PG | CR0_PE), %eax
	movl	%eax, %cr0
	/* A 64-bit code segment: long mode proper. */
	lgdt	pvh_gdt_ptr
	ljmp	$0x08, $pvh_long
	.size	pvh_start, . - pvh_start

	.code64
pvh_long:
	movl	$0x10, %eax
	movl	%eax, %ds
	movl	%eax, %es
	movl	%eax, %ss
	xorl	%eax, %eax
	movl	%eax, %fs
	movl	%eax, %gs
	movq	$pvh_stack_top, %rsp
	xorl	%ebp, %ebp
	movl	%ebx, %edi		/* start_info gpa (zero-extended) */
	call	fw_pvh_main
3:	cli				/* never returns */
	hlt
	jmp	3b

	.section .rodata
	.balign 8
pvh_gdt:
	.quad	0
	.quad	0x00af9a000000ffff	/* 0x08: 64-bit code, DPL 0 */
	.quad	0x00cf92000000ffff	/* 0x10: flat data */
pvh_gdt_end:
	.balign 2
pvh_gdt_ptr:
	.word	pvh_gdt_end - pvh_gdt - 1
	.long	pvh_gdt

	.section .bss
	.balign 4096
pvh_pml4:
	.skip	4096
pvh_pdpt:
	.skip	4096
pvh_pd:
	.skip	4 * 4096
	.balign 16
	.skip	PVH_STACK_SIZE
pvh_stack_top:

	.section .note.GNU-stack, "", @progbits
