/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_vm_state.c - vCPU and VM state save/restore on /dev/kvm.
 *
 * Needs /dev/kvm: without it every test fails, unless VMM_TESTS_NO_KVM=1
 * says this build has no KVM (then they are skipped).
 *
 * roundtrip: VM A (created and set up for boot, never run) gets distinctive
 * register, MSR, LAPIC, debug register, irqchip, PIT and serial values; its
 * state is saved, loaded into VM B (created from the same config only) and
 * saved again from B. The two blobs must be byte for byte equal except
 * where KVM legitimately differs:
 *   - MSRS, IA32_TSC: B's value is A's plus the host time between A's save
 *     and B's save (the TSC keeps counting after it is written).
 *   - PIT2 count_load_time (each channel): the host ktime at which KVM
 *     (re)loaded the count: "now" on B.
 *   - CLOCK: clock is A's plus the time between load and save on B;
 *     flags/realtime/host_tsc describe the host at the time of the GET.
 *   - LAPIC TMCCT (0x390), the timer's current count: computed by KVM
 *     from host time on every GET.
 * malformed_*: truncation at every length, every section's length field
 * corrupted, unknown type, bad magic/version/kind, duplicate, missing and
 * extra sections, bad MSR counts and indexes, vCPU index mismatch, random
 * corruption of the framing: all refused with -EINVAL and a message (or,
 * for the random corruption, simply no crash); run under -DVMM_SANITIZE=ON
 * to check for out-of-bounds reads.
 * live: A runs the "dirty" workload (which verifies every page it wrote
 * before), is paused and saved; B gets A's RAM and state and must go on
 * with later passes without reporting corruption.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "state_buf.h"
#include "vcpu_state.h"
#include "frontend_seccomp.h"
#include "vm_struct.h" /* white-box: builds or inspects a VM by hand */
#include "vmm_abi.h"
#include "vm_state.h"

#define NVCPUS		   2
#define MSR_TSC		   0x10u
#define MSR_KERNEL_GS_BASE 0xc0000102u
#define MSR_LSTAR	   0xc0000082u
#define MSR_STAR	   0xc0000081u
#define MSR_SYSENTER_CS	   0x174u
#define MSR_PAT		   0x277u
#define MSR_TSC_DEADLINE   0x6e0u
#define APIC_TPR	   0x80
#define APIC_SVR	   0xf0
#define APIC_LVTT	   0x320
#define APIC_TMCCT	   0x390

static bool no_kvm_ok(void)
{
	const char *v = getenv("VMM_TESTS_NO_KVM");

	return v && strcmp(v, "1") == 0;
}

/* Fails (or skips with VMM_TESTS_NO_KVM=1) when /dev/kvm cannot be opened. */
static void require_kvm(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return;
	}
	if (no_kvm_ok())
		skip();
	fail_msg("/dev/kvm: %s (set VMM_TESTS_NO_KVM=1 to skip KVM tests)", strerror(errno));
}

static void make_cfg(struct vm_config *cfg, enum workload_kind w)
{
	char err[CONFIG_ERR_MAX];

	config_defaults(cfg);
	if (config_default_firmware(cfg, err, sizeof(err)))
		fail_msg("%s", err);
	cfg->memory = 64ull << 20;
	cfg->vcpus = NVCPUS;
	cfg->workload = w;
	cfg->working_set = 256ull << 10;
	cfg->heartbeat_ms = 0;
}

static void create_vm(struct vm *vm, const struct vm_config *cfg, int console_fd, bool boot)
{
	char err[CONFIG_ERR_MAX] = "";
	int ret = vm_create(vm, cfg, console_fd, err, sizeof(err));

	if (ret)
		fail_msg("vm_create: %s", err);
	if (boot) {
		ret = vm_boot_setup(vm, err, sizeof(err));
		if (ret)
			fail_msg("vm_boot_setup: %s", err);
	}
}

/* ---- blob walking (the blobs here are known to be well formed) ---- */

struct sec {
	uint32_t type, len;
	size_t off; /* of the {type, len} prefix */
};

static size_t list_sections(const struct state_buf *b, struct sec *out, size_t max)
{
	size_t off = 0, n = 0;

	while (off + 8 <= b->len && n < max) {
		memcpy(&out[n].type, b->data + off, 4);
		memcpy(&out[n].len, b->data + off + 4, 4);
		out[n].off = off;
		off += 8 + out[n].len;
		n++;
	}
	assert_int_equal(off, b->len);
	return n;
}

static uint8_t *find_sec(const struct state_buf *b, uint32_t type, uint32_t *len)
{
	struct sec s[32];
	size_t n = list_sections(b, s, 32);

	for (size_t i = 0; i < n; i++) {
		if (s[i].type == type) {
			if (len)
				*len = s[i].len;
			return b->data + s[i].off + 8;
		}
	}
	fail_msg("section 0x%x not in blob", type);
	return NULL;
}

static struct kvm_msr_entry *find_msr(const struct state_buf *b, uint32_t index)
{
	uint32_t len, count;
	uint8_t *p = find_sec(b, VCPU_SEC_MSRS, &len);

	memcpy(&count, p, 4);
	for (uint32_t i = 0; i < count; i++) {
		struct kvm_msr_entry *e = (struct kvm_msr_entry *)(p + 8 + 16 * i);

		if (e->index == index)
			return e;
	}
	return NULL;
}

