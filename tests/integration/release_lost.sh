#!/usr/bin/env bash
# No limbo after a lost RELEASE. A proxy on the path drops the source's
# RELEASE and cuts main: the source completes and exits, the target runs
# the VM but never hears that the source let go. It says so: its migration
# state is awaiting-release (status, API, event stream) with since when and
# what ends it, and `vmm status --vm NAME` finds it at its temporary API
# path (nothing listens at NAME.sock any more). The operator's
# `vmm migrate --recover --decide run` ends the wait: the target takes the
# usual API path and closes its migration port. One guest runs throughout.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)
start_dirty_pair relvm "$port"
start_proxy "$port" --drop RELEASE --then cut
run_vmm 180 migrate --to "127.0.0.1:$pport" --vm relvm --mode precopy
expect_status 0
expect_line proxy.out "dropped RELEASE on main"
wait_exit "$src_pid" 60
expect_status 0
expect_progress dst.out 3

# The limbo is visible, by the VM's usual name.
run_vmm 20 status --vm relvm
expect_status 0
run_vmm 20 migrate --status --vm relvm --json
expect_status 0
expect_line out '"state": *"awaiting-release"'
expect_line out "waiting for the source to let go .*--decide run"
sock="$VMM_RUN_DIR/relvm.sock.incoming"
[ -S "$sock" ] || fail "the target is not at its temporary API path"
timeout 5 curl -sN --unix-socket "$sock" http://vmm/api/v1/vm/events >"$WORK/events.out" || true
expect_line events.out '"type":"state".*"state":"awaiting-release"'
kill -0 "$dst_pid" || fail "the target exited"
"$HARNESS" wait-listen "$port" 1 "$dst_pid" || fail "the target closed its migration port while it waits"

# The operator knows the source is gone: the wait ends.
run_vmm 20 migrate --recover --decide run --vm relvm
expect_status 0
wait_gone "$sock" || fail "the target kept its temporary API path after --decide run"
run_vmm 20 migrate --status --vm relvm --json
expect_status 0
reject_line out '"state": *"awaiting-release"'
expect_progress dst.out 3
reject_line dst.out CORRUPTION
echo PASS
