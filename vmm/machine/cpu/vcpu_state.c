/* SPDX-License-Identifier: Apache-2.0 */
#include "vcpu_state.h"
#include "state_part.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vm_struct.h"

/* The format pins these sizes (docs/state-format.md). */
_Static_assert(sizeof(struct kvm_mp_state) == 4, "kvm_mp_state");
_Static_assert(sizeof(struct kvm_regs) == 144, "kvm_regs");
_Static_assert(sizeof(struct kvm_sregs) == 312, "kvm_sregs");
_Static_assert(sizeof(struct kvm_xsave) == 4096, "kvm_xsave");
_Static_assert(sizeof(struct kvm_fpu) == 416, "kvm_fpu");
_Static_assert(sizeof(struct kvm_xcrs) == 392, "kvm_xcrs");
_Static_assert(sizeof(struct kvm_lapic_state) == 1024, "kvm_lapic_state");
_Static_assert(sizeof(struct kvm_msr_entry) == 16, "kvm_msr_entry");
_Static_assert(sizeof(struct kvm_msrs) == 8, "kvm_msrs header");
_Static_assert(sizeof(struct kvm_vcpu_events) == 64, "kvm_vcpu_events");
_Static_assert(sizeof(struct kvm_debugregs) == 128, "kvm_debugregs");

#define MSRS_HDR 8u /* u32 count, u32 pad: the layout of struct kvm_msrs */

/*
 * IA32_TSC comes first so that, within the one KVM_SET_MSRS, the guest TSC
 * is already right when TSC_DEADLINE (an absolute TSC value) arms the
 * LAPIC timer. ASYNC_PF_INT precedes ASYNC_PF_EN: enabling interrupt
 * delivery checks the vector.
 */
const uint32_t vcpu_state_msrs[] = {
    0x00000010, /* IA32_TSC */
    0x0000003b, /* IA32_TSC_ADJUST */
    0xc0000103, /* TSC_AUX */
    0x00000174, /* IA32_SYSENTER_CS */
    0x00000175, /* IA32_SYSENTER_ESP */
    0x00000176, /* IA32_SYSENTER_EIP */
    0xc0000081, /* STAR */
    0xc0000082, /* LSTAR */
    0xc0000083, /* CSTAR */
    0xc0000084, /* SFMASK (FMASK) */
    0xc0000102, /* KERNEL_GS_BASE */
    0x00000277, /* IA32_PAT */
    0x000001a0, /* IA32_MISC_ENABLE */
    0x000002ff, /* IA32_MTRR_DEF_TYPE */
    0x4b564d00, /* MSR_KVM_WALL_CLOCK_NEW */
    0x4b564d01, /* MSR_KVM_SYSTEM_TIME_NEW */
    0x4b564d06, /* MSR_KVM_ASYNC_PF_INT */
    0x4b564d02, /* MSR_KVM_ASYNC_PF_EN */
    0x4b564d03, /* MSR_KVM_STEAL_TIME */
    0x4b564d04, /* MSR_KVM_PV_EOI_EN */
    0x000006e0, /* IA32_TSC_DEADLINE */
};
const size_t vcpu_state_nmsrs = sizeof(vcpu_state_msrs) / sizeof(vcpu_state_msrs[0]);
_Static_assert(sizeof(vcpu_state_msrs) / sizeof(vcpu_state_msrs[0]) <= VCPU_STATE_MAX_MSRS,
	       "MSR list within the format's bound");

/* Indexes into specs[] / found[]. */
enum {
	S_MP_STATE,
	S_REGS,
	S_SREGS,
	S_XSAVE,
	S_FPU,
	S_XCRS,
	S_LAPIC,
	S_MSRS,
	S_VCPU_EVENTS,
	S_DEBUGREGS,
	S_COUNT
};

#define EXACT(t, n, sz, req)                                                                       \
	{                                                                                          \
		t, n, sz, sz, req, 0, STATE_COMP_VCPU                                              \
	}