/* ---- setting distinctive state on the source ---- */

static void set_msrs(struct vcpu *v, const uint32_t *idx, const uint64_t *val, uint32_t n)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[8];
	} m;

	memset(&m, 0, sizeof(m));
	m.hdr.nmsrs = n;
	for (uint32_t i = 0; i < n; i++) {
		m.e[i].index = idx[i];
		m.e[i].data = val[i];
	}
	assert_int_equal(ioctl(v->fd, KVM_SET_MSRS, &m), (int)n);
}

static void set_distinctive_vcpu(struct vcpu *v, uint64_t tag)
{
	struct kvm_regs regs;
	struct kvm_lapic_state lapic;
	struct kvm_debugregs dbg;
	uint32_t *reg;
	uint64_t tsc = 0;
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[1];
	} m = {.hdr.nmsrs = 1, .e[0].index = MSR_TSC};

	assert_int_equal(ioctl(v->fd, KVM_GET_REGS, &regs), 0);
	regs.rax = 0x1122334455667788ull ^ tag;
	regs.rbx = 0xa5a5a5a5deadbeefull ^ tag;
	regs.r15 = 0x0f0f0f0f0f0f0f0full + tag;
	regs.rip += 0x10 * tag;
	assert_int_equal(ioctl(v->fd, KVM_SET_REGS, &regs), 0);

	/* LAPIC: software enabled, TPR, timer in TSC-deadline mode (so the
	 * TSC_DEADLINE MSR sticks only if LAPIC is restored before MSRS). */
	assert_int_equal(ioctl(v->fd, KVM_GET_LAPIC, &lapic), 0);
	reg = (uint32_t *)(lapic.regs + APIC_SVR);
	*reg = 0x1ff;
	reg = (uint32_t *)(lapic.regs + APIC_TPR);
	*reg = 0x20 + (uint32_t)tag * 0x10;
	reg = (uint32_t *)(lapic.regs + APIC_LVTT);
	*reg = (2u << 17) | 0xec; /* TSC-deadline mode, vector 0xec, unmasked */
	assert_int_equal(ioctl(v->fd, KVM_SET_LAPIC, &lapic), 0);

	assert_int_equal(ioctl(v->fd, KVM_GET_MSRS, &m), 1);
	tsc = m.e[0].data;
	{
		const uint32_t idx[] = {MSR_KERNEL_GS_BASE, MSR_LSTAR, MSR_STAR,
					MSR_SYSENTER_CS,    MSR_PAT,   MSR_TSC_DEADLINE};
		const uint64_t val[] = {0xffff888012345000ull + tag * 0x1000,
					0xffffffff81a00000ull + tag,
					0x0023001000000000ull,
					0x10 + tag,
					0x0007010600070106ull,
					tsc + (1ull << 50)}; /* far in the future: never fires */

		set_msrs(v, idx, val, 6);
	}

	memset(&dbg, 0, sizeof(dbg));
	dbg.db[0] = 0x12345000 + tag;
	dbg.db[1] = 0x23456000;
	dbg.dr7 = 0x401; /* L0, bit 10 reads as 1 */
	assert_int_equal(ioctl(v->fd, KVM_SET_DEBUGREGS, &dbg), 0);
}

static void set_distinctive_vm(struct vm *vm)
{
	struct kvm_irqchip chip;
	struct kvm_pit_state2 pit;
	uint8_t v;

	memset(&chip, 0, sizeof(chip));
	chip.chip_id = KVM_IRQCHIP_PIC_MASTER;
	assert_int_equal(ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &chip), 0);
	chip.chip.pic.imr = 0xfa;
	chip.chip.pic.irq_base = 0x20;
	assert_int_equal(ioctl(vm->vm_fd, KVM_SET_IRQCHIP, &chip), 0);

	memset(&chip, 0, sizeof(chip));
	chip.chip_id = KVM_IRQCHIP_PIC_SLAVE;
	assert_int_equal(ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &chip), 0);
	chip.chip.pic.imr = 0xbf;
	chip.chip.pic.irq_base = 0x28;
	assert_int_equal(ioctl(vm->vm_fd, KVM_SET_IRQCHIP, &chip), 0);

	memset(&chip, 0, sizeof(chip));
	chip.chip_id = KVM_IRQCHIP_IOAPIC;
	assert_int_equal(ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &chip), 0);
	chip.chip.ioapic.redirtbl[5].bits = 0x10035; /* vector 0x35, masked */
	chip.chip.ioapic.id = 0;
	assert_int_equal(ioctl(vm->vm_fd, KVM_SET_IRQCHIP, &chip), 0);

	memset(&pit, 0, sizeof(pit));
	assert_int_equal(ioctl(vm->vm_fd, KVM_GET_PIT2, &pit), 0);
	pit.channels[2].count = 0x4321;
	pit.channels[2].mode = 3;
	pit.channels[2].rw_mode = 3;
	assert_int_equal(ioctl(vm->vm_fd, KVM_SET_PIT2, &pit), 0);

	/* COM1 as a guest would set it: scratch, IER, MCR. */
	v = 0x5a;
	serial_io(&vm->serial, VMM_COM1_PORT + 7, true, &v);
	v = 0x05;
	serial_io(&vm->serial, VMM_COM1_PORT + 1, true, &v);
	v = 0x0b;
	serial_io(&vm->serial, VMM_COM1_PORT + 4, true, &v);
	/* Console input the guest has not read: 'a' in RBR (FIFO off), 'b' queued. */
	assert_int_equal(serial_receive(&vm->serial, (const uint8_t *)"ab", 2), 2);
}

