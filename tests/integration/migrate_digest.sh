#!/usr/bin/env bash
# The target ends up with exactly the memory the source had at switchover:
# a test-only digest over all memslots is computed on both sides and compared
# before the target resumes.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)
VMM_TEST_DIGEST=1 start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=digestvm \
	--set vm.memory=512M --set vm.vcpus=2 --set workload.working_set=32M \
	--set workload.passes=30 --set workload.heartbeat_ms=0
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
wait_line src.out "dirty pass [0-9]+ ok" 60
VMM_TEST_DIGEST=1 run_vmm 60 migrate --to "127.0.0.1:$port" --vm digestvm
expect_status 0
wait_exit "$dst_pid" 120
expect_status 0
expect_line dst.err "memory digest 0x[0-9a-f]{16} matches the source's"
expect_line dst.out "dirty done: 30 passes verified"
echo PASS
