/* SPDX-License-Identifier: Apache-2.0 */
/*
 * machine_seccomp.c - the machine's seccomp lists, as data (contracts in
 * machine_seccomp.h): the KVM and device calls are the machine's, so they
 * are written here, next to the code that makes them.
 */
#include "machine_seccomp.h"

#include <linux/fs.h>
#include <linux/if_tun.h>
#include <linux/kvm.h>
#include <linux/sockios.h>
#include <stddef.h>
#include <sys/ioctl.h>

/* clang-format off */
/*
 * A virtio device's I/O thread: its disk file (positioned reads and
 * writes, FLUSH), its tap (one frame per read or write), the eventfds it
 * polls (kicks, its control fd) and writes (the irqfd).
 */
const char *const seccomp_calls_device[] = {
	"read", "readv", "write", "writev", "pread64", "pwrite64", "preadv", "pwritev",
	"fdatasync", "poll", "ppoll", NULL,
};

/* KVM_IRQ_LINE: COM1's interrupt, raised by the vCPU that touches the UART. */
static const unsigned long i_vcpu_run[] = {KVM_RUN, KVM_GET_REGS, KVM_TRANSLATE, KVM_IRQ_LINE, 0};

/* Dirty logging and saving the VM's state (a source's migration, a snapshot). */
const unsigned long seccomp_ioctls_vm_save[] = {
	KVM_SET_USER_MEMORY_REGION, KVM_ENABLE_CAP, KVM_CHECK_EXTENSION, KVM_GET_MSR_INDEX_LIST,
	KVM_GET_MP_STATE, KVM_GET_REGS, KVM_GET_SREGS, KVM_GET_XSAVE, KVM_GET_FPU, KVM_GET_XCRS,
	KVM_GET_DEBUGREGS, KVM_GET_LAPIC, KVM_GET_MSRS, KVM_GET_VCPU_EVENTS, KVM_GET_CLOCK,
	KVM_GET_IRQCHIP, KVM_GET_PIT2, KVM_GET_DIRTY_LOG, KVM_CLEAR_DIRTY_LOG, 0,
};

/*
 * Creating and loading VMs (a restored COM1 re-asserts its IRQ; a
 * --restore-wait process creates its VM on the loop, its filter on), the
 * devices' eventfds wired to KVM, the tap and the disk's size.
 */
static const unsigned long i_vm_setup[] = {
	KVM_CREATE_VM, KVM_GET_API_VERSION, KVM_CHECK_EXTENSION, KVM_GET_VCPU_MMAP_SIZE,
	KVM_CREATE_VCPU, KVM_GET_SUPPORTED_CPUID, KVM_SET_CPUID2, KVM_SET_SIGNAL_MASK,
	KVM_SET_IDENTITY_MAP_ADDR, KVM_SET_TSS_ADDR, KVM_CREATE_IRQCHIP, KVM_CREATE_PIT2,
	KVM_GET_TSC_KHZ, KVM_SET_TSC_KHZ, KVM_SET_USER_MEMORY_REGION, KVM_SET_REGS, KVM_SET_SREGS,
	KVM_SET_FPU, KVM_SET_XSAVE, KVM_SET_XCRS, KVM_SET_DEBUGREGS, KVM_SET_LAPIC, KVM_SET_MSRS,
	KVM_SET_VCPU_EVENTS, KVM_SET_MP_STATE, KVM_SET_CLOCK, KVM_SET_IRQCHIP, KVM_SET_PIT2,
	KVM_IRQ_LINE, KVM_IOEVENTFD, KVM_IRQFD, TUNSETIFF, SIOCGIFFLAGS, SIOCSIFFLAGS,
	BLKGETSIZE64, 0,
};

/*
 * timer_*: the throttle's slice timer (vcpu_throttle.c), which only
 * kicks the thread itself; made before the filter, under its starter's.
 */
const struct seccomp_kind seccomp_kind_vcpu = {.name = "vcpu",
	.groups = {seccomp_calls_base, (const char *const[]){"rt_sigtimedwait", "timer_create",
		   "timer_settime", "timer_delete", NULL}},
	.ioctls = {i_vcpu_run}};

const struct seccomp_kind seccomp_kind_device = {.name = "device",
	.groups = {seccomp_calls_base, seccomp_calls_device}};

const struct seccomp_kind seccomp_part_vm_setup = {.name = "vm setup", .ioctls = {i_vm_setup}};
/* clang-format on */
