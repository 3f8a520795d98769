/* SPDX-License-Identifier: Apache-2.0 */
#include "clock.h"
#include "sched_boost.h"
#include "vm_struct.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cpu_features.h"
#include "cpuid.h"
#include "kvm.h"
#include "vcpu_signal.h"
#include "vmm_abi.h"

/* In the 3-4 GiB hole, where no RAM is: what VMX needs for real mode. */
#define KVM_IDENTITY_MAP_GPA 0xfeffc000ull
#define KVM_TSS_GPA	     0xfeffd000ull

static void kick_handler(int sig)
{
	(void)sig; /* only there to interrupt KVM_RUN */
}

static int install_kick_signal(void)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIG_VCPU_KICK, &sa, NULL) < 0)
		return -errno;
	/* Blocked everywhere; vCPU threads unblock it only inside KVM_RUN. */
	sigemptyset(&set);
	sigaddset(&set, SIG_VCPU_KICK);
	return -pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* COM1's line (serial.h): called with the serial lock held; KVM_IRQ_LINE takes no vmm lock. */
static void serial_set_irq(void *opaque, bool level)
{
	struct vm *vm = opaque;
	struct kvm_irq_level irq = {.irq = SERIAL_IRQ, .level = level};

	/* Fails only without an irqchip, which vm_create() made: nothing to report to. */
	(void)ioctl(vm->vm_fd, KVM_IRQ_LINE, &irq);
}

int vm_memslot_register(struct vm *vm, const struct memslot *s, uint32_t flags)
{
	struct kvm_userspace_memory_region r = {
	    .slot = s->id,
	    .flags = flags,
	    .guest_phys_addr = s->gpa,
	    .memory_size = s->size,
	    .userspace_addr = (uint64_t)(uintptr_t)s->hva,
	};

	return ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0 ? -errno : 0;
}

