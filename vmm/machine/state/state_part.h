/* SPDX-License-Identifier: Apache-2.0 */
/*
 * state_part.h - one component's state as a record of its own: which
 * sections it writes, how it saves them, how it checks a blob's against
 * this VM and host before anything changes, and how it loads them. Each
 * record is defined beside its component (the interrupt chips and PIT in
 * irqchip_state.c, the clock in clock_state.c, the serial port in
 * serial_state.c, each virtio device in virtio_dev_state.c, each vCPU in
 * vcpu_state.c, the CPU features in cpu_features.c); vm_state.c holds the
 * one order they are saved and loaded in (vm_state_parts()) and the loop
 * every path that moves a VM runs: migration, snapshot, local upgrade.
 *
 * A section carries its component's version (its VERSIONS entry, or 1 in
 * framing 2): check and load are handed it, so that a part can read an
 * older form of its own state; state_part_check() refuses a version the
 * component's row in state_comps[] does not read, naming both.
 *
 * Contract: as vm_state.h's. save and load only with the vCPUs out of
 * KVM_RUN (paused or never run), from a thread that is not a vCPU's;
 * check changes nothing and may run at any point before load.
 */
#ifndef VMM_STATE_PART_H
#define VMM_STATE_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "state_buf.h"
#include "state_versions.h"

struct vm;

/* Where a part's state travels. */
enum state_part_blob {
	STATE_PART_NONE = 0, /* in no blob: the config carries it (the CPU features) */
	STATE_PART_VM,	     /* sections of the VM blob (vm_state_save_form()) */
	STATE_PART_VCPU,     /* a blob of its own per instance (a vCPU's) */
};

/* A part's sections in the VM blob, at most (the interrupt chips and the PIT). */
#define STATE_PART_SECS_MAX 4u
/* The VM blob's sections, every part's together, at most. */
#define STATE_PART_VM_SECS_MAX 16u

/* What check and load are given of one instance. */
struct state_part_in {
	/* STATE_PART_VM: the instance's sections as state_parse() found them, in spec order. */
	const struct state_section *sec;
	/* STATE_PART_VCPU: the instance's whole blob. */
	const void *blob;
	size_t len;
	/*
	 * STATE_PART_VM: the component's version its sections are in (their
	 * VERSIONS entries; framing 2: 1). 0 for the others: a vCPU blob
	 * carries its own VERSIONS section, the config none.
	 */
	uint16_t version;
};

struct state_part {
	const char *name; /* "irqchip": messages, tests */
	/* The components it carries, 0-ended: a virtio device's is its kind's. */
	uint16_t comps[3];
	enum state_part_blob blob;
	/*
	 * STATE_PART_VM: its section types, in the order they are written and
	 * loaded. With count set, instance i's section is specs[i] (one each);
	 * without, the one instance owns them all.
	 */
	const struct state_section_spec *specs;
	unsigned nspecs;
	/* How many instances vm has (vCPUs, devices); NULL: exactly one. */
	unsigned (*count)(const struct vm *vm);
	/* Instance i's component; NULL: comps[0]. */
	uint16_t (*comp)(const struct vm *vm, unsigned i);
	/*
	 * Writes instance i's state in form f: STATE_PART_VM appends its
	 * sections to out, STATE_PART_VCPU writes a whole blob into its own
	 * out. NULL: nothing to write (the config carries it). 0 or -errno,
	 * one line in err.
	 */
	int (*save)(struct vm *vm, unsigned i, const struct state_form *f, struct state_buf *out,
		    char *err, size_t errlen);
	/*
	 * Whether in can be loaded into instance i of vm, on this host: 0 or
	 * -EINVAL (-ENOTSUP: the host lacks something) with one line in err.
	 * Changes nothing.
	 */
	int (*check)(struct vm *vm, unsigned i, const struct state_part_in *in, char *err,
		     size_t errlen);
	/* Applies a checked in; -errno when KVM refuses. NULL: nothing to apply. */
	int (*load)(struct vm *vm, unsigned i, const struct state_part_in *in, char *err,
		    size_t errlen);
};

/* The parts, each beside its component. */
extern const struct state_part cpu_features_part; /* cpu/cpu_features.c */
extern const struct state_part irqchip_part;	  /* state/irqchip_state.c */
extern const struct state_part clock_part;	  /* state/clock_state.c */
extern const struct state_part serial_part;	  /* devices/serial_state.c */
extern const struct state_part virtio_part;	  /* devices/virtio/virtio_dev_state.c */
extern const struct state_part vcpu_part;	  /* cpu/vcpu_state.c */

/* The parts in the one order they are checked, saved and loaded (vm_state.c). */
const struct state_part *const *vm_state_parts(unsigned *n);

/* Instances of p in vm; instance i's component. */
unsigned state_part_count(const struct state_part *p, const struct vm *vm);
uint16_t state_part_comp(const struct state_part *p, const struct vm *vm, unsigned i);

/*
 * Refuses a version (in->version, when not 0) the component comp does not
 * read (its state_comps[] row's oldest_read..newest), naming the part, the
 * component and both; then p->check. Touches vm only through p->check.
 */
int state_part_check(const struct state_part *p, struct vm *vm, unsigned i, uint16_t comp,
		     const struct state_part_in *in, char *err, size_t errlen);

#endif /* VMM_STATE_PART_H */
