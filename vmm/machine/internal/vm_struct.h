/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm_struct.h - struct vm's fields, and the vCPU's: the machine's alone.
 *
 * vm.h declares struct vm without its body: the engine and the front end
 * hold a VM by pointer (vm_new()) and reach it through vm.h's functions,
 * which say who may call them, under which lock and in which state. Only
 * vmm/machine/ includes this header (and the white-box tests of
 * tests/unit and tests/fuzz, which build a VM by hand); lint.vm_fields
 * checks that, and that no file outside the machine names a field below.
 *
 * All VM state is reachable from struct vm, so that migration can save,
 * send and restore it and a test can hold a source and a target VM in one
 * process. The only thing outside it is the process's signal disposition.
 */
#ifndef VMM_VM_STRUCT_H
#define VMM_VM_STRUCT_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "cpu_features.h"
#include "devices.h"
#include "elf_loader.h"
#include "guest_mem.h"
#include "serial.h"
#include "test_hooks.h"
#include "vm.h"

/*
 * A vCPU's throttle (vcpu_throttle.c). `pct` is written under vm->lock by
 * vm_throttle_set() and read by the vCPU thread; `slept_ns` is the vCPU
 * thread's, read by others (both atomic). The rest is the vCPU thread's
 * alone but `cpu_clock` and `timer_state`, which it publishes once, at its
 * start (atomics: the state last, with release).
 */
struct vcpu_throttle {
	unsigned pct;	    /* share of each slice this vCPU sleeps, 0..VM_THROTTLE_MAX_PCT */
	uint64_t slept_ns;  /* time slept for the throttle since the vCPU was created */
	uint64_t run_until; /* the end of its running share (CLOCK_MONOTONIC ns), 0: none */
	timer_t timer;	    /* kicks its thread at run_until (SIG_VCPU_KICK to its tid) */
	bool armed;	    /* timer set */
	int timer_state; /* 0: its thread has not made the timer yet, 1: made, -errno: could not */
	clockid_t cpu_clock; /* its thread's CPU-time clock, once timer_state != 0 */
};

struct vcpu {
	struct vm *vm;
	unsigned index;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool thread_started;
	struct vcpu_throttle throttle;
};

/* Guest-physical addresses of what the VMM places in RAM before boot. */
struct boot_layout {
	uint64_t gdt;	     /* GDT (4 entries) */
	uint64_t start_info; /* PVH hvm_start_info */
	uint64_t memmap;     /* PVH memory map */
	uint64_t cmdline;    /* PVH command line */
	uint64_t pml4;	     /* page tables: PML4, PDPTs, PDs follow */
	uint64_t fdt;	     /* device tree */
	uint64_t fdt_size;
	uint64_t stacks;     /* vCPU stacks, VMM_VCPU_STACK_SIZE each */
	uint64_t free_start; /* first gpa free for the guest's own use */
	/* PVH only (0 otherwise): x86_boot.h has the low-memory map */
	uint64_t rsdp;	      /* ACPI RSDP, the start of the ACPI tables */
	uint64_t acpi_size;   /* bytes of ACPI tables from rsdp */
	uint64_t mptable;     /* MP floating pointer; configuration table follows */
	uint64_t modlist;     /* hvm_modlist_entry[1], when initrd_size != 0 */
	uint64_t initrd;      /* the [firmware] initrd file, page aligned */
	uint64_t initrd_size; /* its length in bytes */
};

struct vm {
	struct vm_config cfg;
	int kvm_fd;
	int vm_fd;
	int run_size;
	uint32_t tsc_khz;	  /* the guest's (effective) TSC kHz, = cfg.tsc_khz */
	uint32_t host_tsc_khz;	  /* this host's, for messages; 0 = unknown */
	struct kvm_cpuid2 *cpuid; /* KVM_GET_SUPPORTED_CPUID: cpuid_build()'s input */
	/* The named features this host's KVM can give (before [vm] cpu_features masks them). */
	struct cpu_features host_cpu;

	struct guest_mem mem;
	struct vcpu *vcpus;
	unsigned nvcpus;
	struct serial serial;
	struct vm_devices devices; /* virtio-mmio ([disk], [net]); paused with the vCPUs */
	struct elf_image image;
	struct boot_layout layout;
	/* The guest's command line: [firmware] cmdline and the devices' announcements. */
	char boot_cmdline[CONFIG_CMDLINE_MAX + DEVICES_MAX * 48];

	/*
	 * pause barrier and end state, under lock; cond (CLOCK_MONOTONIC) also
	 * wakes a vCPU sleeping for its throttle
	 */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool pause_requested;
	unsigned paused;  /* vCPU threads parked in the barrier */
	unsigned running; /* vCPU threads started and not yet ended */
	/* Set once, under lock, by vm_request_stop(); read elsewhere only through vm_stopping(). */
	bool stopping;
	enum vm_end_reason end_reason;
	int end_status;
	char end_message[VM_END_MESSAGE_MAX];
	int end_fd; /* eventfd, readable once the VM has ended */

	uint64_t first_run_ns; /* CLOCK_MONOTONIC at vCPU 0's first KVM_RUN; 0 before */

	/* Set by vm_set_test_hooks() before vm_start(); NULL = none. Read once per vCPU thread. */
	const struct test_hooks *hooks;
};

/* vcpu.c */
int vcpu_create(struct vm *vm, struct vcpu *vcpu, unsigned index);
void *vcpu_thread(void *arg);
void vcpu_kick(struct vcpu *vcpu);
int vcpu_get_rip(struct vcpu *vcpu, uint64_t *rip);

#endif /* VMM_VM_STRUCT_H */