static int set_memslots(struct vm *vm, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < vm->mem.nslots; i++) {
		int ret = vm_memslot_register(vm, &vm->mem.slots[i], 0);

		if (ret) {
			snprintf(err, errlen, "KVM_SET_USER_MEMORY_REGION slot %u: %s",
				 vm->mem.slots[i].id, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/*
 * KVM's default tsc_tolerance_ppm: a wanted frequency this close to the
 * host's runs unscaled. Beyond it, without KVM_CAP_TSC_CONTROL, KVM
 * refuses a lower rate and "accepts" a higher one only by catching the
 * guest TSC up on every entry (it runs at the host rate in between), which
 * vmm does not count as giving the guest that frequency.
 */
#define TSC_TOLERANCE_PPM 250u

/*
 * Kernels before 6.0 answer KVM_GET_TSC_KHZ only on a vCPU fd, and this
 * VM's vCPUs must get their CPUID (which carries the frequency) as they are
 * created: ask a throwaway VM's vCPU instead. 0 when even that fails.
 */
static uint64_t probe_host_tsc_khz(int kvm_fd)
{
	int vm_fd = ioctl(kvm_fd, KVM_CREATE_VM, 0), vcpu_fd = -1, r = 0;

	if (vm_fd >= 0)
		vcpu_fd = ioctl(vm_fd, KVM_CREATE_VCPU, 0);
	if (vcpu_fd >= 0)
		r = ioctl(vcpu_fd, KVM_GET_TSC_KHZ, 0);
	if (vcpu_fd >= 0)
		close(vcpu_fd);
	if (vm_fd >= 0)
		close(vm_fd);
	return r > 0 ? (uint64_t)r : 0;
}

/*
 * The guest TSC frequency: [vm] tsc_khz, or this host's when 0. Stored back
 * into vm->cfg so the VM description (config_format) carries the effective
 * value and a target sets exactly what the guest saw here. Refuses a value
 * this host cannot run before any vCPU exists.
 */
static int resolve_tsc_khz(struct vm *vm, char *err, size_t errlen)
{
	int r = ioctl(vm->vm_fd, KVM_GET_TSC_KHZ, 0);
	uint64_t want = vm->cfg.tsc_khz,
		 host = r > 0 ? (uint64_t)r : probe_host_tsc_khz(vm->kvm_fd);

	vm->host_tsc_khz = (uint32_t)host;
	vm->tsc_khz = (uint32_t)(want ? want : host);
	vm->cfg.tsc_khz = vm->tsc_khz;
	if (!want || !host || vm_check_cap(vm, KVM_CAP_TSC_CONTROL) > 0)
		return 0;
	/* KVM's own bounds (kvm_set_tsc_khz), rounded down as it does. */
	if (want >= host * (1000000u - TSC_TOLERANCE_PPM) / 1000000u &&
	    want <= host * (1000000u + TSC_TOLERANCE_PPM) / 1000000u)
		return 0;
	snprintf(err, errlen,
		 "[vm] tsc_khz: this host cannot give the guest a %llu kHz TSC: its own runs at "
		 "%llu kHz and KVM cannot scale it (no KVM_CAP_TSC_CONTROL; only +-%u ppm): %s",
		 (unsigned long long)want, (unsigned long long)host, TSC_TOLERANCE_PPM,
		 strerror(ENOTSUP));
	return -ENOTSUP;
}

/* KVM_SET_TSC_KHZ on one vCPU before it first runs (the check above passed). */
static int set_vcpu_tsc_khz(struct vm *vm, struct vcpu *v, char *err, size_t errlen)
{
	int r;

	if (!vm->tsc_khz)
		return 0; /* unknown on either side: the guest keeps the host's */
	if (ioctl(v->fd, KVM_SET_TSC_KHZ, vm->tsc_khz) == 0)
		return 0;
	r = errno;
	snprintf(err, errlen,
		 "[vm] tsc_khz: KVM refuses a %u kHz guest TSC on vCPU %u (this host's TSC runs "
		 "at %u kHz): KVM_SET_TSC_KHZ: %s",
		 vm->tsc_khz, v->index, vm->host_tsc_khz, strerror(r));
	return -r;
}

/*
 * [vm] cpu_features: the guest gets exactly these of the named features
 * (baselines and "host" resolved), and a set this host cannot give (a
 * migration's, a snapshot's, the user's) is refused before anything else
 * happens, naming what the host lacks. Empty: this host's own. Either way
 * the resolved names are stored back so that the description that travels
 * names them. Bits the table does not name stay as KVM reports them.
 */
static int apply_cpu_features(struct vm *vm, char *err, size_t errlen)
{
	struct cpu_features host, want;
	int ret;

	cpu_features_of(vm->cpuid, &host);
	vm->host_cpu = host;
	if (!vm->cfg.cpu_features[0]) {
		ret =
		    cpu_features_format(&host, vm->cfg.cpu_features, sizeof(vm->cfg.cpu_features));
		if (ret)
			snprintf(err, errlen, "[vm] cpu_features: this host's list is too long");
		return ret;
	}
	ret = cpu_features_resolve(vm->cfg.cpu_features, &host, &want, err, errlen);
	if (ret)
		return ret;
	ret = cpu_features_host_check(&want, &host, err, errlen);
	if (ret)
		return ret;
	cpu_features_mask(vm->cpuid, &want);
	/*
	 * Baselines and "host" are stored back as the names they stand for:
	 * "host" means another set on another host, and the description
	 * that travels must name exactly what this guest saw.
	 */
	ret = cpu_features_format(&want, vm->cfg.cpu_features, sizeof(vm->cfg.cpu_features));
	if (ret)
		snprintf(err, errlen, "[vm] cpu_features: the resolved list is too long");
	return ret;
}

static int create_kvm_vm(struct vm *vm, char *err, size_t errlen)
{
	struct kvm_pit_config pit = {.flags = 0};
	uint64_t idmap = KVM_IDENTITY_MAP_GPA;
	int ret;

	ret = kvm_open(&vm->kvm_fd, err, errlen);
	if (ret)
		return ret;
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "KVM_CREATE_VM: %s", strerror(errno));
		return ret;
	}
	ret = kvm_check_caps(vm->kvm_fd, vm->vm_fd, vm->mem.nslots, err, errlen);
	if (ret)
		return ret;
	vm->run_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vm->run_size <= 0) {
		snprintf(err, errlen, "KVM_GET_VCPU_MMAP_SIZE failed");
		return -EINVAL;
	}
	if (ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &idmap) < 0 ||
	    ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, KVM_TSS_GPA) < 0 ||
	    ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0 ||
	    ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
		ret = -errno;
		snprintf(err, errlen, "setting up the in-kernel irqchip/PIT: %s", strerror(errno));
		return ret;
	}
	ret = kvm_supported_cpuid(vm->kvm_fd, &vm->cpuid);
	if (ret) {
		snprintf(err, errlen, "KVM_GET_SUPPORTED_CPUID: %s", strerror(-ret));
		return ret;
	}
	ret = resolve_tsc_khz(vm, err, errlen);
	if (ret)
		return ret;
	/* The description that travels names the vendor the guest saw, not "host". */
	if (vm->cfg.cpu_vendor == CPU_VENDOR_HOST)
		vm->cfg.cpu_vendor = cpuid_host_vendor(vm->cpuid);
	ret = apply_cpu_features(vm, err, errlen);
	if (ret)
		return ret;
	return set_memslots(vm, err, errlen);
}

