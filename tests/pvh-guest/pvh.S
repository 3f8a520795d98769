/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pvh.S - a minimal guest booted through the Xen PVH protocol, like a Linux
 * vmlinux: the XEN_ELFNOTE_PHYS32_ENTRY note names the 32-bit entry point,
 * entered in flat protected mode with paging off and %ebx = the gpa of
 * struct hvm_start_info. It checks the start_info magic, prints the command
 * line and the RAM in the memory map to COM1, then what the platform gives
 * it: the ACPI RSDP (from start_info and from the legacy 0xE0000 scan),
 * the XSDT's tables with their checksums, the MADT's entries, the MP table
 * found at 0x9FC00, and PVH module 0 (the initrd: address, size, first 8
 * bytes). Then it ends as its command line asks:
 *   end=poweroff    ACPI S5: SLP_TYP 5 | SLP_EN to the FADT's sleep control register
 *   end=s1          SLP_TYP 1 | SLP_EN (no such state: the VM must go on)
 *   end=acpi-reset  the FADT's RESET_VALUE to its RESET_REG
 *   end=cf9         0x02 then 0x06 to port 0xCF9, as Linux's reboot=pci does
 *   end=8042        0xFE to port 0x64 once the 8042's input buffer is empty
 *   end=halt        prints "halted" and halts with interrupts off for good
 *                   (a VM that stays up, e.g. to migrate)
 * If the VM still runs after that it prints so and exits with status 7;
 * without end= it exits with status 0 through the vmm exit port. Pure
 * 32-bit assembly so it builds with the stock toolchain (no gcc-multilib /
 * i386 libc needed).
 */
#define COM1		0x3f8
#define COM1_LSR	(COM1 + 5)
#define LSR_THRE	0x20
#define EXIT_PORT	0x501		/* VMM_EXIT_PORT */
#define EXIT_BAD_MAGIC	9
#define EXIT_STILL_RUNNING 7

#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define HVM_START_MAGIC	0x336ec578

/* struct hvm_start_info offsets */
#define SI_MAGIC	0
#define SI_VERSION	4
#define SI_NR_MODULES	12		/* u32 nr_modules */
#define SI_MODLIST	16		/* u64 modlist_paddr */
#define SI_CMDLINE	24		/* u64 cmdline_paddr */
#define SI_RSDP		32		/* u64 rsdp_paddr */
#define SI_MEMMAP	40		/* u64 memmap_paddr (version >= 1) */
#define SI_MEMMAP_N	48		/* u32 memmap_entries */
/* struct hvm_memmap_table_entry: u64 addr, u64 size, u32 type, u32 reserved */
#define MM_SIZE		8
#define MM_TYPE		16
#define MM_ENTRY_SIZE	24
#define MM_TYPE_RAM	1

#define CMDLINE_MAX	4096		/* do not run off into memory forever */

/* ACPI table signatures as little-endian dwords, and FADT offsets */
#define SIG_APIC	0x43495041
#define SIG_FACP	0x50434146
#define FADT_DSDT	40
#define FADT_RESET_PORT	120		/* RESET_REG (GAS at 116) address */
#define FADT_RESET_VAL	128
#define FADT_SLEEP_PORT	248		/* SLEEP_CONTROL_REG (GAS at 244) address */
#define SLP_EN		0x20

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

	call	report_acpi
	call	report_madt
	call	report_mptable
	call	report_modules
	call	end_as_asked		/* returns when end= is not given */
	xorl	%eax, %eax		/* exit status 0 */

exit:
	movw	$EXIT_PORT, %dx
	outl	%eax, %dx		/* the VMM stops the VM here */
7:	cli
	hlt
	jmp	7b
	.size	pvh_start, . - pvh_start

/*
 * report_acpi: "rsdp 0x<a> ok|BAD", "rsdp scan 0x<a>|none", "acpi xsdt <n>
 * tables, checksums ok|BAD" (the XSDT, each table it lists, the DSDT).
 * Remembers the MADT and FADT for the reports after it. Keeps %ebp.
 */
report_acpi:
	pushl	%ebx
	movl	SI_RSDP(%ebp), %ebx
	cmpl	$0, SI_RSDP+4(%ebp)
	jne	9f
	testl	%ebx, %ebx
	jz	9f
	movl	$msg_rsdp, %esi
	call	puts
	movl	%ebx, %eax
	call	puthex
	movl	%ebx, %esi
	movl	$sig_rsdp, %edi
	movl	$8, %ecx
	call	memeq
	jne	1f
	movl	$36, %ecx
	call	sumb
	testb	%al, %al
	jnz	1f
	movl	$msg_ok, %esi
	jmp	2f
