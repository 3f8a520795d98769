/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_state_parts.c - the VM's state parts (state_part.h) and their one
 * order (vm_state_parts()), without KVM: every component is some part's,
 * exactly once; the order keeps the restore's constraints (the interrupt
 * chips before the PIT before the clock, the serial port after the chips,
 * virtio last of the VM blob, the vCPUs after it, the CPU features first);
 * a part refuses a version its component does not read, naming both; and
 * a whole load checks every part before it changes anything (a VM with
 * fds -1: the first ioctl would fail with EBADF, a refusal is -EINVAL).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>

#include "serial.h"
#include "state_part.h"
#include "vm.h"
#include "vm_struct.h"
#include "vm_state.h"

static char err[256];

/* Position of a part in the order, or -1. */
static int pos_of(const struct state_part *p)
{
	unsigned n;
	const struct state_part *const *order = vm_state_parts(&n);

	for (unsigned k = 0; k < n; k++)
		if (order[k] == p)
			return (int)k;
	return -1;
}

/* Position of a section type in the VM blob (every VM part's specs, in order), or -1. */
static int sec_pos(uint32_t type)
{
	unsigned n;
	const struct state_part *const *order = vm_state_parts(&n);
	int at = 0;

	for (unsigned k = 0; k < n; k++) {
		if (order[k]->blob != STATE_PART_VM)
			continue;
		for (unsigned j = 0; j < order[k]->nspecs; j++, at++)
			if (order[k]->specs[j].type == type)
				return at;
	}
	return -1;
}

static void test_every_component_once(void **state)
{
	unsigned n, claimed[STATE_COMP_COUNT] = {0}, nsecs = 0;
	const struct state_part *const *order = vm_state_parts(&n);

	(void)state;
	assert_true(n > 0);
	for (unsigned k = 0; k < n; k++) {
		const struct state_part *p = order[k];

		assert_non_null(p->name);
		for (unsigned o = 0; o < k; o++) {
			assert_ptr_not_equal(order[o], p);
			assert_string_not_equal(order[o]->name, p->name);
		}
		assert_true(p->comps[0] != 0);
		for (unsigned c = 0; c < sizeof(p->comps) / sizeof(p->comps[0]) && p->comps[c];
		     c++) {
			assert_non_null(state_comp_get(p->comps[c]));
			claimed[p->comps[c] - 1]++;
		}
		/* A part with sections says so; the others have none. */
		assert_int_equal(p->blob == STATE_PART_VM, p->nspecs > 0);
		assert_true(p->nspecs <= (p->count ? DEVICES_MAX : STATE_PART_SECS_MAX));
		for (unsigned j = 0; j < p->nspecs; j++) {
			/* A spec names its part's component, or leaves it to the instance's. */
			assert_true(p->specs[j].comp == 0 || p->specs[j].comp == p->comps[0]);
			assert_int_equal(sec_pos(p->specs[j].type), (int)nsecs);
			nsecs++;
		}
		/* Only what is saved can be loaded; every part is checked or loaded. */
		assert_true(p->check || p->load);
		assert_int_equal(p->save == NULL, p->blob == STATE_PART_NONE);
	}
	for (unsigned c = 0; c < STATE_COMP_COUNT; c++)
		if (claimed[c] != 1)
			fail_msg("component %s is claimed by %u parts", state_comps[c].name,
				 claimed[c]);
	assert_true(nsecs <= STATE_PART_VM_SECS_MAX);
	assert_true(nsecs <= STATE_VERSIONS_MAX);
}

static void test_restore_order(void **state)
{
	unsigned n;
	const struct state_part *const *order = vm_state_parts(&n);
	unsigned nsecs = 0;
	int last_vm = -1;

	(void)state;
	/* The chips in chip_id order, then the PIT, then the clock. */
	assert_true(sec_pos(VM_SEC_PIC_MASTER) >= 0);
	assert_true(sec_pos(VM_SEC_PIC_MASTER) < sec_pos(VM_SEC_PIC_SLAVE));
	assert_true(sec_pos(VM_SEC_PIC_SLAVE) < sec_pos(VM_SEC_IOAPIC));
	assert_true(sec_pos(VM_SEC_IOAPIC) < sec_pos(VM_SEC_PIT2));
	assert_true(sec_pos(VM_SEC_PIT2) < sec_pos(VM_SEC_CLOCK));
	/* The UART re-asserts its IRQ into restored chips. */
	assert_true(sec_pos(VM_SEC_IOAPIC) < sec_pos(VM_SEC_SERIAL));
	/* Virtio last of the VM blob, device 0 before device 1. */
	for (unsigned k = 0; k < n; k++)
		if (order[k]->blob == STATE_PART_VM)
			last_vm = (int)k;
	assert_int_equal(last_vm, pos_of(&virtio_part));
	for (unsigned k = 0; k < n; k++)
		if (order[k]->blob == STATE_PART_VM)
			nsecs += order[k]->nspecs;
	for (unsigned i = 0; i < DEVICES_MAX; i++)
		assert_int_equal(sec_pos(VM_SEC_VIRTIO_BASE + i), (int)(nsecs - DEVICES_MAX + i));
	/* The vCPUs after the whole VM blob; the CPU features before anything. */
	for (unsigned k = 0; k < n; k++) {
		if (order[k]->blob == STATE_PART_VCPU)
			assert_true((int)k > last_vm);
		if (k > 0)
			assert_int_not_equal(order[k]->blob, STATE_PART_NONE);
	}
	assert_int_equal(pos_of(&cpu_features_part), 0);
	assert_true(pos_of(&vcpu_part) > last_vm);
}

