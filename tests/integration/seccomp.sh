#!/usr/bin/env bash
# The seccomp filters (docs/architecture.md, "Seccomp filters"): a system
# call outside a thread's list stops the process with a line naming the
# thread, the call and its number, and status 159. The test hooks make a
# vCPU thread call socket() and the source's migration thread call
# execve(); with the filters off (--seccomp off, [sandbox] seccomp = off)
# the same hooks change nothing, so this test fails if the stop did not
# come from seccomp. Case: vcpu | migration.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1

case $case in
vcpu)
	VMM_TEST_FAULT=forbidden-syscall-vcpu run_vmm 60 run "$EXAMPLES/demo.cfg" --set vm.name=scvcpu
	expect_status 159
	expect_line err '^vmm: seccomp: the vcpu thread made a forbidden system call: socket \(41\); stopping$'
	reject_line out "vmm-firmware: done"

	# Without the hook, with the filters on: the guest runs to its end.
	run_vmm 60 run "$EXAMPLES/demo.cfg" --set vm.name=scvcpu
	expect_status 0
	expect_line out "vmm-firmware: done"
	reject_line err "seccomp[: ]"

	# The opt-outs: the same hook, and the guest runs to its end.
	VMM_TEST_FAULT=forbidden-syscall-vcpu run_vmm 60 run "$EXAMPLES/demo.cfg" \
		--set vm.name=scvcpu --seccomp off
	expect_status 0
	expect_line out "vmm-firmware: done"
	reject_line err "seccomp[: ]"
	VMM_TEST_FAULT=forbidden-syscall-vcpu run_vmm 60 run "$EXAMPLES/demo.cfg" \
		--set vm.name=scvcpu --set sandbox.seccomp=off
	expect_status 0
	expect_line out "vmm-firmware: done"

	run_vmm 10 run "$EXAMPLES/demo.cfg" --seccomp maybe
	expect_status 2
	expect_line err "--seccomp: expected on or off"
	;;
migration)
	port=$(test_port)
	VMM_TEST_FAULT=forbidden-syscall-migration start_vm src run "$EXAMPLES/idle.cfg" \
		--set vm.name=scmig
	wait_line src.out "vmm-firmware: idle" 60
	start_vm dst run --incoming "127.0.0.1:$port"
	wait_listen "$port"
	run_vmm 60 migrate --to "127.0.0.1:$port" --vm scmig
	[ "$status" != 0 ] || fail "vmm migrate succeeded from a source stopped by seccomp"
	wait_exit "$src_pid" 30
	expect_status 159
	expect_line src.err '^vmm: seccomp: the migration thread made a forbidden system call: execve \(59\); stopping$'
	kill -9 "$dst_pid" 2>/dev/null || true
	wait "$dst_pid" 2>/dev/null || true

	# Opted out on the source, the hook's execve(NULL) fails harmlessly and
	# the migration completes; the target keeps its filters (the default).
	harness_migrate --name scmigoff --config "$EXAMPLES/idle.cfg" --set sandbox.seccomp=off \
		--source-env VMM_TEST_FAULT=forbidden-syscall-migration \
		--ready "vmm-firmware: idle" --ready-timeout 60 --target-serves --target-timeout 20
	reject_line src.err "seccomp[: ]"
	reject_line dst.err "seccomp[: ]"
	;;
*)
	fail "unknown case $case"
	;;
esac
echo PASS