/* The whole VM saved by its one owner (vm_save_whole()), in this build's newest form. */
static void save_all(struct vm *vm, struct state_buf *vmb, struct state_buf *cpub)
{
	struct state_form f;
	struct vm_saved sv;
	char err[256] = "";
	int failed = -2;

	state_form_current(&f);
	if (vm_save_whole(vm, &f, &sv, &failed, err, sizeof(err)))
		fail_msg("vm_save_whole (blob %d): %s", failed, err);
	assert_int_equal(sv.nvcpus, vm->nvcpus);
	*vmb = sv.vm;
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		cpub[i] = sv.vcpu[i];
		assert_int_equal(cpub[i].error, 0);
	}
	free(sv.vcpu);
	assert_int_equal(vmb->error, 0);
}

static void cpu_blob(const void *opaque, unsigned i, const void **blob, size_t *len)
{
	const struct state_buf *cpub = opaque;

	*blob = cpub[i].data;
	*len = cpub[i].len;
}

/* Loaded by its one owner (vm_load_whole()): the VM's blob, then each vCPU's. */
static void load_all(struct vm *vm, struct state_buf *vmb, struct state_buf *cpub)
{
	char err[256] = "";
	int failed = -2;

	if (vm_load_whole(vm, vmb->data, vmb->len, cpu_blob, cpub, &failed, err, sizeof(err)))
		fail_msg("vm_load_whole (blob %d): %s", failed, err);
}

static void free_all(struct state_buf *vmb, struct state_buf *cpub, unsigned n)
{
	state_buf_free(vmb);
	for (unsigned i = 0; i < n; i++)
		state_buf_free(&cpub[i]);
}

/* Compares two blobs section by section, skipping `mask` byte ranges of one section type. */
struct mask {
	uint32_t type, off, len;
};

static void compare_blobs(const char *what, const struct state_buf *a, const struct state_buf *b,
			  const struct mask *masks, size_t nmasks)
{
	struct sec sa[32], sb[32];
	size_t na = list_sections(a, sa, 32), nb = list_sections(b, sb, 32);

	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		const uint8_t *pa = a->data + sa[i].off + 8, *pb = b->data + sb[i].off + 8;

		assert_int_equal(sa[i].type, sb[i].type);
		assert_int_equal(sa[i].len, sb[i].len);
		for (uint32_t k = 0; k < sa[i].len; k++) {
			bool masked = false;

			for (size_t m = 0; m < nmasks; m++)
				if (masks[m].type == sa[i].type && k >= masks[m].off &&
				    k < masks[m].off + masks[m].len)
					masked = true;
			if (!masked && pa[k] != pb[k])
				fail_msg("%s: section 0x%x differs at byte %u: 0x%02x vs 0x%02x",
					 what, sa[i].type, k, pa[k], pb[k]);
		}
	}
}