static const struct state_section_spec specs[S_COUNT] = {
    [S_MP_STATE] = EXACT(VCPU_SEC_MP_STATE, "MP_STATE", sizeof(struct kvm_mp_state), true),
    [S_REGS] = EXACT(VCPU_SEC_REGS, "REGS", sizeof(struct kvm_regs), true),
    [S_SREGS] = EXACT(VCPU_SEC_SREGS, "SREGS", sizeof(struct kvm_sregs), true),
    /* exactly one of XSAVE and FPU, checked after parsing */
    [S_XSAVE] = EXACT(VCPU_SEC_XSAVE, "XSAVE", sizeof(struct kvm_xsave), false),
    [S_FPU] = EXACT(VCPU_SEC_FPU, "FPU", sizeof(struct kvm_fpu), false),
    [S_XCRS] = EXACT(VCPU_SEC_XCRS, "XCRS", sizeof(struct kvm_xcrs), true),
    [S_LAPIC] = EXACT(VCPU_SEC_LAPIC, "LAPIC", sizeof(struct kvm_lapic_state), true),
    [S_MSRS] = {VCPU_SEC_MSRS, "MSRS", MSRS_HDR,
		MSRS_HDR + VCPU_STATE_MAX_MSRS * sizeof(struct kvm_msr_entry), true,
		sizeof(struct kvm_msr_entry), STATE_COMP_VCPU},
    [S_VCPU_EVENTS] =
	EXACT(VCPU_SEC_VCPU_EVENTS, "VCPU_EVENTS", sizeof(struct kvm_vcpu_events), true),
    [S_DEBUGREGS] = EXACT(VCPU_SEC_DEBUGREGS, "DEBUGREGS", sizeof(struct kvm_debugregs), true),
};

#define WHAT "vcpu state"

static bool msr_known(uint32_t index)
{
	for (size_t i = 0; i < vcpu_state_nmsrs; i++)
		if (vcpu_state_msrs[i] == index)
			return true;
	return false;
}

/*
 * Fills msrs->entries with the indexes of vcpu_state_msrs that KVM lists,
 * in vcpu_state_msrs order. msrs has room for vcpu_state_nmsrs entries.
 */
static int pick_msrs(int kvm_fd, struct kvm_msrs *msrs)
{
	struct kvm_msr_list probe = {.nmsrs = 0};
	struct kvm_msr_list *list;
	uint32_t n = 0;

	/* The first call fails with E2BIG and says how many there are. */
	if (ioctl(kvm_fd, KVM_GET_MSR_INDEX_LIST, &probe) < 0 && errno != E2BIG)
		return -errno;
	list = calloc(1, sizeof(*list) + (size_t)probe.nmsrs * sizeof(uint32_t));
	if (!list)
		return -ENOMEM;
	list->nmsrs = probe.nmsrs;
	if (ioctl(kvm_fd, KVM_GET_MSR_INDEX_LIST, list) < 0) {
		int e = errno;

		free(list);
		return -e;
	}
	for (size_t i = 0; i < vcpu_state_nmsrs; i++) {
		for (uint32_t j = 0; j < list->nmsrs; j++) {
			if (list->indices[j] == vcpu_state_msrs[i]) {
				msrs->entries[n].index = vcpu_state_msrs[i];
				msrs->entries[n].reserved = 0;
				msrs->entries[n].data = 0;
				n++;
				break;
			}
		}
	}
	msrs->nmsrs = n;
	msrs->pad = 0;
	free(list);
	return 0;
}

/* Everything one vCPU save or load holds; on the heap (XSAVE is 4 KiB). */
struct vcpu_regs_all {
	struct kvm_mp_state mp;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_xsave xsave;
	struct kvm_fpu fpu;
	struct kvm_xcrs xcrs;
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events events;
	struct kvm_debugregs dbg;
	struct kvm_msrs msrs; /* followed by the entries */
};

static struct vcpu_regs_all *alloc_all(void)
{
	return calloc(1, sizeof(struct vcpu_regs_all) +
			     VCPU_STATE_MAX_MSRS * sizeof(struct kvm_msr_entry));
}

