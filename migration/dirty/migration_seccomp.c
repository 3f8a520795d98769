/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migration_seccomp.c - the engine's seccomp lists, as data (contracts in
 * migration/api/migration_seccomp.h). Each kind reads as the jobs its
 * thread does, from util's shared groups, the machine's (a VM's state
 * saved) and the engine's own below. Here, in vmm_dirty, because every
 * engine library that runs threads (source, incoming, persist) links it.
 */
#include "migration_seccomp.h"

#include <linux/kvm.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <sys/ioctl.h>

#include "machine_seccomp.h"

/* clang-format off */
/*
 * Writing a snapshot: positioned I/O on the files the front end opened
 * for it (it creates none: renames and removes in its directory), their
 * flush, the eventfds of a lazy restore's threads.
 */
static const char *const g_snapshot[] = {
	"pread64", "pwrite64", "preadv", "pwritev", "ftruncate", "fsync", "fdatasync", "renameat",
	"renameat2", "unlinkat", "eventfd2", "getrandom", "mincore", "poll", "ppoll", NULL,
};

/* Postcopy on the target. */
static const char *const g_uffd[] = {"userfaultfd", "eventfd2", NULL};

static const unsigned long i_dirty[] = {KVM_GET_DIRTY_LOG, KVM_CLEAR_DIRTY_LOG, 0};

/* Linux 6.1's /dev/userfaultfd ioctl, for build hosts with older headers. */
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif
/*
 * Postcopy: the userfaultfd, or /dev/userfaultfd where the syscall is off
 * (the target's main thread opens it when it answers VM_DESC with CAPS).
 */
static const unsigned long i_uffd[] = {
	UFFDIO_API, UFFDIO_REGISTER, UFFDIO_UNREGISTER, UFFDIO_COPY, UFFDIO_ZEROPAGE, UFFDIO_WAKE,
	USERFAULTFD_IOC_NEW, 0,
};

const struct seccomp_kind seccomp_kind_harvest = {.name = "harvest",
	.groups = {seccomp_calls_base, (const char *const[]){"mincore", NULL}},
	.ioctls = {i_dirty}};

const struct seccomp_kind seccomp_kind_send = {.name = "send",
	.groups = {seccomp_calls_base, seccomp_calls_sock_io, (const char *const[]){"mincore", NULL}},
	.ioctls = {i_dirty}};

const struct seccomp_kind seccomp_kind_urgent = {.name = "urgent",
	.groups = {seccomp_calls_base, seccomp_calls_sock_io}};

/*
 * The source's migration thread: sockets, its worker teams, dirty logging
 * and the VM's state saved, /proc/swaps and the boot id read, and the
 * switchover blackout's SCHED_FIFO for itself and the vCPU, harvest and
 * send threads.
 */
const struct seccomp_kind seccomp_kind_migration = {.name = "migration",
	.groups = {seccomp_calls_base, seccomp_calls_sock_io, seccomp_calls_sock_open,
		   seccomp_calls_threads, (const char *const[]){"mincore", "eventfd2", NULL},
		   seccomp_calls_read_files, seccomp_calls_sched},
	.ioctls = {seccomp_ioctls_vm_save}, .read_files = true,
	.with = {&seccomp_kind_harvest, &seccomp_kind_send, &seccomp_kind_urgent}};

/* TLS: verifying a peer's chain may read the CA directory. */
const struct seccomp_kind seccomp_kind_handshake = {.name = "handshake",
	.groups = {seccomp_calls_base, seccomp_calls_sock_io, seccomp_calls_read_files},
	.read_files = true};

/* geteuid: a UNIX peer must be this uid (or root) to hand a VM over. */
const struct seccomp_kind seccomp_kind_gate = {.name = "gate",
	.groups = {seccomp_calls_base, seccomp_calls_sock_io, seccomp_calls_threads,
		   seccomp_calls_accept, (const char *const[]){"geteuid", NULL}},
	.with = {&seccomp_kind_handshake}};

const struct seccomp_kind seccomp_kind_receive = {.name = "receive",
	.groups = {seccomp_calls_base, seccomp_calls_sock_io}, .ioctls = {i_uffd}};

const struct seccomp_kind seccomp_kind_fault = {.name = "fault",
	.groups = {seccomp_calls_base, seccomp_calls_sock_io}, .ioctls = {i_uffd}};

const struct seccomp_kind seccomp_kind_drop = {.name = "drop",
	.groups = {seccomp_calls_base, seccomp_calls_sock_io}, .ioctls = {i_uffd}};

/* Postcopy resume: takes the source's new connections (TLS), restarts receivers. */
const struct seccomp_kind seccomp_kind_control = {.name = "control",
	.groups = {seccomp_calls_base, seccomp_calls_sock_io, seccomp_calls_threads,
		   seccomp_calls_accept, seccomp_calls_read_files},
	.ioctls = {i_uffd}, .read_files = true, .with = {&seccomp_kind_receive}};

/*
 * The snapshot thread: state ioctls, the files the front end opened for
 * it, its page workers; a restore's page workers only read, and a lazy
 * restore's fault and prefetch threads place pages with userfaultfd.
 * Read-only opens: glibc's free() reads /proc/sys/vm/overcommit_memory
 * when it first shrinks a thread's heap.
 */
const struct seccomp_kind seccomp_kind_snapshot = {.name = "snapshot",
	.groups = {seccomp_calls_base, seccomp_calls_threads, seccomp_calls_read_files, g_snapshot,
		   seccomp_calls_sched},
	.ioctls = {seccomp_ioctls_vm_save, i_uffd}, .read_files = true,
	.with = {&seccomp_kind_snapshot, &seccomp_kind_harvest}};

const struct seccomp_kind seccomp_part_engine_main = {.name = "engine on main",
	.groups = {g_uffd}, .ioctls = {seccomp_ioctls_vm_save, i_uffd}};
/* clang-format on */