static void test_roundtrip(void **state)
{
	struct vm_config cfg;
	struct vm *a, *b;
	struct state_buf avm, bvm, acpu[NVCPUS], bcpu[NVCPUS];
	int null_fd;
	uint64_t tsc_hz;

	(void)state;
	require_kvm(); /* before anything is taken: a skip returns at once */
	a = calloc(1, sizeof(*a));
	b = calloc(1, sizeof(*b));
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_non_null(a);
	assert_non_null(b);
	make_cfg(&cfg, WORKLOAD_IDLE);
	create_vm(a, &cfg, null_fd, true);
	for (unsigned i = 0; i < a->nvcpus; i++)
		set_distinctive_vcpu(&a->vcpus[i], i + 1);
	set_distinctive_vm(a);
	save_all(a, &avm, acpu);

	create_vm(b, &cfg, null_fd, false);
	load_all(b, &avm, acpu);
	save_all(b, &bvm, bcpu);
	tsc_hz = (uint64_t)(a->tsc_khz ? a->tsc_khz : 1000000) * 1000;

	/* The values set above made it across. */
	for (unsigned i = 0; i < NVCPUS; i++) {
		const struct kvm_regs *r = (void *)find_sec(&bcpu[i], VCPU_SEC_REGS, NULL);
		const struct kvm_lapic_state *l = (void *)find_sec(&bcpu[i], VCPU_SEC_LAPIC, NULL);
		const struct kvm_debugregs *d =
		    (void *)find_sec(&bcpu[i], VCPU_SEC_DEBUGREGS, NULL);
		const struct kvm_sregs *s = (void *)find_sec(&bcpu[i], VCPU_SEC_SREGS, NULL);
		struct kvm_msr_entry *ta = find_msr(&acpu[i], MSR_TSC),
				     *tb = find_msr(&bcpu[i], MSR_TSC);
		struct kvm_msr_entry *gs = find_msr(&bcpu[i], MSR_KERNEL_GS_BASE);
		struct kvm_msr_entry *dl = find_msr(&bcpu[i], MSR_TSC_DEADLINE);
		uint32_t tpr;

		assert_int_equal(r->rax, 0x1122334455667788ull ^ (i + 1));
		assert_int_equal(r->rbx, 0xa5a5a5a5deadbeefull ^ (i + 1));
		assert_int_equal(r->r15, 0x0f0f0f0f0f0f0f0full + i + 1);
		assert_int_equal(s->efer & 0x500, 0x500); /* still in long mode */
		memcpy(&tpr, l->regs + APIC_TPR, 4);
		assert_int_equal(tpr, 0x20 + (i + 1) * 0x10);
		assert_int_equal(d->db[0], 0x12345000 + i + 1);
		assert_non_null(gs);
		assert_int_equal(gs->data, 0xffff888012345000ull + (i + 1) * 0x1000);
		assert_non_null(dl);
		assert_int_not_equal(dl->data, 0); /* needs LAPIC restored before MSRS */
		assert_non_null(ta);
		assert_non_null(tb);
		/* Guest time went on from A's value, not from B's creation. */
		assert_true(tb->data >= ta->data);
		assert_true(tb->data - ta->data < 5 * tsc_hz);
	}
	{
		const struct kvm_irqchip *pic = (void *)find_sec(&bvm, VM_SEC_PIC_MASTER, NULL);
		const struct kvm_irqchip *io = (void *)find_sec(&bvm, VM_SEC_IOAPIC, NULL);
		const struct kvm_pit_state2 *pit = (void *)find_sec(&bvm, VM_SEC_PIT2, NULL);
		const uint8_t *ss = find_sec(&bvm, VM_SEC_SERIAL, NULL);
		const struct kvm_clock_data *ca = (void *)find_sec(&avm, VM_SEC_CLOCK, NULL);
		const struct kvm_clock_data *cb = (void *)find_sec(&bvm, VM_SEC_CLOCK, NULL);

		assert_int_equal(pic->chip.pic.imr, 0xfa);
		assert_int_equal(io->chip.ioapic.redirtbl[5].bits, 0x10035);
		assert_int_equal(pit->channels[2].count, 0x4321);
		assert_int_equal(ss[7], 0x5a); /* SCR (docs/state-format.md) */
		assert_int_equal(ss[2], 0x05); /* IER */
		assert_int_equal(ss[13], 1);   /* fifo_len */
		assert_int_equal(ss[14], 1);   /* queue_len */
		assert_memory_equal(ss + 16, "ab", 2);
		assert_true(cb->clock >= ca->clock);
		assert_true(cb->clock - ca->clock < 5000000000ull);
	}

	/* Byte for byte, except what KVM computes from host time (see the top). */
	for (unsigned i = 0; i < NVCPUS; i++) {
		uint8_t *msrs = find_sec(&bcpu[i], VCPU_SEC_MSRS, NULL);
		struct kvm_msr_entry *tb = find_msr(&bcpu[i], MSR_TSC);
		struct mask m[] = {
		    {VCPU_SEC_MSRS, (uint32_t)((uint8_t *)&tb->data - msrs), 8},
		    {VCPU_SEC_LAPIC, APIC_TMCCT, 4},
		};

		compare_blobs("vcpu", &acpu[i], &bcpu[i], m, 2);
	}
	{
		struct mask m[4] = {
		    {VM_SEC_CLOCK, 0, sizeof(struct kvm_clock_data)},
		};

		for (int c = 0; c < 3; c++)
			m[1 + c] = (struct mask){
			    VM_SEC_PIT2,
			    (uint32_t)(offsetof(struct kvm_pit_state2, channels) +
				       c * sizeof(struct kvm_pit_channel_state) +
				       offsetof(struct kvm_pit_channel_state, count_load_time)),
			    8};
		compare_blobs("vm", &avm, &bvm, m, 4);
	}

	free_all(&avm, acpu, NVCPUS);
	free_all(&bvm, bcpu, NVCPUS);
	vm_destroy(a);
	vm_destroy(b);
	free(a);
	free(b);
	close(null_fd);
}

/* ---- malformed blobs ---- */

static struct vm *mal_vm;
static struct state_buf mal_vm_blob, mal_cpu_blob[NVCPUS];

static int mal_setup(void **state)
{
	struct vm_config cfg;
	char err[CONFIG_ERR_MAX];
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	(void)state;
	if (fd < 0)
		return 0; /* the test itself fails or skips */
	close(fd);
	mal_vm = calloc(1, sizeof(*mal_vm));
	make_cfg(&cfg, WORKLOAD_IDLE);
	if (!mal_vm)
		return -1;
	if (vm_create(mal_vm, &cfg, -1, err, sizeof(err)) ||
	    vm_boot_setup(mal_vm, err, sizeof(err))) {
		print_error("group setup: %s\n", err);
		return -1;
	}
	state_buf_init(&mal_vm_blob);
	if (vm_state_save(mal_vm, &mal_vm_blob))
		return -1;
	for (unsigned i = 0; i < NVCPUS; i++) {
		state_buf_init(&mal_cpu_blob[i]);
		if (vcpu_state_save(&mal_vm->vcpus[i], &mal_cpu_blob[i]))
			return -1;
	}
	return 0;
}

static int mal_teardown(void **state)
{
	(void)state;
	if (mal_vm) {
		free_all(&mal_vm_blob, mal_cpu_blob, NVCPUS);
		vm_destroy(mal_vm);
		free(mal_vm);
		mal_vm = NULL;
	}
	return 0;
}

typedef int (*load_fn)(const void *data, size_t len, char *err, size_t errlen);

static int load_vcpu0(const void *data, size_t len, char *err, size_t errlen)
{
	return vcpu_state_load(&mal_vm->vcpus[0], data, len, err, errlen);
}

