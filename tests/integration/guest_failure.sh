#!/usr/bin/env bash
# A guest that fails (a store outside RAM, a triple fault) stops the VM with
# a message naming the exit reason and the guest's rip, and status 1; the
# firmware's own exceptions are reported by it (EXCEPTION ..., status 6).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
dir=$(dirname "$PVH_GUEST")
run_vmm 30 run "$EXAMPLES/demo.cfg" --set firmware.path="$dir/bad-guest-mmio.elf"
expect_status 1
expect_line err "vCPU 0: write of 4 bytes at gpa 0xd0000000, which is not RAM at rip 0x[0-9a-f]+"
run_vmm 30 run "$EXAMPLES/demo.cfg" --set firmware.path="$dir/bad-guest-ud2.elf"
expect_status 1
expect_line err "vCPU 0: triple fault \(KVM_EXIT_SHUTDOWN\)( at rip 0x[0-9a-f]+|; its registers read as after a reset)|vCPU 0: KVM internal error"
# The firmware's own exception report: a fault it takes says where, exit 6.
run_vmm 30 run "$EXAMPLES/demo.cfg" --set workload.kind=fault
expect_status 6
expect_line out "EXCEPTION #UD \(vector 6\) error 0x0 at rip 0x[0-9a-f]+ cs 0x[0-9a-f]+"
echo PASS