1:	movl	$msg_bad, %esi
2:	call	puts

	/* the legacy scan: 16-byte steps from 0xE0000 to 1 MiB */
	movl	$msg_scan, %esi
	call	puts
	movl	$0xe0000, %esi
3:	movl	$sig_rsdp, %edi
	movl	$8, %ecx
	call	memeq
	je	4f
	addl	$16, %esi
	cmpl	$0x100000, %esi
	jb	3b
	movl	$msg_none, %esi
	call	puts
	jmp	5f
4:	movl	%esi, %eax
	call	puthex
	movb	$'\n', %al
	call	putc

	/* XSDT and what it lists */
5:	movl	24(%ebx), %esi		/* XsdtAddress, low half */
	xorl	%edx, %edx		/* bad checksums */
	movl	4(%esi), %ecx
	call	sumb
	testb	%al, %al
	jz	6f
	incl	%edx
6:	movl	4(%esi), %ecx
	subl	$36, %ecx
	shrl	$3, %ecx		/* entries */
	pushl	%ecx
	leal	36(%esi), %ebx
7:	testl	%ecx, %ecx
	jz	8f
	movl	(%ebx), %esi
	pushl	%ecx
	movl	4(%esi), %ecx
	call	sumb
	popl	%ecx
	testb	%al, %al
	jz	10f
	incl	%edx
10:	cmpl	$SIG_APIC, (%esi)
	jne	11f
	movl	%esi, madt_addr
11:	cmpl	$SIG_FACP, (%esi)
	jne	12f
	movl	%esi, fadt_addr
	pushl	%esi
	pushl	%ecx
	movl	FADT_DSDT(%esi), %esi
	movl	4(%esi), %ecx
	call	sumb
	popl	%ecx
	popl	%esi
	testb	%al, %al
	jz	12f
	incl	%edx
12:	addl	$8, %ebx
	decl	%ecx
	jmp	7b
8:	pushl	%edx
	movl	$msg_xsdt, %esi
	call	puts
	movl	4(%esp), %eax		/* entries */
	xorl	%edx, %edx
	call	putu64
	popl	%edx
	popl	%ecx
	movl	$msg_tables_ok, %esi
	testl	%edx, %edx
	jz	13f
	movl	$msg_tables_bad, %esi
13:	call	puts
	popl	%ebx
	ret
9:	movl	$msg_no_rsdp, %esi
	call	puts
	popl	%ebx
	ret

/* report_madt: "madt lapic=<n> ioapic=<n> iso=<n> nmi=<n>" (enabled LAPICs only). */
report_madt:
	movl	madt_addr, %esi
	testl	%esi, %esi
	jz	9f
	movl	4(%esi), %edx
	addl	%esi, %edx		/* end */
	addl	$44, %esi
1:	cmpl	%edx, %esi
	jae	6f
	movzbl	(%esi), %eax
	cmpl	$0, %eax
	jne	2f
	testl	$1, 4(%esi)
	jz	5f
	incl	cnt_lapic
	jmp	5f
2:	cmpl	$1, %eax
	jne	3f
	incl	cnt_ioapic
	jmp	5f
3:	cmpl	$2, %eax
	jne	4f
	incl	cnt_iso
	jmp	5f
4:	cmpl	$4, %eax
	jne	5f
	incl	cnt_nmi
5:	movzbl	1(%esi), %eax
	testl	%eax, %eax
	jz	6f			/* a zero length would loop forever */
	addl	%eax, %esi
	jmp	1b
6:	movl	$msg_madt, %esi
	call	puts
	movl	cnt_lapic, %eax
	xorl	%edx, %edx
	call	putu64
	movl	$msg_ioapic, %esi
	call	puts
	movl	cnt_ioapic, %eax
	xorl	%edx, %edx
	call	putu64
	movl	$msg_iso, %esi
	call	puts
	movl	cnt_iso, %eax
	xorl	%edx, %edx
	call	putu64
	movl	$msg_nmi, %esi
	call	puts
	movl	cnt_nmi, %eax
	xorl	%edx, %edx
	call	putu64
	movb	$'\n', %al
	call	putc
9:	ret

/*
 * report_mptable: "mptable 0x<a> cpus=<n> ok|BAD" for the MP floating
 * pointer in the last KiB of base memory (checksums of both structures).
 */
report_mptable:
	pushl	%ebx
	movl	$0x9fc00, %esi
1:	movl	$sig_mp, %edi
	movl	$4, %ecx
	call	memeq
	je	2f
	addl	$16, %esi
	cmpl	$0xa0000, %esi
	jb	1b
	movl	$msg_no_mp, %esi
	call	puts
	popl	%ebx
	ret
