/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guest_prefill.h - the firmware's random fill written from outside, for a
 * VMM that cannot write it itself (QEMU in bench_qemu): a memory file that
 * QEMU maps as the guest's RAM (memory-backend-file, share=on) gets, over
 * the dirty working set, exactly the words vmm writes for
 * [workload] fill = random (vmm_fill_word() of each guest-physical address,
 * include/vmm_abi.h). The firmware, booted with vmm.fill=random
 * vmm.prefilled=true, checks them in its first pass as it does under vmm, so
 * a fill in the wrong place shows as CORRUPTION, not as a faster run.
 *
 * Functions return 0 or -errno with a message in (err, errlen).
 */
#ifndef VMM_BENCH_GUEST_PREFILL_H
#define VMM_BENCH_GUEST_PREFILL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Where the firmware's PVH boot puts the working set: the end of its
 * image (the last PT_LOAD's paddr + memsz, .bss included) rounded up to
 * 2 MiB, as guest-firmware/pvh.c computes it from fw_image_end.
 */
int prefill_pvh_free_start(const char *elf_path, uint64_t *free_start, char *err, size_t errlen);
/*
 * Creates `path` as a sparse file of ram_bytes and writes the fill over
 * [free_start, free_start + ws_bytes); only that range takes memory.
 */
int prefill_ram_file(const char *path, uint64_t ram_bytes, uint64_t free_start, uint64_t ws_bytes,
		     char *err, size_t errlen);

#endif /* VMM_BENCH_GUEST_PREFILL_H */
