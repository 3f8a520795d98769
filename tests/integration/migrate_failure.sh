#!/usr/bin/env bash
# A migration that fails or is cancelled leaves the VM running on the
# source with all of its memory: the dirty guest keeps verifying every page
# it wrote. Case: refused | cancel | kill-precopy | kill-switchover |
# target-cannot-start.
set -eu
. "$(dirname "$0")/lib.sh"
require_kvm
case=$1
port=$(test_port)
start_vm src run "$EXAMPLES/dirty.cfg" --set vm.name=failvm --set vm.memory=1G \
	--set vm.vcpus=2 --set workload.working_set=64M --set workload.passes=0 \
	--set workload.heartbeat_ms=0
wait_line src.out "dirty pass [0-9]+ ok" 60

case $case in
refused)
	run_vmm 30 migrate --to "127.0.0.1:$port" --vm failvm
	expect_status 1
	expect_line err "cannot connect to 127.0.0.1:$port"
	;;
cancel)
	# The cancel lands in precopy by construction: the target stops itself
	# once pass 0 is in (test hook), and the source waits for that pass's
	# SYNC_ACK for up to 60 s (--timeout-ms), however fast either side is.
	VMM_TEST_STOP_AT=target-first-sync start_vm dst run --incoming "127.0.0.1:$port"
	wait_listen "$port"
	start_vm mig migrate --to "127.0.0.1:$port" --vm failvm --timeout-ms 60000
	wait_line dst.err "test hook: stopped at target-first-sync" 60
	run_vmm 10 migrate --cancel --vm failvm
	expect_status 0
	wait_exit "$mig_pid" 30
	expect_status 1
	expect_line mig.err "cancel"
	# The target, continued, finds its source gone.
	kill -CONT "$dst_pid"
	wait_exit "$dst_pid" 30
	[ "$status" != 0 ] || fail "the target exited 0 after a cancelled migration"
	;;
kill-precopy)
	VMM_TEST_FAULT=kill-during-precopy start_vm dst run --incoming "127.0.0.1:$port"
	wait_listen "$port"
	run_vmm 60 migrate --to "127.0.0.1:$port" --vm failvm --compress none --max-bandwidth 50M
	expect_status 1
	expect_line err "data connection|the target|main connection"
	wait_exit "$dst_pid" 10
	expect_status 137
	;;
target-cannot-start)
	# A target that cannot serve its API (it serves it while it waits) says
	# so and exits before any source can reach it; the source stays.
	: >"$WORK/not-a-directory"
	start_vm dst run --incoming "127.0.0.1:$port" --api-socket "$WORK/not-a-directory/vm.sock"
	wait_exit "$dst_pid" 10
	expect_status 1
	expect_line dst.err "not-a-directory"
	reject_line dst.err "waiting for an incoming migration"
	run_vmm 30 migrate --to "127.0.0.1:$port" --vm failvm
	expect_status 1
	expect_line err "cannot connect to 127.0.0.1:$port"
	;;
kill-switchover)
	VMM_TEST_FAULT=kill-before-ack start_vm dst run --incoming "127.0.0.1:$port"
	wait_listen "$port"
	run_vmm 60 migrate --to "127.0.0.1:$port" --vm failvm
	expect_status 1
	expect_line err "the target to prepare"
	wait_exit "$dst_pid" 10
	expect_status 137
	;;
*)
	fail "unknown case $case"
	;;
esac

# The source VM is still there, running and verifying its memory.
kill -0 "$src_pid" || fail "the source VM exited"
expect_progress src.out 3
run_vmm 10 migrate --status --vm failvm --json
expect_status 0
kill -TERM "$src_pid"
wait_exit "$src_pid" 10
expect_status 143
reject_line src.out "CORRUPTION"
echo PASS
