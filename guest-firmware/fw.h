/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fw.h - freestanding helpers shared by the vmm guest firmware.
 *
 * No libc: only the compiler's freestanding headers. Everything here must
 * compile to plain integer instructions, because the nested-PVM emulator
 * cannot run SSE, x87, popcnt, cmpxchg16b or int3 (the nested-PVM emulator of
 * our build hosts stops with KVM_EXIT_INTERNAL_ERROR on them).
 */
#ifndef FW_H
#define FW_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm_abi.h"

#define FW_MAX_VCPUS	   1024u /* sizes the shared per-vCPU arrays */
#define FW_MAX_MEM_REGIONS 1024u /* memory@ reg entries remembered for bounds checks */

#define FW_PREFIX "vmm-firmware: "

/* Exit status when a secondary vCPU never checked in (not in vmm_abi.h). */
#define FW_EXIT_VCPU_MISSING VMM_GUEST_EXIT_VCPU_MISSING

static inline void outb(uint16_t port, uint8_t val)
{
	__asm__ volatile("outb %0, %1" : : "a"(val), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t val)
{
	__asm__ volatile("outl %0, %1" : : "a"(val), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline void cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

/* Park this vCPU for good; with interrupts off nothing wakes it. */
static inline __attribute__((noreturn)) void halt_forever(void)
{
	for (;;)
		__asm__ volatile("cli; hlt" ::: "memory");
}

/* exceptions.c: loads the IDT (vCPU 0 builds it first): a fault is printed, not a triple fault. */
void fw_exceptions_init(uint32_t index);

/* lib.c: stops the whole VM; `vmm run` exits with status & 0xff. */
__attribute__((noreturn)) void fw_exit(uint32_t status);

/* console.c */
int fw_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int fw_snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prints FW_PREFIX + formatted text + "\n" as one atomic line. */
void fw_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Boot parameters, parsed once by vCPU 0 from the device tree. */
struct fw_mem_region {
	uint64_t base;
	uint64_t size;
};

struct fw_params {
	uint32_t abi_version;
	uint32_t nr_vcpus;
	uint32_t tsc_khz;
	char workload[32];
	uint64_t working_set;
	uint64_t dirty_rate;
	uint64_t passes;
	uint64_t heartbeat_ms;
	uint64_t min_pass_ms; /* each vCPU's pass lasts at least this long */
	uint64_t catch_up_ms; /* how far behind its pace the dirty workload still catches up */
	uint64_t work_ms;     /* a "dirty work" line at most this often; 0: none */
	uint64_t free_start;
	bool fill_random;  /* vmm,fill = "random": pass 1 expects vmm_fill_word() */
	bool order_random; /* vmm,order = "random": a new page permutation every pass */
	bool latency;      /* vmm,latency != 0: one latency line a pass */
	bool fill_self;    /* PVH boot: no VMM seeded the working set, the firmware does */
	bool has_working_set;
	bool has_free_start;
	const void *fdt; /* the device tree (virtio nodes, bootargs); NULL after a PVH boot */
	/* The kernel command line: /chosen bootargs, or the PVH start info's; never NULL. */
	const char *cmdline;
	uint64_t mem_total;
	uint32_t nr_mem_regions;
	struct fw_mem_region mem[FW_MAX_MEM_REGIONS];
};

/* Written by vCPU 0 before it releases the others (see main.c, lib.c). */
extern struct fw_params fw_params;

/*
 * lib.c: the secondaries' gate. vCPU 0 releases them after its first line
 * (fw_params is complete by then: the release orders it); a secondary waits
 * in fw_wait_released() before it reads fw_params.
 */
void fw_release_secondaries(void);
void fw_wait_released(void);

/* run.c: runs the workload fw_params names on this vCPU (after the parameters are set). */
__attribute__((noreturn)) void fw_run(uint32_t index);

/* params.c: fills fw_params from the tree; returns 0 or prints and fails. */
int fw_parse_params(const void *fdt);

/* Workloads; `index` is this vCPU's index. They never return. */
__attribute__((noreturn)) void workload_hello(uint32_t index);
__attribute__((noreturn)) void workload_idle(uint32_t index);
__attribute__((noreturn)) void workload_dirty(uint32_t index);
__attribute__((noreturn)) void workload_echo(uint32_t index);
__attribute__((noreturn)) void workload_fault(uint32_t index);
__attribute__((noreturn)) void workload_blk(uint32_t index);
__attribute__((noreturn)) void workload_net(uint32_t index);

/* Ticks of the TSC in `ms` milliseconds. */
static inline uint64_t ms_to_tsc(uint64_t ms)
{
	return ms * fw_params.tsc_khz;
}

/* mem.c: is [start, end) guest RAM (adjacent memory regions chain)? */
bool fw_inside_memory(uint64_t start, uint64_t end);
/* mem.c: does any byte of [start, end) lie in guest RAM? */
bool fw_overlaps_memory(uint64_t start, uint64_t end);
/* mem.c: n zeroed pages from vmm,free-start up, never freed; vCPU 0 only. Exits if RAM is short. */
void *fw_alloc_pages(uint64_t n);
/*
 * mem.c: makes sure [base, base + size) is identity mapped, uncached where
 * it adds 2 MiB pages or finds ones that hold no RAM (see mem.c).
 */
int fw_map_mmio(uint64_t base, uint64_t size);

/* lib.c */
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
int fw_strcmp(const char *a, const char *b);
size_t fw_strlen(const char *s);

#endif /* FW_H */
