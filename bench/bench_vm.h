/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_vm.h - an in-process VM for the dirty-log benchmarks: built from
 * "section.key=value" overrides, console to /dev/null, run until the guest
 * exits. Header-only (static functions), like bench_util.h.
 */
#ifndef VMM_BENCH_VM_H
#define VMM_BENCH_VM_H

#include "bench_util.h"
#include "config.h"
#include "vm.h"

static struct vm *bench_vm_make(const char *prog, const char **sets, int nsets, bool boot)
{
	struct vm_config cfg;
	char err[CONFIG_ERR_MAX];
	struct vm *vm;
	int null_fd;

	config_defaults(&cfg);
	/* the seccomp filters are the front end's (cli_run.c initialises them);
	 * a vCPU thread asked to enter one here would end the guest */
	cfg.seccomp = false;
	for (int i = 0; i < nsets; i++) {
		if (config_set(&cfg, sets[i], err, sizeof(err))) {
			fprintf(stderr, "%s: %s\n", prog, err);
			return NULL;
		}
	}
	if (config_default_firmware(&cfg, err, sizeof(err)) ||
	    config_validate(&cfg, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return NULL;
	}
	vm = vm_new();
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (!vm || null_fd < 0) {
		vm_free(vm);
		return NULL;
	}
	if (vm_create(vm, &cfg, null_fd, err, sizeof(err)) ||
	    (boot && vm_boot_setup(vm, err, sizeof(err)))) {
		fprintf(stderr, "%s: vm: %s\n", prog, err);
		vm_free(vm);
		return NULL;
	}
	return vm;
}

/* Runs the guest until it exits; 0 if it exited with status 0. */
static int bench_vm_run_to_exit(const char *prog, struct vm *vm, int timeout_ms)
{
	char err[256];
	struct pollfd p = {vm_end_fd(vm), POLLIN, 0};
	struct vm_end end;

	if (vm_start(vm, err, sizeof(err))) {
		fprintf(stderr, "%s: vm_start: %s\n", prog, err);
		return -1;
	}
	if (poll(&p, 1, timeout_ms) <= 0) {
		fprintf(stderr, "%s: guest did not finish in %d ms\n", prog, timeout_ms);
		vm_request_stop(vm, VM_END_ERROR, 1, "benchmark timeout");
	}
	vm_pause(vm);
	vm_join(vm);
	vm_end_state(vm, &end);
	if (end.reason != VM_END_GUEST_EXIT || end.status != 0) {
		fprintf(stderr, "%s: guest ended badly (reason %d status %d): %s\n", prog,
			end.reason, end.status, end.message);
		return -1;
	}
	return 0;
}

static void bench_vm_free(struct vm *vm)
{
	if (vm) {
		vm_destroy(vm);
		vm_free(vm);
	}
}

#endif /* VMM_BENCH_VM_H */
