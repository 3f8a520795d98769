// SPDX-License-Identifier: Apache-2.0
/*
 * pvh.c - boot parameters when another VMM boots this firmware through its
 * Xen PVH entry (pvh_start.S), e.g. QEMU:
 *
 *   qemu-system-x86_64 -M microvm -enable-kvm -cpu host -smp 1 -m 1G \
 *     -nodefaults -no-user-config -nographic -serial stdio \
 *     -device isa-debug-exit,iobase=0x501,iosize=4 \
 *     -kernel vmm-firmware.elf \
 *     -append "vmm.workload=dirty vmm.working_set=64M vmm.passes=3"
 *
 * There is no device tree, so fw_params comes from the PVH start info:
 * RAM from its memory map (type 1 entries), the workload from its command
 * line (vmm.<key>=<value>, the [workload] keys of docs/config.md plus
 * vmm.tsc_khz; other words are ignored), one vCPU (secondaries are never
 * started), and the TSC frequency from CPUID 0x40000010 when the hypervisor
 * offers it (QEMU does with -cpu ...,+invtsc or tsc-frequency=), else
 * measured against PIT channel 0 over 50 ms. The console is COM1 as
 * under vmm. fw_exit()'s OUT to port 0x501 ends QEMU only with the
 * isa-debug-exit device shown above (QEMU then exits with status*2+1: 1 for
 * success, 7 for corruption); without it the firmware halts.
 *
 * The device workloads (blk, net) take the same vmm.* words (vmm.passes,
 * vmm.heartbeat_ms, vmm.min_pass_ms), net its address from ip= as under
 * vmm, and their virtio-mmio devices from the virtio_mmio.device= words
 * QEMU appends to the command line (virtio.c, virtio_cmdline.h). Two QEMU
 * options are needed for that: acpi=off (with ACPI, QEMU lists the devices
 * in its DSDT only, not on the command line) and
 * virtio-mmio.force-legacy=false (QEMU's virtio-mmio is the legacy version
 * 1 interface by default; the firmware drives version 2 only). Rings and
 * buffers come from free_start below. E.g. (TCG: -accel tcg -cpu max):
 *
 *   qemu-system-x86_64 -M microvm,acpi=off -enable-kvm -cpu host -smp 1 -m 256M \
 *     -nodefaults -no-user-config -nographic -serial stdio -no-reboot \
 *     -device isa-debug-exit,iobase=0x501,iosize=4 \
 *     -global virtio-mmio.force-legacy=false \
 *     -drive if=none,id=d0,file=disk.img,format=raw -device virtio-blk-device,drive=d0 \
 *     -kernel vmm-firmware.elf -append "vmm.workload=blk vmm.passes=3"
 *
 *   ... -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
 *     -device virtio-net-device,netdev=n0 \
 *     -append "vmm.workload=net ip=10.0.0.2 vmm.heartbeat_ms=250"
 *
 * (QEMU then appends e.g. "virtio_mmio.device=512@0xfeb00e00:12"; it puts
 * its transports at 0xfeb00000 + n * 0x200, just below the IOAPIC, which
 * pvh_start.S's 4 GiB map covers: fw_map_mmio() makes the 2 MiB page
 * uncached.)
 */
#include "fw.h"

#define HVM_START_MAGIC 0x336ec578u
#define E820_RAM	1u
#define PVH_MAP_LIMIT	(4ull << 30) /* pvh_start.S maps the first 4 GiB */
#define PIT_HZ		1193182u
#define PIT_CAL_TICKS	(PIT_HZ / 20u) /* 50 ms */

struct hvm_start_info {
	uint32_t magic, version, flags, nr_modules;
	uint64_t modlist_paddr, cmdline_paddr, rsdp_paddr, memmap_paddr;
	uint32_t memmap_entries, reserved;
};

struct hvm_memmap_entry {
	uint64_t addr, size;
	uint32_t type, reserved;
};

extern char fw_image_end[]; /* linker.ld: the end of .bss */

/* fw_params.cmdline after a PVH boot (Linux x86's COMMAND_LINE_SIZE is 2048). */
static char pvh_cmdline[4096];

__attribute__((noreturn)) void fw_pvh_main(uint64_t start_info);

static __attribute__((noreturn)) void bad(void)
{
	fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
}

static void cpuid(uint32_t leaf, uint32_t r[4])
{
	__asm__ volatile("cpuid"
			 : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
			 : "a"(leaf), "c"(0));
}

