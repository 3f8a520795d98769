/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_dev.c - a virtio-mmio device's run time: the KVM bindings
 * (ioeventfd per queue, irqfd), the I/O thread and its park handshake, the
 * vCPU's register accesses and the device's state blob. The contracts are
 * in virtio_dev.h; what a request does is the device type's.
 */
#include "virtio_dev.h"

#include <errno.h>
#include <linux/kvm.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "machine_seccomp.h"

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* KVM_IOEVENTFD for QueueNotify = q (assign or, with deassign, remove). */
static int bind_kick(struct virtio_dev *d, unsigned q, bool deassign)
{
	struct kvm_ioeventfd io = {
	    .datamatch = q,
	    .addr = d->base + VIRTIO_MMIO_QUEUE_NOTIFY,
	    .len = 4,
	    .fd = d->kick_fd[q],
	    .flags = KVM_IOEVENTFD_FLAG_DATAMATCH | (deassign ? KVM_IOEVENTFD_FLAG_DEASSIGN : 0),
	};

	return ioctl(d->vm_fd, KVM_IOEVENTFD, &io) < 0 ? -errno : 0;
}

static int bind_irq(struct virtio_dev *d, bool deassign)
{
	struct kvm_irqfd irqfd = {
	    .fd = (uint32_t)d->irq_fd,
	    .gsi = d->irq,
	    .flags = deassign ? KVM_IRQFD_FLAG_DEASSIGN : 0,
	};

	return ioctl(d->vm_fd, KVM_IRQFD, &irqfd) < 0 ? -errno : 0;
}

static void unbind(struct virtio_dev *d)
{
	if (d->vm_fd < 0)
		return;
	for (unsigned q = 0; q < d->t.nqueues; q++)
		if (d->kick_fd[q] >= 0)
			bind_kick(d, q, true);
	if (d->irq_fd >= 0)
		bind_irq(d, true);
}

/* The eventfds, the lock and the condition (KVM's bindings are gone already). */
static void release(struct virtio_dev *d)
{
	for (unsigned q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++)
		close_fd(&d->kick_fd[q]);
	close_fd(&d->irq_fd);
	close_fd(&d->ctl_fd);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
}