/* The VM's condition variable measures timed waits (a throttled vCPU's sleep) on CLOCK_MONOTONIC.
 */
static void init_cond(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

int vm_create(struct vm *vm, const struct vm_config *cfg, int console_fd, char *err, size_t errlen)
{
	return vm_create_on(vm, cfg, NULL, console_fd, err, errlen);
}

int vm_create_on(struct vm *vm, const struct vm_config *cfg, struct guest_mem *ram, int console_fd,
		 char *err, size_t errlen)
{
	int ret;

	memset(vm, 0, sizeof(*vm));
	vm->kvm_fd = vm->vm_fd = vm->end_fd = -1;
	vm->cfg = *cfg;
	pthread_mutex_init(&vm->lock, NULL);
	init_cond(&vm->cond);
	serial_init(&vm->serial, VMM_COM1_PORT, console_fd);

	ret = install_kick_signal();
	if (ret) {
		snprintf(err, errlen, "installing the vCPU kick signal: %s", strerror(-ret));
		return ret;
	}
	vm->end_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm->end_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		return ret;
	}
	if (ram) {
		/* The caller made it for this config (vm.h); it is ours now. */
		vm->mem = *ram;
		memset(ram, 0, sizeof(*ram));
		ram->memfd = -1;
	} else {
		/* Before the mapping: its slot table and dirty bitmaps grow with the size. */
		ret = cfg->prealloc ? guest_mem_room(cfg->memory, err, errlen) : 0;
		if (ret)
			return ret;
		ret = guest_mem_init(&vm->mem, cfg->memory, cfg->memslot_size, cfg->backend);
		if (ret) {
			snprintf(err, errlen, "mapping %llu bytes of guest RAM: %s",
				 (unsigned long long)cfg->memory, strerror(-ret));
			return ret;
		}
		if (cfg->prealloc) {
			ret = guest_mem_populate(&vm->mem, err, errlen);
			if (ret)
				return ret;
		}
	}
	ret = create_kvm_vm(vm, err, errlen);
	if (ret)
		return ret;
	vm->serial.set_irq = serial_set_irq;
	vm->serial.irq_opaque = vm;
	vm->vcpus = calloc(cfg->vcpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return -ENOMEM;
	for (unsigned i = 0; i < cfg->vcpus; i++) {
		ret = vcpu_create(vm, &vm->vcpus[i], i);
		vm->nvcpus = i + 1;
		if (ret) {
			snprintf(err, errlen, "creating vCPU %u: %s", i, strerror(-ret));
			return ret;
		}
		ret = set_vcpu_tsc_khz(vm, &vm->vcpus[i], err, errlen);
		if (ret)
			return ret;
	}
	/* Last: a device's backend (a tap it created) should not outlive a failed VM long. */
	return devices_create(&vm->devices, &vm->cfg, &vm->mem, vm->vm_fd, err, errlen);
}

void vm_on_console_first_byte(struct vm *vm, void (*fn)(void *opaque), void *opaque)
{
	/* The serial lock, which the vCPU thread holds when it calls fn: never half set. */
	pthread_mutex_lock(&vm->serial.lock);
	vm->serial.on_first_byte = fn;
	vm->serial.opaque = opaque;
	pthread_mutex_unlock(&vm->serial.lock);
}

int vm_start(struct vm *vm, char *err, size_t errlen)
{
	bool parked;
	int ret;

	pthread_mutex_lock(&vm->lock);
	parked = vm->pause_requested;
	pthread_mutex_unlock(&vm->lock);
	/* Parked with the vCPUs (a target, a restore): vm_resume() lets both go. */
	ret = devices_start(&vm->devices, parked, err, errlen);
	if (ret) {
		vm_request_stop(vm, VM_END_ERROR, 1, "could not start a device's I/O thread");
		return ret;
	}
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		int ret;

		pthread_mutex_lock(&vm->lock);
		vm->running++;
		pthread_mutex_unlock(&vm->lock);
		ret = pthread_create(&v->thread, NULL, vcpu_thread, v);
		if (ret) {
			pthread_mutex_lock(&vm->lock);
			vm->running--;
			pthread_mutex_unlock(&vm->lock);
			snprintf(err, errlen, "starting vCPU %u thread: %s", i, strerror(ret));
			vm_request_stop(vm, VM_END_ERROR, 1, "could not start vCPU %u", i);
			return -ret;
		}
		v->thread_started = true;
	}
	return 0;
}

