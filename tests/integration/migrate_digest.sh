#!/usr/bin/env bash
# The target ends up with exactly the memory the source had at switchover:
# a test-only digest over all memslots is computed on both sides and compared
# before the target resumes.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
harness_migrate --name digestvm --config "$EXAMPLES/dirty.cfg" --set vm.memory=512M \
	--set vm.vcpus=2 --set workload.working_set=32M --set workload.passes=14 \
	--set workload.heartbeat_ms=0 --source-env VMM_TEST_DIGEST=1 \
	--migrate-env VMM_TEST_DIGEST=1 --ready "dirty pass [0-9]+ ok" \
	--target-done "dirty done: 14 passes verified"
expect_line dst.err "memory digest 0x[0-9a-f]{16} matches the source's"
echo PASS
