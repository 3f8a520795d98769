/* SPDX-License-Identifier: Apache-2.0 */
/*
 * note.S - the ELF note that tells the host which ABI this firmware speaks
 * (include/vmm_abi.h): name "vmm", type VMM_NOTE_TYPE_ABI, 4-byte
 * descriptor VMM_ABI_VERSION. Assembled through cpp so the values come
 * from the header itself.
 */
#include "vmm_abi.h"

	.section .note.vmm, "a", @note
	.balign 4
	.long	4			/* namesz: "vmm" + NUL */
	.long	4			/* descsz */
	.long	VMM_NOTE_TYPE_ABI	/* type */
	.asciz	VMM_NOTE_NAME
	.balign 4
	.long	VMM_ABI_VERSION		/* desc */
	.balign 4

	.section .note.GNU-stack, "", @progbits
