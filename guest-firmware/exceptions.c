// SPDX-License-Identifier: Apache-2.0
/*
 * exceptions.c - an IDT for the 32 CPU exceptions, so that a guest that
 * faults says where (vector, error code, RIP, CR2, its stack) on the
 * console and stops the VM with VMM_GUEST_EXIT_EXCEPTION, instead of
 * triple-faulting into a KVM_EXIT_SHUTDOWN that carries nothing (AMD KVM
 * resets the vCPU before reporting a shutdown). No exception is handled:
 * this firmware never expects one, so any is a bug in it, in the VMM (a
 * page lost or stale after a migration) or in the platform.
 */
#include "fw.h"

struct idt_gate {
	uint16_t off_lo, sel;
	uint8_t ist, type;
	uint16_t off_mid;
	uint32_t off_hi, zero;
} __attribute__((packed));

/* What exceptions.S hands over: its two pushes, then the CPU's frame. */
struct exc_frame {
	uint64_t vector, error, rip, cs, rflags, rsp, ss;
};

extern const uint64_t fw_exc_stubs[32];

static struct idt_gate idt[32] __attribute__((aligned(16)));
static int idt_built;

static const char *const names[32] = {
    [0] = "#DE",  [1] = "#DB",	[2] = "NMI",  [3] = "#BP",  [4] = "#OF",
    [5] = "#BR",  [6] = "#UD",	[7] = "#NM",  [8] = "#DF",  [10] = "#TS",
    [11] = "#NP", [12] = "#SS", [13] = "#GP", [14] = "#PF", [16] = "#MF",
    [17] = "#AC", [18] = "#MC", [19] = "#XM", [20] = "#VE", [21] = "#CP",
};

void fw_exceptions_init(uint32_t index)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) idtr = {sizeof(idt) - 1, (uint64_t)(uintptr_t)idt};
	uint16_t cs;

	/* vCPU 0 builds it before it releases the others; each loads it. */
	if (index == 0) {
		__asm__ volatile("mov %%cs, %0" : "=r"(cs));
		for (uint32_t v = 0; v < 32; v++) {
			uint64_t a = fw_exc_stubs[v];

			idt[v] = (struct idt_gate){
			    .off_lo = (uint16_t)a,
			    .sel = cs,
			    .ist = 0,
			    .type = 0x8e, /* present, DPL 0, 64-bit interrupt gate */
			    .off_mid = (uint16_t)(a >> 16),
			    .off_hi = (uint32_t)(a >> 32),
			};
		}
		__atomic_store_n(&idt_built, 1, __ATOMIC_RELEASE);
	}
	while (!__atomic_load_n(&idt_built, __ATOMIC_ACQUIRE))
		cpu_relax();
	__asm__ volatile("lidt %0" : : "m"(idtr) : "memory");
}

__attribute__((noreturn)) void fw_exception(const struct exc_frame *f);

void fw_exception(const struct exc_frame *f)
{
	uint64_t cr2, cr3;
	const uint64_t *sp = (const uint64_t *)(uintptr_t)f->rsp;

	__asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
	__asm__ volatile("mov %%cr3, %0" : "=r"(cr3));
	fw_log("EXCEPTION %s (vector %lu) error 0x%lx at rip 0x%lx cs 0x%lx rflags 0x%lx rsp 0x%lx "
	       "cr2 0x%lx cr3 0x%lx",
	       f->vector < 32 && names[f->vector] ? names[f->vector] : "reserved", f->vector,
	       f->error, f->rip, f->cs, f->rflags, f->rsp, cr2, cr3);
	/* The caller's frame: return addresses near the top of the faulting stack. */
	if (f->rsp && !(f->rsp & 7))
		fw_log("stack at 0x%lx: %lx %lx %lx %lx %lx %lx %lx %lx", f->rsp, sp[0], sp[1],
		       sp[2], sp[3], sp[4], sp[5], sp[6], sp[7]);
	fw_exit(VMM_GUEST_EXIT_EXCEPTION);
}

/* The fault workload: vCPU 0 executes ud2, the others park; the report above must follow. */
void workload_fault(uint32_t index)
{
	if (index)
		halt_forever();
	fw_log("fault: executing ud2 on vCPU 0");
	fw_release_secondaries();
	__asm__ volatile("ud2");
	fw_log("fault: ud2 returned");
	fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
}
