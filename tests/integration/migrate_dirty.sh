#!/usr/bin/env bash
# The dirty guest (64 MiB working set, 2 vCPUs) migrates mid-run and goes on
# on the target, its own verification passing. Arguments are extra `vmm
# migrate` options (connections, compression, harvest threads).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
# vmm migrate exits 0 with state "completed"; the source exits 0 saying
# "migrated to"; the guest, which runs until stopped (so the migration is
# mid-run however long it takes), verifies 3 more passes on the target with
# no CORRUPTION, and the target ends on SIGTERM.
harness_migrate --name dirtysrc --config "$EXAMPLES/dirty.cfg" --set vm.memory=1G \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=0 \
	--set workload.heartbeat_ms=0 --ready "dirty pass [0-9]+ ok" \
	--expect state=completed --expect remaining_bytes=0 --expect expected_downtime_ms=0 \
	--target-done "dirty pass [0-9]+ ok" --target-lines 3 -- --json "$@"
echo PASS
