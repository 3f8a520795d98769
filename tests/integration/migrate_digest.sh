#!/usr/bin/env bash
# The target ends up with exactly the memory the source had at switchover:
# a test-only digest over all memslots is computed on both sides and compared
# before the target resumes. Precopy by name: the digest cannot be checked
# in postcopy, and auto would need precopy to converge.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
harness_migrate --name digestvm --config "$EXAMPLES/dirty.cfg" --set vm.memory=512M \
	--set vm.vcpus=2 --set workload.working_set=32M --set workload.passes=0 \
	--set workload.heartbeat_ms=0 --source-env VMM_TEST_DIGEST=1 \
	--migrate-env VMM_TEST_DIGEST=1 --ready "dirty pass [0-9]+ ok" \
	--target-done "dirty pass [0-9]+ ok" --target-lines 3 \
	-- --mode precopy
expect_line dst.err "memory digest 0x[0-9a-f]{16} matches the source's"
echo PASS
