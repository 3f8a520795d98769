/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_dev.h - one virtio-mmio device at run time: its transport model
 * (virtio_mmio.h), its lock, its I/O thread, and the KVM plumbing that
 * connects it to the guest (an ioeventfd per queue for QueueNotify, an
 * irqfd for its interrupt). The device types (virtio_blk.c, virtio_net.c)
 * fill in struct virtio_dev_ops; devices.c places them in the VM.
 *
 * Threads and locks. d->lock is the device's only lock, a leaf:
 *   - a vCPU thread takes it in virtio_dev_mmio() (a register access);
 *   - the device's I/O thread takes it around all of its queue work (the
 *     ops' process/fd_ready run with it held), so a request is never half
 *     done while someone else holds the lock;
 *   - the main or migration thread takes it in virtio_dev_park(): once the
 *     I/O thread acknowledged, it waits in the park, no request is in
 *     flight and the transport and queues are stable for save/load.
 * Queue notifications that arrive through an ioeventfd wait in the eventfd
 * while the thread is parked; every unpark also processes each ready queue
 * once, so a restored or migrated device picks up what the driver made
 * available before the state was saved.
 *
 * Without KVM (vm_fd < 0: unit tests), the kick and interrupt eventfds are
 * plain eventfds nobody registered: virtio_dev_mmio() writes a kick's
 * eventfd itself, which is also what it does when a QueueNotify reaches it
 * as an MMIO exit because no ioeventfd matched.
 *
 * Errors: library calls return 0 or -errno with one line in err. A guest's
 * misuse is never an error of the VMM: a broken ring sets the transport's
 * DEVICE_NEEDS_RESET (virtio 1.2, 2.1.2) and the device waits for a reset.
 */
#ifndef VMM_VIRTIO_DEV_H
#define VMM_VIRTIO_DEV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_mem.h"
#include "state_versions.h"
#include "virtio_mmio.h"

struct virtio_dev;

struct virtio_dev_ops {
	const char *kind;    /* "blk", "net": messages and thread names */
	uint16_t state_comp; /* its state's component (state_versions.h) */
	/* I/O thread, lock held: the driver notified queue q (or an unpark). */
	void (*process)(struct virtio_dev *d, unsigned q);
	/* I/O thread, lock held: d->io_fd is readable (a tap's frame). */
	void (*fd_ready)(struct virtio_dev *d);
	/* I/O thread, lock held: about to park (settle what the backend buffers). */
	void (*quiesce)(struct virtio_dev *d);
	/* I/O thread, lock held: just unparked after virtio_dev_load() (announce). */
	void (*loaded)(struct virtio_dev *d);
	/* vCPU thread, lock held: the driver reset the device. */
	void (*reset)(struct virtio_dev *d);
	/* Main thread, thread stopped: frees impl and closes the backend. */
	void (*destroy)(struct virtio_dev *d);
};

struct virtio_dev {
	struct virtio_mmio t; /* the transport and its queues, under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* park handshakes */
	struct guest_mem *mem;
	unsigned index; /* in the VM's device list: its state section and IRQ */
	uint64_t base;	/* MMIO window, VIRTIO_MMIO_WINDOW bytes */
	uint32_t irq;	/* IOAPIC pin (ISA IRQ) */
	int vm_fd;	/* -1: no KVM (tests) */
	int irq_fd;	/* eventfd bound to irq with KVM_IRQFD */
	int kick_fd[VIRTIO_MMIO_MAX_QUEUES]; /* eventfds bound to QueueNotify = q */
	int ctl_fd;			     /* eventfd: wakes the I/O thread to park or stop */
	int io_fd;			     /* the backend's pollable fd (a tap), or -1 */
	bool io_wanted;			     /* poll io_fd (the net device has RX buffers) */
	bool thread_started, park_req, parked, stop_req, just_loaded;
	bool seccomp; /* filter the I/O thread (the VM's [sandbox] seccomp) */
	pthread_t thread;
	const struct virtio_dev_ops *ops;
	void *impl;
	/* Counters for status and tests, under lock. */
	uint64_t requests, interrupts, errors;
};