/* A UART at reset, as SERIAL's payload. */
static size_t serial_reset(uint8_t *buf)
{
	struct serial_snapshot ss;

	memset(&ss, 0, sizeof(ss));
	ss.regs.lcr = 0x03;
	ss.regs.dll = 0x01;
	ss.regs.msr = 0xb0;
	ss.regs.fcr = 0x01;
	return serial_state_encode(&ss, buf);
}

/* A part refuses a version its component does not read, naming the component and both. */
static void test_version_refused(void **state)
{
	uint8_t buf[SERIAL_STATE_MAX];
	struct state_section sec = {.payload = buf, .present = true, .comp = STATE_COMP_SERIAL};
	struct state_part_in in = {.sec = &sec, .version = 1};
	const struct state_comp_info *c = state_comp_get(STATE_COMP_SERIAL);
	char want[128];

	(void)state;
	sec.len = (uint32_t)serial_reset(buf);
	assert_int_equal(
	    state_part_check(&serial_part, NULL, 0, STATE_COMP_SERIAL, &in, err, sizeof(err)), 0);
	in.version = (uint16_t)(c->newest + 1);
	assert_int_equal(
	    state_part_check(&serial_part, NULL, 0, STATE_COMP_SERIAL, &in, err, sizeof(err)),
	    -EINVAL);
	snprintf(want, sizeof(want), "serial state version %u, this vmm reads %u..%u",
		 c->newest + 1, c->oldest_read, c->newest);
	if (!strstr(err, want))
		fail_msg("\"%s\" lacks \"%s\"", err, want);
	/* The same gate in front of every part's check: the irqchip's too. */
	in.version = 0xffff;
	assert_int_equal(
	    state_part_check(&irqchip_part, NULL, 0, STATE_COMP_VM, &in, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "vm state version 65535"));
	/* A component this build does not know is named by its id. */
	in.version = 1;
	assert_int_equal(
	    state_part_check(&serial_part, NULL, 0, STATE_COMP_END, &in, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "unknown"));
}

/* Every VM part's sections, each its smallest valid payload, in the blob's order. */
static void vm_blob(struct state_buf *b)
{
	struct state_version_ent ents[STATE_PART_VM_SECS_MAX];
	uint8_t payload[4096];
	unsigned n, ne = 0;
	const struct state_part *const *order = vm_state_parts(&n);

	for (unsigned pass = 0; pass < 2; pass++) {
		if (pass == 1)
			state_buf_put_header_versions(b, STATE_KIND_VM, 1, STATE_FRAMING_NEWEST,
						      ents, ne);
		for (unsigned k = 0; k < n; k++) {
			const struct state_part *p = order[k];

			/* The VM under test has no devices: their sections stay out. */
			if (p->blob != STATE_PART_VM || p->count)
				continue;
			for (unsigned j = 0; j < p->nspecs; j++) {
				const struct state_section_spec *s = &p->specs[j];
				size_t len = s->min_len;

				if (pass == 0) {
					ents[ne++] =
					    (struct state_version_ent){s->type, p->comps[0], 1};
					continue;
				}
				memset(payload, 0, sizeof(payload));
				if (s->type >= VM_SEC_PIC_MASTER && s->type <= VM_SEC_IOAPIC)
					payload[0] = (uint8_t)(s->type - VM_SEC_PIC_MASTER);
				if (s->type == VM_SEC_SERIAL)
					len = serial_reset(payload);
				state_buf_put_section(b, s->type, payload, (uint32_t)len);
			}
		}
	}
	state_buf_put_section(b, STATE_SEC_END, NULL, 0);
}

static const uint8_t bad_vcpu[] = "not a vCPU blob";

static void vcpu_blob(const void *opaque, unsigned i, const void **blob, size_t *len)
{
	(void)opaque;
	(void)i;
	*blob = bad_vcpu;
	*len = sizeof(bad_vcpu);
}

/* A bad vCPU blob is refused before the VM blob's first ioctl: checks come first. */
static void test_check_before_load(void **state)
{
	static struct vm vm;
	struct state_buf b;
	int failed = -2;

	(void)state;
	memset(&vm, 0, sizeof(vm));
	vm.kvm_fd = vm.vm_fd = -1;
	vm.nvcpus = 1;
	state_buf_init(&b);
	vm_blob(&b);
	assert_int_equal(b.error, 0);
	/* The blob passes every check: alone, it reaches KVM (fd -1). */
	assert_int_equal(vm_state_load(&vm, b.data, b.len, err, sizeof(err)), -EBADF);
	assert_int_equal(
	    vm_load_whole(&vm, b.data, b.len, vcpu_blob, NULL, &failed, err, sizeof(err)), -EINVAL);
	assert_int_equal(failed, 0);
	assert_non_null(strstr(err, "vcpu state"));
	state_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_component_once),
	    cmocka_unit_test(test_restore_order),
	    cmocka_unit_test(test_version_refused),
	    cmocka_unit_test(test_check_before_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
