#!/usr/bin/env bash
# An idle guest migrates: the source exits 0, the target runs the VM and
# serves its API under the VM's usual socket once the source is gone.
# The sockets live deeper than sun_path's 108 bytes reach, as in a CI
# workspace with a long path.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
export VMM_RUN_DIR="$VMM_RUN_DIR/a-run-directory-whose-name-alone-is-long-enough-to-push-every-socket-path-past-108-bytes"
[ ${#VMM_RUN_DIR} -gt 110 ] || fail "the run directory path is not long enough to test"
port=$(test_port)
start_vm src run "$EXAMPLES/idle.cfg" --set vm.name=idlevm --set vm.vcpus=2
start_vm dst run --incoming "127.0.0.1:$port"
wait_listen "$port"
wait_line src.out "vmm-firmware: idle" 30
run_vmm 60 migrate --to "127.0.0.1:$port" --vm idlevm
expect_status 0
expect_line out "downtime"
wait_exit "$src_pid" 10
expect_status 0
# The target takes over the VM's API socket after the source has exited.
for _ in $(seq 50); do
	[ -S "$VMM_RUN_DIR/idlevm.sock" ] && [ ! -e "$VMM_RUN_DIR/idlevm.sock.incoming" ] && break
	sleep 0.1
done
run_vmm 10 migrate --status --vm idlevm --json
expect_status 0
kill -0 "$dst_pid" || fail "the target exited"
kill -TERM "$dst_pid"
wait_exit "$dst_pid" 10
expect_status 143
echo PASS
