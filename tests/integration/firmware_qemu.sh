#!/usr/bin/env bash
# The vmm firmware boots under QEMU microvm through its Xen PVH entry
# (guest-firmware/pvh_start.S, pvh.c): the dirty workload, its parameters
# from the command line (random fill written by the guest itself, random
# order, latency lines), runs two passes verified and exits through
# isa-debug-exit (QEMU's status is 2*guest status + 1: 1 = success). A bad
# vmm.* word is refused with the firmware's bad-parameters status (4 -> 9).
# The TSC frequency: PIT calibration by default, CPUID 0x40000010 with +invtsc.
# Fails without qemu-system-x86_64 unless VMM_TESTS_NO_QEMU=1.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
qemu=${QEMU:-qemu-system-x86_64}
if ! command -v "$qemu" >/dev/null; then
	if [ "${VMM_TESTS_NO_QEMU:-0}" = 1 ]; then
		echo "SKIP: no $qemu and VMM_TESTS_NO_QEMU=1"
		exit 77
	fi
	fail "$qemu not found (scripts/install-deps.sh installs it; VMM_TESTS_NO_QEMU=1 skips)"
fi
: "${FIRMWARE:?set FIRMWARE to vmm-firmware.elf}"

# run_qemu CMDLINE [CPU-FLAGS]: the firmware under microvm, console to $WORK/q.out,
# status in $status.
run_qemu() {
	set +e
	timeout --signal=KILL 120 "$qemu" -M microvm -enable-kvm \
		-cpu "max,vendor=GenuineIntel,-arch-capabilities${2:-}" -smp 1 -m 128M \
		-nodefaults -no-user-config -nographic -serial stdio -no-reboot \
		-device isa-debug-exit,iobase=0x501,iosize=4 \
		-kernel "$FIRMWARE" -append "$1" </dev/null >"$WORK/q.out" 2>"$WORK/q.err"
	status=$?
	set -e
	[ "$status" != 137 ] || { tail -20 "$WORK/q.out" "$WORK/q.err"; fail "QEMU did not finish in 120 s"; }
}

run_qemu "console=ttyS0 vmm.workload=dirty vmm.working_set=1M vmm.passes=2 vmm.fill=random vmm.order=random vmm.latency=1 vmm.heartbeat_ms=0"
cat "$WORK/q.out"
[ "$status" = 1 ] || { cat "$WORK/q.err"; fail "QEMU exit status $status, expected 1 (guest status 0)"; }
expect_line q.out "PVH boot: [0-9]+ MiB RAM in [0-9]+ regions, TSC [0-9]+ kHz \(PIT calibration\)"
expect_line q.out "dirty working set 1 MiB at 0x[0-9a-f]+, .*fill random, order random"
expect_line q.out "dirty lat pass 2: p50_us=[0-9.]+ p99_us=[0-9.]+ max_us=[0-9.]+ pages=256 pass_ms=[0-9]+"
expect_line q.out "dirty done: 2 passes verified"
reject_line q.out CORRUPTION

# An invariant TSC: QEMU's CPUID 0x40000010 gives the frequency, no calibration.
run_qemu "vmm.workload=hello" ",+invtsc"
[ "$status" = 1 ] || { cat "$WORK/q.out" "$WORK/q.err"; fail "hello: QEMU exit status $status"; }
# QEMU gives the leaf only when the host's TSC is invariant too; it warns
# otherwise (a host CPU without invtsc, e.g. one emulated by TCG), and the
# firmware must then still calibrate against the PIT.
if grep -q "host doesn't support requested feature.*invtsc" "$WORK/q.err"; then
	echo "note: this host has no invariant TSC: QEMU offers no CPUID 0x40000010"
	expect_line q.out "TSC [0-9]+ kHz \(PIT calibration\)"
else
	expect_line q.out "TSC [0-9]+ kHz \(CPUID 0x40000010\)"
fi
expect_line q.out "hello from vCPU 0: 1 vCPUs"

run_qemu "vmm.workload=dirty vmm.fill=maybe"
[ "$status" = 9 ] || fail "bad vmm.fill: QEMU exit status $status, expected 9 (guest status 4)"
expect_line q.out "PVH command line: bad word 'vmm.fill=maybe'"
echo PASS
