/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm.h - one virtual machine: everything the process knows about it.
 *
 * All VM state is reachable from struct vm, so that migration can save,
 * send and restore it and a test can hold a source and a target VM in one
 * process. The only thing outside it is the process's signal disposition.
 *
 * Lifecycle (vm_*), called from the main thread unless noted:
 *   vm_create()      open KVM, check capabilities, map RAM (and with
 *                    [vm] prealloc make it resident), create vCPUs;
 *                    nothing runs yet
 *   vm_create_on()   the same on RAM the caller mapped already (a
 *                    migration target's preallocated RAM)
 *   vm_boot_setup()  load the image, build page tables/GDT/device tree and
 *                    set initial vCPU registers (skipped by an incoming
 *                    migration, which restores state instead)
 *   vm_start()       start one thread per vCPU (vm_start_paused(): parked,
 *                    so nothing can fail between an acknowledgement and
 *                    the guest running)
 *   vm_pause() / vm_resume()   stop all vCPUs outside KVM_RUN and release
 *                    them; any thread, but not a vCPU thread
 *   vm_request_stop() any thread (vCPU threads included): ends the VM with
 *                    a status; the first request wins
 *   vm_join()        waits for the vCPU threads after a stop
 *   vm_destroy()
 */
#ifndef VMM_VM_H
#define VMM_VM_H

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

struct vm;

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

enum vm_end_reason {
	VM_END_NONE,
	VM_END_GUEST_EXIT,     /* guest wrote VMM_EXIT_PORT */
	VM_END_SIGNAL,	       /* SIGINT/SIGTERM */
	VM_END_ERROR,	       /* KVM or guest failure; message in end_message */
	VM_END_MIGRATED,       /* the VM now runs elsewhere */
	VM_END_GUEST_POWEROFF, /* guest entered ACPI S5 (platform_io.h) */
	VM_END_GUEST_RESET,    /* guest reset the machine: 8042 0xFE, port 0xCF9 */
};

/* A stable name for the API and messages: "guest-poweroff", "error", ... */
static inline const char *vm_end_reason_name(enum vm_end_reason r)
{
	switch (r) {
	case VM_END_NONE:
		return "none";
	case VM_END_GUEST_EXIT:
		return "guest-exit";
	case VM_END_SIGNAL:
		return "signal";
	case VM_END_ERROR:
		return "error";
	case VM_END_MIGRATED:
		return "migrated";
	case VM_END_GUEST_POWEROFF:
		return "guest-poweroff";
	case VM_END_GUEST_RESET:
		return "guest-reset";
	}
	return "unknown";
}

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
	char end_message[256];
	int end_fd; /* eventfd, readable once the VM has ended */

	uint64_t start_ns; /* CLOCK_MONOTONIC at process start, for timing */
	uint64_t first_run_ns;

	/* Set by the front end before vm_start(); NULL = none. Read once per vCPU thread. */
	const struct test_hooks *hooks;
};

int vm_create(struct vm *vm, const struct vm_config *cfg, int console_fd, char *err, size_t errlen);
/*
 * What this host's KVM can give a guest's CPU, no VM needed (host_cpu.c):
 * the named features a VM created here checks [vm] cpu_features against,
 * and the vendor (CPU_VENDOR_HOST: neither Intel nor AMD). Opens /dev/kvm;
 * -errno with a message. Any thread.
 */
int vm_host_cpu(struct cpu_features *out, enum cpu_vendor *vendor, char *err, size_t errlen);
/*
 * `ram`, when not NULL, is guest_mem_init()ed with cfg->memory,
 * cfg->memslot_size and cfg->backend (the caller checked): the VM takes it
 * over, with whatever it holds, and leaves *ram empty; it is not populated
 * again. NULL: as vm_create().
 */
int vm_create_on(struct vm *vm, const struct vm_config *cfg, struct guest_mem *ram, int console_fd,
		 char *err, size_t errlen);