2:	movl	%esi, %ebx
	movl	$msg_mp, %esi
	call	puts
	movl	%ebx, %eax
	call	puthex
	xorl	%edi, %edi		/* bad checksums */
	movl	%ebx, %esi
	movl	$16, %ecx
	call	sumb
	testb	%al, %al
	jz	3f
	incl	%edi
3:	movl	4(%ebx), %ebx		/* the configuration table */
	movl	%ebx, %esi
	movzwl	4(%ebx), %ecx
	call	sumb
	testb	%al, %al
	jz	4f
	incl	%edi
4:	movzwl	34(%ebx), %ecx		/* entry count */
	leal	44(%ebx), %esi
	xorl	%edx, %edx		/* processors */
5:	testl	%ecx, %ecx
	jz	7f
	cmpb	$0, (%esi)
	jne	6f
	incl	%edx
	addl	$12, %esi		/* processor entries are 20 bytes */
6:	addl	$8, %esi
	decl	%ecx
	jmp	5b
7:	pushl	%edi
	pushl	%edx
	movl	$msg_cpus, %esi
	call	puts
	popl	%eax
	xorl	%edx, %edx
	call	putu64
	popl	%edi
	movl	$msg_ok, %esi
	testl	%edi, %edi
	jz	8f
	movl	$msg_bad, %esi
8:	call	puts
	popl	%ebx
	ret

/* report_modules: "modules <n>" and "module0 paddr=0x<a> size=<n> first=<16 hex digits>". */
report_modules:
	pushl	%ebx
	movl	$msg_modules, %esi
	call	puts
	movl	SI_NR_MODULES(%ebp), %eax
	xorl	%edx, %edx
	call	putu64
	movb	$'\n', %al
	call	putc
	cmpl	$0, SI_NR_MODULES(%ebp)
	je	9f
	movl	SI_MODLIST(%ebp), %ebx
	movl	$msg_module0, %esi
	call	puts
	movl	(%ebx), %eax
	call	puthex
	movl	$msg_size, %esi
	call	puts
	movl	8(%ebx), %eax
	movl	12(%ebx), %edx
	call	putu64
	movl	$msg_first, %esi
	call	puts
	movl	(%ebx), %ebx
	movl	$8, %ecx
1:	movzbl	(%ebx), %eax
	pushl	%ecx
	movl	$2, %ecx
	call	puthexn
	popl	%ecx
	incl	%ebx
	decl	%ecx
	jnz	1b
	movb	$'\n', %al
	call	putc
9:	popl	%ebx
	ret

/* end_as_asked: the end= option of the command line (see the top); returns without one. */
end_as_asked:
	cmpl	$0, SI_CMDLINE+4(%ebp)
	jne	9f
	movl	SI_CMDLINE(%ebp), %esi
	testl	%esi, %esi
	jz	9f
	movl	fadt_addr, %ebx
	movl	$opt_poweroff, %edi
	call	strfind
	testl	%eax, %eax
	jz	1f
	movw	FADT_SLEEP_PORT(%ebx), %dx
	movb	$(5 << 2 | SLP_EN), %al
	outb	%al, %dx
	jmp	8f
1:	movl	$opt_s1, %edi
	call	strfind
	testl	%eax, %eax
	jz	2f
	movw	FADT_SLEEP_PORT(%ebx), %dx
	movb	$(1 << 2 | SLP_EN), %al
	outb	%al, %dx
	jmp	8f
2:	movl	$opt_acpi_reset, %edi
	call	strfind
	testl	%eax, %eax
	jz	3f
	movw	FADT_RESET_PORT(%ebx), %dx
	movb	FADT_RESET_VAL(%ebx), %al
	outb	%al, %dx
	jmp	8f
3:	movl	$opt_cf9, %edi
	call	strfind
	testl	%eax, %eax
	jz	4f
	movw	$0xcf9, %dx
	movb	$0x02, %al
	outb	%al, %dx
	movb	$0x06, %al
	outb	%al, %dx
	jmp	8f
4:	movl	$opt_halt, %edi
	call	strfind
	testl	%eax, %eax
	jz	7f
	movl	$msg_halted, %esi
	call	puts
10:	cli
	hlt				/* the in-kernel LAPIC keeps the vCPU asleep */
	jmp	10b
7:	movl	$opt_8042, %edi
	call	strfind
	testl	%eax, %eax
	jz	9f
	movl	$100000, %ecx
5:	inb	$0x64, %al
	testb	$0x02, %al		/* input buffer full: wait */
	jz	6f
	decl	%ecx
	jnz	5b
6:	movb	$0xfe, %al
	outb	%al, $0x64
8:	movl	$msg_still, %esi
	call	puts
	movl	$EXIT_STILL_RUNNING, %eax
	jmp	exit
