/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qemu_mig.h - one QEMU process driven over QMP for the side-by-side
 * benchmarks (bench_linux part migrate, bench_qemu): start it with its
 * console on a pipe and a QMP socket (optionally `-incoming`), set the
 * migration parameters and capabilities both sides need, follow a
 * migration on the source to "completed".
 *
 * One thread drives a qvm; every call is bounded. Functions return 0 or
 * -errno with a message in (err, errlen).
 */
#ifndef VMM_BENCH_QEMU_MIG_H
#define VMM_BENCH_QEMU_MIG_H

#include <stdbool.h>
#include <stddef.h>

#include "harness_console.h"
#include "harness_proc.h"
#include "qmp_client.h"

/*
 * The machine the firmware guest (vmm-firmware.elf, its PVH entry) runs on
 * under QEMU, 1 vCPU; the caller adds -m, -kernel and -append.
 */
#define QVM_FIRMWARE_ARGS                                                                          \
	"-M microvm -enable-kvm -cpu max,vendor=GenuineIntel,-arch-capabilities -smp 1 "           \
	"-nodefaults -no-user-config -nographic -serial stdio -no-reboot "                         \
	"-device isa-debug-exit,iobase=0x501,iosize=4"

struct qvm {
	struct hx_proc proc;
	struct hx_console out; /* the guest's serial (QEMU's stdout) */
	struct qmp qmp;
};

/* How a migration is set up on both QEMUs (qvm_prepare). */
struct qvm_mig_opts {
	int downtime_ms;	 /* migrate-set-parameters downtime-limit */
	bool postcopy;		 /* the postcopy-ram capability */
	int multifd_channels;	 /* > 0: the multifd capability with that many channels */
	long long max_bandwidth; /* bytes/s; 0: no limit (100 GB/s, QEMU's default is 32 MiB/s) */
	bool auto_converge;	 /* the auto-converge capability (CPU throttling) */
};

/* What query-migrate said once "completed". */
struct qvm_mig_result {
	double total_ms, downtime_ms, transferred_bytes;
	double postcopy_requests; /* -1 unless postcopy */
	/*
	 * RAM sent after the postcopy switchover (ram.postcopy-bytes): 0 when a
	 * migration asked for postcopy completed as precopy (QEMU does when
	 * less than its threshold is left); -1 when QEMU does not report it.
	 */
	double postcopy_bytes;
	/*
	 * The highest cpu-throttle-percentage query-migrate reported while
	 * it was followed (auto-converge), 0 when it never throttled.
	 */
	double throttle_max_pct;
};

/*
 * Spawns argv (a QEMU command line without -qmp and -incoming; those are
 * appended: the QMP socket is DIR/NAME.qmp, stderr goes to DIR/NAME.err,
 * -incoming tcp:127.0.0.1:PORT when incoming_port > 0) and connects QMP.
 * qvm_end() afterwards, whatever it returned.
 */
int qvm_start(struct qvm *q, const char *name, const char *dir, char *const *argv,
	      int incoming_port, char *err, size_t errlen);
/* SIGKILLs and reaps QEMU, closes QMP and the console. */
void qvm_end(struct qvm *q);
/* The same on the source and the target, before `migrate`; no bandwidth limit. */
int qvm_prepare(struct qvm *q, const struct qvm_mig_opts *o, char *err, size_t errlen);
/*
 * QMP `migrate` to tcp:127.0.0.1:port, then polls query-migrate on src
 * (pumping the consoles of w meanwhile) until "completed", "failed" or
 * timeout_ms. Postcopy: migrate-start-postcopy once the first full pass is
 * done (dirty-sync-count >= 2), as vmm's default --postcopy-after 1.
 */
int qvm_migrate(struct qvm *src, struct hx_watch *w, int port, bool postcopy, int timeout_ms,
		struct qvm_mig_result *res, char *err, size_t errlen);
/*
 * The same to any URI QEMU takes ("exec:cat > FILE" writes the stream to a
 * file). max_passes > 0: once QEMU has synced the dirty log that many
 * times, the downtime limit is lifted so that it completes on its next
 * iteration (vmm snapshot --live stops after a fixed number of passes
 * too); 0: QEMU iterates until it meets its limit.
 */
int qvm_migrate_uri(struct qvm *src, struct hx_watch *w, const char *uri, bool postcopy,
		    int max_passes, int timeout_ms, struct qvm_mig_result *res, char *err,
		    size_t errlen);
/* query-status says "running" (the guest runs on this QEMU). */
bool qvm_guest_running(struct qvm *q);

#endif /* VMM_BENCH_QEMU_MIG_H */
