/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio_dev_state.c - a virtio device's state: its transport and queues
 * (virtio_mmio_state.c's blob) under the device's lock, and the part
 * (state_part.h) that puts device i in the VM blob's section VIRTIOi, its
 * component the device's kind (virtio-blk, virtio-net).
 */
#include "state_part.h"
#include "virtio_dev.h"
#include "vm.h"
#include "vm_struct.h"
#include "vm_state.h"

#include <errno.h>

size_t virtio_dev_state_size(const struct virtio_dev *d)
{
	return virtio_mmio_state_size(&d->t);
}

size_t virtio_dev_save(struct virtio_dev *d, uint8_t *buf)
{
	size_t n;

	pthread_mutex_lock(&d->lock);
	n = virtio_mmio_save(&d->t, buf);
	pthread_mutex_unlock(&d->lock);
	return n;
}

int virtio_dev_check(struct virtio_dev *d, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	int ret;

	pthread_mutex_lock(&d->lock);
	ret = virtio_mmio_check(&d->t, d->mem, buf, len, err, errlen);
	pthread_mutex_unlock(&d->lock);
	return ret;
}

int virtio_dev_load(struct virtio_dev *d, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	int ret;

	pthread_mutex_lock(&d->lock);
	ret = virtio_mmio_load(&d->t, d->mem, buf, len, err, errlen);
	if (!ret) {
		/*
		 * The driver may be waiting for used entries pushed before the
		 * save whose interrupt the source sent into a VM that stopped:
		 * the unpark sweep sends one, and the device type re-arms.
		 */
		d->just_loaded = true;
		d->io_wanted = false;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

/* ---- The part: device i is section VIRTIOi ---- */

#define BLOB_MAX (VIRTIO_MMIO_STATE_FIXED + VIRTIO_MMIO_MAX_QUEUES * VIRTQ_STATE_SIZE)

/* A device's blob: the transport's 32 bytes and 1..VIRTIO_MMIO_MAX_QUEUES queue blobs. */
#define SPEC(i, n)                                                                                 \
	{                                                                                          \
		VM_SEC_VIRTIO_BASE + (i), n, VIRTIO_MMIO_STATE_FIXED + VIRTQ_STATE_SIZE, BLOB_MAX, \
		    false, VIRTQ_STATE_SIZE, 0                                                     \
	}
/* Present exactly when the VM has the device (check below); the kind says the component. */
static const struct state_section_spec specs[] = {SPEC(0, "VIRTIO0"), SPEC(1, "VIRTIO1")};
_Static_assert(sizeof(specs) / sizeof(specs[0]) == DEVICES_MAX, "one section per device");

static unsigned count(const struct vm *vm)
{
	return vm->devices.n;
}

static uint16_t comp(const struct vm *vm, unsigned i)
{
	return vm->devices.dev[i]->ops->state_comp;
}

static int save(struct vm *vm, unsigned i, const struct state_form *f, struct state_buf *out,
		char *err, size_t errlen)
{
	uint8_t blob[BLOB_MAX];

	(void)f; /* version 1 is the only one */
	(void)err;
	(void)errlen;
	/* The devices are parked with the vCPUs (vm_pause()): no request is in flight. */
	state_buf_put_section(out, VM_SEC_VIRTIO_BASE + i, blob,
			      (uint32_t)virtio_dev_save(vm->devices.dev[i], blob));
	return 0;
}

/*
 * Checked whole against the device this VM built from the same config
 * (id, queue count, features it offers, rings in RAM) before it changes.
 */
static int check(struct vm *vm, unsigned i, const struct state_part_in *in, char *err,
		 size_t errlen)
{
	const struct state_section *s = &in->sec[0];
	uint16_t c = comp(vm, i);
	char why[160];
	int ret;

	if (!s->present)
		return state_fail(-EINVAL, err, errlen,
				  "section VIRTIO%u: missing, and this VM has that device (the "
				  "config's [disk] and [net] must match the VM's)",
				  i);
	/* Framing 2 says no kind: the device's own, which the config decided. */
	if (s->comp && s->comp != c)
		return state_fail(-EINVAL, err, errlen,
				  "section VIRTIO%u: %s state, and this VM's device %u is %s", i,
				  state_comp_get(s->comp)->name, i, state_comp_get(c)->name);
	ret = virtio_dev_check(vm->devices.dev[i], s->payload, s->len, why, sizeof(why));
	if (ret)
		return state_fail(ret, err, errlen, "section VIRTIO%u: %s", i, why);
	return 0;
}

/* Last of the VM blob. The I/O thread is parked; its first unpark sends the interrupt the state
 * owes. */
static int load(struct vm *vm, unsigned i, const struct state_part_in *in, char *err, size_t errlen)
{
	char why[160];
	int ret = virtio_dev_load(vm->devices.dev[i], in->sec[0].payload, in->sec[0].len, why,
				  sizeof(why));

	if (ret)
		return state_fail(ret, err, errlen, "section VIRTIO%u: %s", i, why);
	return 0;
}

const struct state_part virtio_part = {
    .name = "virtio",
    .comps = {STATE_COMP_VIRTIO_BLK, STATE_COMP_VIRTIO_NET},
    .blob = STATE_PART_VM,
    .specs = specs,
    .nspecs = DEVICES_MAX,
    .count = count,
    .comp = comp,
    .save = save,
    .check = check,
    .load = load,
};
