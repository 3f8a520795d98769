// SPDX-License-Identifier: Apache-2.0
/*
 * virtio_find.c - finding a virtio-mmio device of a type: in vmm's device
 * tree first (virtio_mmio@ nodes), then in the command line's
 * virtio_mmio.device= words (QEMU microvm with acpi=off, PVH), skipping
 * windows without a device (DeviceID 0) or of another type (virtio.h).
 */
#include "fdt.h"
#include "virtio_cmdline.h"
#include "virtio_regs.h"

static bool in_stringlist(const char *list, uint32_t len, const char *want)
{
	uint32_t i = 0;

	while (i < len) {
		const char *s = list + i;
		uint32_t n = 0;

		while (i + n < len && s[n])
			n++;
		if (i + n < len && !fw_strcmp(s, want))
			return true;
		i += n + 1;
	}
	return false;
}

/*
 * Is the window dev->base/size, named `name` in messages, a device of
 * `device_id`? 1 (mapped, dev->device_id set), 0 (another type, DeviceID 0
 * for a transport without a device, or not modern virtio-mmio: skipped),
 * or -1 after a line (a window the firmware must not touch, or no mapping).
 */
static int probe(struct virtio_dev *dev, const char *name, uint32_t device_id)
{
	uint32_t magic, version, id;

	if (dev->size < MMIO_MIN_WINDOW || (dev->base & 3u) || dev->base + dev->size < dev->base ||
	    fw_overlaps_memory(dev->base, dev->base + dev->size)) {
		fw_log("virtio: %s: window 0x%lx size 0x%lx is not a 4-byte aligned MMIO window "
		       "of at least 0x%x bytes outside RAM",
		       name, dev->base, dev->size, MMIO_MIN_WINDOW);
		return -1;
	}
	if (fw_map_mmio(dev->base, dev->size))
		return -1;
	magic = rd32(dev, REG_MAGIC);
	version = rd32(dev, REG_VERSION);
	id = rd32(dev, REG_DEVICE_ID);
	if (magic != MMIO_MAGIC || version != MMIO_VERSION) {
		fw_log("virtio: %s: magic 0x%x version %u (expected 0x%x, version %u: modern "
		       "virtio-mmio%s)",
		       name, magic, version, MMIO_MAGIC, MMIO_VERSION,
		       magic == MMIO_MAGIC && version == 1
			   ? "; QEMU: -global virtio-mmio.force-legacy=false"
			   : "");
		return 0;
	}
	if (id != device_id)
		return 0; /* another type, or 0: a transport without a device */
	dev->device_id = id;
	dev->features = 0;
	return 1;
}

/* Is there a "virtio,mmio" node at `base` in the device tree? */
static bool fdt_has_window(const struct fdt *f, uint64_t base)
{
	int n;

	for (n = fdt_first_child(f, 0); n >= 0; n = fdt_next_sibling(f, n)) {
		uint32_t len, clen;
		const char *compat = fdt_prop(f, n, "compatible", &clen);
		const uint8_t *reg = fdt_prop(f, n, "reg", &len);

		if (compat && in_stringlist(compat, clen, "virtio,mmio") && reg && len == 16 &&
		    fdt_be64(reg) == base)
			return true;
	}
	return false;
}

/*
 * The device tree's "virtio,mmio" nodes (vmm's own boot). -1 after a line,
 * 0 with *found 0 or 1, and *nodes counting the nodes looked at.
 */
static int find_in_fdt(const struct fdt *f, uint32_t device_id, struct virtio_dev *dev, int *found,
		       uint32_t *nodes)
{
	int n;

	*found = 0;
	for (n = fdt_first_child(f, 0); n >= 0 && !*found; n = fdt_next_sibling(f, n)) {
		const char *name = fdt_node_name(f, n), *compat;
		const uint8_t *reg;
		uint32_t len, clen;

		compat = fdt_prop(f, n, "compatible", &clen);
		if (!compat || !in_stringlist(compat, clen, "virtio,mmio"))
			continue;
		++*nodes;
		reg = fdt_prop(f, n, "reg", &len);
		if (!reg || len != 16) {
			fw_log("virtio: %s: reg must be <addr-hi addr-lo size-hi size-lo>", name);
			return -1;
		}
		dev->base = fdt_be64(reg);
		dev->size = fdt_be64(reg + 8);
		if (fdt_prop_u32(f, n, "interrupts", &dev->irq))
			dev->irq = 0;
		*found = probe(dev, name, device_id);
		if (*found < 0)
			return -1;
	}
	return 0;
}

int virtio_find(uint32_t device_id, struct virtio_dev *dev)
{
	struct fdt f;
	const char *why, *pos = fw_params.cmdline ? fw_params.cmdline : "";
	struct virtio_cmdline_dev c;
	uint32_t nodes = 0, words = 0;
	bool have_fdt = false;
	int found = 0, r;

	if (fw_params.fdt) {
		if (fdt_open(&f, fw_params.fdt, &why)) {
			fw_log("virtio: bad device tree: %s", why);
			return -1;
		}
		have_fdt = true;
		if (find_in_fdt(&f, device_id, dev, &found, &nodes))
			return -1;
		if (found)
			return 0;
	}
	/* The command line's windows that the device tree did not list (a PVH boot: all). */
	while ((r = virtio_cmdline_next(&pos, &c))) {
		char name[80];
		size_t n = c.len < sizeof(name) ? c.len : sizeof(name) - 1;

		memcpy(name, c.word, n);
		name[n] = '\0';
		if (r < 0) {
			fw_log("virtio: malformed '%s' on the command line (expected "
			       "virtio_mmio.device=<size>@<baseaddr>:<irq>[:<id>])",
			       name);
			return -1;
		}
		if (have_fdt && fdt_has_window(&f, c.base))
			continue; /* probed above */
		words++;
		dev->base = c.base;
		dev->size = c.size;
		dev->irq = c.irq;
		found = probe(dev, name, device_id);
		if (found < 0)
			return -1;
		if (found)
			return 0;
	}
	fw_log("virtio: no device with DeviceID %u among the %u virtio,mmio nodes of the device "
	       "tree and the %u other virtio_mmio.device= words of the command line%s",
	       device_id, nodes, words,
	       have_fdt || words ? "" : " (QEMU microvm writes them only with acpi=off)");
	return -1;
}
