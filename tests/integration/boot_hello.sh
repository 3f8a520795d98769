#!/usr/bin/env bash
# The hello guest boots on N vCPUs, finds its memory and vCPUs in the device
# tree, and every vCPU checks in.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
n=$1
run_vmm 60 run "$EXAMPLES/demo.cfg" --set vm.vcpus="$n" --set vm.memory=256M
expect_status 0
expect_line out "hello from vCPU 0: $n vCPUs, 256 MiB RAM"
for ((i = 1; i < n; i++)); do
	expect_line out "vCPU $i online"
done
expect_line out "vmm-firmware: done"
echo PASS
