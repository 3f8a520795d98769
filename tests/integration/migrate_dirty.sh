#!/usr/bin/env bash
# The dirty guest (64 MiB working set, 2 vCPUs) migrates mid-run and finishes
# its passes on the target, its own verification passing. Arguments are
# extra `vmm migrate` options (connections, compression, harvest threads).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
# vmm migrate exits 0 with state "completed"; the source exits 0 saying
# "migrated to"; the target exits 0 after "dirty done", with no CORRUPTION.
harness_migrate --name dirtysrc --config "$EXAMPLES/dirty.cfg" --set vm.memory=1G \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=12 \
	--set workload.heartbeat_ms=0 --ready "dirty pass [0-9]+ ok" \
	--expect state=completed --expect remaining_bytes=0 --expect expected_downtime_ms=0 \
	--target-done "dirty done: 12 passes verified" \
	-- --json "$@"
reject_line src.out "dirty done"
echo PASS
