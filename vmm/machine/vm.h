/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vm.h - one virtual machine: the machine's face to the layers above.
 *
 * struct vm is declared here without its body (internal/vm_struct.h has
 * it, the machine's alone): the engine and the front end hold a VM by
 * pointer and reach it only through the functions below, which say who
 * may call them, under which lock and in which state.
 *
 * Lifecycle (vm_*), called from the main thread unless noted:
 *   vm_new()         a zeroed VM to create (vm_free() after vm_destroy())
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cpu_features.h"
#include "guest_mem.h"
#include "virtio_dev.h"

struct serial;
struct test_hooks;
struct vm;

enum vm_end_reason {
	VM_END_NONE,
	VM_END_GUEST_EXIT,     /* guest wrote VMM_EXIT_PORT */
	VM_END_SIGNAL,	       /* SIGINT/SIGTERM */
	VM_END_ERROR,	       /* KVM or guest failure; the end's message says what */
	VM_END_MIGRATED,       /* the VM now runs elsewhere */
	VM_END_GUEST_POWEROFF, /* guest entered ACPI S5 (platform_io.h) */
	VM_END_GUEST_RESET,    /* guest reset the machine: 8042 0xFE, port 0xCF9 */
};

#define VM_END_MESSAGE_MAX 256

/* How a VM ended: what the first vm_request_stop() said. */
struct vm_end {
	enum vm_end_reason reason; /* VM_END_NONE: it has not (status 0, message "") */
	int status;		   /* the exit status it asks the process for */
	char message[VM_END_MESSAGE_MAX];
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

/*
 * Where a VM lives: its fields are the machine's, so the layers above hold
 * it by pointer. vm_new() returns one zeroed, for vm_create() or
 * vm_create_on(), or NULL when out of memory; vm_free() releases it after
 * vm_destroy() (NULL is fine). Any thread.
 */
struct vm *vm_new(void);
void vm_free(struct vm *vm);

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
 * the end vm_end_state() reports. Under vm->lock the machine reads the
 * field itself.
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
 * What the layers above may know of a VM. Fixed from vm_create() (or
 * vm_create_on()) until vm_destroy(): any thread, no lock.
 *
 * vm_mem(): its guest RAM, the memory component (guest_mem.h), whose slots
 * do not change; who may write which pages when is the caller's protocol
 * (a migration's, a snapshot's).
 * vm_config(): the configuration it runs, the caller's with what
 * vm_create() settled: the effective tsc_khz and cpu_vendor, the net
 * device's derived MAC. vm_nvcpus(): its vCPUs (indexes 0..n-1).
 * vm_tsc_khz(): the guest's TSC frequency in kHz. vm_host_features(): the
 * named features this host's KVM can give, before [vm] cpu_features masks
 * them, as vm_create() read them.
 */
struct guest_mem *vm_mem(struct vm *vm);
const struct vm_config *vm_config(const struct vm *vm);
unsigned vm_nvcpus(const struct vm *vm);
uint32_t vm_tsc_khz(const struct vm *vm);
const struct cpu_features *vm_host_features(const struct vm *vm);

/*
 * The end: reason, status and message from one moment (vm->lock), all
 * VM_END_NONE / 0 / "" until the first vm_request_stop(). Any thread.
 */
void vm_end_state(struct vm *vm, struct vm_end *out);
/*
 * An eventfd that is readable from the first vm_request_stop() on, for an
 * event loop or poll(); the VM's (from vm_create() until vm_destroy()):
 * poll it, never read or close it. Any thread.
 */
int vm_end_fd(const struct vm *vm);
/*
 * CLOCK_MONOTONIC ns at which vCPU 0 first entered KVM_RUN; 0 if it never
 * did. Stored by vCPU 0's thread, no lock: read it after vm_join().
 */
uint64_t vm_first_run_ns(const struct vm *vm);

/*
 * The test hooks (test_hooks.h) its vCPU threads obey, NULL for none: each
 * reads them once, as it starts. Main thread, after vm_create() (which
 * clears them) and before vm_start() or vm_start_paused(); hooks must
 * outlive the vCPU threads.
 */
void vm_set_test_hooks(struct vm *vm, const struct test_hooks *hooks);

/*
 * COM1, the guest's console: the serial component (serial.h), whose
 * functions say which thread may call them, for the front end's console
 * input. From vm_create() until vm_destroy().
 */
struct serial *vm_console(struct vm *vm);

/*
 * What the API shows of virtio device i (0, 1, ... in the config's order:
 * devices.h): virtio_dev_stats() into *out. False, *out untouched, when
 * the VM has no device i. Any thread (takes the device's lock).
 */
bool vm_device_stats(struct vm *vm, unsigned i, struct virtio_dev_stats *out);

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
 * Sets every vCPU's level: pct[i] for vCPU i (vm_nvcpus() of them, each at
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

#endif /* VMM_VM_H */