static int load_vm(const void *data, size_t len, char *err, size_t errlen)
{
	return vm_state_load(mal_vm, data, len, err, errlen);
}

/* Loads a copy of exactly len bytes on the heap (so ASan sees any overread). */
static int load_copy(load_fn fn, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	uint8_t *copy = malloc(len ? len : 1);
	int ret;

	assert_non_null(copy);
	memcpy(copy, p, len);
	err[0] = '\0';
	ret = fn(copy, len, err, errlen);
	free(copy);
	return ret;
}

static void expect_einval(load_fn fn, const struct state_buf *b, const char *needle,
			  const char *why)
{
	char err[256];
	int ret = load_copy(fn, b->data, b->len, err, sizeof(err));

	if (ret != -EINVAL)
		fail_msg("%s: returned %d (%s), expected -EINVAL", why, ret, err);
	if (!err[0] || strchr(err, '\n'))
		fail_msg("%s: no one-line message", why);
	if (needle && !strstr(err, needle))
		fail_msg("%s: message \"%s\" lacks \"%s\"", why, err, needle);
}

static void dup_buf(struct state_buf *dst, const struct state_buf *src)
{
	state_buf_init(dst);
	state_buf_put(dst, src->data, src->len);
	assert_int_equal(dst->error, 0);
}

static const char *sec_name(uint32_t type)
{
	switch (type) {
	case STATE_SEC_HEADER:
		return "HEADER";
	case STATE_SEC_END:
		return "END";
	case VCPU_SEC_MP_STATE:
		return "MP_STATE";
	case VCPU_SEC_REGS:
		return "REGS";
	case VCPU_SEC_SREGS:
		return "SREGS";
	case VCPU_SEC_XSAVE:
		return "XSAVE";
	case VCPU_SEC_FPU:
		return "FPU";
	case VCPU_SEC_XCRS:
		return "XCRS";
	case VCPU_SEC_LAPIC:
		return "LAPIC";
	case VCPU_SEC_MSRS:
		return "MSRS";
	case VCPU_SEC_VCPU_EVENTS:
		return "VCPU_EVENTS";
	case VCPU_SEC_DEBUGREGS:
		return "DEBUGREGS";
	case VM_SEC_PIC_MASTER:
		return "PIC_MASTER";
	case VM_SEC_PIC_SLAVE:
		return "PIC_SLAVE";
	case VM_SEC_IOAPIC:
		return "IOAPIC";
	case VM_SEC_PIT2:
		return "PIT2";
	case VM_SEC_CLOCK:
		return "CLOCK";
	case VM_SEC_SERIAL:
		return "SERIAL";
	default:
		return NULL;
	}
}

