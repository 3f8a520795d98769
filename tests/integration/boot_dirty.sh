#!/usr/bin/env bash
# The dirty guest rewrites its working set for a few passes and verifies,
# before each write, that every page still holds what it wrote last time.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
run_vmm 120 run "$EXAMPLES/dirty.cfg" --set vm.memory=512M --set vm.vcpus=2 \
	--set workload.working_set=8M --set workload.passes=3 --set workload.heartbeat_ms=0
expect_status 0
expect_line out "dirty pass [0-9]+ ok"
expect_line out "dirty done: 3 passes verified"
reject_line out "CORRUPTION"
echo PASS
