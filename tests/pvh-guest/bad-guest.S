/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bad-guest.S - PVH guests that fail on purpose, so tests can check that the
 * VMM reports a guest failure clearly (exit reason and rip) and exits
 * non-zero. BAD_MMIO: a store to guest-physical memory that is not RAM.
 * Otherwise: ud2 with no IDT, which escalates to a triple fault.
 */
#define XEN_ELFNOTE_PHYS32_ENTRY 18

	.section .note.Xen, "a", @note
	.balign 4
	.long	4
	.long	4
	.long	XEN_ELFNOTE_PHYS32_ENTRY
	.asciz	"Xen"
	.balign 4
	.long	pvh_start
	.balign 4

	.text
	.code32
	.globl	pvh_start
pvh_start:
	cli
#ifdef BAD_MMIO
	movl	$0xd0000000, %eax	/* inside the 3-4 GiB hole: no RAM there */
	movl	$0x12345678, (%eax)
#else
	ud2
#endif
1:	hlt
	jmp	1b