int vcpu_state_save_err(struct vcpu *vcpu, struct state_buf *out, char *err, size_t errlen)
{
	struct state_form f;

	state_form_current(&f);
	return vcpu_state_save_form(vcpu, &f, out, err, errlen);
}

int vcpu_state_save_form(struct vcpu *vcpu, const struct state_form *f, struct state_buf *out,
			 char *err, size_t errlen)
{
	struct state_version_ent ents[S_COUNT];
	struct vcpu_regs_all *s;
	size_t start = out->len;
	bool have_xsave = true;
	uint32_t msrs_len;
	int ret = state_form_check(f, err, errlen);

	if (ret)
		return ret;
	if (!f->v[STATE_COMP_VCPU - 1])
		return state_fail(-EPROTONOSUPPORT, err, errlen,
				  WHAT ": the form asked for has no vcpu state");
	s = alloc_all();
	if (!s)
		return state_fail(-ENOMEM, err, errlen, WHAT ": out of memory");
		/*
		 * Save order (Firecracker's reasoning): MP_STATE first, because
		 * KVM_GET_MP_STATE processes pending INIT/SIPI (kvm_apic_accept_events)
		 * and may change the LAPIC and registers read after it; VCPU_EVENTS
		 * last, since the other GETs may settle internal event state. The
		 * buffers are zeroed so that padding in the blob is deterministic.
		 */
#define GET(req, ptr, name)                                                                        \
	do {                                                                                       \
		if (ioctl(vcpu->fd, req, ptr) < 0) {                                               \
			ret = state_fail(-errno, err, errlen, WHAT ": vCPU %u: %s: %s",            \
					 vcpu->index, name, strerror(errno));                      \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)
	GET(KVM_GET_MP_STATE, &s->mp, "KVM_GET_MP_STATE");
	GET(KVM_GET_REGS, &s->regs, "KVM_GET_REGS");
	GET(KVM_GET_SREGS, &s->sregs, "KVM_GET_SREGS");
	if (ioctl(vcpu->fd, KVM_GET_XSAVE, &s->xsave) < 0) {
		/* Legacy FPU/SSE state only: AVX and later state is lost. */
		have_xsave = false;
		GET(KVM_GET_FPU, &s->fpu, "KVM_GET_FPU (after KVM_GET_XSAVE failed)");
	}
	GET(KVM_GET_XCRS, &s->xcrs, "KVM_GET_XCRS");
	GET(KVM_GET_DEBUGREGS, &s->dbg, "KVM_GET_DEBUGREGS");
	GET(KVM_GET_LAPIC, &s->lapic, "KVM_GET_LAPIC");
	ret = pick_msrs(vcpu->vm->kvm_fd, &s->msrs);
	if (ret) {
		state_fail(ret, err, errlen, WHAT ": KVM_GET_MSR_INDEX_LIST: %s", strerror(-ret));
		goto out;
	}
	/* All MSRs in one call; KVM returns how many it read and stops at the first it cannot. */
	ret = ioctl(vcpu->fd, KVM_GET_MSRS, &s->msrs);
	if (ret < 0) {
		ret = state_fail(-errno, err, errlen, WHAT ": vCPU %u: KVM_GET_MSRS: %s",
				 vcpu->index, strerror(errno));
		goto out;
	}
	if ((uint32_t)ret != s->msrs.nmsrs) {
		state_fail(-EIO, err, errlen,
			   WHAT ": vCPU %u: KVM_GET_MSRS read %d of %u MSRs, failed at MSR 0x%x",
			   vcpu->index, ret, s->msrs.nmsrs, s->msrs.entries[ret].index);
		ret = -EIO;
		goto out;
	}
	GET(KVM_GET_VCPU_EVENTS, &s->events, "KVM_GET_VCPU_EVENTS");
#undef GET

	/* Sections in restore order (see vcpu_state_load). */
	msrs_len = MSRS_HDR + s->msrs.nmsrs * (uint32_t)sizeof(struct kvm_msr_entry);
	{
		/* Every section of the blob is the vcpu component's. */
		static const uint32_t types[] = {
		    VCPU_SEC_REGS,	  VCPU_SEC_SREGS,     VCPU_SEC_XSAVE,
		    VCPU_SEC_XCRS,	  VCPU_SEC_LAPIC,     VCPU_SEC_MSRS,
		    VCPU_SEC_VCPU_EVENTS, VCPU_SEC_DEBUGREGS, VCPU_SEC_MP_STATE};
		unsigned n = 0;

		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			ents[n++] = (struct state_version_ent){
			    types[i] == VCPU_SEC_XSAVE && !have_xsave ? VCPU_SEC_FPU : types[i],
			    STATE_COMP_VCPU, f->v[STATE_COMP_VCPU - 1]};
		state_buf_put_header_versions(out, STATE_KIND_VCPU, vcpu->index, f->framing, ents,
					      n);
	}
	state_buf_put_section(out, VCPU_SEC_REGS, &s->regs, sizeof(s->regs));
	state_buf_put_section(out, VCPU_SEC_SREGS, &s->sregs, sizeof(s->sregs));
	if (have_xsave)
		state_buf_put_section(out, VCPU_SEC_XSAVE, &s->xsave, sizeof(s->xsave));
	else
		state_buf_put_section(out, VCPU_SEC_FPU, &s->fpu, sizeof(s->fpu));
	state_buf_put_section(out, VCPU_SEC_XCRS, &s->xcrs, sizeof(s->xcrs));
	state_buf_put_section(out, VCPU_SEC_LAPIC, &s->lapic, sizeof(s->lapic));
	state_buf_put_section(out, VCPU_SEC_MSRS, &s->msrs, msrs_len);
	state_buf_put_section(out, VCPU_SEC_VCPU_EVENTS, &s->events, sizeof(s->events));
	state_buf_put_section(out, VCPU_SEC_DEBUGREGS, &s->dbg, sizeof(s->dbg));
	state_buf_put_section(out, VCPU_SEC_MP_STATE, &s->mp, sizeof(s->mp));
	state_buf_put_section(out, STATE_SEC_END, NULL, 0);
	ret = out->error;
	if (ret)
		state_fail(ret, err, errlen, WHAT ": vCPU %u: out of memory", vcpu->index);
out:
	if (ret && !out->error)
		out->len = start;
	free(s);
	return ret;
}

int vcpu_state_save(struct vcpu *vcpu, struct state_buf *out)
{
	return vcpu_state_save_err(vcpu, out, NULL, 0);
}

/* Checks what the framing cannot: MSRS count, XSAVE/FPU, vCPU index. */
static int check_sections(struct vcpu *vcpu, const struct state_header *h,
			  const struct state_section *f, char *err, size_t errlen)
{
	const uint8_t *p = f[S_MSRS].payload;
	uint32_t count;

	if (h->index != vcpu->index)
		return state_fail(-EINVAL, err, errlen,
				  WHAT ": section HEADER: state of vCPU %u, loading into vCPU %u",
				  h->index, vcpu->index);
	if (f[S_XSAVE].present == f[S_FPU].present)
		return state_fail(-EINVAL, err, errlen, WHAT ": %s",
				  f[S_XSAVE].present ? "both sections XSAVE and FPU"
						     : "missing section XSAVE (or FPU)");
	memcpy(&count, p, sizeof(count));
	if (count > VCPU_STATE_MAX_MSRS)
		return state_fail(-EINVAL, err, errlen, WHAT ": section MSRS: count %u, at most %u",
				  count, VCPU_STATE_MAX_MSRS);
	if (f[S_MSRS].len != MSRS_HDR + count * sizeof(struct kvm_msr_entry))
		return state_fail(-EINVAL, err, errlen,
				  WHAT ": section MSRS: length %u, expected %zu", f[S_MSRS].len,
				  MSRS_HDR + count * sizeof(struct kvm_msr_entry));
	for (uint32_t i = 0; i < count; i++) {
		struct kvm_msr_entry e;

		memcpy(&e, p + MSRS_HDR + i * sizeof(e), sizeof(e));
		if (!msr_known(e.index))
			return state_fail(-EINVAL, err, errlen,
					  WHAT ": section MSRS: MSR 0x%x is not one vmm migrates",
					  e.index);
		for (uint32_t j = 0; j < i; j++) {
			uint32_t other;

			memcpy(&other, p + MSRS_HDR + j * sizeof(e), sizeof(other));
			if (other == e.index)
				return state_fail(-EINVAL, err, errlen,
						  WHAT ": section MSRS: MSR 0x%x twice", e.index);
		}
	}
	return 0;
}

/* The whole blob checked, nothing changed: the framing, then what it cannot say. */
static int parse(struct vcpu *vcpu, const void *data, size_t len, struct state_section *f,
		 char *err, size_t errlen)
{
	struct state_header h;
	int ret = state_parse(WHAT, STATE_KIND_VCPU, data, len, specs, S_COUNT, f, &h, err, errlen);

	return ret ? ret : check_sections(vcpu, &h, f, err, errlen);
}

int vcpu_state_load(struct vcpu *vcpu, const void *data, size_t len, char *err, size_t errlen)
{
	struct state_section f[S_COUNT];
	struct vcpu_regs_all *s;
	int ret;

	ret = parse(vcpu, data, len, f, err, errlen);
	if (ret)
		return ret;
	s = alloc_all();
	if (!s)
		return state_fail(-ENOMEM, err, errlen, WHAT ": out of memory");
	memcpy(&s->mp, f[S_MP_STATE].payload, sizeof(s->mp));
	memcpy(&s->regs, f[S_REGS].payload, sizeof(s->regs));
	memcpy(&s->sregs, f[S_SREGS].payload, sizeof(s->sregs));
	if (f[S_XSAVE].present)
		memcpy(&s->xsave, f[S_XSAVE].payload, sizeof(s->xsave));
	else
		memcpy(&s->fpu, f[S_FPU].payload, sizeof(s->fpu));
	memcpy(&s->xcrs, f[S_XCRS].payload, sizeof(s->xcrs));
	memcpy(&s->lapic, f[S_LAPIC].payload, sizeof(s->lapic));
	memcpy(&s->msrs, f[S_MSRS].payload, f[S_MSRS].len);
	memcpy(&s->events, f[S_VCPU_EVENTS].payload, sizeof(s->events));
	memcpy(&s->dbg, f[S_DEBUGREGS].payload, sizeof(s->dbg));

#define SET(req, ptr, sec)                                                                         \
	do {                                                                                       \
		if (ioctl(vcpu->fd, req, ptr) < 0) {                                               \
			ret =                                                                      \
			    state_fail(-errno, err, errlen, WHAT ": vCPU %u: section %s: %s: %s",  \
				       vcpu->index, sec, #req, strerror(errno));                   \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)
	/*
	 * RESTORE ORDER. CPUID was set when the vCPU was created (vcpu_create),
	 * before any of this: KVM checks XCR0, XSAVE features, CR4 bits and
	 * MSRs against the guest CPUID.
	 *
	 * 1. REGS. KVM_SET_REGS drops any pending exception, so it must come
	 *    before VCPU_EVENTS, which restores the pending/injected events.
	 */
	SET(KVM_SET_REGS, &s->regs, "REGS");
	/*
	 * 2. SREGS: control registers, EFER, segments and the APIC base MSR.
	 *    The APIC base enables the LAPIC (and selects xAPIC/x2APIC), which
	 *    KVM_SET_LAPIC needs to interpret the register page (APIC ID in
	 *    x2APIC mode), so SREGS comes before LAPIC. CR4.OSXSAVE is set
	 *    here; XSAVE/XCRS are checked against CPUID, not CR4, so they may
	 *    come after. KVM_SET_SREGS may also reset the mp_state of a BSP
	 *    left at the reset vector: one more reason MP_STATE is last.
	 */
	SET(KVM_SET_SREGS, &s->sregs, "SREGS");
	/* 3. XSAVE (or FPU), then 4. XCRS (XCR0): independent of the rest. */
	if (f[S_XSAVE].present)
		SET(KVM_SET_XSAVE, &s->xsave, "XSAVE");
	else
		SET(KVM_SET_FPU, &s->fpu, "FPU");
	SET(KVM_SET_XCRS, &s->xcrs, "XCRS");
	/*
	 * 5. LAPIC after SREGS (APIC base, above) and before MSRS: the
	 *    TSC_DEADLINE MSR is only accepted (and only arms the timer) when
	 *    the LAPIC's LVT timer is already in TSC-deadline mode.
	 */
	SET(KVM_SET_LAPIC, &s->lapic, "LAPIC");
	/*
	 * 6. MSRS, in one call, in vcpu_state_msrs order: IA32_TSC before
	 *    TSC_DEADLINE (an absolute guest TSC value). Writing IA32_TSC from
	 *    the host sets the guest TSC to the saved value: the guest was
	 *    paused while it moved, so its time goes on where it stopped.
	 *    KVM returns how many it wrote and stops at the first it refuses.
	 */
	ret = ioctl(vcpu->fd, KVM_SET_MSRS, &s->msrs);
	if (ret < 0) {
		ret = state_fail(-errno, err, errlen,
				 WHAT ": vCPU %u: section MSRS: KVM_SET_MSRS: %s", vcpu->index,
				 strerror(errno));
		goto out;
	}
	if ((uint32_t)ret != s->msrs.nmsrs) {
		state_fail(-EINVAL, err, errlen,
			   WHAT
			   ": vCPU %u: section MSRS: KVM_SET_MSRS wrote %d of %u, refused MSR 0x%x",
			   vcpu->index, ret, s->msrs.nmsrs, s->msrs.entries[ret].index);
		ret = -EINVAL;
		goto out;
	}
	/*
	 * 7. VCPU_EVENTS after REGS (which clears pending exceptions) and after
	 *    SREGS (which carries a pending interrupt bitmap of its own): the
	 *    events are the last word on what is pending or being injected,
	 *    NMI masking, the interrupt shadow and SMM state.
	 */
	SET(KVM_SET_VCPU_EVENTS, &s->events, "VCPU_EVENTS");
	/* 8. DEBUGREGS: independent (DR7 is also in no other section). */
	SET(KVM_SET_DEBUGREGS, &s->dbg, "DEBUGREGS");
	/*
	 * 9. MP_STATE last (as QEMU does): KVM_SET_SREGS can change mp_state
	 *    (see 2), and KVM refuses INIT_RECEIVED/SIPI_RECEIVED while an
	 *    INIT is latched, which VCPU_EVENTS (SMM) restores.
	 */
	SET(KVM_SET_MP_STATE, &s->mp, "MP_STATE");
#undef SET
	ret = 0;
out:
	free(s);
	return ret;
}

/* ---- The vcpu component's part (state_part.h): each vCPU, a blob of its own ---- */

static unsigned part_count(const struct vm *vm)
{
	return vm->nvcpus;
}

static int part_save(struct vm *vm, unsigned i, const struct state_form *f, struct state_buf *out,
		     char *err, size_t errlen)
{
	return vcpu_state_save_form(&vm->vcpus[i], f, out, err, errlen);
}

static int part_check(struct vm *vm, unsigned i, const struct state_part_in *in, char *err,
		      size_t errlen)
{
	struct state_section f[S_COUNT];

	return parse(&vm->vcpus[i], in->blob, in->len, f, err, errlen);
}

/* After the VM blob (vm_state.c's order): a LAPIC routes through the restored irqchip. */
static int part_load(struct vm *vm, unsigned i, const struct state_part_in *in, char *err,
		     size_t errlen)
{
	return vcpu_state_load(&vm->vcpus[i], in->blob, in->len, err, errlen);
}

const struct state_part vcpu_part = {
    .name = "vcpu",
    .comps = {STATE_COMP_VCPU},
    .blob = STATE_PART_VCPU,
    .count = part_count,
    .save = part_save,
    .check = part_check,
    .load = part_load,
};