/* Ticks of PIT channel 0 (mode 2, free running) against the TSC over 50 ms. */
static uint32_t pit_tsc_khz(void)
{
	uint64_t t0, t1, elapsed = 0;
	uint32_t prev, cur;

	outb(0x43, 0x34); /* channel 0, lo/hi byte, mode 2, binary */
	outb(0x40, 0);
	outb(0x40, 0); /* reload 65536 */
	outb(0x43, 0x00);
	prev = inb(0x40);
	prev |= (uint32_t)inb(0x40) << 8;
	t0 = rdtsc();
	while (elapsed < PIT_CAL_TICKS) {
		outb(0x43, 0x00); /* latch channel 0 */
		cur = inb(0x40);
		cur |= (uint32_t)inb(0x40) << 8;
		elapsed += (prev - cur) & 0xffffu; /* counts down, wraps at 65536 */
		prev = cur;
	}
	t1 = rdtsc();
	return (uint32_t)((t1 - t0) * PIT_HZ / (elapsed * 1000u));
}

static const char *tsc_source(struct fw_params *p)
{
	uint32_t r[4];

	if (p->tsc_khz)
		return "vmm.tsc_khz";
	cpuid(1, r);
	if (r[2] & (1u << 31)) { /* a hypervisor: maybe its timing leaf */
		cpuid(0x40000000u, r);
		if (r[0] >= 0x40000010u) {
			cpuid(0x40000010u, r);
			if (r[0]) {
				p->tsc_khz = r[0];
				return "CPUID 0x40000010";
			}
		}
	}
	p->tsc_khz = pit_tsc_khz();
	return "PIT calibration";
}

static bool word_is(const char *w, size_t len, const char *s)
{
	size_t n = fw_strlen(s);

	return len == n && !memcmp(w, s, n);
}

/* A decimal number with an optional binary K/M/G/T suffix. */
static int parse_num(const char *v, size_t len, bool size, uint64_t *out)
{
	uint64_t x = 0, mul = 1;
	size_t i;

	if (size && len > 1) {
		switch (v[len - 1]) {
		case 'K':
			mul = 1ull << 10;
			len--;
			break;
		case 'M':
			mul = 1ull << 20;
			len--;
			break;
		case 'G':
			mul = 1ull << 30;
			len--;
			break;
		case 'T':
			mul = 1ull << 40;
			len--;
			break;
		}
	}
	if (!len || len > 15)
		return -1;
	for (i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10u + (uint64_t)(v[i] - '0');
	}
	*out = x * mul;
	return 0;
}

static int choice(const char *v, size_t len, const char *no, const char *yes, bool *out)
{
	if (word_is(v, len, no) || word_is(v, len, "0"))
		*out = false;
	else if (word_is(v, len, yes) || word_is(v, len, "1"))
		*out = true;
	else
		return -1;
	return 0;
}

/* One vmm.<key>=<value> word of the command line. */
static int parse_word(struct fw_params *p, const char *k, size_t klen, const char *v, size_t vlen)
{
	uint64_t n = 0;

	if (word_is(k, klen, "workload")) {
		if (!vlen || vlen >= sizeof(p->workload))
			return -1;
		memcpy(p->workload, v, vlen);
		p->workload[vlen] = '\0';
		return 0;
	}
	if (word_is(k, klen, "fill"))
		return choice(v, vlen, "zero", "random", &p->fill_random);
	/*
	 * vmm.prefilled=true: whoever started us wrote the fill into the
	 * working set before boot (a benchmark, through a memory file), as vmm
	 * does; vmm.fill=random then checks it instead of writing it.
	 */
	if (word_is(k, klen, "prefilled")) {
		bool prefilled = false;
		int r = choice(v, vlen, "false", "true", &prefilled);

		p->fill_self = !prefilled;
		return r;
	}
	if (word_is(k, klen, "order"))
		return choice(v, vlen, "seq", "random", &p->order_random);
	if (word_is(k, klen, "latency"))
		return choice(v, vlen, "false", "true", &p->latency);
	if (parse_num(v, vlen, word_is(k, klen, "working_set"), &n))
		return -1;
	if (word_is(k, klen, "working_set")) {
		p->working_set = n;
		p->has_working_set = true;
	} else if (word_is(k, klen, "dirty_rate")) {
		p->dirty_rate = n;
	} else if (word_is(k, klen, "passes")) {
		p->passes = n;
	} else if (word_is(k, klen, "heartbeat_ms")) {
		p->heartbeat_ms = n;
	} else if (word_is(k, klen, "min_pass_ms")) {
		p->min_pass_ms = n;
	} else if (word_is(k, klen, "catch_up_ms")) {
		p->catch_up_ms = n;
	} else if (word_is(k, klen, "work_ms")) {
		p->work_ms = n;
	} else if (word_is(k, klen, "tsc_khz") && n <= UINT32_MAX) {
		p->tsc_khz = (uint32_t)n;
	} else {
		return -1;
	}
	return 0;
}

