#!/usr/bin/env bash
# Diff layers (vmm snapshot --diff, docs/snapshot-format.md "Diff layers"):
# a dirty guest with [snapshot] track_dirty gets a full snapshot, then two
# layers that hold only the pages it wrote since the one below (the first
# written live: its pages copied while the guest runs); restoring
# the top layer applies base, then each layer, and the guest verifies every
# page it wrote before the last one; a --lazy restore of the top layer
# does the same, each page faulted in from the topmost layer that holds it.
# A --diff without a base and a chain whose base is gone are refused.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm

start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=layers --set vm.memory=512M \
	--set workload.working_set=32M --set workload.passes=0 --set workload.heartbeat_ms=0 \
	--set workload.min_pass_ms=300 --set snapshot.track_dirty=true
wait_line src.out "dirty pass [0-9]+ ok" 60
rm -rf "$WORK/base" "$WORK/l1" "$WORK/l2" "$WORK/moved"

run_vmm 30 snapshot --vm layers --to "$WORK/l0" --diff
expect_status 1
expect_line err "no base for --diff: the last snapshot of this VM left no dirty tracking"
[ ! -e "$WORK/l0/state" ] || fail "a refused --diff wrote a state file"

run_vmm 120 snapshot --vm layers --to "$WORK/base"
expect_status 0
expect_progress src.out 1
run_vmm 120 snapshot --vm layers --to "$WORK/l1" --diff --live
expect_status 0
expect_line out "^snapshot [0-9a-f]{32} written to $WORK/l1: .*diff layer 1 on "
expect_progress src.out 1
run_vmm 120 snapshot --vm layers --to "$WORK/l2" --diff --stop --json
expect_status 0
expect_line out '"diff":true,"generation":2,'
wait_exit "$src_pid" 60
[ "$status" = 0 ] || fail "the source exited with $status after snapshot --stop"

# A layer holds what changed: the 32 MiB working set, not the whole base.
base_kib=$(du -k "$WORK/base/memory" | cut -f1)
l1_kib=$(du -k "$WORK/l1/memory" | cut -f1)
[ "$l1_kib" -le "$base_kib" ] || fail "layer 1 ($l1_kib KiB) is larger than its base ($base_kib KiB)"

start_vm r run --restore "$WORK/l2" --set vm.name=layers2
expect_progress r.out 3 120
expect_line r.err "restored snapshot [0-9a-f]{32}: [0-9]+ pages read"
reject_line r.out "CORRUPTION"
kill -TERM "$r_pid"
wait_exit "$r_pid" 30

start_vm z run --restore "$WORK/l2" --lazy --set vm.name=lazy2
expect_progress z.out 3 120
wait_line z.err "lazy restore done" 120
reject_line z.out "CORRUPTION"
kill -TERM "$z_pid"
wait_exit "$z_pid" 30
mv "$WORK/base" "$WORK/moved"
run_vmm 60 run --restore "$WORK/l2" --set vm.name=gone
expect_status 1
expect_line err "l1 is a diff layer whose parent cannot be read: cannot open the snapshot directory $WORK/base"
echo PASS