/*
 * Sets d up: the transport (virtio_mmio_init(p)), the eventfds and, when
 * vm_fd >= 0, KVM_IOEVENTFD for each queue and KVM_IRQFD for irq. The
 * caller has set d->ops and d->impl and allocated d (about 36 KiB).
 * Main thread. On failure everything this call made is undone.
 */
int virtio_dev_init(struct virtio_dev *d, const struct virtio_mmio_params *p, struct guest_mem *mem,
		    int vm_fd, unsigned index, uint64_t base, uint32_t irq, char *err,
		    size_t errlen);

/* Stops the thread (if started), unbinds the fds, calls ops->destroy. Main thread. */
void virtio_dev_destroy(struct virtio_dev *d);

/* Starts the I/O thread, parked when `parked` (a target, a restore). Main thread. */
int virtio_dev_start(struct virtio_dev *d, bool parked, char *err, size_t errlen);

/*
 * Parks the I/O thread and waits until it is parked (between two requests,
 * after ops->quiesce). Then the caller may save or load. Any thread but the
 * device's own and a vCPU's; returns at once when the thread is not running.
 */
void virtio_dev_park(struct virtio_dev *d);
/* Lets it run again; it first processes every ready queue once. */
void virtio_dev_unpark(struct virtio_dev *d);

/*
 * A vCPU thread's MMIO access at `offset` into the window. A read fills
 * data[0..len) (little endian; 0 for what is not a register); a write
 * takes it from there.
 */
void virtio_dev_mmio(struct virtio_dev *d, uint64_t offset, bool is_write, uint8_t *data,
		     uint32_t len);

/*
 * The I/O thread, lock held: after pushing used elements to queue q
 * (old_used = its used index before them), raises the used-buffer
 * interrupt when the driver wants one; `force` raises it whatever the
 * driver's suppression says (a loaded device's first notification).
 */
void virtio_dev_notify(struct virtio_dev *d, unsigned q, uint16_t old_used, bool force);
/*
 * The I/O thread, lock held: queue q has more than one wakeup's batch
 * waiting; come back to it after a look at the control fd (park, stop).
 * Also the vCPU's QueueNotify when no ioeventfd took it.
 */
void virtio_dev_kick(struct virtio_dev *d, unsigned q);
/*
 * The I/O thread, lock held: vq was found empty. With EVENT_IDX the driver
 * notifies only when it moves avail->idx past avail_event, so this sets
 * avail_event to the next entry (notify me at your next buffer) and then
 * looks once more: a buffer the driver added before it could see that
 * came with no notification. True when there is more to take now; false
 * without EVENT_IDX (the driver notifies every buffer unless the device
 * asked otherwise, which it never does).
 */
bool virtio_dev_rearm(struct virtio_dev *d, struct virtq *vq);
/* The I/O thread, lock held: the queue is broken (DEVICE_NEEDS_RESET + config interrupt). */
void virtio_dev_broken(struct virtio_dev *d, unsigned q);

/* What the API shows of a device (any thread; takes the device's lock). */
struct virtio_dev_stats {
	const char *kind;		       /* "blk", "net" */
	uint64_t base;			       /* MMIO window */
	uint32_t irq;			       /* GSI */
	uint32_t status;		       /* the transport's Status register */
	uint64_t requests, interrupts, errors; /* since this process created the device */
};
void virtio_dev_stats(struct virtio_dev *d, struct virtio_dev_stats *out);

/*
 * State (docs/state-format.md "VIRTIO_MMIO"): the transport's blob. Device
 * type state, when one is added, follows it. Parked or never started
 * (virtio_dev_state.c, beside the device's part of the VM's state).
 * virtio_dev_check() is the load's check alone: it changes nothing.
 */
size_t virtio_dev_state_size(const struct virtio_dev *d);
size_t virtio_dev_save(struct virtio_dev *d, uint8_t *buf);
int virtio_dev_check(struct virtio_dev *d, const uint8_t *buf, size_t len, char *err,
		     size_t errlen);
int virtio_dev_load(struct virtio_dev *d, const uint8_t *buf, size_t len, char *err, size_t errlen);

#endif /* VMM_VIRTIO_DEV_H */