static void parse_cmdline(struct fw_params *p, const char *c)
{
	while (*c) {
		const char *w = c, *eq = NULL;
		size_t len;

		while (*c && *c != ' ') {
			if (*c == '=' && !eq)
				eq = c;
			c++;
		}
		len = (size_t)(c - w);
		while (*c == ' ')
			c++;
		if (len < 4 || memcmp(w, "vmm.", 4))
			continue; /* someone else's word */
		if (!eq || parse_word(p, w + 4, (size_t)(eq - w - 4), eq + 1,
				      (size_t)(w + len - eq - 1))) {
			char word[64];
			size_t n = len < sizeof(word) ? len : sizeof(word) - 1;

			memcpy(word, w, n);
			word[n] = '\0';
			fw_log("PVH command line: bad word '%s' (vmm.workload=, working_set=, "
			       "dirty_rate=, passes=, min_pass_ms=, heartbeat_ms=, catch_up_ms=, "
			       "work_ms=, fill=, "
			       "prefilled=, order=, "
			       "latency=, tsc_khz=)",
			       word);
			bad();
		}
	}
}

static void parse_memmap(struct fw_params *p, const struct hvm_start_info *si)
{
	const struct hvm_memmap_entry *m;
	uint32_t i;

	if (si->version < 1 || !si->memmap_paddr || si->memmap_paddr >= PVH_MAP_LIMIT) {
		fw_log("PVH start info version %u has no memory map", si->version);
		bad();
	}
	m = (const struct hvm_memmap_entry *)(uintptr_t)si->memmap_paddr;
	for (i = 0; i < si->memmap_entries; i++) {
		if (m[i].type != E820_RAM || !m[i].size || m[i].addr >= PVH_MAP_LIMIT)
			continue;
		if (p->nr_mem_regions == FW_MAX_MEM_REGIONS) {
			fw_log("more than %u memory regions", FW_MAX_MEM_REGIONS);
			bad();
		}
		p->mem[p->nr_mem_regions].base = m[i].addr;
		/* only what pvh_start.S mapped */
		p->mem[p->nr_mem_regions].size =
		    m[i].size < PVH_MAP_LIMIT - m[i].addr ? m[i].size : PVH_MAP_LIMIT - m[i].addr;
		p->mem_total += p->mem[p->nr_mem_regions].size;
		p->nr_mem_regions++;
	}
	if (!p->nr_mem_regions) {
		fw_log("PVH memory map has no RAM");
		bad();
	}
}

void fw_pvh_main(uint64_t start_info)
{
	const struct hvm_start_info *si = (const struct hvm_start_info *)(uintptr_t)start_info;
	struct fw_params *p = &fw_params;
	const char *cmdline = "", *tsc;
	size_t n;

	if (si->magic != HVM_START_MAGIC) {
		fw_log("PVH start info at 0x%lx has magic 0x%x, expected 0x%x", start_info,
		       si->magic, HVM_START_MAGIC);
		bad();
	}
	p->abi_version = VMM_ABI_VERSION;
	p->nr_vcpus = 1;
	memcpy(p->workload, "hello", 6);
	p->working_set = 64ull << 20; /* as [workload] working_set's default */
	p->has_working_set = true;
	p->heartbeat_ms = 1000;
	p->catch_up_ms = 100; /* as [workload] catch_up_ms's default */
	/* Above the image (its .bss holds the PVH page tables), 2 MiB aligned as under vmm. */
	p->free_start = ((uint64_t)(uintptr_t)fw_image_end + (2u << 20) - 1) & ~((2ull << 20) - 1);
	p->has_free_start = true;
	p->fill_self = true; /* vmm.fill=random: no vmm here to write the fill */
	parse_memmap(p, si);
	if (si->cmdline_paddr && si->cmdline_paddr < PVH_MAP_LIMIT)
		cmdline = (const char *)(uintptr_t)si->cmdline_paddr;
	parse_cmdline(p, cmdline);
	/*
	 * A copy in .bss for the device workloads (ip=, virtio_mmio.device=):
	 * the loader's copy may lie where fw_alloc_pages() hands out memory.
	 */
	n = fw_strlen(cmdline);
	if (n >= sizeof(pvh_cmdline)) {
		fw_log("PVH command line of %lu bytes: only the first %lu are kept", n,
		       sizeof(pvh_cmdline) - 1);
		n = sizeof(pvh_cmdline) - 1;
	}
	memcpy(pvh_cmdline, cmdline, n);
	pvh_cmdline[n] = '\0';
	p->cmdline = pvh_cmdline;
	tsc = tsc_source(p);
	if (!p->tsc_khz) {
		fw_log("PVH: could not measure the TSC frequency (set vmm.tsc_khz=)");
		bad();
	}
	fw_log("PVH boot: %lu MiB RAM in %u regions, TSC %u kHz (%s), command line \"%s\"",
	       p->mem_total >> 20, p->nr_mem_regions, p->tsc_khz, tsc, cmdline);
	fw_exceptions_init(0);
	fw_run(0);
}
