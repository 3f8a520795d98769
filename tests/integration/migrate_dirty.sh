#!/usr/bin/env bash
# The dirty guest (64 MiB working set, 2 vCPUs) migrates mid-run and finishes
# its passes on the target, its own verification passing. Arguments are
# extra `vmm migrate` options (connections, compression, harvest threads).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)
start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=dirtysrc --set vm.memory=1G \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=30 \
	--set workload.heartbeat_ms=0
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
wait_line src.out "dirty pass [0-9]+ ok" 60
run_vmm 60 migrate --to "127.0.0.1:$port" --vm dirtysrc --json "$@"
expect_status 0
expect_line out '"state": *"completed"'
wait_exit "$src_pid" 10
expect_status 0
expect_line src.err "migrated to 127.0.0.1:$port"
wait_exit "$dst_pid" 120
expect_status 0
expect_line dst.out "dirty done: 30 passes verified"
reject_line dst.out "CORRUPTION"
reject_line src.out "dirty done"
echo PASS
