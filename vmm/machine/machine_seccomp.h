/* SPDX-License-Identifier: Apache-2.0 */
/*
 * machine_seccomp.h - the machine's part of the seccomp policy
 * (vmm/util/seccomp_policy.h): the kinds of the threads the machine runs
 * (vcpu, device) and the calls its code makes on a caller's thread, which
 * the kinds above it name in their lists. The front end gathers these
 * into the process's policy (frontend/frontend_seccomp.h).
 */
#ifndef VMM_MACHINE_SECCOMP_H
#define VMM_MACHINE_SECCOMP_H

#include "seccomp_policy.h"

/* KVM_RUN and the serial port (KVM_IRQ_LINE): vcpu_thread(). */
extern const struct seccomp_kind seccomp_kind_vcpu;
/* A virtio device's I/O thread (disk file, tap): virtio_dev.c. */
extern const struct seccomp_kind seccomp_kind_device;

#define SECCOMP_THREAD_VCPU   (&seccomp_kind_vcpu)
#define SECCOMP_THREAD_DEVICE (&seccomp_kind_device)

/*
 * Not a kind of thread: what creating and loading a VM does on the thread
 * that calls vm_create() or loads a state (the front end's main), for
 * that kind's `with`.
 */
extern const struct seccomp_kind seccomp_part_vm_setup;

/* A virtio device's I/O: its disk file, its tap, its eventfds (NULL-terminated). */
extern const char *const seccomp_calls_device[];
/*
 * Saving a VM's state and its dirty log (vm_state.h, the memslots' dirty
 * logging), for the kinds that save one (0-terminated).
 */
extern const unsigned long seccomp_ioctls_vm_save[];

#endif /* VMM_MACHINE_SECCOMP_H */