int vm_start_paused(struct vm *vm, char *err, size_t errlen)
{
	pthread_mutex_lock(&vm->lock);
	vm->pause_requested = true;
	pthread_mutex_unlock(&vm->lock);
	return vm_start(vm, err, errlen);
}

void vm_pause(struct vm *vm)
{
	struct sched_prev prev[CONFIG_MAX_VCPUS];

	pthread_mutex_lock(&vm->lock);
	/* Stopping: the vCPU threads may already be joined; nothing to kick. */
	if (vm->stopping) {
		pthread_mutex_unlock(&vm->lock);
		return;
	}
	vm->pause_requested = true;
	pthread_cond_broadcast(&vm->cond); /* a vCPU sleeping for its throttle parks now */
	/*
	 * A kicked vCPU thread must run to leave KVM_RUN and park: on a busy
	 * host it can wait a slice or more for a CPU. Real-time until it
	 * parked (where allowed; see sched_boost.h), then back.
	 */
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		prev[i].boosted = false;
		if (vm->vcpus[i].thread_started)
			sched_boost(vm->vcpus[i].thread, &prev[i]);
		vcpu_kick(&vm->vcpus[i]);
	}
	/* Threads that ended (guest exit, error) will never park. */
	while (vm->paused < vm->running && !vm->stopping)
		pthread_cond_wait(&vm->cond, &vm->lock);
	for (unsigned i = 0; i < vm->nvcpus; i++)
		sched_unboost(vm->vcpus[i].thread, &prev[i]);
	pthread_mutex_unlock(&vm->lock);
	/* Console input waits too: the RX bytes stay what a state save sees. */
	serial_hold_input(&vm->serial, true);
	/* And the devices, between two requests: nothing in flight, queues stable. */
	devices_park(&vm->devices);
}

void vm_resume(struct vm *vm)
{
	devices_unpark(&vm->devices);
	serial_hold_input(&vm->serial, false);
	pthread_mutex_lock(&vm->lock);
	vm->pause_requested = false;
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
}

void vm_join(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		if (v->thread_started) {
			pthread_join(v->thread, NULL);
			v->thread_started = false;
		}
	}
	serial_flush(&vm->serial);
}

void vm_destroy(struct vm *vm)
{
	bool started = false;

	for (unsigned i = 0; i < vm->nvcpus; i++)
		started |= vm->vcpus[i].thread_started;
	/* Threads parked since they were created (a received VM that failed) must stop. */
	if (started && !vm_stopping(vm))
		vm_request_stop(vm, VM_END_ERROR, 1, "destroyed before it ran");
	vm_join(vm);
	for (unsigned i = 0; i < vm->nvcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		if (v->run)
			munmap(v->run, (size_t)vm->run_size);
		if (v->fd >= 0)
			close(v->fd);
	}
	devices_destroy(&vm->devices);
	free(vm->vcpus);
	free(vm->cpuid);
	serial_destroy(&vm->serial);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	if (vm->end_fd >= 0)
		close(vm->end_fd);
	guest_mem_destroy(&vm->mem);
	pthread_cond_destroy(&vm->cond);
	pthread_mutex_destroy(&vm->lock);
}
