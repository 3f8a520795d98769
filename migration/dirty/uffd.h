/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uffd.h - the userfaultfd calls postcopy needs on the target: register
 * guest RAM for MISSING faults, read fault events, and resolve a fault by
 * placing a page (UFFDIO_COPY) or a zero page (UFFDIO_ZEROPAGE) atomically,
 * which also wakes every thread (vCPU or VMM) waiting on it.
 */
#ifndef VMM_MIGRATION_UFFD_H
#define VMM_MIGRATION_UFFD_H

#include <stddef.h>
#include <stdint.h>

/*
 * Opens a userfaultfd for guest RAM (O_CLOEXEC | O_NONBLOCK) and checks
 * the API postcopy needs (UFFDIO_API, MISSING registration). Where the
 * syscall is refused (EPERM: a container's seccomp profile, or
 * vm.unprivileged_userfaultfd=0 for non-root; ENOSYS) it falls back to
 * /dev/userfaultfd (Linux >= 6.1, USERFAULTFD_IOC_NEW). -errno with one
 * line in err naming each way that failed. block: UFFD_BLOCK_* (test
 * hooks only, 0 otherwise) makes a way fail with EPERM without trying it.
 * Any thread whose seccomp kind allows userfaultfd, openat and the
 * USERFAULTFD_IOC_NEW/UFFDIO_API ioctls (the target's main thread).
 */
#define UFFD_BLOCK_SYSCALL 0x1u
#define UFFD_BLOCK_DEVICE  0x2u
int uffd_open(int *fd, unsigned block, char *err, size_t errlen);
int uffd_register(int fd, void *addr, uint64_t len);
int uffd_unregister(int fd, void *addr, uint64_t len);
/* Copies one page from src (page aligned) to dst; -EEXIST if already there. */
int uffd_copy(int fd, void *dst, const void *src, uint64_t len);
int uffd_zeropage(int fd, void *dst, uint64_t len);
/* Wakes threads waiting on [dst, dst+len) without placing anything. */
int uffd_wake(int fd, void *dst, uint64_t len);
/* Reads up to n fault addresses; returns how many (0: none ready), or -errno. */
int uffd_read_faults(int fd, uint64_t *addrs, int n);

#endif /* VMM_MIGRATION_UFFD_H */
