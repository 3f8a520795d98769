/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_cmdline.h - the virtio_mmio.device= words of a kernel command
 * line, as Linux reads them (drivers/virtio/virtio_mmio.c, vm_cmdline_set):
 *
 *   virtio_mmio.device=<size>@<baseaddr>:<irq>[:<id>]
 *
 * <size> as memparse(): a number with an optional K/M/G/T/P/E suffix (either
 * case, powers of 1024); <baseaddr> and <irq> as sscanf's %lli and %u; the
 * numbers as strtoull base 0 reads them (0x.. hex, 0.. octal, else decimal).
 * <irq> must not be 0 and nothing may follow the last field, as for Linux.
 * QEMU's microvm writes e.g. "virtio_mmio.device=512@0xfeb00e00:12" (only
 * with acpi=off), vmm "virtio_mmio.device=4K@0xd0000000:5".
 *
 * Pure code over a string with no firmware dependency (the compiler's
 * freestanding headers only), so a host test can compile it as it is.
 */
#ifndef FW_VIRTIO_CMDLINE_H
#define FW_VIRTIO_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct virtio_cmdline_dev {
	uint64_t base;
	uint64_t size;
	uint32_t irq;
	const char *word; /* the whole word, "virtio_mmio.device=..." (not NUL-terminated) */
	size_t len;	  /* its length */
};

/*
 * The next virtio_mmio.device= word at or after *pos (words are separated
 * by spaces, tabs or newlines; other words are skipped); *pos moves past
 * it. Returns 1 with *d filled, 0 when there is none left, or -1 when that
 * word is malformed (d->word and d->len name it; the caller may go on).
 */
int virtio_cmdline_next(const char **pos, struct virtio_cmdline_dev *d);

#endif /* FW_VIRTIO_CMDLINE_H */
