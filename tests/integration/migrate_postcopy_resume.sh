#!/usr/bin/env bash
# The connection breaks in the middle of postcopy: the guest, which now runs
# on the target, waits for its missing pages instead of running on stale
# memory; cancel is refused; `vmm migrate --resume` reconnects and finishes,
# and the guest's verification passes.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)
VMM_TEST_FAULT=cut-postcopy start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=resvm \
	--set vm.memory=1G --set vm.vcpus=2 --set workload.working_set=256M \
	--set workload.passes=0 --set workload.heartbeat_ms=0
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
wait_line src.out "dirty pass [0-9]+ ok" 60
# Without the bitmap every page is stale, so the cut lands well before the end:
# 256 MiB is more than the push or the page requests deliver before the cut.
run_vmm 60 migrate --to "127.0.0.1:$port" --vm resvm --mode postcopy --no-final-bitmap
expect_status 3
expect_line err "postcopy paused"
# The guest waits: no pass completes while the pages it needs are away.
before=$(count_lines dst.out 'dirty pass [0-9]+ ok')
sleep 1.5
after=$(count_lines dst.out 'dirty pass [0-9]+ ok')
[ "$before" = "$after" ] || fail "the guest ran on while its memory was missing ($before -> $after passes)"
# Both sides report the broken state through their APIs.
run_vmm 10 migrate --status --vm resvm --json
expect_line out '"state": *"postcopy-paused"'
run_vmm 10 migrate --status --api-socket "$VMM_RUN_DIR/resvm.sock.incoming" --json
expect_line out '"state": *"postcopy-paused"'
run_vmm 10 migrate --cancel --vm resvm
expect_status 1
expect_line err "cannot be cancelled"
kill -0 "$src_pid" || fail "the source exited while it held the only copy of pages"
run_vmm 60 migrate --resume --to "127.0.0.1:$port" --vm resvm --json
expect_status 0
expect_line out '"resumes": *1'
wait_exit "$src_pid" 10
expect_status 0
# Every page has arrived: each further pass verifies the whole working set.
# Wait for three (an event, with a bound generous for a loaded host), not for
# a number of passes within a fixed time.
expect_progress dst.out 3 300
reject_line dst.out "CORRUPTION"
kill -TERM "$dst_pid"
wait_exit "$dst_pid" 30
expect_status 143
echo PASS