int vm_boot_setup(struct vm *vm, char *err, size_t errlen);
int vm_start(struct vm *vm, char *err, size_t errlen);
/* Starts the vCPU threads parked in the pause barrier; vm_resume() lets them run. */
int vm_start_paused(struct vm *vm, char *err, size_t errlen);
void vm_pause(struct vm *vm);
void vm_resume(struct vm *vm);
void vm_request_stop(struct vm *vm, enum vm_end_reason reason, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void vm_join(struct vm *vm);
/*
 * KVM_SET_USER_MEMORY_REGION for one memslot with `flags` (0, or
 * KVM_MEM_LOG_DIRTY_PAGES to turn dirty logging on): the one place slots
 * are registered, at creation and by the dirty log. Any non-vCPU thread.
 */
int vm_memslot_register(struct vm *vm, const struct memslot *s, uint32_t flags);
/* KVM_CHECK_EXTENSION on this VM's fd (falling back to /dev/kvm's). */
int vm_check_cap(const struct vm *vm, long cap);
void vm_destroy(struct vm *vm);

/*
 * Whether the VM is ending: true from the first vm_request_stop() on, and
 * never false again. Any thread, no lock: an acquire load paired with the
 * release store in vm_request_stop(), so a thread that sees true also sees
 * end_reason, end_status and end_message. Under vm->lock the machine reads
 * the field itself; no one outside vmm/machine touches vm->stopping.
 */
bool vm_stopping(const struct vm *vm);

/*
 * Registers fn(opaque) to be called once, when the guest writes its first
 * byte to the console (COM1's transmit), for the front end's time-to-first
 * -output. It runs on the vCPU thread that wrote the byte, with the serial
 * lock held (serial.h: it must be short and take no lock that is held
 * while calling into serial). Any thread but a vCPU's, once vm_create()
 * has run (even when it failed); takes the serial lock. Call it before
 * vm_start() or vm_start_paused(): a byte written before does not call
 * fn. fn NULL: none (the default).
 */
void vm_on_console_first_byte(struct vm *vm, void (*fn)(void *opaque), void *opaque);

/*
 * KVM's dirty page log of the memslots (vm_dirty_log.c), for the engine's
 * dirty tracking (migration/dirty/dirtylog.c), which owns the sequence:
 * set the mode, turn logging on, GET and CLEAR per slot, turn it off. One
 * user at a time (a migration and a snapshot never run together); any
 * thread but a vCPU's; no vmm lock is taken.
 */
struct vm_dirty_log_mode {
	bool manual_protect; /* MANUAL_PROTECT_ENABLE: GET only copies, CLEAR protects */
	bool initially_set;  /* INITIALLY_SET: every page starts out dirty */
};
/*
 * Sets (or resets: a previous user may have left another) the log's mode
 * with KVM_ENABLE_CAP(KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2): manual protect
 * when KVM has it, with INITIALLY_SET too when want_initially_set and KVM
 * has it. *mode says what is in use; KVM without the capability, or
 * refusing it, leaves both false (GET then copies and re-protects). Never
 * fails. Call before vm_dirty_log_slots(vm, true).
 */
void vm_dirty_log_set_mode(struct vm *vm, bool want_initially_set, struct vm_dirty_log_mode *mode);
/*
 * Dirty logging on (KVM_MEM_LOG_DIRTY_PAGES) or off for every memslot.
 * On is all or none: 0, or -errno with every slot back to no logging. Off
 * goes through every slot and returns the first -errno, or 0.
 */
int vm_dirty_log_slots(struct vm *vm, bool on);
/*
 * KVM_GET_DIRTY_LOG of one slot into bitmap (slot->npages bits, in 64-bit
 * words). Without manual protect it also write-protects the pages it
 * reports. 0 or -errno. While logging is on; concurrent calls on any
 * slots are safe (KVM serialises them on its slots lock).
 */
int vm_dirty_log_get(struct vm *vm, const struct memslot *slot, uint64_t *bitmap);
/*
 * KVM_CLEAR_DIRTY_LOG: write-protects again the pages [first, first+n) of
 * a slot whose bits are set in mask (mask[0] bit 0 = page `first`). first
 * a multiple of 64, n too unless the range ends at the slot's end. Only
 * with manual protect in use (KVM refuses it otherwise). 0 or -errno. As
 * vm_dirty_log_get(): while logging is on, concurrent calls are safe.
 */
int vm_dirty_log_clear(struct vm *vm, const struct memslot *slot, uint64_t first, uint64_t n,
		       uint64_t *mask);

/*
 * vCPU throttling (vcpu_throttle.c), which a migration's engine turns on
 * when precopy does not converge: a throttled vCPU runs for (100 - pct) %
 * of each VM_THROTTLE_SLICE_NS slice and sleeps for the rest, outside
 * KVM_RUN. A per-thread timer ends its running share with the kick signal
 * (the kick protocol of vcpu.c), so a guest that never exits is slowed too.
 * The sleep ends at once for a pause, a stop or a new setting: a throttle
 * never delays vm_pause() or the end of the VM.
 */
#define VM_THROTTLE_SLICE_NS 10000000ull /* 10 ms */
#define VM_THROTTLE_MAX_PCT  99u	 /* 100 would stop the vCPU: that is vm_pause() */
/*
 * Sets every vCPU's level: pct[i] for vCPU i (vm->nvcpus of them, each at
 * most VM_THROTTLE_MAX_PCT; more is clamped), or NULL for all 0: full
 * speed from the next slice on, sleepers woken now. 0, or -errno (with err)
 * when a vCPU to be slowed has no slice timer (its thread could not make
 * one); then every level is 0. Any thread but a vCPU's; takes vm->lock.
 */
int vm_throttle_set(struct vm *vm, const unsigned *pct, char *err, size_t errlen);

/* What vm_vcpu_time() reads. */
struct vcpu_time {
	unsigned pct;	   /* its level now */
	uint64_t slept_ns; /* slept for the throttle since the vCPU was created */
	uint64_t cpu_ns;   /* its thread's CPU time (0 before the thread started) */
};
/* vCPU i's level, throttled sleep and CPU time. Any thread; takes no lock. */
void vm_vcpu_time(struct vm *vm, unsigned i, struct vcpu_time *out);

/* vcpu.c */
int vcpu_create(struct vm *vm, struct vcpu *vcpu, unsigned index);
void *vcpu_thread(void *arg);
void vcpu_kick(struct vcpu *vcpu);
int vcpu_get_rip(struct vcpu *vcpu, uint64_t *rip);

#endif /* VMM_VM_H */
