#!/usr/bin/env bash
# A target that asks for a page outside the guest during postcopy: the
# source refuses the request with a clear error, does not crash, and keeps
# the VM's memory (postcopy paused, waiting for a resume).
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
port=$(test_port)
start_vm src run "$EXAMPLES/idle.cfg" --set vm.name=badreq --set vm.memory=256M
wait_line src.out "vmm-firmware: idle" 30
"$FAKE_TARGET" "127.0.0.1:$port" &
PIDS+=($!)
wait_listen "$port"
run_vmm 30 migrate --to "127.0.0.1:$port" --vm badreq --mode postcopy --postcopy-after 0
expect_status 3
expect_line err "bad page request"
kill -0 "$src_pid" || fail "the source exited"
run_vmm 10 migrate --status --vm badreq --json
expect_line out '"state": *"postcopy-paused"'
echo PASS
