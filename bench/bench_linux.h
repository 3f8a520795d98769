/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_linux.h - what the two parts of bench_linux share: the options,
 * the guest's command line and console markers (docs/linux-guest.md), and
 * the command lines of vmm and QEMU for the same guest.
 */
#ifndef VMM_BENCH_LINUX_H
#define VMM_BENCH_LINUX_H

#include <stdbool.h>
#include <stdio.h>

#include "harness_proc.h"

/* vmm's config for the guest (every value that matters is set on the command line). */
#define BL_CONFIG EXAMPLES_DIR "/linux.cfg"
/* The kernel command line both VMMs give the test kernel. */
#define BL_CMDLINE                                                                                 \
	"console=ttyS0 panic=-1 noxsave nofsgsbase clearcpuid=151,297,308,580 rodata=off "         \
	"rcupdate.rcu_cpu_stall_suppress=1 rdinit=/init "
/* The line /init prints once user space runs. */
#define BL_INIT_MARKER "vmm-linux: init ok"
/* memverify's heartbeat and the init variables that start it. */
#define BL_HEARTBEAT	"memverify: pass"
#define BL_WORKLOAD_FMT "vmm_workload=memverify vmm_ws_mib=%d vmm_order=random vmm_thp=1"
/* QEMU: -cpu host fails on these hosts (MSR 0x10a); an Intel vendor string keeps Linux off the AMD
 * FXSAVE-leak workaround (fnclex), which the emulator cannot run. */
#define BL_QEMU_CPU "-cpu max,vendor=GenuineIntel,-arch-capabilities"

struct bl_opts {
	const char *vmm, *qemu, *kernel, *initrd;
	int reps;
	int ws_mib; /* part migrate: memverify's working set */
	int vcpus;  /* part migrate: vCPUs of the migrated guest */
	bool quick;
};
extern struct bl_opts bl;

/* argv for `vmm run CONFIG --set=vm.name=NAME ...` / QEMU microvm booting the test guest with
 * `workload` appended. */
void bl_vmm_args(struct hx_argv *a, const char *name, const char *mem, int vcpus,
		 const char *workload);
void bl_qemu_args(struct hx_argv *a, const char *mem, int vcpus, const char *workload,
		  const char *qmp_path, int incoming_port);

/* Part migrate (bench_linux_migrate.c). */
void bl_part_migrate(FILE *csv, bool have_qemu, const char *tmpdir);

#endif /* VMM_BENCH_LINUX_H */