/* The malformations common to both blobs. */
static void malformed_common(load_fn fn, const struct state_buf *good, uint32_t some_type)
{
	struct sec s[32];
	size_t n = list_sections(good, s, 32);
	struct state_buf b;
	char err[256];

	/* The good blob loads. */
	assert_int_equal(load_copy(fn, good->data, good->len, err, sizeof(err)), 0);

	/* Truncated at every length. */
	for (size_t len = 0; len < good->len; len++) {
		int ret = load_copy(fn, good->data, len, err, sizeof(err));

		if (ret != -EINVAL || !err[0])
			fail_msg("truncated to %zu of %zu bytes: %d", len, good->len, ret);
	}

	/* Every section's length field corrupted. */
	for (size_t i = 0; i < n; i++) {
		const uint32_t bad[] = {s[i].len + 1, s[i].len - 1, 0,		 s[i].len + 4096,
					0x7fffffff,   0xffffffff,   s[i].len * 2};
		const char *name = sec_name(s[i].type);

		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			char why[96];

			if (bad[k] == s[i].len)
				continue;
			dup_buf(&b, good);
			memcpy(b.data + s[i].off + 4, &bad[k], 4);
			snprintf(why, sizeof(why), "section %s length %u", name, bad[k]);
			/* Shrinking keeps the bytes in the blob: the message names the section. */
			expect_einval(fn, &b,
				      bad[k] < s[i].len && s[i].type != STATE_SEC_END ? name : NULL,
				      why);
			state_buf_free(&b);
		}
	}

	/* Unknown type in place of each section. */
	for (size_t i = 0; i < n; i++) {
		uint32_t t = 0x1ff;

		dup_buf(&b, good);
		memcpy(b.data + s[i].off, &t, 4);
		expect_einval(fn, &b, i == 0 ? NULL : "unknown section type 0x1ff", "unknown type");
		state_buf_free(&b);
	}

	/* Header: magic, major version, kind, a KVM structure size. */
	{
		struct {
			size_t off;
			uint32_t val;
			unsigned width;
			const char *needle;
		} h[] = {
		    {offsetof(struct state_header, magic), 0x12345678, 4, "magic"},
		    {offsetof(struct state_header, major), STATE_VERSION_MAJOR + 1, 2, "version"},
		    {offsetof(struct state_header, major), 0, 2, "version"},
		    {offsetof(struct state_header, kind), 7, 4, "kind"},
		    {offsetof(struct state_header, sizes) + 2 * STATE_SZ_LAPIC, 100, 2,
		     "kvm_lapic_state size 100"},
		};

		for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++) {
			dup_buf(&b, good);
			memcpy(b.data + 8 + h[i].off, &h[i].val, h[i].width);
			expect_einval(fn, &b, h[i].needle, h[i].needle);
			state_buf_free(&b);
		}
	}

	/* A minor version bump is accepted. */
	{
		uint16_t minor = STATE_VERSION_MINOR + 1;

		dup_buf(&b, good);
		memcpy(b.data + 8 + offsetof(struct state_header, minor), &minor, 2);
		assert_int_equal(load_copy(fn, b.data, b.len, err, sizeof(err)), 0);
		state_buf_free(&b);
	}

	/* Duplicate section (inserted before END), missing section, header not first. */
	for (size_t i = 1; i + 1 < n; i++) {
		/* Framing 3's VERSIONS (right after HEADER) is the framing's, not a component's. */
		bool versions = s[i].type == STATE_SEC_VERSIONS;
		const char *name = versions ? "VERSIONS" : sec_name(s[i].type);
		char needle[64];

		state_buf_init(&b);
		state_buf_put(&b, good->data, s[n - 1].off);
		state_buf_put(&b, good->data + s[i].off, 8 + s[i].len);
		state_buf_put(&b, good->data + s[n - 1].off, 8);
		snprintf(needle, sizeof(needle),
			 versions ? "section %s is not right after HEADER" : "duplicate section %s",
			 name);
		expect_einval(fn, &b, needle, needle);
		state_buf_free(&b);

		state_buf_init(&b);
		state_buf_put(&b, good->data, s[i].off);
		state_buf_put(&b, good->data + s[i].off + 8 + s[i].len,
			      good->len - (s[i].off + 8 + s[i].len));
		snprintf(needle, sizeof(needle), "missing section %s", name);
		/*
		 * XSAVE is optional to the framing (FPU may stand in) but listed in
		 * VERSIONS, which names what the blob lacks first.
		 */
		if (s[i].type == VCPU_SEC_XSAVE)
			snprintf(needle, sizeof(needle), "type 0x%x, which the blob does not hold",
				 VCPU_SEC_XSAVE);
		expect_einval(fn, &b, needle, needle);
		state_buf_free(&b);
	}
	state_buf_init(&b);
	state_buf_put(&b, good->data + s[1].off, good->len - s[1].off);
	expect_einval(fn, &b, "expected HEADER", "header not first");
	state_buf_free(&b);
	/* Duplicate HEADER. */
	state_buf_init(&b);
	state_buf_put(&b, good->data, 8 + s[0].len);
	state_buf_put(&b, good->data, good->len);
	expect_einval(fn, &b, "duplicate section HEADER", "duplicate header");
	state_buf_free(&b);

	/* Bytes after END; a second blob concatenated. */
	dup_buf(&b, good);
	state_buf_put(&b, "x", 1);
	expect_einval(fn, &b, "after section END", "trailing byte");
	state_buf_put(&b, good->data, good->len);
	expect_einval(fn, &b, "after section END", "two blobs");
	state_buf_free(&b);

	/* END with a payload, as the last section. */
	state_buf_init(&b);
	state_buf_put(&b, good->data, s[n - 1].off);
	state_buf_put_section(&b, STATE_SEC_END, "ab", 2);
	expect_einval(fn, &b, "END", "END with payload");
	state_buf_free(&b);

	/* The blob of the other kind. */
	(void)some_type;

	/* Random corruption of the framing: may load or not, must not crash. */
	srand(1234);
	for (int iter = 0; iter < 3000; iter++) {
		size_t i = (size_t)rand() % n;
		size_t span = i == 0 ? 8 + s[0].len : (s[i].type == VCPU_SEC_MSRS ? 8 + 8 + 16 : 8);
		size_t off = s[i].off + (size_t)rand() % span;

		dup_buf(&b, good);
		b.data[off] ^= (uint8_t)(1u << (rand() % 8));
		if (rand() % 2)
			b.data[off] = (uint8_t)rand();
		load_copy(fn, b.data, b.len, err, sizeof(err));
		state_buf_free(&b);
	}
}