int virtio_dev_init(struct virtio_dev *d, const struct virtio_mmio_params *p, struct guest_mem *mem,
		    int vm_fd, unsigned index, uint64_t base, uint32_t irq, char *err,
		    size_t errlen)
{
	unsigned bound = 0;
	int ret;

	ret = virtio_mmio_init(&d->t, p);
	if (ret) {
		snprintf(err, errlen, "%s device: bad transport parameters", d->ops->kind);
		return ret;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	d->mem = mem;
	d->vm_fd = vm_fd;
	d->index = index;
	d->base = base;
	d->irq = irq;
	d->io_fd = -1;
	d->irq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	d->ctl_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	for (unsigned q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++)
		d->kick_fd[q] = q < d->t.nqueues ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
	ret = d->irq_fd < 0 || d->ctl_fd < 0 ? -errno : 0;
	for (unsigned q = 0; !ret && q < d->t.nqueues; q++)
		ret = d->kick_fd[q] < 0 ? -errno : 0;
	if (ret) {
		snprintf(err, errlen, "%s device: eventfd: %s", d->ops->kind, strerror(-ret));
		goto fail;
	}
	if (vm_fd < 0)
		return 0;
	/* KVM_CAP_IOEVENTFD and KVM_CAP_IRQFD: kvm_check_caps() required both. */
	for (; bound < d->t.nqueues; bound++) {
		ret = bind_kick(d, bound, false);
		if (ret) {
			snprintf(
			    err, errlen, "%s device: KVM_IOEVENTFD at 0x%llx: %s", d->ops->kind,
			    (unsigned long long)(base + VIRTIO_MMIO_QUEUE_NOTIFY), strerror(-ret));
			goto fail;
		}
	}
	ret = bind_irq(d, false);
	if (ret) {
		snprintf(err, errlen, "%s device: KVM_IRQFD on IRQ %u: %s", d->ops->kind, irq,
			 strerror(-ret));
		goto fail;
	}
	return 0;
fail:
	for (unsigned q = 0; q < bound; q++)
		bind_kick(d, q, true);
	release(d);
	return ret;
}

/*
 * Adds 1 to one of the device's eventfds. EAGAIN: the counter is full of
 * pending events already, and one more adds nothing to a poll or an edge.
 */
static void poke(struct virtio_dev *d, int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		d->errors++;
}

static void wake(struct virtio_dev *d)
{
	poke(d, d->ctl_fd);
}

void virtio_dev_kick(struct virtio_dev *d, unsigned q)
{
	poke(d, d->kick_fd[q]);
}

static void signal_irq(struct virtio_dev *d)
{
	poke(d, d->irq_fd);
	d->interrupts++;
}

static void drain(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
}

/*
 * Lock held, after a park or a load: a loaded device first does what a
 * load owes (the type's announcement; an interrupt raised before the save
 * may have died with the source's VM), then every ready queue is processed
 * once (what was made available while parked sent its kick into an eventfd
 * that is drained anyway, and a loaded device must look at its rings
 * before the driver kicks again).
 */
static void sweep(struct virtio_dev *d)
{
	if (d->just_loaded) {
		d->just_loaded = false;
		if (d->ops->loaded)
			d->ops->loaded(d);
		if (d->t.int_status)
			signal_irq(d);
	}
	for (unsigned q = 0; q < d->t.nqueues; q++)
		if (d->t.queues[q].ready)
			d->ops->process(d, q);
}

/* The park point, lock held: settle the backend, say so, wait, sweep. */
static void park_point(struct virtio_dev *d)
{
	if (d->ops->quiesce)
		d->ops->quiesce(d);
	d->parked = true;
	pthread_cond_broadcast(&d->cond);
	while (d->park_req && !d->stop_req)
		pthread_cond_wait(&d->cond, &d->lock);
	d->parked = false;
	if (!d->stop_req)
		sweep(d);
}

static void *io_thread(void *arg)
{
	struct virtio_dev *d = arg;
	struct pollfd pfd[VIRTIO_MMIO_MAX_QUEUES + 2];
	unsigned nq = d->t.nqueues;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_DEVICE, d->seccomp);
	pthread_mutex_lock(&d->lock);
	for (;;) {
		if (d->park_req && !d->stop_req)
			park_point(d);
		if (d->stop_req)
			break;
		/* Loaded while never parked (started after the load): the same sweep. */
		if (d->just_loaded)
			sweep(d);
		for (unsigned q = 0; q < nq; q++)
			pfd[q] = (struct pollfd){.fd = d->kick_fd[q], .events = POLLIN};
		pfd[nq] = (struct pollfd){.fd = d->ctl_fd, .events = POLLIN};
		pfd[nq + 1] = (struct pollfd){.fd = d->io_wanted ? d->io_fd : -1, .events = POLLIN};
		pthread_mutex_unlock(&d->lock);
		int n = poll(pfd, nq + 2, -1);
		pthread_mutex_lock(&d->lock);
		if (n < 0)
			continue; /* EINTR: a signal meant for another thread */
		if (pfd[nq].revents)
			drain(d->ctl_fd);
		if (d->park_req || d->stop_req)
			continue; /* park first; the kicks stay counted in their eventfds */
		for (unsigned q = 0; q < nq; q++) {
			if (!pfd[q].revents)
				continue;
			drain(d->kick_fd[q]);
			d->ops->process(d, q);
		}
		if (pfd[nq + 1].revents && d->io_wanted && d->ops->fd_ready)
			d->ops->fd_ready(d);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int virtio_dev_start(struct virtio_dev *d, bool parked, char *err, size_t errlen)
{
	int ret;

	pthread_mutex_lock(&d->lock);
	d->park_req = parked;
	d->stop_req = false;
	pthread_mutex_unlock(&d->lock);
	ret = pthread_create(&d->thread, NULL, io_thread, d);
	if (ret) {
		snprintf(err, errlen, "starting the %s device's I/O thread: %s", d->ops->kind,
			 strerror(ret));
		return -ret;
	}
	d->thread_started = true;
	/*
	 * Started parked: return once it is, so that a load and an unpark that
	 * follow cannot slip past the park point (whose unpark side runs the
	 * post-load sweep).
	 */
	pthread_mutex_lock(&d->lock);
	while (parked && !d->parked && !d->stop_req)
		pthread_cond_wait(&d->cond, &d->lock);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

void virtio_dev_park(struct virtio_dev *d)
{
	pthread_mutex_lock(&d->lock);
	d->park_req = true;
	if (d->thread_started) {
		wake(d);
		while (!d->parked && !d->stop_req)
			pthread_cond_wait(&d->cond, &d->lock);
	}
	pthread_mutex_unlock(&d->lock);
}

void virtio_dev_unpark(struct virtio_dev *d)
{
	pthread_mutex_lock(&d->lock);
	d->park_req = false;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void virtio_dev_destroy(struct virtio_dev *d)
{
	if (d->thread_started) {
		pthread_mutex_lock(&d->lock);
		d->stop_req = true;
		pthread_cond_broadcast(&d->cond);
		wake(d);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->thread, NULL);
		d->thread_started = false;
	}
	unbind(d);
	release(d);
	/* Last: it frees the struct d lives in. */
	if (d->ops->destroy)
		d->ops->destroy(d);
}

void virtio_dev_notify(struct virtio_dev *d, unsigned q, uint16_t old_used, bool force)
{
	struct virtq *vq = virtio_mmio_queue(&d->t, q);

	if (!vq || (!force && !virtq_should_notify(vq, d->mem, old_used, vq->next_used_idx)))
		return;
	if (virtio_mmio_raise(&d->t, VIRTIO_MMIO_INT_VRING))
		signal_irq(d);
}

bool virtio_dev_rearm(struct virtio_dev *d, struct virtq *vq)
{
	if (!virtq_event_idx(vq) || virtq_set_avail_event(vq, d->mem))
		return false;
	return virtq_avail_pending(vq, d->mem);
}

void virtio_dev_broken(struct virtio_dev *d, unsigned q)
{
	(void)q;
	d->errors++;
	if (virtio_mmio_set_needs_reset(&d->t))
		signal_irq(d);
}

void virtio_dev_mmio(struct virtio_dev *d, uint64_t offset, bool is_write, uint8_t *data,
		     uint32_t len)
{
	uint32_t v = 0;

	if (!is_write) {
		pthread_mutex_lock(&d->lock);
		virtio_mmio_read(&d->t, offset, len, &v);
		pthread_mutex_unlock(&d->lock);
		for (uint32_t i = 0; i < len && i < 8; i++)
			data[i] = i < 4 ? (uint8_t)(v >> (8 * i)) : 0;
		return;
	}
	for (uint32_t i = 0; i < len && i < 4; i++)
		v |= (uint32_t)data[i] << (8 * i);
	pthread_mutex_lock(&d->lock);
	struct virtio_mmio_action a = virtio_mmio_write(&d->t, d->mem, offset, len, v);
	switch (a.ev) {
	case VIRTIO_MMIO_EV_NOTIFY:
		/* No ioeventfd matched (no KVM, or a width KVM did not match): kick by hand. */
		virtio_dev_kick(d, a.queue);
		break;
	case VIRTIO_MMIO_EV_DRIVER_OK:
		wake(d); /* the unpark-time sweep is not needed: queues are empty at DRIVER_OK */
		break;
	case VIRTIO_MMIO_EV_RESET:
		if (d->ops->reset)
			d->ops->reset(d);
		d->io_wanted = false;
		break;
	case VIRTIO_MMIO_EV_NONE:
	case VIRTIO_MMIO_EV_IGNORED:
		break;
	}
	pthread_mutex_unlock(&d->lock);
}

void virtio_dev_stats(struct virtio_dev *d, struct virtio_dev_stats *out)
{
	pthread_mutex_lock(&d->lock);
	*out = (struct virtio_dev_stats){.kind = d->ops->kind,
					 .base = d->base,
					 .irq = d->irq,
					 .status = d->t.status,
					 .requests = d->requests,
					 .interrupts = d->interrupts,
					 .errors = d->errors};
	pthread_mutex_unlock(&d->lock);
}
