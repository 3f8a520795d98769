// SPDX-License-Identifier: Apache-2.0
/*
 * params.c - read the boot parameters from the device tree (vmm_abi.h).
 *
 * Only vCPU 0 runs this; the result is published in fw_params. Anything
 * missing or malformed is reported once and the caller exits with
 * VMM_GUEST_EXIT_BAD_PARAMS, so a host bug shows up as a clear message
 * rather than as a guest doing something odd.
 */
#include "fw.h"
#include "fdt.h"

struct fw_params fw_params;

static bool starts_with(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return false;
	return true;
}

/* An optional string property that is `no` (default, false) or `yes` (true). */
static int parse_choice(const struct fdt *f, int node, const char *name, const char *no,
			const char *yes, bool *out)
{
	const char *v = fdt_prop_str(f, node, name);

	*out = false;
	if (!v || !fw_strcmp(v, no))
		return 0;
	if (!fw_strcmp(v, yes)) {
		*out = true;
		return 0;
	}
	fw_log("/chosen %s is \"%s\" (expected \"%s\" or \"%s\")", name, v, no, yes);
	return -1;
}

static int parse_chosen(const struct fdt *f)
{
	struct fw_params *p = &fw_params;
	int chosen = fdt_find_node(f, "/chosen");
	const char *w;
	uint32_t lat;

	if (chosen < 0) {
		fw_log("device tree has no /chosen node");
		return -1;
	}
	if (fdt_prop_u32(f, chosen, "vmm,abi-version", &p->abi_version)) {
		fw_log("/chosen lacks a u32 vmm,abi-version");
		return -1;
	}
	if (p->abi_version != VMM_ABI_VERSION) {
		fw_log("device tree ABI version %u, firmware speaks %u", p->abi_version,
		       VMM_ABI_VERSION);
		return -1;
	}
	w = fdt_prop_str(f, chosen, "vmm,workload");
	if (!w || fw_strlen(w) >= sizeof(p->workload)) {
		fw_log("/chosen lacks a valid vmm,workload string");
		return -1;
	}
	memcpy(p->workload, w, fw_strlen(w) + 1);
	/* Optional knobs default to 0 ("max rate", "forever", "every pass"). */
	p->has_working_set = !fdt_prop_u64(f, chosen, "vmm,working-set", &p->working_set);
	p->has_free_start = !fdt_prop_u64(f, chosen, "vmm,free-start", &p->free_start);
	fdt_prop_u64(f, chosen, "vmm,dirty-rate", &p->dirty_rate);
	fdt_prop_u64(f, chosen, "vmm,passes", &p->passes);
	fdt_prop_u64(f, chosen, "vmm,heartbeat-ms", &p->heartbeat_ms);
	fdt_prop_u64(f, chosen, "vmm,min-pass-ms", &p->min_pass_ms);
	/* A VMM from before the key: the pace it always had. */
	if (fdt_prop_u64(f, chosen, "vmm,catch-up-ms", &p->catch_up_ms))
		p->catch_up_ms = 100;
	fdt_prop_u64(f, chosen, "vmm,work-ms", &p->work_ms);
	if (parse_choice(f, chosen, "vmm,fill", "zero", "random", &p->fill_random) ||
	    parse_choice(f, chosen, "vmm,order", "seq", "random", &p->order_random))
		return -1;
	p->latency = !fdt_prop_u32(f, chosen, "vmm,latency", &lat) && lat;
	/* Optional: net's ip=, and the virtio_mmio.device= words virtio_find() falls back on. */
	p->cmdline = fdt_prop_str(f, chosen, "bootargs");
	if (!p->cmdline)
		p->cmdline = "";
	return 0;
}

static int parse_cpus(const struct fdt *f)
{
	struct fw_params *p = &fw_params;
	int cpus = fdt_find_node(f, "/cpus"), c;

	if (cpus < 0) {
		fw_log("device tree has no /cpus node");
		return -1;
	}
	if (fdt_prop_u32(f, cpus, "vmm,tsc-khz", &p->tsc_khz) || !p->tsc_khz) {
		fw_log("/cpus lacks a non-zero u32 vmm,tsc-khz");
		return -1;
	}
	p->nr_vcpus = 0;
	for (c = fdt_first_child(f, cpus); c >= 0; c = fdt_next_sibling(f, c))
		if (starts_with(fdt_node_name(f, c), "cpu@") ||
		    !fw_strcmp(fdt_node_name(f, c), "cpu"))
			p->nr_vcpus++;
	if (!p->nr_vcpus || p->nr_vcpus > FW_MAX_VCPUS) {
		fw_log("%u cpu nodes under /cpus (firmware supports 1..%u)", p->nr_vcpus,
		       FW_MAX_VCPUS);
		return -1;
	}
	return 0;
}

static int parse_memory(const struct fdt *f)
{
	struct fw_params *p = &fw_params;
	uint32_t cells, len, i;
	int n;

	/* The ABI fixes both at 2; an absent property means the same here. */
	if ((!fdt_prop_u32(f, 0, "#address-cells", &cells) && cells != 2) ||
	    (!fdt_prop_u32(f, 0, "#size-cells", &cells) && cells != 2)) {
		fw_log("root #address-cells/#size-cells must be 2");
		return -1;
	}
	p->mem_total = 0;
	p->nr_mem_regions = 0;
	for (n = fdt_first_child(f, 0); n >= 0; n = fdt_next_sibling(f, n)) {
		const char *name = fdt_node_name(f, n);
		const uint8_t *reg;

		if (fw_strcmp(name, "memory") && !starts_with(name, "memory@"))
			continue;
		reg = fdt_prop(f, n, "reg", &len);
		if (!reg || !len || len % 16) {
			fw_log("%s: reg must be <addr-hi addr-lo size-hi size-lo>...", name);
			return -1;
		}
		for (i = 0; i < len; i += 16) {
			struct fw_mem_region *r = &p->mem[p->nr_mem_regions];

			if (p->nr_mem_regions == FW_MAX_MEM_REGIONS) {
				fw_log("more than %u memory regions", FW_MAX_MEM_REGIONS);
				return -1;
			}
			r->base = fdt_be64(reg + i);
			r->size = fdt_be64(reg + i + 8);
			if (r->base + r->size < r->base) {
				fw_log("%s: region wraps around", name);
				return -1;
			}
			p->mem_total += r->size;
			p->nr_mem_regions++;
		}
	}
	if (!p->nr_mem_regions) {
		fw_log("device tree has no memory nodes");
		return -1;
	}
	return 0;
}

int fw_parse_params(const void *blob)
{
	struct fdt f;
	const char *why;

	if (fdt_open(&f, blob, &why)) {
		fw_log("bad device tree at %p: %s", blob, why);
		return -1;
	}
	if (parse_chosen(&f) || parse_cpus(&f) || parse_memory(&f))
		return -1;
	/* Below vmm,free-start, so it stays intact: the device workloads read it later. */
	fw_params.fdt = blob;
	return 0;
}