static void test_malformed_vcpu(void **state)
{
	const struct state_buf *good = &mal_cpu_blob[0];
	struct state_buf b;
	uint8_t *p;
	uint32_t len, v;

	(void)state;
	require_kvm();
	assert_non_null(mal_vm);
	malformed_common(load_vcpu0, good, VCPU_SEC_REGS);

	/* A VM blob is not a vCPU blob. */
	expect_einval(load_vcpu0, &mal_vm_blob, "kind", "vm blob as vcpu");
	/* The state of vCPU 1 does not load into vCPU 0. */
	expect_einval(load_vcpu0, &mal_cpu_blob[1], "vCPU 1", "vcpu index");

	/* MSRS: count beyond the bound, count disagreeing with the length, unknown MSR, twice. */
	dup_buf(&b, good);
	p = find_sec(&b, VCPU_SEC_MSRS, &len);
	assert_true(len >= 8 + 2 * 16);
	v = 1000;
	memcpy(p, &v, 4);
	expect_einval(load_vcpu0, &b, "count 1000", "msr count 1000");
	v = (len - 8) / 16 - 1;
	memcpy(p, &v, 4);
	expect_einval(load_vcpu0, &b, "section MSRS: length", "msr count short");
	v = (len - 8) / 16;
	memcpy(p, &v, 4);
	v = 0x12345678;
	memcpy(p + 8 + 16, &v, 4);
	expect_einval(load_vcpu0, &b, "MSR 0x12345678", "unknown msr");
	memcpy(p + 8 + 16, p + 8, 4);
	expect_einval(load_vcpu0, &b, "twice", "msr twice");
	state_buf_free(&b);
	/* An MSRS section longer than 256 entries. */
	{
		struct state_buf big;
		struct sec s[32];
		size_t n = list_sections(good, s, 32);
		uint8_t *payload = calloc(1, 8 + 257 * 16);

		v = 257;
		memcpy(payload, &v, 4);
		state_buf_init(&big);
		for (size_t i = 0; i < n; i++) {
			if (s[i].type == VCPU_SEC_MSRS)
				state_buf_put_section(&big, VCPU_SEC_MSRS, payload, 8 + 257 * 16);
			else
				state_buf_put(&big, good->data + s[i].off, 8 + s[i].len);
		}
		expect_einval(load_vcpu0, &big,
			      "section MSRS: length 4120, expected 8 + 16 * n, at most 4104",
			      "257 msrs");
		state_buf_free(&big);
		free(payload);
	}
	/* Both XSAVE and FPU. */
	{
		struct kvm_fpu fpu;
		struct sec s[32];
		size_t n = list_sections(good, s, 32);

		memset(&fpu, 0, sizeof(fpu));
		state_buf_init(&b);
		state_buf_put(&b, good->data, s[n - 1].off);
		state_buf_put_section(&b, VCPU_SEC_FPU, &fpu, sizeof(fpu));
		state_buf_put(&b, good->data + s[n - 1].off, 8);
		/* Framing 3 first refuses a section its VERSIONS does not list... */
		expect_einval(load_vcpu0, &b, "section FPU has no VERSIONS entry", "fpu unlisted");
		state_buf_free(&b);
		/* ...and with FPU listed (XSAVE's entry, another type), both at once. */
		state_buf_init(&b);
		for (size_t i = 0; i + 1 < n; i++) {
			uint8_t ent[STATE_VERSIONS_ENT + STATE_VERSIONS_MAX * STATE_VERSIONS_ENT];
			const uint8_t *v = good->data + s[i].off + 8;
			uint32_t fpu_type = VCPU_SEC_FPU;
			size_t e;

			if (s[i].type != STATE_SEC_VERSIONS) {
				state_buf_put(&b, good->data + s[i].off, 8 + s[i].len);
				continue;
			}
			assert_true(s[i].len + STATE_VERSIONS_ENT <= sizeof(ent));
			memcpy(ent, v, s[i].len);
			for (e = 0; e < s[i].len; e += STATE_VERSIONS_ENT)
				if (!memcmp(v + e, &(uint32_t){VCPU_SEC_XSAVE}, 4))
					break;
			assert_true(e < s[i].len);
			memcpy(ent + s[i].len, v + e, STATE_VERSIONS_ENT);
			memcpy(ent + s[i].len, &fpu_type, 4);
			state_buf_put_section(&b, STATE_SEC_VERSIONS, ent,
					      s[i].len + STATE_VERSIONS_ENT);
		}
		state_buf_put_section(&b, VCPU_SEC_FPU, &fpu, sizeof(fpu));
		state_buf_put(&b, good->data + s[n - 1].off, 8);
		expect_einval(load_vcpu0, &b, "both sections XSAVE and FPU", "xsave and fpu");
		state_buf_free(&b);
	}
	/* The vCPU still loads its own good blob afterwards. */
	{
		char err[256];

		assert_int_equal(load_copy(load_vcpu0, good->data, good->len, err, sizeof(err)), 0);
	}
}

static void test_malformed_vm(void **state)
{
	struct state_buf b;
	uint32_t v;
	uint8_t *p;

	(void)state;
	require_kvm();
	assert_non_null(mal_vm);
	malformed_common(load_vm, &mal_vm_blob, VM_SEC_PIT2);
	expect_einval(load_vm, &mal_cpu_blob[0], "kind", "vcpu blob as vm");
	/* chip_id disagreeing with the section. */
	dup_buf(&b, &mal_vm_blob);
	p = find_sec(&b, VM_SEC_PIC_SLAVE, NULL);
	v = 2;
	memcpy(p, &v, 4);
	expect_einval(load_vm, &b, "section PIC_SLAVE: chip_id 2", "chip id");
	state_buf_free(&b);
	/* vCPU count differs. */
	dup_buf(&b, &mal_vm_blob);
	v = NVCPUS + 1;
	memcpy(b.data + 8 + offsetof(struct state_header, index), &v, 4);
	expect_einval(load_vm, &b, "vCPUs", "vcpu count");
	state_buf_free(&b);
}

static void test_state_buf(void **state)
{
	struct state_buf b;
	uint8_t big[10000];

	(void)state;
	memset(big, 0x5a, sizeof(big));
	state_buf_init(&b);
	state_buf_put_section(&b, 0x01020304, "abc", 3);
	assert_int_equal(b.len, 11);
	assert_memory_equal(b.data,
			    "\x04\x03\x02\x01\x03\x00\x00\x00"
			    "abc",
			    11);
	for (int i = 0; i < 10; i++)
		state_buf_put(&b, big, sizeof(big));
	assert_int_equal(b.len, 11 + 100000);
	assert_int_equal(b.error, 0);
	/* A failed put is sticky: nothing more is appended. */
	state_buf_put(&b, big, SIZE_MAX - 10);
	assert_int_equal(b.error, -ENOMEM);
	state_buf_put(&b, "x", 1);
	assert_int_equal(b.len, 11 + 100000);
	state_buf_free(&b);
	assert_null(b.data);
}

