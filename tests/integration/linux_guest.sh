#!/usr/bin/env bash
# The project's Linux test guest under vmm: every vCPU of N comes up, the
# shell answers what is typed on the console, and power-off ends vmm with
# status 0; bad images and initrds get a one-line error. (linux_session.sh
# boots once for the migrations, the shell with 2 vCPUs and a reset.)
#   linux_guest.sh smp N | errors
set -eu
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/linux_lib.sh"
case=$1
require_linux

case $case in
smp)
	# N vCPUs: every one comes up, the shell answers what is typed (a
	# program reading the console gets the next line typed), power-off.
	n=$2
	linux_args "$n"
	# More vCPUs, a slower boot when emulated.
	boot_linux vm shell $((n > 2 ? 2 * LINUX_BOOT_S : LINUX_BOOT_S)) "${LARGS[@]}"
	expect_line vm.out "init ok.* $n cpus online"
	guest_cmd vm 'echo typed-$((6 * 7))' 'typed-42'
	type_line vm 'read a b; echo "got <$b> <$a>"'
	type_line vm 'second first'
	wait_line vm.out 'got <first> <second>' 60
	guest_cmd vm 'grep -c ^processor /proc/cpuinfo' "^$n[[:space:]]*\$"
	guest_end vm 'poweroff -f' 120
	[ "$status" = 0 ] || fail "power-off: exit status $status, expected 0"
	expect_line vm.err 'guest powered off'
	;;
errors)
	linux_args 1
	# An initrd that is not there: the key and the path are named, nothing boots.
	run_vmm 30 "${LARGS[@]}" --initrd "$WORK/no-such.cpio"
	expect_status 2
	expect_line err 'initrd.*no-such.cpio'
	# A static x86_64 program (memverify, with 8-byte aligned GNU notes):
	# neither a vmm nor a PVH note.
	run_vmm 30 "${LARGS[@]}" --set "firmware.path=$(dirname "$LINUX_INITRD")/memverify"
	expect_status 1
	expect_line err 'not a vmm firmware or PVH image \(no .vmm. or Xen PHYS32_ENTRY note\)'
	# Without noxsave, on a KVM that emulates guest kernel code (nested
	# PVM), the kernel's first xrstor64 stops it: the reason, the guest's rip
	# and the instruction's bytes, in one line. A KVM that runs xrstor
	# (hardware, or TCG's SVM) boots on and, with no init, panics and
	# reboots (status 5): that host cannot reach this report.
	run_vmm 120 "${LARGS[@]}" \
		--set "firmware.cmdline=console=ttyS0 panic=-1 clearcpuid=151,308 rdinit=/no-such-init init=/no-such-init"
	if [ "$status" = 5 ] && grep -q "Kernel panic" "$WORK/out"; then
		echo "note: this host's KVM runs xrstor: no emulation failure to report"
	else
		expect_status 1
		expect_line err 'vCPU 0: KVM internal error.*instruction emulation failed.* at rip 0xffffffff[0-9a-f]+, code 48 0f ae'
		[ "$(wc -l <"$WORK/err")" = 1 ] || fail "more than one line of error"
	fi
	# A position-independent host program.
	run_vmm 30 "${LARGS[@]}" --set "firmware.path=$(type -P true)"
	expect_status 1
	expect_line err 'is not ET_EXEC.*position-independent'
	;;
*)
	fail "unknown case $case"
	;;
esac
echo PASS