9:	ret

/* memeq: ZF set when the %ecx bytes at %esi and %edi are equal. Clobbers %eax, %ecx. */
memeq:
	pushl	%esi
	pushl	%edi
1:	testl	%ecx, %ecx
	jz	2f
	movb	(%esi), %al
	cmpb	(%edi), %al
	jne	2f
	incl	%esi
	incl	%edi
	decl	%ecx
	jmp	1b
2:	popl	%edi
	popl	%esi
	ret

/* sumb: %al = the byte sum of %ecx bytes at %esi (0 for a good checksum). Clobbers %ecx. */
sumb:
	pushl	%esi
	xorl	%eax, %eax
1:	testl	%ecx, %ecx
	jz	2f
	addb	(%esi), %al
	incl	%esi
	decl	%ecx
	jmp	1b
2:	popl	%esi
	ret

/* strfind: %eax = 1 when the NUL-terminated %edi occurs in the NUL-terminated %esi. */
strfind:
	pushl	%ebx
	pushl	%ecx
	pushl	%esi
1:	cmpb	$0, (%esi)
	je	4f
	xorl	%ecx, %ecx
2:	movb	(%edi,%ecx), %bl
	testb	%bl, %bl
	jz	3f
	cmpb	(%esi,%ecx), %bl
	jne	5f
	incl	%ecx
	jmp	2b
5:	incl	%esi
	jmp	1b
3:	movl	$1, %eax
	jmp	6f
4:	xorl	%eax, %eax
6:	popl	%esi
	popl	%ecx
	popl	%ebx
	ret

/* puthex: "0x" and %eax as 8 hex digits; puthexn: %ecx low digits, no prefix. */
puthex:
	pushl	%eax
	movb	$'0', %al
	call	putc
	movb	$'x', %al
	call	putc
	popl	%eax
	movl	$8, %ecx
puthexn:
	pushl	%ebx
	pushl	%edx
	movl	%eax, %edx
	movl	%ecx, %ebx
	shll	$2, %ebx		/* bits to print */
	movl	$32, %ecx
	subl	%ebx, %ecx
	shll	%cl, %edx		/* the wanted digits on top */
1:	roll	$4, %edx
	movl	%edx, %eax
	andl	$0xf, %eax
	movb	hexdigits(%eax), %al
	call	putc
	subl	$4, %ebx
	jnz	1b
	popl	%edx
	popl	%ebx
	ret

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
msg_rsdp:	.asciz	"pvh-guest: rsdp "
msg_no_rsdp:	.asciz	"pvh-guest: rsdp none\n"
msg_ok:		.asciz	" ok\n"
msg_bad:	.asciz	" BAD\n"
msg_scan:	.asciz	"pvh-guest: rsdp scan "
msg_none:	.asciz	"none\n"
msg_xsdt:	.asciz	"pvh-guest: acpi xsdt "
msg_tables_ok:	.asciz	" tables, checksums ok\n"
msg_tables_bad:	.asciz	" tables, checksums BAD\n"
msg_madt:	.asciz	"pvh-guest: madt lapic="
msg_ioapic:	.asciz	" ioapic="
msg_iso:	.asciz	" iso="
msg_nmi:	.asciz	" nmi="
msg_mp:		.asciz	"pvh-guest: mptable "
msg_no_mp:	.asciz	"pvh-guest: mptable none\n"
msg_cpus:	.asciz	" cpus="
msg_modules:	.asciz	"pvh-guest: modules "
msg_module0:	.asciz	"pvh-guest: module0 paddr="
msg_size:	.asciz	" size="
msg_first:	.asciz	" first="
msg_still:	.asciz	"pvh-guest: still running after the end request\n"
sig_rsdp:	.ascii	"RSD PTR "
sig_mp:		.ascii	"_MP_"
opt_poweroff:	.asciz	"end=poweroff"
opt_s1:		.asciz	"end=s1"
opt_acpi_reset:	.asciz	"end=acpi-reset"
opt_cf9:	.asciz	"end=cf9"
opt_8042:	.asciz	"end=8042"
opt_halt:	.asciz	"end=halt"
msg_halted:	.asciz	"pvh-guest: halted\n"
hexdigits:	.ascii	"0123456789abcdef"

	.data
digits:		.fill	20, 1, 0	/* 2^64 has 20 decimal digits */
digits_end:	.byte	0
	.balign 4
madt_addr:	.long	0
fadt_addr:	.long	0
cnt_lapic:	.long	0
cnt_ioapic:	.long	0
cnt_iso:	.long	0
cnt_nmi:	.long	0

	.bss
	.balign 16
stack:		.skip	4096
stack_top:

	.section .note.GNU-stack, "", @progbits