/* ---- a running guest moves ---- */

/* Highest N in "dirty pass N ok" lines. */
static unsigned long last_pass(const char *buf)
{
	unsigned long best = 0;

	for (const char *p = buf; (p = strstr(p, "dirty pass ")); p++) {
		unsigned long v = strtoul(p + 11, NULL, 10);

		if (v > best)
			best = v;
	}
	return best;
}

/* Reads the console into buf once. */
static void read_console(int fd, char *buf, size_t buflen)
{
	ssize_t n = pread(fd, buf, buflen - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
}

/*
 * Waits until the guest reports pass `min` or later: by number, since the
 * two vCPUs' heartbeat may skip a pass's line.
 */
static bool wait_pass(int fd, unsigned long min, char *buf, size_t buflen, int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t += 20) {
		read_console(fd, buf, buflen);
		if (last_pass(buf) >= min)
			return true;
		usleep(20000);
	}
	return false;
}

static void test_live(void **state)
{
	static char abuf[1 << 16], bbuf[1 << 16];
	struct vm_config cfg;
	struct vm *a, *b;
	struct state_buf avm, acpu[NVCPUS];
	int afd, bfd;
	char err[CONFIG_ERR_MAX];
	unsigned long apass;

	(void)state;
	require_kvm(); /* before anything is taken: a skip returns at once */
	a = calloc(1, sizeof(*a));
	b = calloc(1, sizeof(*b));
	afd = memfd_create("console-a", MFD_CLOEXEC);
	bfd = memfd_create("console-b", MFD_CLOEXEC);
	assert_non_null(a);
	assert_non_null(b);
	assert_true(afd >= 0 && bfd >= 0);
	make_cfg(&cfg, WORKLOAD_DIRTY);
	create_vm(a, &cfg, afd, true);
	if (vm_start(a, err, sizeof(err)))
		fail_msg("vm_start A: %s", err);
	if (!wait_pass(afd, 3, abuf, sizeof(abuf), 20000))
		fail_msg("A did not reach pass 3; console: %s; end: %s", abuf, a->end_message);
	vm_pause(a);
	assert_int_equal(a->end_reason, VM_END_NONE);
	save_all(a, &avm, acpu);
	serial_flush(&a->serial);
	read_console(afd, abuf, sizeof(abuf));
	apass = last_pass(abuf);

	create_vm(b, &cfg, bfd, false);
	assert_int_equal(b->mem.size, a->mem.size);
	memcpy(b->mem.base, a->mem.base, a->mem.size);
	load_all(b, &avm, acpu);
	if (vm_start(b, err, sizeof(err)))
		fail_msg("vm_start B: %s", err);
	if (!wait_pass(bfd, apass + 3, bbuf, sizeof(bbuf), 20000))
		fail_msg(
		    "B did not reach pass %lu (A stopped after pass %lu); console: %s; end: %s",
		    apass + 3, apass, bbuf, b->end_message);
	assert_null(strstr(bbuf, "CORRUPTION"));
	assert_int_equal(b->end_reason, VM_END_NONE);

	vm_request_stop(a, VM_END_MIGRATED, 0, "test done");
	vm_request_stop(b, VM_END_SIGNAL, 0, "test done");
	vm_join(a);
	vm_join(b);
	free_all(&avm, acpu, NVCPUS);
	vm_destroy(a);
	vm_destroy(b);
	free(a);
	free(b);
	close(afd);
	close(bfd);
}

/*
 * vm_load_whole() loads in its one order and names the blob that failed:
 * the VM's is refused before any vCPU's is asked for, a vCPU's by its
 * index once the ones before it loaded.
 */
static unsigned blob_calls;

static void counting_blob(const void *opaque, unsigned i, const void **blob, size_t *len)
{
	blob_calls++;
	cpu_blob(opaque, i, blob, len);
}

static void test_whole_load_failed(void **state)
{
	struct state_buf cpub[NVCPUS];
	char err[256] = "";
	int failed = -2;

	(void)state;
	require_kvm();
	assert_non_null(mal_vm);
	memcpy(cpub, mal_cpu_blob, sizeof(cpub));
	blob_calls = 0;
	assert_int_equal(vm_load_whole(mal_vm, mal_cpu_blob[0].data, mal_cpu_blob[0].len,
				       counting_blob, cpub, &failed, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(failed, VM_WHOLE_VM);
	assert_int_equal(blob_calls, 0);
	/* vCPU 1 handed vCPU 0's blob: refused as vCPU 1's, after vCPU 0's loaded. */
	cpub[1] = mal_cpu_blob[0];
	err[0] = '\0';
	assert_int_equal(vm_load_whole(mal_vm, mal_vm_blob.data, mal_vm_blob.len, counting_blob,
				       cpub, &failed, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(failed, 1);
	assert_int_equal(blob_calls, 2);
	assert_non_null(strstr(err, "vCPU"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_state_buf),	      cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_malformed_vcpu),    cmocka_unit_test(test_malformed_vm),
	    cmocka_unit_test(test_whole_load_failed), cmocka_unit_test(test_live),
	};
	char err[160];

	/* test_live's vCPU threads run under their seccomp filter, as in vmm run. */
	if (vmm_seccomp_init(err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	return cmocka_run_group_tests(tests, mal_setup, mal_teardown);
}
